"""Narrow floats side by side: numpy eager (ml_dtypes' kernels), jaxlite jit and JAX jit.

    PYTHONPATH=. /work/jaxref/bin/python benchmarks/bench_narrow.py [--only NAME ...]

(JAX joins when it imports.) Over 1M elements of bfloat16, float16 and float8_e4m3fn: an
elementwise chain `tanh(x) * y + x * 0.5` (every op computed in float32 and rounded to the narrow
type, as XLA does) and a sum. Every chain runs in jaxlite's fused kernels (float8 carried as
float32 and rounded to its byte after each op, lower/float8.py); bfloat16 and float16 sums
accumulate in float32 and round once, float8 sums run ml_dtypes' kernels (they round every
partial sum, so the order decides the value). Times are medians, as in run.py.
"""

import ml_dtypes
import numpy as np

from run import run_side_by_side

_DTYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f8": ml_dtypes.float8_e4m3fn}


def _workload(name, dtype, make):
    def workload(b):
        rng = np.random.default_rng(0)
        x, y = (rng.uniform(-2, 2, size=1 << 20).astype(dtype) for _ in range(2))
        return b.compile(make(b.xp)), (b.asarray(x), b.asarray(y))
    workload.__name__ = name
    return workload


WORKLOADS = {}
for _short, _dtype in _DTYPES.items():
    for _w in (_workload(f"{_short}_chain_1m", _dtype, lambda xp: lambda x, y: xp.tanh(x) * y + x * 0.5),
               _workload(f"{_short}_sum_1m", _dtype, lambda xp: lambda x, y: (x * y).sum())):
        WORKLOADS[_w.__name__] = _w


if __name__ == "__main__":
    run_side_by_side(WORKLOADS, __doc__)
