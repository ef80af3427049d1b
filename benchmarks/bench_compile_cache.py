"""Cold compile against a warm persistent cache: the MLP training step in fresh processes.

    python benchmarks/bench_compile_cache.py [--runs N]

Each measurement runs in a new process (the in-memory cache is empty): once with an
empty cache directory (cold: trace, passes, codegen, LLVM; entries are written),
then with the same directory (warm: trace, key, load). "compile side" is the time
jit spends before running the program: tracing (with the signature lookup) plus
compiling or loading, with jaxlite's modules already imported (CPU: the process's
CPU time in those phases, steadier than wall time on a busy machine); "first call"
also includes running the step once.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child():
    import numpy as np

    import jaxlite
    import jaxlite.numpy as jnp
    from jaxlite.examples import mlp
    from jaxlite.lower import disk_cache, pipeline, program_cache  # noqa: F401 (imported up front)
    from jaxlite.transforms import jit as jit_module

    spent = {"trace": 0.0, "compile": 0.0, "cpu": 0.0}

    def timed(phase, method):
        def wrapper(*args, **kwargs):
            start, start_cpu = time.perf_counter(), time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - start
                spent["cpu"] += time.process_time() - start_cpu
        return wrapper

    jit_module.JittedFunction._entry = timed("trace", jit_module.JittedFunction._entry)
    jit_module._compile = timed("compile", jit_module._compile)

    params = mlp.init_params([784, 512, 512, 10])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 784)).astype(np.float32)
    y = mlp.one_hot(rng.integers(0, 10, 256), 10)
    grad = jaxlite.grad(lambda p, x, y: mlp.loss(jnp, p, x, y))

    def step(p, x, y):
        return mlp.sgd(p, grad(p, x, y), 0.01)

    train_step = jaxlite.jit(step)
    args = ([(jnp.asarray(w), jnp.asarray(b)) for w, b in params], jnp.asarray(x), jnp.asarray(y))
    start = time.perf_counter()
    jaxlite.block_until_ready(train_step(*args))
    first = time.perf_counter() - start
    print(json.dumps({"first": first, "trace": spent["trace"], "compile": spent["compile"], "cpu": spent["cpu"],
                      "disk": disk_cache.stats}))


def run_child(cache_dir):
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=cache_dir, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--child"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", action="store_true")
    options = parser.parse_args()
    if options.child:
        child()
        return
    cold, warm = [], []
    for _ in range(options.runs):
        with tempfile.TemporaryDirectory() as parent:
            cache_dir = os.path.join(parent, "cache")
            cold.append(run_child(cache_dir))
            warm.append(run_child(cache_dir))
    assert all(r["disk"]["misses"] == 0 for r in warm), "the warm process compiled"
    print("MLP training step (784-512-512-10, batch 256), median of", options.runs, "fresh processes")
    for name, results in (("cold compile", cold), ("warm disk cache", warm)):
        median = {k: statistics.median(r[k] for r in results) for k in ("trace", "compile", "cpu", "first")}
        print(f"{name:16s} compile side {1e3 * (median['trace'] + median['compile']):8.1f} ms "
              f"(trace {1e3 * median['trace']:6.1f}, compile/load {1e3 * median['compile']:7.1f}; "
              f"CPU {1e3 * median['cpu']:7.1f})   first call {1e3 * median['first']:8.1f} ms")


if __name__ == "__main__":
    main()
