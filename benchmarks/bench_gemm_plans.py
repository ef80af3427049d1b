"""The GEMM plans of the MLP training step (784-512-512-10, batch 256) side by side.

    python benchmarks/bench_gemm_plans.py [--rounds N]

For each GEMM shape of the step: the cost model's plan, what measuring would pick, and
every candidate's best time over interleaved rounds (one thread; all threads along rows
or columns, one or two units per thread), plus what measuring that shape costs. The
data behind jaxlite_autotune's default (lower/autotune.py).
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxlite.lower import autotune, gemm  # noqa: E402
from jaxlite.lower.runtime import GEMM_THREADS  # noqa: E402

# (m, n, k, trans_a, trans_b): forward, input gradients, weight gradients.
MLP_SHAPES = [(256, 512, 784, False, False), (256, 512, 512, False, False), (256, 10, 512, False, False),
              (256, 512, 10, False, True), (256, 512, 512, False, True),
              (784, 512, 256, True, False), (512, 512, 256, True, False), (512, 10, 256, True, False)]


def candidate_times(kernel, rounds):
    pointers, _arrays = autotune._scratch_pointers(kernel)
    plans = kernel.candidate_plans(GEMM_THREADS)
    best = {plan: float("inf") for plan in plans}
    for _ in range(rounds):
        for plan in plans:
            start = time.perf_counter()
            kernel.run_pointers(pointers, plan)
            best[plan] = min(best[plan], time.perf_counter() - start)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    for m, n, k, trans_a, trans_b in MLP_SHAPES:
        kernel = gemm.compile_gemm(m, n, k, trans_a=trans_a, trans_b=trans_b)
        best = candidate_times(kernel, args.rounds)
        start = time.perf_counter()
        measured = autotune.measure(kernel, GEMM_THREADS)
        cost = time.perf_counter() - start
        flops = 2 * m * n * k
        print(f"{m}x{n}x{k}{' tA' if trans_a else ''}{' tB' if trans_b else ''} ({flops / 1e6:.1f} MFLOP): "
              f"model {kernel.model_plan(GEMM_THREADS).describe()}; measuring picks {measured.describe()} "
              f"in {cost * 1e3:.1f} ms")
        for plan, seconds in sorted(best.items(), key=lambda item: item[1]):
            print(f"    {plan.describe():45} {seconds * 1e6:8.0f} us {flops / seconds / 1e9:6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
