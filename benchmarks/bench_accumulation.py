"""Accuracy and speed of float32 accumulation under jit, before and after blocked sums
(codegen._blocked_sum: blocks of SUM_BLOCK points, the block sums added in float64) and
float64 scans (pipeline.WIDENED_FLOAT32_SCANS: cumsum), side by side in one process.

Run: PYTHONPATH=. python benchmarks/bench_accumulation.py [n]
Prints, per program over n float32 values in [0.5, 1.5): the relative error against a float64
reference (max over the outputs for cumsum), before and after, and JAX's (recorded with JAX
0.10.2 on CPU, n = 1e7), then the best time of several calls before and after and their ratio
(before / after: above 1, faster after). "before" disables both changes.
"""
import sys
import time

import numpy as np

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.lower import codegen, pipeline
from jaxlite.transforms import jit as jit_module

REPEATS = 7
# JAX 0.10.2, jit on CPU, n = 1e7, the same inputs (seed 0): relative errors.
JAX_ERRORS = {"sum(a*a)": 3.88e-08, "var": 2.79e-08, "sum": 3.09e-08, "dot": 3.88e-08, "cumsum": 3.25e-07}


def programs(a):
    wide = a.astype(np.float64)
    return {"sum(a*a)": (lambda x: jnp.sum(x * x), np.sum(wide * wide)),
            "var": (jnp.var, np.var(wide)),
            "sum": (jnp.sum, np.sum(wide)),
            "dot": (lambda x: jnp.dot(x, x), np.dot(wide, wide)),
            "cumsum": (jnp.cumsum, np.cumsum(wide))}


def set_mode(after):
    codegen.SUM_BLOCK = 4096 if after else 1 << 62
    pipeline.WIDENED_FLOAT32_SCANS = frozenset({"cumsum"}) if after else frozenset()
    jit_module.clear_caches()


def measure(fun, a, reference):
    compiled = jaxlite.jit(fun)
    out = np.asarray(compiled(a), np.float64)
    error = float(np.max(np.abs(out - reference) / np.abs(reference)))
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        jaxlite.block_until_ready(compiled(a))
        times.append(time.perf_counter() - start)
    return error, min(times)


def main(n):
    a = np.random.default_rng(0).random(n, dtype=np.float32) + 0.5
    print(f"n = {n}: relative error (before, after, JAX at 1e7) | best time ms (before, after, before/after)")
    for name, (fun, reference) in programs(a).items():
        results = {}
        for after in (False, True, False, True):          # interleaved: the machine is shared
            set_mode(after)
            error, seconds = measure(fun, a, reference)
            best = results.get(after, (error, seconds))
            results[after] = (error, min(best[1], seconds))
        (e0, t0), (e1, t1) = results[False], results[True]
        print(f"{name:9s} {e0:9.2e} {e1:9.2e} {JAX_ERRORS[name]:9.2e} | {t0 * 1e3:8.2f} {t1 * 1e3:8.2f} {t0 / t1:6.2f}")
    set_mode(True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10 ** 7)
