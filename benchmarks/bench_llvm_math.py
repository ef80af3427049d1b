"""Time the compiled float32 exp, tanh and log loops against numpy over 4M elements.

Run: PYTHONPATH=. python benchmarks/bench_llvm_math.py
Prints the best of several runs for each and numpy_time / compiled_time (above 1: faster).
"""
import ctypes
import time

import numpy as np
from llvmlite import ir

from jaxlite import test_util
from jaxlite.lower import llvm_math, llvm_target

SIZE = 4 * 1024 * 1024
REPEATS = 20
CASES = {"exp": np.exp, "tanh": np.tanh, "log": np.log, "sin": np.sin, "erf": None}


def compile_loops(names):
    module = ir.Module()
    for name in names:
        test_util.define_map_kernel(module, name, llvm_math.EMITTERS[name], ir.FloatType())
    compiled = llvm_target.compile_ir(module)
    signature = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return compiled, {name: signature(compiled.address(name)) for name in names}


def best_time(run):
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    compiled, loops = compile_loops(list(CASES))
    x = np.random.default_rng(0).uniform(0.01, 10, SIZE).astype(np.float32)
    out = np.empty_like(x)
    print("%-6s %12s %12s %8s" % ("fn", "compiled ms", "numpy ms", "ratio"))
    for name, numpy_function in CASES.items():
        loop = loops[name]
        ours = best_time(lambda: loop(x.ctypes.data, out.ctypes.data, SIZE))
        theirs = best_time(lambda: numpy_function(x, out=out)) if numpy_function else float("nan")
        print("%-6s %12.3f %12.3f %8.2f" % (name, ours * 1e3, theirs * 1e3, theirs / ours))


if __name__ == "__main__":
    main()
