"""The worker pool: native threads that wait for work by spinning, then sleeping.

A split kernel or GEMM hands its units of work to the other cores through
`jaxlite_pool_run(task, ctx, units)`: every unit u runs as `task(ctx, u, slot)`, on the
calling thread (slot 0) or on a worker (slot 1, 2, ...; a task keeps per-slot scratch
apart by it), and the call returns when all units are done. Why not a Python thread
pool: waking a Python thread through a futex and taking the GIL cost tens of
microseconds per hand-off, so a 1000x64x64 product (~100 us on one core) could not be
split; a worker spinning on a shared word picks up work in well under a microsecond, as
OpenBLAS's and Eigen's workers do. A worker spins for `SPIN_SECONDS` after its last
unit, then sleeps on a futex (no CPU spent while a program is idle).

Protocol (all state in the module's globals, each on its own cache line):
  * `seq` is a sequence lock over the job (task, ctx, units): odd while the caller
    writes it, even once published. Workers read the job and check `seq` again.
  * `claim` holds (seq of the job << 32 | next unit): a worker takes unit u by
    compare-and-swap, so a worker late with an old job's fields cannot take a unit of
    a newer job. The caller takes units with an atomic add.
  * `done` counts finished units; the caller returns when it reaches `units`. A caller
    that has waited an eighth of SPIN_SECONDS yields its core while it waits: on a
    machine with more runnable threads than cores, the worker it waits for may need it.
  * `busy` admits one caller at a time: another thread (or a task inside a task) finds
    it taken and runs its units itself, on slot 0 of its own scratch.
Workers are Python threads that call `jaxlite_pool_worker` through ctypes (the GIL is
released there, and never taken again until the pool stops at exit). They only run
compiled code, so they flush denormals (FTZ/DAZ) for good, as the calling thread does
inside an entry point.

A step made of several jobs in turn (a low-precision product: quantize or pack its
operands, then the GEMM's units) runs as one `jaxlite_run_jobs(jobs, operands, scratch)`
call: `jobs` (a JobList, built when the program is bound) says each job's task, units
and context, whose words are constants, pointers to the step's operands, or addresses
in the caller's scratch.

The pool's functions are linked into this process under their names (llvm.add_symbol),
so generated code, compiled now or loaded from the persistent cache, calls
`jaxlite_pool_run` directly.
"""
import atexit
import ctypes
import os
import threading
import time
from typing import NamedTuple

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from jaxlite.lower import llvm_target
from jaxlite.lower.llvm_helpers import (I32, I64, PTR, VOID, as_i64, call_intrinsic, emit_choice, emit_loop,
                                        internal_global, load, save_and_flush_denormals, store)

SPIN_SECONDS = 2e-4         # a worker's wait for more work before it sleeps
MAX_CONTEXT_WORDS = 32      # the longest context of a job in a JobList
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE, _SYS_FUTEX, _SYS_SCHED_YIELD = 128, 129, 202, 24

TASK = ir.FunctionType(VOID, [PTR, I64, I64])     # task(ctx, unit, slot)
_UNIT_MASK = (1 << 32) - 1      # the unit half of `claim`
_ALL_WAITERS = 2 ** 31 - 1


