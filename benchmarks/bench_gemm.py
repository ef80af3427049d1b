"""Generated GEMM kernels against numpy's matmul (OpenBLAS), float32.

Run: PYTHONPATH=. python benchmarks/bench_gemm.py

Each row runs our kernel on 1 or 2 threads against OpenBLAS on as many threads: the
single-thread numpy timings come from a child process started with
OPENBLAS_NUM_THREADS=1, since OpenBLAS fixes its thread count when it loads. Both sides
write into a preallocated output, so allocation and page faults stay out of the timings;
the best of several repeats is reported because the machine is shared. Our kernels run
before any in-process OpenBLAS call: its idle workers spin for a while after each call
and would take the second core from our second thread.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

SHAPES = [(1024, 1024, 1024), (256, 784, 512), (256, 512, 512), (256, 512, 10)]  # M, K, N


def best_time(fn, min_seconds=0.2, repeats=5):
    fn()
    runs = max(1, int(min_seconds / max(_time_once(fn), 1e-6)))
    return min(_time_once(fn, runs) for _ in range(repeats))


def _time_once(fn, runs=1):
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - start) / runs


def operands(m, k, n):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32), np.empty((m, n), np.float32))


def numpy_times():
    """{shape: seconds} for np.matmul with this process's OpenBLAS threads."""
    times = {}
    for m, k, n in SHAPES:
        a, b, out = operands(m, k, n)
        times[f"{m}x{k}x{n}"] = best_time(lambda: np.matmul(a, b, out=out))
    return times


def numpy_times_single_thread():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    child = subprocess.run([sys.executable, __file__, "--numpy-times"], env=env,
                           capture_output=True, text=True, check=True)
    return json.loads(child.stdout)


def ours_time(m, k, n, threads):
    """Seconds per call, and the result for a later check."""
    from jaxlite.lower.gemm import compile_gemm
    a, b, out = operands(m, k, n)
    kernel = compile_gemm(m, n, k, "float32")
    return best_time(lambda: kernel.run(a, b, out=out, threads=threads)), out


def compile_times():
    """Seconds to compile the float32 family's native kernel, then to bind a further shape."""
    from jaxlite.lower import gemm, llvm_target
    llvm_target.vector_width_bits()   # initializes LLVM, outside the timing
    start = time.perf_counter()
    gemm.compile_gemm(*SHAPES[0], "float32")
    family = time.perf_counter() - start
    start = time.perf_counter()
    gemm.compile_gemm(*SHAPES[1], "float32")
    return family, time.perf_counter() - start


def check_results(results):
    for (key, _), out in results.items():
        m, k, n = map(int, key.split("x"))
        a, b, _ = operands(m, k, n)
        np.testing.assert_allclose(out, a @ b, rtol=1e-3, atol=1e-4 * k)


def main():
    single_thread_numpy = numpy_times_single_thread()
    family_seconds, shape_seconds = compile_times()
    ours, results = {}, {}
    for m, k, n in SHAPES:
        for threads in (1, 2):
            key = f"{m}x{k}x{n}"
            ours[key, threads], results[key, threads] = ours_time(m, k, n, threads)
    theirs = {1: single_thread_numpy, 2: numpy_times()}
    check_results(results)
    print(f"{'M x K x N':>16} {'thr':>3} {'ours ms':>9} {'GFLOP/s':>8} "
          f"{'numpy ms':>9} {'GFLOP/s':>8} {'ours/numpy':>10}")
    for m, k, n in SHAPES:
        for threads in (1, 2):
            key = f"{m}x{k}x{n}"
            gflop = 2 * m * n * k / 1e9
            numpy_seconds = theirs[threads][key]
            print(f"{key:>16} {threads:>3} {ours[key, threads] * 1e3:9.3f} "
                  f"{gflop / ours[key, threads]:8.1f} {numpy_seconds * 1e3:9.3f} "
                  f"{gflop / numpy_seconds:8.1f} {ours[key, threads] / numpy_seconds:10.2f}")
    print(f"compile: float32 family {family_seconds:.3f} s, each further shape {shape_seconds * 1e3:.2f} ms")
    for m, k, n in SHAPES:
        key = f"{m}x{k}x{n}"
        print(f"two-thread speedup {key}: ours {ours[key, 1] / ours[key, 2]:.2f}x, "
              f"numpy {theirs[1][key] / theirs[2][key]:.2f}x")


if __name__ == "__main__":
    if sys.argv[1:] == ["--numpy-times"]:
        print(json.dumps(numpy_times()))
    else:
        main()
