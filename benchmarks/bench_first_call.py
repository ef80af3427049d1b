"""First calls, side by side with JAX: what a user waits for before anything runs fast.

    python benchmarks/bench_first_call.py [--runs N] [--only NAME ...] [--jax-python PATH] [--json FILE]

Every measurement is one fresh process (nothing in memory), jaxlite's and JAX's
alternated, and what is reported is CPU time (time.process_time: all of the
process's threads), which a loaded machine disturbs far less than wall time;
medians over the runs, and jaxlite / JAX ratios (below 1: jaxlite needs less).
Two figures per scenario: "work", the CPU time of the timed work alone, and "total",
everything from the import on (import, pause, work): what a library does in the
background during the pause counts in the total only.

Scenarios (each process imports its library, waits `pause` seconds, the time a
program spends building its data and defining its functions, then does the timed work):
    import            the import alone
    cold              jit(lambda x: x + 1.0)(1.0), the process's first compile, at once
    cold_after_pause  the same 0.3 s after the import
    cold_defined_early  the same function made by jit before the 0.3 s (as a program defines its
                      functions first, then builds its data), called after it
    warm              the same with a warm persistent compilation cache (filled by an
                      earlier process), at once
    warm_after_pause  the same 0.3 s after the import
    matmul            a first 16x32x64 float32 product
    einsum            a first small einsum ("bij,bjk->bik", 4x16x32 by 4x32x8)
    hessian           a first jit(hessian(f)) of f: R^16 -> R
    mlp_grad          a first jit(grad(loss)) of a 2-layer MLP (32-64-10, batch 16)
    *_after_jit       matmul, hessian: after a first jit (untimed), so that the library's
                      start-up (JAX's backend, jaxlite's warm-up) is out of the figure
    session           40 functions (10 kinds, 4 sizes), each compiled and called once
    session_warm      the same 40 with a warm persistent compilation cache
jaxlite keeps its own shape-independent machine code (GEMM families, the trampoline,
the pool) in a kernel directory (lower/disk_cache.py); each run gets a fresh one that
an untimed process of the same program fills first, as an earlier run of it would. The rows
marked "first run ever" use an empty kernel directory instead. Python's bytecode is
written to a private prefix and warmed once, as installed packages have theirs.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JAX_PYTHON = "/work/jaxref/bin/python"

_PRELUDE = """
import json, sys, time
import numpy as np
_cpu0 = time.process_time()
if {jax}:
    import jax as J, jax.numpy as jnp
    if {cache_dir!r}:
        J.config.update("jax_compilation_cache_dir", {cache_dir!r})
        J.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        J.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
else:
    import jaxlite as J, jaxlite.numpy as jnp
    if {cache_dir!r}:
        J.config.update("jax_compilation_cache_dir", {cache_dir!r})
_import = time.process_time() - _cpu0
{setup}
time.sleep({pause})
if {after_jit}:
    J.jit(lambda x: x + 1.0)(1.0).block_until_ready()
{helpers}
_cpu1 = time.process_time()
"""

# What the work snippets use (J, jnp and np imported): random float32 data and waiting for results.
HELPERS = """
rng = np.random.default_rng(0)
def data(*shape):
    return jnp.asarray(rng.standard_normal(shape).astype(np.float32))
def ready(tree):
    for leaf in J.tree_util.tree_leaves(tree):
        leaf.block_until_ready()
"""

_EPILOGUE = """
_work = time.process_time() - _cpu1
_total = time.process_time() - _cpu0
print(json.dumps({"import": _import * 1e3, "work": _work * 1e3, "total": _total * 1e3}))
"""

_SESSION = """
kinds = [
    lambda x, w: x + 1.0,
    lambda x, w: jnp.sin(x) * x,
    lambda x, w: jnp.sum(x * x),
    lambda x, w: x @ w,
    lambda x, w: jnp.tanh(x @ w + 1.0),
    lambda x, w: jnp.mean(x, axis=0),
    lambda x, w: jnp.exp(x) / jnp.sum(jnp.exp(x), axis=1, keepdims=True),
    lambda x, w: jnp.max(x, axis=1),
    lambda x, w: jnp.where(x > 0, x, 0.1 * x),
    lambda x, w: (x.T + w).reshape(-1)[:8],
]
for n in (8, 16, 32, 64):
    x, w = data(n, n), data(n, n)
    for kind in kinds:
        ready(J.jit(lambda x, w, kind=kind: kind(x, w))(x, w))
