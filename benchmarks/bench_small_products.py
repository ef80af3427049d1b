"""Where a product stops being a fused loop and becomes a GEMM call (step_policy.SMALL_PRODUCT).

Run: PYTHONPATH=. python benchmarks/bench_small_products.py [--sizes 8,16,32,64,128]

For each m, n, k (and the layouts grads make: b transposed, a transposed, a batched
einsum) it times a jitted product per call, steady state, compiled once as a fused loop
(the threshold set above the product) and once on the GEMM (the threshold at 0): best of
several repeats, since the machine is shared. The first-call side, what a GEMM family costs
to compile and to load, is bench_first_call.py's matmul rows.
"""
import argparse
import itertools
import time

import numpy as np

import jaxlite
from jaxlite.lower import step_policy

LAYOUTS = {
    "a @ b": (lambda m, n, k: ((m, k), (k, n)), lambda a, b: a @ b),
    "a @ b.T": (lambda m, n, k: ((m, k), (n, k)), lambda a, b: a @ b.T),
    "a.T @ b": (lambda m, n, k: ((k, m), (k, n)), lambda a, b: a.T @ b),
    "batch 4": (lambda m, n, k: ((4, m, k), (4, k, n)), lambda a, b: jaxlite.numpy.einsum("bij,bjk->bik", a, b)),
}


def best_time(fn, min_seconds=0.05, repeats=5):
    fn()
    start = time.perf_counter()
    fn()
    runs = max(1, int(min_seconds / max(time.perf_counter() - start, 1e-7)))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(runs):
            fn()
        times.append((time.perf_counter() - start) / runs)
    return min(times)


def time_product(product, a, b, threshold):
    step_policy.SMALL_PRODUCT = threshold
    jaxlite.clear_caches()
    f = jaxlite.jit(product)
    f(a, b).block_until_ready()
    return best_time(lambda: f(a, b).block_until_ready())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="8,16,32,64,128")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    rng = np.random.default_rng(0)
    default = step_policy.SMALL_PRODUCT
    print(f"us per call (fused loop / GEMM; ratio below 1: the fused loop is faster); threshold now {default}")
    for layout in options.layouts.split(","):
        shapes, product = LAYOUTS[layout]
        for m, n, k in itertools.product(sizes, repeat=3):
            a, b = (jaxlite.numpy.asarray(rng.standard_normal(s, dtype=np.float32)) for s in shapes(m, n, k))
            fused = time_product(product, a, b, 2 ** 62)
            gemm = time_product(product, a, b, 0)
            print(f"{layout:8s} m={m:4d} n={n:4d} k={k:4d} mnk={m * n * k:9d}  "
                  f"{fused * 1e6:8.2f} {gemm * 1e6:8.2f}  {fused / gemm:6.2f}", flush=True)
    step_policy.SMALL_PRODUCT = default


if __name__ == "__main__":
    main()
