"""Thread scaling: one thread against all cores for compute-bound work.

    python benchmarks/bench_threads.py [--repeats N]

Two workloads: a 1024^3 float32 GEMM (GEMM row tiles split over threads, read per
call from step_policy.GEMM_THREADS) and a fused kernel doing many transcendentals per
element on 4M floats (its parallel loop split over the kernel pool when it has at
least entry_points.PARALLEL_MIN_POINTS points; raising that bound compiles a one-thread
version). Times are medians; the load average is printed because the machine may be
shared, and a busy core makes the speedup look smaller than it is.
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jaxlite  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite.lower import entry_points, step_policy  # noqa: E402
from jaxlite.transforms.jit import clear_caches  # noqa: E402


def heavy(x):
    y = jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(3 * x)
    z = jnp.log1p(jnp.abs(y)) + jnp.cos(x * y)
    return jnp.exp(jnp.sin(z)) * jnp.tanh(z + x) + jnp.log1p(x * x)


def median_time(fn, args, repeats):
    """(median wall time, median process CPU time over wall time)."""
    fn(*args).block_until_ready()
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn(*args).block_until_ready()
        times.append(time.perf_counter() - start)
        cpu.append((time.process_time() - start_cpu) / times[-1])
    return statistics.median(times), statistics.median(cpu)


def gemm_times(repeats):
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((1024, 1024)).astype(np.float32))
    b = jnp.asarray(rng.standard_normal((1024, 1024)).astype(np.float32))
    matmul = jaxlite.jit(lambda x, y: x @ y)
    times = {}
    default = step_policy.GEMM_THREADS
    try:
        for threads in (1, default):
            step_policy.GEMM_THREADS = threads
            clear_caches()      # the plan is chosen when the program compiles
            times[threads] = median_time(matmul, (a, b), repeats)
    finally:
        step_policy.GEMM_THREADS = default
    return times, 2 * 1024 ** 3


def fused_times(repeats):
    x = jnp.asarray(np.random.default_rng(1).uniform(-2, 2, 4 * 1024 * 1024).astype(np.float32))
    times = {}
    default = entry_points.PARALLEL_MIN_POINTS
    try:
        for threads, bound in ((1, 1 << 62), (os.cpu_count() or 1, default)):
            entry_points.PARALLEL_MIN_POINTS = bound
            clear_caches()      # compile anew under the new bound
            times[threads] = median_time(jaxlite.jit(heavy), (x,), repeats)
    finally:
        entry_points.PARALLEL_MIN_POINTS = default
    return times, None


def report(name, times, flops):
    """Wall times and speedup; CPU time too: on a busy machine the wall speedup hides, but
    equal CPU time for 1 and N threads still shows the split adds no work."""
    (one, (t1, busy1)), (many, (tn, busy_n)) = sorted(times.items())
    rate = lambda t: f" ({flops / t / 1e9:5.1f} GFLOP/s)" if flops else ""
    print(f"{name:30s} 1 thread {t1 * 1e3:7.2f} ms{rate(t1)} cpu {t1 * busy1 * 1e3:7.2f} ms   "
          f"{many} threads {tn * 1e3:7.2f} ms{rate(tn)} cpu {tn * busy_n * 1e3:7.2f} ms   speedup {t1 / tn:4.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    options = parser.parse_args()
    print(f"cores: {os.cpu_count()}   load average before: {os.getloadavg()[0]:.2f}")
    report("gemm 1024x1024x1024 f32", *gemm_times(options.repeats))
    report("fused transcendentals, 4M f32", *fused_times(options.repeats))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