"""

_WORK = {
    "import": "",
    "cold": "ready(J.jit(lambda x: x + 1.0)(1.0))",
    "cold_defined_early": "ready(f(1.0))",
    "matmul": "a, b = data(16, 64), data(64, 32)\nready(J.jit(lambda a, b: a @ b)(a, b))",
    "einsum": ("a, b = data(4, 16, 32), data(4, 32, 8)\n"
               "ready(J.jit(lambda a, b: jnp.einsum('bij,bjk->bik', a, b))(a, b))"),
    "hessian": ("x = data(16)\n"
                "f = lambda x: jnp.sum(jnp.sin(x) * x ** 2) + jnp.sum(x) ** 2\n"
                "ready(J.jit(J.hessian(f))(x))"),
    "mlp_grad": ("params = [(data(32, 64) * 0.1, data(64)), (data(64, 10) * 0.1, data(10))]\n"
                 "x, y = data(16, 32), data(16, 10)\n"
                 "def loss(params, x, y):\n"
                 "    for w, b in params[:-1]:\n"
                 "        x = jnp.tanh(x @ w + b)\n"
                 "    w, b = params[-1]\n"
                 "    return jnp.mean((x @ w + b - y) ** 2)\n"
                 "ready(J.jit(J.grad(loss))(params, x, y))"),
    "session": _SESSION,
}

# name -> (work, pause before it, warm persistent cache?, after a first jit?)
SCENARIOS = {
    "import": ("import", 0.0, False, False),
    "cold": ("cold", 0.0, False, False),
    "cold_after_pause": ("cold", 0.3, False, False),
    "cold_defined_early": ("cold_defined_early", 0.3, False, False),
    "warm": ("cold", 0.0, True, False),
    "warm_after_pause": ("cold", 0.3, True, False),
    "matmul": ("matmul", 0.3, False, False),
    "matmul_after_jit": ("matmul", 0.3, False, True),
    "einsum": ("einsum", 0.3, False, False),
    "hessian": ("hessian", 0.3, False, False),
    "hessian_after_jit": ("hessian", 0.3, False, True),
    "mlp_grad": ("mlp_grad", 0.3, False, False),
    "session": ("session", 0.3, False, False),
    "session_warm": ("session", 0.3, True, False),
}
# Also run with an empty kernel directory (jaxlite's first run on a machine).
FIRST_EVER = ("cold", "matmul", "matmul_after_jit", "session")


# What a scenario does before its pause (untimed but in the total).
_SETUP = {"cold_defined_early": "f = J.jit(lambda x: x + 1.0)"}


def _program(name, jax, cache_dir):
    work, pause, _, after_jit = SCENARIOS[name]
    prelude = _PRELUDE.format(jax=jax, cache_dir=cache_dir, pause=pause, after_jit=after_jit,
                              setup=_SETUP.get(work, ""), helpers=HELPERS)
    return prelude + _WORK[work] + _EPILOGUE


def _run(python, program, env):
    done = subprocess.run([python, "-c", program], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(f"{python} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class Runner:
    """Fresh processes for one library, with its own bytecode prefix and kernel directory."""

    def __init__(self, python, jax, scratch):
        self.python, self.jax, self.scratch = python, jax, Path(scratch)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "JAX_COMPILATION_CACHE_DIR", "JAXLITE_KERNEL_CACHE_DIR")}
        env.update(PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(self.scratch / "pycache"))
        self.env = env
        self.count = 0

    def measure(self, name, first_ever=False):
        self.count += 1
        run_dir = self.scratch / f"run{self.count}"
        env = dict(self.env, JAXLITE_KERNEL_CACHE_DIR=str(run_dir / "kernels"))
        cache_dir = str(run_dir / "cache") if SCENARIOS[name][2] else ""
        program = _program(name, self.jax, cache_dir)
        # Filled first by the same program (as by an earlier run of it): jaxlite's kernel
        # directory unless this is its first run ever, and either library's warm cache.
        if cache_dir or not (self.jax or first_ever):
            _run(self.python, program, env)
        return _run(self.python, program, env)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--jax-python", default=JAX_PYTHON)
    parser.add_argument("--json", default=None)
    options = parser.parse_args()
    names = options.only or list(SCENARIOS)
    rows = [(name, False) for name in names] + [(name, True) for name in names if name in FIRST_EVER]
    have_jax = Path(options.jax_python).exists()
    results = {row: {"jaxlite": [], "jax": []} for row in rows}
    with tempfile.TemporaryDirectory() as scratch:
        runners = {"jaxlite": Runner(sys.executable, False, Path(scratch) / "jaxlite")}
        if have_jax:
            runners["jax"] = Runner(options.jax_python, True, Path(scratch) / "jax")
        for runner in runners.values():      # bytecode written once, untimed
            runner.measure("import")
        for _ in range(options.runs):
            for row in rows:
                for library, runner in runners.items():      # alternated
                    if row[1] and library == "jax":
                        continue
                    results[row][library].append(runner.measure(*row))
    _report(rows, results, options)


def _median(samples, field):
    return statistics.median(s[field] for s in samples) if samples else float("nan")


def _report(rows, results, options):
    field_of = lambda name: "import" if name == "import" else "work"
    print(f"CPU ms, medians of {options.runs} fresh processes (jaxlite / JAX < 1: jaxlite needs less)")
    print(f"{'scenario':34s} {'jaxlite':>9s} {'JAX':>9s} {'ratio':>7s}   total: {'jaxlite':>9s} {'JAX':>9s} {'ratio':>7s}")
    table = {}
    for name, first_ever in rows:
        label = name + (" (first run ever)" if first_ever else "")
        table[label] = {}
        columns = []
        for field in (field_of(name), "total"):
            mine = _median(results[(name, first_ever)]["jaxlite"], field)
            theirs = _median(results[(name, False)]["jax"], field)
            table[label].update({f"jaxlite_{field}": mine, f"jax_{field}": theirs})
            ratio = mine / theirs if theirs == theirs and theirs else float("nan")
            columns.append(f"{mine:9.1f} {theirs:9.1f} {ratio:7.2f}")
        print(f"{label:34s} {columns[0]}   total: {columns[1]}")
    if "cold" in [name for name, _ in rows]:
        samples = results[("cold", False)]
        totals = {library: statistics.median(s["import"] + s["work"] for s in samples[library])
                  for library in samples if samples[library]}
        print("import + cold first call: " + ", ".join(f"{k} {v:.0f} ms" for k, v in totals.items()))
    if options.json:
        Path(options.json).write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