class _PoolModule:
    """Builds the pool's LLVM module: its shared words as globals, then each function."""

    def __init__(self):
        self.module = ir.Module(name="jaxlite_pool")
        words = [("seq", I32, 64), ("sleepers", I32, 64), ("job_task", TASK.as_pointer(), 64),
                 ("job_ctx", I64, 8), ("job_units", I64, 8), ("claim", I64, 64), ("done", I64, 64),
                 ("busy", I32, 64), ("quit", I32, 64), ("spin_cycles", I64, 64)]
        self.words = {name: internal_global(self.module, name, ty, align) for name, ty, align in words}
        self.syscall = ir.Function(self.module, ir.FunctionType(I64, [I64], var_arg=True), "jaxlite_syscall")
        self._define_cycles()
        self._define_configure()
        self.wake_sleepers = self._define_wake_sleepers()
        self.run_serially = self._define_run_serially()
        self.pool_run = self._define_pool_run()
        self._define_worker()
        self._define_stop()
        self._define_run_jobs()
        self._define_after_fork()

    # -- small pieces
    def function(self, name, arg_types, internal=False):
        function = ir.Function(self.module, ir.FunctionType(VOID, arg_types), name)
        if internal:
            function.linkage = "internal"
        return function, ir.IRBuilder(function.append_basic_block("entry"))

    def get(self, b, name, ordering, align=None):
        variable = self.words[name]
        return b.load_atomic(variable, ordering, align or _size(variable.value_type), typ=variable.value_type)

    def put(self, b, name, value, ordering):
        variable = self.words[name]
        if isinstance(value, int):
            value = ir.Constant(variable.value_type, value)
        b.store_atomic(value, variable, ordering, _size(variable.value_type))

    def add(self, b, name, amount, ordering, op="add"):
        variable = self.words[name]
        return b.atomic_rmw(op, variable, ir.Constant(variable.value_type, amount), ordering)

    def try_lock(self, b):
        """Take `busy` if free; an i1: whether this thread took it."""
        pair = b.cmpxchg(self.words["busy"], ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic")
        return b.extract_value(pair, 1)

    def futex(self, b, operation, *rest):
        b.call(self.syscall, [as_i64(_SYS_FUTEX), self.words["seq"], as_i64(operation), *rest])

    def wake_all(self, b):
        self.futex(b, _FUTEX_WAKE_PRIVATE, as_i64(_ALL_WAITERS))

    @staticmethod
    def cycles(b):
        return call_intrinsic(b, "llvm.readcyclecounter", I64, [])

    @staticmethod
    def pause(b):
        call_intrinsic(b, "llvm.x86.sse2.pause", VOID, [])

    # -- the functions
    def _define_cycles(self):
        function = ir.Function(self.module, ir.FunctionType(I64, []), "jaxlite_cycles")
        b = ir.IRBuilder(function.append_basic_block("entry"))
        b.ret(self.cycles(b))

    def _define_configure(self):
        function, b = self.function("jaxlite_pool_configure", [I64])
        b.store(function.args[0], self.words["spin_cycles"])
        b.ret_void()

    def _define_wake_sleepers(self):
        function, b = self.function("wake_sleepers", [], internal=True)
        with b.if_then(b.icmp_unsigned("!=", self.get(b, "sleepers", "seq_cst"), ir.Constant(I32, 0))):
            self.wake_all(b)
        b.ret_void()
        return function

    def _define_run_serially(self):
        function, b = self.function("run_serially", [TASK.as_pointer(), PTR, I64], internal=True)
        task, ctx, units = function.args

        def run_unit(u):
            b.call(task, [ctx, u, as_i64(0)])
        emit_loop(b, 0, units, run_unit, name="u")
        b.ret_void()
        return function

    def _define_pool_run(self):
        """The caller publishes the job under the sequence lock, takes units itself, then
        waits for the workers' units (yielding its core once it has waited long)."""
        function, b = self.function("jaxlite_pool_run", [TASK.as_pointer(), PTR, I64])
        task, ctx, units = function.args
        serial, attempt, post = (function.append_basic_block(name) for name in ("serial", "try", "post"))
        b.cbranch(b.icmp_signed("<", units, as_i64(2)), serial, attempt)
        b.position_at_end(attempt)
        b.cbranch(self.try_lock(b), post, serial)
        b.position_at_end(serial)
        b.call(self.run_serially, [task, ctx, units])
        b.ret_void()
        b.position_at_end(post)
        self._publish(b, task, ctx, units)
        self._run_own_units(b, function, task, ctx, units)
        self._wait_for_units(b, function, units)
        self.put(b, "busy", 0, "release")
        b.ret_void()
        return function

    def _publish(self, b, task, ctx, units):
        s = self.get(b, "seq", "monotonic")
        self.put(b, "seq", b.add(s, ir.Constant(I32, 1)), "monotonic")      # odd: being written
        b.fence("release")
        self.put(b, "job_task", task, "monotonic")
        self.put(b, "job_ctx", b.ptrtoint(ctx, I64), "monotonic")
        self.put(b, "job_units", units, "monotonic")
        self.put(b, "done", 0, "monotonic")
        generation = b.add(s, ir.Constant(I32, 2))
        self.put(b, "claim", b.shl(b.zext(generation, I64), as_i64(32)), "monotonic")
        self.put(b, "seq", generation, "seq_cst")
        b.call(self.wake_sleepers, [])

    def _run_own_units(self, b, function, task, ctx, units):
        work, run, waiting = (function.append_basic_block(name) for name in ("work", "run", "waiting"))
        b.branch(work)
        b.position_at_end(work)
        unit = b.and_(self.add(b, "claim", 1, "acq_rel"), as_i64(_UNIT_MASK))
        b.cbranch(b.icmp_signed("<", unit, units), run, waiting)
        b.position_at_end(run)
        b.call(task, [ctx, unit, as_i64(0)])
        self.add(b, "done", 1, "release")
        b.branch(work)
        b.position_at_end(waiting)

    def _wait_for_units(self, b, function, units):
        since = self.cycles(b)
        patience = b.lshr(b.load(self.words["spin_cycles"], typ=I64), as_i64(3))
        wait, relax, pause, give_way, finish = (function.append_basic_block(name)
                                                for name in ("wait", "relax", "pause", "yield", "finish"))
        b.branch(wait)
        b.position_at_end(wait)
        b.cbranch(b.icmp_signed(">=", self.get(b, "done", "acquire"), units), finish, relax)
        b.position_at_end(relax)
        b.cbranch(b.icmp_unsigned(">", b.sub(self.cycles(b), since), patience), give_way, pause)
        b.position_at_end(pause)
        self.pause(b)
        b.branch(wait)
        b.position_at_end(give_way)
        b.call(self.syscall, [as_i64(_SYS_SCHED_YIELD)])
        b.branch(wait)
        b.position_at_end(finish)

    def _define_worker(self):
        """A worker spins on `seq` for a new even value, sleeps on a futex after
        spin_cycles, and takes units of the job it sees by compare-and-swap on `claim`."""
        function, b = self.function("jaxlite_pool_worker", [I64])
        slot = function.args[0]
        save_and_flush_denormals(b)     # for good: the thread only ever runs compiled code
        first_seen = self.get(b, "seq", "acquire")
        names = ("idle", "spin", "check", "keep", "relax", "sleep", "futex", "wakeup", "job", "stale",
                 "take", "claim", "run", "finished", "exit")
        blocks = dict(zip(names, (function.append_basic_block(name) for name in names)))
        entry = b.block
        b.branch(blocks["idle"])

        b.position_at_end(blocks["idle"])
        seen = b.phi(I32, "seen")
        start = self.cycles(b)
        b.branch(blocks["spin"])

        b.position_at_end(blocks["spin"])
        s = self.get(b, "seq", "acquire")
        quitting = b.icmp_unsigned("!=", self.get(b, "quit", "monotonic"), ir.Constant(I32, 0))
        b.cbranch(quitting, blocks["exit"], blocks["check"])

        b.position_at_end(blocks["check"])
        even = b.icmp_unsigned("==", b.and_(s, ir.Constant(I32, 1)), ir.Constant(I32, 0))
        b.cbranch(b.and_(b.icmp_unsigned("!=", s, seen), even), blocks["job"], blocks["keep"])

        b.position_at_end(blocks["keep"])
        elapsed = b.sub(self.cycles(b), start)
        tired = b.icmp_unsigned(">", elapsed, b.load(self.words["spin_cycles"], typ=I64))
        b.cbranch(tired, blocks["sleep"], blocks["relax"])

        b.position_at_end(blocks["relax"])
        self.pause(b)
        b.branch(blocks["spin"])

        b.position_at_end(blocks["sleep"])
        self.add(b, "sleepers", 1, "seq_cst")
        s2 = self.get(b, "seq", "seq_cst")
        b.cbranch(b.icmp_unsigned("==", s2, s), blocks["futex"], blocks["wakeup"])

        b.position_at_end(blocks["futex"])
        self.futex(b, _FUTEX_WAIT_PRIVATE, b.zext(s2, I64), ir.Constant(PTR, None))
        b.branch(blocks["wakeup"])

        b.position_at_end(blocks["wakeup"])
        self.add(b, "sleepers", 1, "seq_cst", op="sub")
        b.branch(blocks["idle"])

        b.position_at_end(blocks["job"])
        task = self.get(b, "job_task", "monotonic", 8)
        ctx = b.inttoptr(self.get(b, "job_ctx", "monotonic", 8), PTR)
        units = self.get(b, "job_units", "monotonic", 8)
        b.fence("acquire")
        unchanged = b.icmp_unsigned("==", self.get(b, "seq", "monotonic"), s)
        generation = b.zext(s, I64)
        b.cbranch(unchanged, blocks["take"], blocks["stale"])

        b.position_at_end(blocks["stale"])
        b.branch(blocks["idle"])

        b.position_at_end(blocks["take"])
        c = b.load_atomic(self.words["claim"], "acquire", 8, typ=I64)
        current = b.icmp_unsigned("==", b.lshr(c, as_i64(32)), generation)
        unit = b.and_(c, as_i64(_UNIT_MASK))
        left = b.icmp_signed("<", unit, units)
        b.cbranch(b.and_(current, left), blocks["claim"], blocks["finished"])

        b.position_at_end(blocks["claim"])
        pair = b.cmpxchg(self.words["claim"], c, b.add(c, as_i64(1)), "acq_rel", "acquire")
        b.cbranch(b.extract_value(pair, 1), blocks["run"], blocks["take"])

        b.position_at_end(blocks["run"])
        b.call(task, [ctx, unit, slot])
        self.add(b, "done", 1, "release")
        b.branch(blocks["take"])

        b.position_at_end(blocks["finished"])
        b.branch(blocks["idle"])

        b.position_at_end(blocks["exit"])
        b.ret_void()
        for value, block in ((first_seen, entry), (seen, blocks["wakeup"]), (s, blocks["finished"]),
                             (seen, blocks["stale"])):
            seen.add_incoming(value, block)

    def _define_stop(self):
        function, b = self.function("jaxlite_pool_stop", [])
        lock, relax, stop = (function.append_basic_block(name) for name in ("lock", "relax", "stop"))
        b.branch(lock)
        b.position_at_end(lock)
        b.cbranch(self.try_lock(b), stop, relax)
        b.position_at_end(relax)
        self.pause(b)
        b.branch(lock)
        b.position_at_end(stop)
        self.put(b, "quit", 1, "seq_cst")
        self.add(b, "seq", 2, "seq_cst")
        self.wake_all(b)
        self.put(b, "busy", 0, "release")
        b.ret_void()

    def _define_run_jobs(self):
        """jaxlite_run_jobs(jobs, operands, scratch): per job of the table (see JobList),
        its context words resolved into a stack array, then jaxlite_pool_run."""
        function, b = self.function("jaxlite_run_jobs", [PTR, PTR, I64])
        jobs, operands, scratch = function.args
        ctx = b.alloca(I64, size=as_i64(MAX_CONTEXT_WORDS))
        ctx.align = 64

        def run_job(j, at):
            task = b.inttoptr(load(b, jobs, at, I64), TASK.as_pointer())
            units = load(b, jobs, b.add(at, as_i64(1)), I64)
            words = load(b, jobs, b.add(at, as_i64(2)), I64)
            first = b.add(at, as_i64(3))

            def resolve_word(w):
                kind_at = b.add(first, b.shl(w, as_i64(1)))
                kind, value = load(b, jobs, kind_at, I64), load(b, jobs, b.add(kind_at, as_i64(1)), I64)
                in_scratch = b.select(b.icmp_signed("==", kind, as_i64(2)), b.add(scratch, value), value)
                word, = emit_choice(b, b.icmp_signed("==", kind, as_i64(1)),
                                    lambda: [load(b, operands, value, I64)], lambda: [in_scratch])
                store(b, word, ctx, w)
            emit_loop(b, 0, words, resolve_word, name="w")
            with b.if_then(b.icmp_signed(">", units, as_i64(0))):
                b.call(self.pool_run, [task, ctx, units])
            return [b.add(first, b.shl(words, as_i64(1)))]
        emit_loop(b, 0, load(b, jobs, 0, I64), run_job, carried=[as_i64(1)], name="j")
        b.ret_void()

    def _define_after_fork(self):
        function, b = self.function("jaxlite_pool_after_fork", [])
        self.put(b, "sleepers", 0, "seq_cst")
        self.put(b, "busy", 0, "seq_cst")
        b.ret_void()


def _size(value_type):
    """Bytes of a word (pointers are 8)."""
    return value_type.width // 8 if isinstance(value_type, ir.IntType) else 8


_RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_lock = threading.Lock()


class _Pool:
    """The process's pool: its machine code and worker threads."""

    def __init__(self, workers):
        from jaxlite.lower import program_cache
        llvm.add_symbol("jaxlite_syscall", ctypes.cast(ctypes.CDLL(None).syscall, ctypes.c_void_p).value)
        # Keyed by name: its IR is the same in every process (building and printing it to key
        # the entry took ~3 ms of the pool's start).
        self.code = program_cache.helper_module(lambda: _PoolModule().module, "the native worker pool",
                                                name="worker pool")
        for name in ("jaxlite_pool_run", "jaxlite_pool_worker"):
            llvm.add_symbol(name, self.code.address(name))
        self.run_address = self.code.address("jaxlite_pool_run")
        self.run = _RUN(self.run_address)
        self.jobs_address = self.code.address("jaxlite_run_jobs")
        cycles = ctypes.CFUNCTYPE(ctypes.c_int64)(self.code.address("jaxlite_cycles"))
        self._call("jaxlite_pool_configure", ctypes.c_int64)(int(SPIN_SECONDS * _cycles_per_second(cycles)))
        self.slots = workers + 1
        self._worker = ctypes.CFUNCTYPE(None, ctypes.c_int64)(self.code.address("jaxlite_pool_worker"))
        self.threads = []
        self.start_workers()

    def _call(self, name, *argtypes):
        return ctypes.CFUNCTYPE(None, *argtypes)(self.code.address(name))

    def start_workers(self):
        self.threads = [threading.Thread(target=self._worker, args=(slot,), daemon=True,
                                         name=f"jaxlite-worker-{slot}") for slot in range(1, self.slots)]
        for thread in self.threads:
            thread.start()

    def stop(self):
        """Let the workers return (at exit, before the machine code they run is freed)."""
        self._call("jaxlite_pool_stop")()
        for thread in self.threads:
            thread.join(timeout=1.0)

    def after_fork_in_child(self):
        """The child has this memory but not the threads: new workers, fresh counters."""
        self._call("jaxlite_pool_after_fork")()
        self.start_workers()


_pool = None


def available_cpus():
    """The CPUs this process may run on (taskset, cgroups' cpusets), not the machine's:
    a second thread on one allowed core would only take turns with the first."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def pool():
    """The process's pool, started on first use with a worker per further available CPU."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = _Pool(available_cpus() - 1)
                atexit.register(_pool.stop)
                if hasattr(os, "register_at_fork"):
                    os.register_at_fork(after_in_child=_pool.after_fork_in_child)
    return _pool


def slots():
    """How many threads can run a job's units at once (scratch is needed per slot)."""
    return pool().slots


def run(task_address, ctx_address, units):
    """Run units 0..units-1 of a task (`void task(ptr ctx, i64 unit, i64 slot)`) on the
    pool, the calling thread included; returns when all are done. ctypes releases the
    GIL for the call."""
    pool().run(task_address, ctx_address, units)


def _cycles_per_second(cycles):
    """The time-stamp counter's rate, measured against the clock over ~0.2 ms (both count
    on through a preemption, and reading them is exact to ~0.1 us: well within what a spin
    timeout needs; ~1 ms of busy waiting before was a sixth of the pool's start)."""
    t0, c0 = time.perf_counter(), cycles()
    while time.perf_counter() - t0 < 2e-4:
        pass
    return (cycles() - c0) / (time.perf_counter() - t0)


# ---------------------------------------------------------------- tasks for Python callers

def ranged_task(words, scratch):
    """A task running `fn(w_0, ..., w_{words-1}, [scratch], start, stop)` on a slice of
    range(count) per unit; its context is RangedContext. Pointers and sizes alike pass as
    64-bit words (the same registers in the C calling convention)."""
    return _ranged_code(words, scratch).address("ranged_task")


def _ranged_code(words, scratch):
    return _compile_ranged((words, scratch))


@llvm_target.compile_once
def _compile_ranged(key):
    words, scratch = key
    from jaxlite.lower import program_cache
    return program_cache.helper_module(_ranged_module(words, scratch), f"the pool's task over {words} words")


def _ranged_module(words, scratch):
    """ranged_task(ctx, unit, slot): ctx = {fn, count, units, scratch base, scratch stride per
    slot, words...}; calls fn(words..., [base + slot * stride], lo, hi) on unit's slice."""
    module = ir.Module(name="jaxlite_ranged_task")
    function = ir.Function(module, TASK, "ranged_task")
    ctx, unit, slot = function.args
    b = ir.IRBuilder(function.append_basic_block("entry"))
    fn_address, count, units, base, stride = (load(b, ctx, k, I64) for k in range(5))
    arguments = [load(b, ctx, 5 + k, I64) for k in range(words)]
    if scratch:
        arguments.append(b.add(base, b.mul(slot, stride)))
    lo = b.sdiv(b.mul(count, unit), units)
    hi = b.sdiv(b.mul(count, b.add(unit, as_i64(1))), units)
    fn_type = ir.FunctionType(VOID, [I64] * (len(arguments) + 2))
    b.call(b.inttoptr(fn_address, fn_type.as_pointer()), [*arguments, lo, hi])
    b.ret_void()
    return module


class RangedContext:
    """The context of a ranged_task: `fn` over range(count) cut into `units` slices, with
    `words` leading arguments, and per-slot scratch of `scratch_stride` bytes from
    `scratch_base` when the function takes scratch."""

    def __init__(self, fn_address, words, count, units, scratch_stride=0):
        self.words = (ctypes.c_int64 * (5 + len(words)))(fn_address, count, units, 0, scratch_stride, *words)
        self.address = ctypes.addressof(self.words)
        self.task = ranged_task(len(words), scratch_stride > 0)
        self.units = units

    def run(self, scratch_base=0):
        self.words[3] = scratch_base
        run(self.task, self.address, self.units)


# ---------------------------------------------------------------- job lists

# A NamedTuple, not a frozen dataclass: defining one of those compiles its methods (~1.4 ms
# of every process's first jit).
class ContextWord(NamedTuple):
    """A word of a job's context known only at run time: kind 1, the data pointer of the
    step's operand `value` (inputs, then outputs); kind 2, the address `value` bytes into
    the caller's scratch."""
    kind: int
    value: int


def operand(index):
    return ContextWord(1, index)


class JobList:
    """Jobs run one after another by one call of `jaxlite_run_jobs(jobs, operands, scratch)`.

    Each job is `jaxlite_pool_run(task, context, units)` with a context of words, each an
    int or a ContextWord. As int64 words: the job count, then per job the task, the
    units, the word count and (kind, value) per word: 0 a constant, 1 an operand, 2 a
    scratch offset. `scratch_bytes` is what the jobs' scratch needs past the aligned base."""

    def __init__(self):
        self._jobs, self.scratch_bytes = [], 0
        self.keep = []      # what constant words point into: arrays, compiled functions

    def scratch(self, nbytes):
        """A region of `nbytes` of the scratch, 64-byte aligned."""
        region = ContextWord(2, self.scratch_bytes)
        self.scratch_bytes += -(-nbytes // 64) * 64
        return region

    def add(self, task, units, words):
        if len(words) > MAX_CONTEXT_WORDS:
            raise ValueError(f"a job's context takes at most {MAX_CONTEXT_WORDS} words, got {len(words)}")
        self._jobs.append((task, units, list(words)))

    def add_ranged(self, fn, words, count, units):
        """`fn(words..., start, stop)` over range(count) in `units` slices (ranged_task);
        `fn` has the function's `address` and keeps its code alive."""
        self.keep.append(fn)
        self.add(ranged_task(len(words), False), units, [fn.address, count, units, 0, 0, *words])

    def table(self):
        """The int64 array jaxlite_run_jobs reads (kept by the caller while code may run)."""
        words = [len(self._jobs)]
        for task, units, context in self._jobs:
            words += [task, units, len(context)]
            for word in context:
                words += [word.kind, word.value] if isinstance(word, ContextWord) else [0, int(word)]
        return np.array(words, np.int64)
