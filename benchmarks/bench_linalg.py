"""Linear algebra under jit, side by side: numpy eager, jaxlite jit and JAX jit.

    PYTHONPATH=. /work/jaxref/bin/python benchmarks/bench_linalg.py [--only NAME ...]

(JAX joins when it imports.) float32 factorizations (eigh, qr, svd, singular values) of a
256 x 256 matrix and a batch of 64 matrices of 32 x 32, and two compositions, pinv and a
least-squares solve. jaxlite and numpy call the same LAPACK (numpy's OpenBLAS), JAX its own
(jaxlib's). Times are medians, as in run.py.
"""

import numpy as np

from run import run_side_by_side


def _factorization(name, call, shape):
    def workload(b):
        x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
        if name.startswith("eigh"):
            x = x + np.swapaxes(x, -1, -2)
        return b.compile(lambda x: call(b.xp.linalg, x)), (b.asarray(x),)
    workload.__name__ = f"{name}_{'x'.join(map(str, shape))}"
    return workload


CALLS = {
    "eigh": lambda linalg, x: linalg.eigh(x),
    "qr": lambda linalg, x: linalg.qr(x),
    "svd": lambda linalg, x: linalg.svd(x, full_matrices=False),
    "svdvals": lambda linalg, x: linalg.svd(x, compute_uv=False),
    "pinv": lambda linalg, x: linalg.pinv(x),
    "lstsq": lambda linalg, x: linalg.lstsq(x, x[:, :4])[0],
}

WORKLOADS = {}
for _name, _call in CALLS.items():
    for _shape in ((256, 256),) + (((64, 32, 32),) if _name != "lstsq" else ()):
        _workload = _factorization(_name, _call, _shape)
        WORKLOADS[_workload.__name__] = _workload


if __name__ == "__main__":
    run_side_by_side(WORKLOADS, __doc__)
