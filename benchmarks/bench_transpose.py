"""Transposed reads in fused kernels, side by side: numpy eager, jaxlite jit and JAX jit.

    PYTHONPATH=. /work/jaxvenv/bin/python benchmarks/bench_transpose.py [--only NAME ...]

(JAX joins when it imports.) Workloads: `x.T * 2 + y` at 512x512 and 4096x1024 (the
transposed operand is read across its rows, one fused kernel), a batch-head swap
`transpose(x, (0, 2, 1, 3))` of 8x512x16x64 (rows of 64 stay contiguous), and the
attention scores einsum 'bqhd,bkhd->bhqk' (8x256x8x64), whose GEMM reads operands
that a fused kernel first transposes. numpy's transpose is a view, so its side copies
it to a contiguous array (what the others produce). Times are medians, as in run.py.
"""

import numpy as np

from run import run_side_by_side


def _materialized(b):
    return np.ascontiguousarray if b.name == "numpy" else (lambda a: a)


def _transpose_scale_add(rows, columns):
    def workload(b):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(columns, rows)).astype(np.float32)
        y = rng.normal(size=(rows, columns)).astype(np.float32)
        return b.compile(lambda x, y: x.T * 2.0 + y), (b.asarray(x), b.asarray(y))
    workload.__name__ = f"xT2y_{rows}x{columns}"
    return workload


def swap_heads_4d(b):
    copy = _materialized(b)
    x = np.random.default_rng(0).normal(size=(8, 512, 16, 64)).astype(np.float32)
    return b.compile(lambda x: copy(b.xp.transpose(x, (0, 2, 1, 3)))), (b.asarray(x),)


def attention_scores(b):
    rng = np.random.default_rng(0)
    q, k = (rng.normal(size=(8, 256, 8, 64)).astype(np.float32) for _ in range(2))
    return b.compile(lambda q, k: b.xp.einsum("bqhd,bkhd->bhqk", q, k)), (b.asarray(q), b.asarray(k))


WORKLOADS = {f.__name__: f for f in [_transpose_scale_add(512, 512), _transpose_scale_add(4096, 1024),
                                     swap_heads_4d, attention_scores]}


if __name__ == "__main__":
    run_side_by_side(WORKLOADS, __doc__)
