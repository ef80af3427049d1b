"""Operator selection for GEMM calls: which GemmPlan runs a GEMM of a given shape.

A compiled GEMM family serves every shape; what differs per call is how the work is
cut up (gemm.GemmPlan): one thread or all of them, C split along its rows or its
columns, one unit of work per thread or smaller units taken in turn. The cost model
(GemmKernel.model_plan) answers without measuring: every thread that gets more than
a hand-off's worth of work, along the rows unless too few row tiles go round.

Where the model's answer is a close call, measuring decides. Measured on the MLP
training step (784-512-512-10, batch 256) on this 2-core machine
(benchmarks/bench_gemm_plans.py): the big GEMMs (130-200 MFLOP, 1-2 ms on one core)
are the model's easy cases (two threads along the rows nearly halve them on an idle
machine) and measuring them cost 40-90 ms of compile time each at load 10; the small
ones (the 10-wide last layer, ~2.6 MFLOP, 40-90 us) are where one thread, two, or
another split trade places with the hand-off cost and the machine's load, and
measuring all their candidates cost 1-2 ms each. So with `jaxlite_autotune` on (the
default) a GEMM of at most `jaxlite_autotune_max_flops` (default 32 MFLOP, ~0.3 ms on
one core here) is measured once: each candidate runs on scratch buffers in up to
three interleaved rounds (fewer once 2 ms are spent, after a warm-up run per thread
count), and the fastest minimum wins. Raising the limit measures bigger GEMMs too;
turning the option off gives the model's plan, the same on every compile.

A winner is remembered per (family: dtype, transposes, epilogue, vector width;
sizes, batch strides; threads available) in a process-wide table and, with the
persistent compilation cache on, in an entry of its own (the host is part of every
disk key), so later compiles and fresh processes reuse it without measuring. A
compiled program also keeps the plans of its GEMM calls, in its own cache entry.
"""
import dataclasses
import threading
import time

import numpy as np

from jaxlite.core.config import config
from jaxlite.lower import disk_cache, program_cache
from jaxlite.lower.gemm import GemmPlan

# measured: GEMM shapes measured; candidate_runs: timed runs of a candidate;
# seconds: compile time spent measuring.
stats = {"measured": 0, "candidate_runs": 0, "seconds": 0.0}
_table = {}
_table_lock = threading.Lock()
_ROUNDS = 3
# Rounds after the first stop once measuring a GEMM has taken this long: on a busy
# machine a multi-threaded candidate can wait a scheduler time slice for its helper.
_BUDGET_S = 0.002


def plan_for(kernel, threads):
    """The GemmPlan for `kernel` (a gemm.GemmKernel) with up to `threads` threads."""
    if not config.jaxlite_autotune or kernel.flops > float(config.jaxlite_autotune_max_flops):
        return kernel.model_plan(threads)
    key = _key_text(kernel, threads)
    with _table_lock:
        plan = _table.get(key)
        if plan is None:
            plan = _table[key] = _remembered_or_measured(kernel, threads, key)
    return plan


def _key_text(kernel, threads):
    spec = kernel.spec
    return (f"{program_cache.gemm_family_text(spec.family)} m={spec.m} n={spec.n} k={spec.k} "
            f"batch={spec.batch} strides={spec.a_batch_stride},{spec.b_batch_stride} threads={threads}")


def _remembered_or_measured(kernel, threads, key):
    if disk_cache.directory() is None:
        return measure(kernel, threads)
    return program_cache.load_or_build(
        disk_cache.make_key("gemm-plan", key.encode()), f"gemm plan {key}",
        lambda: measure(kernel, threads), dataclasses.asdict, lambda stored: GemmPlan(**stored))


def measure(kernel, threads):
    """Time every candidate plan on scratch buffers; the fastest, marked "measured"."""
    began = time.perf_counter()
    stats["measured"] += 1
    pointers, _keep_alive = _scratch_pointers(kernel)
    candidates = kernel.candidate_plans(threads)
    best = {plan: float("inf") for plan in candidates}
    # Warm up once per thread count (workspaces, pages, caches, the pool's threads):
    # the candidates of a count share all of that.
    for plan in {plan.threads: plan for plan in candidates}.values():
        kernel.run_pointers(pointers, plan)
    for round_number in range(_ROUNDS):         # interleaved: a burst of load hits all alike
        if round_number and time.perf_counter() - began > _BUDGET_S:
            break
        for plan in candidates:
            start = time.perf_counter()
            kernel.run_pointers(pointers, plan)
            best[plan] = min(best[plan], time.perf_counter() - start)
            stats["candidate_runs"] += 1
    winner = min(candidates, key=best.__getitem__)
    stats["seconds"] += time.perf_counter() - began
    return dataclasses.replace(winner, origin="measured")


def _scratch_pointers(kernel):
    """Data pointers for A, B, C and the epilogue arguments, sized for the kernel's
    sizes and batch strides, and the arrays that own them."""
    spec = kernel.spec
    matrix = spec.m * spec.n
    counts = [(spec.batch - 1) * spec.a_batch_stride + spec.m * spec.k,
              (spec.batch - 1) * spec.b_batch_stride + spec.k * spec.n,
              spec.batch * matrix]
    counts += [{"columns": spec.n, "rows": spec.m, "tile": spec.batch * matrix, "scalar": 1}[kind]
               for kind in spec.epilogue_kinds]
    # Any value would do (FTZ is on); ones stay finite through every epilogue.
    arrays = [np.ones(count, spec.dtype) for count in counts]
    return [array.ctypes.data for array in arrays], arrays


def clear():
    """Forget every remembered plan (tests; a changed machine)."""
    with _table_lock:
        _table.clear()
