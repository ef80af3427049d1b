"""Linear algebra under jit, side by side: numpy eager, jaxlite jit and JAX jit.

    PYTHONPATH=. /work/jaxref/bin/python benchmarks/bench_linalg.py [--only NAME ...]

(JAX joins when it imports.) float32 factorizations (eigh, qr, svd, singular values) of a
256 x 256 matrix and a batch of 64 matrices of 32 x 32, and two compositions, pinv and a
least-squares solve; then eig (float32) and the complex64 factorizations and solves, of a
128 x 128 matrix and a batch of 64 of 16 x 16. jaxlite and numpy call the same LAPACK
(numpy's OpenBLAS), JAX its own (jaxlib's). Times are medians, as in run.py.
"""

import numpy as np

from run import run_side_by_side


def _factorization(name, call, shape, dtype=np.float32):
    def workload(b):
        rng = np.random.default_rng(0)
        x = rng.normal(size=shape).astype(dtype)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.normal(size=shape).astype(dtype)
        if name.startswith(("eigh", "cholesky")):
            x = x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1], dtype=dtype)
        return b.compile(lambda x: call(b.xp.linalg, x)), (b.asarray(x),)
    kind = "c64_" if np.dtype(dtype).kind == "c" else ""
    workload.__name__ = f"{kind}{name}_{'x'.join(map(str, shape))}"
    return workload


CALLS = {
    "eigh": lambda linalg, x: linalg.eigh(x),
    "qr": lambda linalg, x: linalg.qr(x),
    "svd": lambda linalg, x: linalg.svd(x, full_matrices=False),
    "svdvals": lambda linalg, x: linalg.svd(x, compute_uv=False),
    "pinv": lambda linalg, x: linalg.pinv(x),
    "lstsq": lambda linalg, x: linalg.lstsq(x, x[:, :4])[0],
}

COMPLEX_CALLS = {
    "eig": lambda linalg, x: linalg.eig(x),
    "eigvals": lambda linalg, x: linalg.eigvals(x),
    "eigh": lambda linalg, x: linalg.eigh(x),
    "svd": lambda linalg, x: linalg.svd(x, full_matrices=False),
    "qr": lambda linalg, x: linalg.qr(x),
    "cholesky": lambda linalg, x: linalg.cholesky(x),
    "det": lambda linalg, x: linalg.det(x),
    "solve": lambda linalg, x: linalg.solve(x, x[..., :4]),
}

WORKLOADS = {}
for _name, _call in CALLS.items():
    for _shape in ((256, 256),) + (((64, 32, 32),) if _name != "lstsq" else ()):
        _workload = _factorization(_name, _call, _shape)
        WORKLOADS[_workload.__name__] = _workload
for _shape in ((128, 128), (64, 16, 16)):
    for _name, _call in COMPLEX_CALLS.items():
        for _dtype in ((np.float32, np.complex64) if _name.startswith("eig") and _name != "eigh" else (np.complex64,)):
            _workload = _factorization(_name, _call, _shape, _dtype)
            WORKLOADS[_workload.__name__] = _workload


if __name__ == "__main__":
    run_side_by_side(WORKLOADS, __doc__)
