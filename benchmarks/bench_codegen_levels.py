"""What a cheaper code generator would buy as a first tier, and what its code costs.

    python benchmarks/bench_codegen_levels.py [--levels 3 0] [--runs 3]

For each code generator level (llvm_target.CODEGEN_LEVEL), fresh processes with a kernel
directory of their own (filled by an untimed process at the same level, as a machine's
would be): the CPU time of first calls (the 40-function session of bench_first_call.py, a
small MLP's jit(grad), the CNN step of run.py) and the CPU time LLVM spent generating
machine code in them; then the steady state (medians per call) of run.py's matmul 1024,
MLP, CNN and value_and_grad MLP steps. Medians over the runs.
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

_CHILD = r"""
import json, statistics, sys, time
sys.path[:0] = [{root!r}, {root!r} + "/benchmarks"]
from jaxlite.lower import llvm_target
llvm_target.CODEGEN_LEVEL = {level}
emitted = [0.0]
_emit = llvm_target.emit_object
def emit_object(*args):
    start = time.thread_time()
    try:
        return _emit(*args)
    finally:
        emitted[0] += time.thread_time() - start
llvm_target.emit_object = emit_object
import numpy as np
import jaxlite as J, jaxlite.numpy as jnp
import bench_first_call, run
exec(bench_first_call.HELPERS)
def timed(work):
    emitted[0], start = 0.0, time.process_time()
    work()
    return {{"cpu": (time.process_time() - start) * 1e3, "codegen": emitted[0] * 1e3}}
backend = run._backends()["jaxlite"]
J.jit(lambda x: x + 1.0)(1.0).block_until_ready()     # the process's start-up, untimed
result = {{"session": timed(lambda: exec(bench_first_call._SESSION, dict(globals())))}}
result["mlp_grad"] = timed(lambda: exec(bench_first_call._WORK["mlp_grad"], dict(globals())))
steady = {{}}
for name in ("cnn_train_step", "matmul_1024", "mlp_train_step", "value_and_grad_mlp"):
    fn, args = getattr(run, name)(backend)
    if name == "cnn_train_step":
        result["cnn_first_call"] = timed(lambda: ready(fn(*args)))
    ready(fn(*args))
    times = []
    for _ in range(15):
        start = time.perf_counter()
        ready(fn(*args))
        times.append(time.perf_counter() - start)
    steady[name] = statistics.median(times) * 1e3
result["steady"] = steady
print(json.dumps(result))
"""


def _child(level, kernels):
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env["JAXLITE_KERNEL_CACHE_DIR"] = str(kernels)
    program = _CHILD.format(root=str(ROOT), level=level)
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", type=int, nargs="*", default=[3, 0])
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    results = {level: [] for level in options.levels}
    with tempfile.TemporaryDirectory() as scratch:
        for level in options.levels:        # the kernel directory filled at this level first
            _child(level, Path(scratch) / f"kernels{level}")
        for _ in range(options.runs):
            for level in options.levels:    # alternated
                results[level].append(_child(level, Path(scratch) / f"kernels{level}"))
    median = lambda level, get: statistics.median(get(r) for r in results[level])
    print(f"medians of {options.runs} processes; first calls: CPU ms (of it, code generation)")
    print(f"{'':24s}" + "".join(f"{'level ' + str(level):>22s}" for level in options.levels))
    for name in ("session", "mlp_grad", "cnn_first_call"):
        cells = [f"{median(level, lambda r: r[name]['cpu']):10.1f} ({median(level, lambda r: r[name]['codegen']):6.1f})"
                 for level in options.levels]
        print(f"{name:24s}" + "".join(f"{cell:>22s}" for cell in cells))
    print("steady state, ms per call")
    for name in results[options.levels[0]][0]["steady"]:
        print(f"{name:24s}" + "".join(f"{median(level, lambda r: r['steady'][name]):22.2f}" for level in options.levels))


if __name__ == "__main__":
    main()
