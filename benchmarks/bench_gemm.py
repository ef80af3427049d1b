"""Generated GEMM kernels against numpy's matmul (OpenBLAS), float32.

Run: PYTHONPATH=. python benchmarks/bench_gemm.py
Both sides write into a preallocated output, so allocation and page faults stay out of
the timings; the best of several repeats is reported because the machine is shared.
"""
import time

import numpy as np

from jaxlite.lower.gemm import compile_gemm

SHAPES = [  # (M, N, K, threads)
    (1024, 1024, 1024, 1),
    (1024, 1024, 1024, 2),
    (256, 512, 784, 1),
    (256, 512, 512, 1),
    (256, 10, 512, 1),
]


def best_time(fn, min_seconds=0.3, repeats=5):
    fn()
    runs = max(1, int(min_seconds / max(_time_once(fn), 1e-6)))
    return min(_time_once(fn, runs) for _ in range(repeats))


def _time_once(fn, runs=1):
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - start) / runs


def bench(m, n, k, threads, rng):
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    ours_out, numpy_out = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    kernel = compile_gemm(m, n, k, "float32")
    ours = best_time(lambda: kernel.run(a, b, out=ours_out, threads=threads))
    theirs = best_time(lambda: np.matmul(a, b, out=numpy_out))
    np.testing.assert_allclose(ours_out, numpy_out, rtol=1e-3, atol=1e-3 * np.sqrt(k))
    return ours, theirs


def main():
    rng = np.random.default_rng(0)
    flops = {}
    print(f"{'M x N x K':>18} {'thr':>3} {'ours ms':>9} {'GFLOP/s':>8} "
          f"{'numpy ms':>9} {'GFLOP/s':>8} {'ours/numpy':>10}")
    for m, n, k, threads in SHAPES:
        ours, theirs = bench(m, n, k, threads, rng)
        gflop = 2 * m * n * k / 1e9
        flops[(m, n, k, threads)] = ours
        print(f"{f'{m}x{n}x{k}':>18} {threads:>3} {ours * 1e3:9.3f} {gflop / ours:8.1f} "
              f"{theirs * 1e3:9.3f} {gflop / theirs:8.1f} {ours / theirs:10.2f}")
    speedup = flops[(1024, 1024, 1024, 1)] / flops[(1024, 1024, 1024, 2)]
    print(f"two-thread speedup on 1024^3: {speedup:.2f}x")


if __name__ == "__main__":
    main()
