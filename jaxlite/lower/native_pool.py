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
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from jaxlite.lower import llvm_target

SPIN_SECONDS = 2e-4         # a worker's wait for more work before it sleeps
MAX_CONTEXT_WORDS = 32      # the longest context of a job in a JobList
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE, _SYS_FUTEX, _SYS_SCHED_YIELD = 128, 129, 202, 24

_POOL_IR = """
@seq = internal global i32 0, align 64
@sleepers = internal global i32 0, align 64
@job_task = internal global ptr null, align 64
@job_ctx = internal global ptr null, align 8
@job_units = internal global i64 0, align 8
@claim = internal global i64 0, align 64
@done = internal global i64 0, align 64
@busy = internal global i32 0, align 64
@quit = internal global i32 0, align 64
@spin_cycles = internal global i64 0, align 64

declare i64 @jaxlite_syscall(i64, ...)
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()
declare void @llvm.x86.sse.stmxcsr(ptr)
declare void @llvm.x86.sse.ldmxcsr(ptr)

define i64 @jaxlite_cycles() {
  %c = call i64 @llvm.readcyclecounter()
  ret i64 %c
}

define void @jaxlite_pool_configure(i64 %cycles) {
  store i64 %cycles, ptr @spin_cycles
  ret void
}

define internal void @wake_sleepers() {
entry:
  %sleeping = load atomic i32, ptr @sleepers seq_cst, align 4
  %any = icmp ne i32 %sleeping, 0
  br i1 %any, label %wake, label %exit
wake:
  call i64 (i64, ...) @jaxlite_syscall(i64 SYS_FUTEX, ptr @seq, i64 FUTEX_WAKE, i64 2147483647)
  br label %exit
exit:
  ret void
}

define internal void @run_serially(ptr %task, ptr %ctx, i64 %units) {
entry:
  br label %loop
loop:
  %u = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp slt i64 %u, %units
  br i1 %more, label %body, label %exit
body:
  call void %task(ptr %ctx, i64 %u, i64 0)
  %next = add i64 %u, 1
  br label %loop
exit:
  ret void
}

define void @jaxlite_pool_run(ptr %task, ptr %ctx, i64 %units) {
entry:
  %few = icmp slt i64 %units, 2
  br i1 %few, label %serial, label %try
try:
  %pair = cmpxchg ptr @busy, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %pair, 1
  br i1 %got, label %post, label %serial
serial:
  call void @run_serially(ptr %task, ptr %ctx, i64 %units)
  ret void
post:
  %s = load atomic i32, ptr @seq monotonic, align 4
  %writing = add i32 %s, 1
  store atomic i32 %writing, ptr @seq monotonic, align 4
  fence release
  store atomic ptr %task, ptr @job_task monotonic, align 8
  store atomic ptr %ctx, ptr @job_ctx monotonic, align 8
  store atomic i64 %units, ptr @job_units monotonic, align 8
  store atomic i64 0, ptr @done monotonic, align 8
  %gen = add i32 %s, 2
  %gen64 = zext i32 %gen to i64
  %first = shl i64 %gen64, 32
  store atomic i64 %first, ptr @claim monotonic, align 8
  store atomic i32 %gen, ptr @seq seq_cst, align 4
  call void @wake_sleepers()
  br label %work
work:
  %c = atomicrmw add ptr @claim, i64 1 acq_rel
  %u = and i64 %c, 4294967295
  %mine = icmp slt i64 %u, %units
  br i1 %mine, label %run, label %waiting
run:
  call void %task(ptr %ctx, i64 %u, i64 0)
  %d0 = atomicrmw add ptr @done, i64 1 release
  br label %work
waiting:
  %since = call i64 @llvm.readcyclecounter()
  %budget = load i64, ptr @spin_cycles
  %patience = lshr i64 %budget, 3
  br label %wait
wait:
  %d = load atomic i64, ptr @done acquire, align 8
  %all = icmp sge i64 %d, %units
  br i1 %all, label %finish, label %relax
relax:
  %now = call i64 @llvm.readcyclecounter()
  %waited = sub i64 %now, %since
  %long = icmp ugt i64 %waited, %patience
  br i1 %long, label %yield, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  br label %wait
yield:
  call i64 (i64, ...) @jaxlite_syscall(i64 SYS_SCHED_YIELD)
  br label %wait
finish:
  store atomic i32 0, ptr @busy release, align 4
  ret void
}

define void @jaxlite_pool_worker(i64 %slot) {
entry:
  %mxcsr = alloca i32, align 4
  call void @llvm.x86.sse.stmxcsr(ptr %mxcsr)
  %control = load i32, ptr %mxcsr
  %flushing = or i32 %control, 32832
  store i32 %flushing, ptr %mxcsr
  call void @llvm.x86.sse.ldmxcsr(ptr %mxcsr)
  %s0 = load atomic i32, ptr @seq acquire, align 4
  br label %idle
idle:
  %seen = phi i32 [ %s0, %entry ], [ %seen, %awake ], [ %s, %finished ], [ %seen, %stale ]
  %start = call i64 @llvm.readcyclecounter()
  br label %spin
spin:
  %s = load atomic i32, ptr @seq acquire, align 4
  %q = load atomic i32, ptr @quit monotonic, align 4
  %stop = icmp ne i32 %q, 0
  br i1 %stop, label %exit, label %check
check:
  %new = icmp ne i32 %s, %seen
  %bit = and i32 %s, 1
  %even = icmp eq i32 %bit, 0
  %ready = and i1 %new, %even
  br i1 %ready, label %job, label %keep
keep:
  %now = call i64 @llvm.readcyclecounter()
  %elapsed = sub i64 %now, %start
  %budget = load i64, ptr @spin_cycles
  %tired = icmp ugt i64 %elapsed, %budget
  br i1 %tired, label %sleep, label %relax
relax:
  call void @llvm.x86.sse2.pause()
  br label %spin
sleep:
  %n0 = atomicrmw add ptr @sleepers, i32 1 seq_cst
  %s2 = load atomic i32, ptr @seq seq_cst, align 4
  %unchanged = icmp eq i32 %s2, %s
  br i1 %unchanged, label %futex, label %wakeup
futex:
  %expected = zext i32 %s2 to i64
  call i64 (i64, ...) @jaxlite_syscall(i64 SYS_FUTEX, ptr @seq, i64 FUTEX_WAIT, i64 %expected, ptr null)
  br label %wakeup
wakeup:
  %n1 = atomicrmw sub ptr @sleepers, i32 1 seq_cst
  br label %awake
awake:
  br label %idle
job:
  %task = load atomic ptr, ptr @job_task monotonic, align 8
  %ctx = load atomic ptr, ptr @job_ctx monotonic, align 8
  %units = load atomic i64, ptr @job_units monotonic, align 8
  fence acquire
  %s3 = load atomic i32, ptr @seq monotonic, align 4
  %same = icmp eq i32 %s3, %s
  %gen = zext i32 %s to i64
  br i1 %same, label %take, label %stale
stale:
  br label %idle
take:
  %c = load atomic i64, ptr @claim acquire, align 8
  %cgen = lshr i64 %c, 32
  %current = icmp eq i64 %cgen, %gen
  %u = and i64 %c, 4294967295
  %left = icmp slt i64 %u, %units
  %ok = and i1 %current, %left
  br i1 %ok, label %claim, label %finished
claim:
  %c1 = add i64 %c, 1
  %pair = cmpxchg ptr @claim, i64 %c, i64 %c1 acq_rel acquire
  %won = extractvalue { i64, i1 } %pair, 1
  br i1 %won, label %run, label %take
run:
  call void %task(ptr %ctx, i64 %u, i64 %slot)
  %d = atomicrmw add ptr @done, i64 1 release
  br label %take
finished:
  br label %idle
exit:
  ret void
}

define void @jaxlite_pool_stop() {
entry:
  br label %lock
lock:
  %pair = cmpxchg ptr @busy, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %pair, 1
  br i1 %got, label %stop, label %relax
relax:
  call void @llvm.x86.sse2.pause()
  br label %lock
stop:
  store atomic i32 1, ptr @quit seq_cst, align 4
  %s = atomicrmw add ptr @seq, i32 2 seq_cst
  call i64 (i64, ...) @jaxlite_syscall(i64 SYS_FUTEX, ptr @seq, i64 FUTEX_WAKE, i64 2147483647)
  store atomic i32 0, ptr @busy release, align 4
  ret void
}

define void @jaxlite_run_jobs(ptr %jobs, ptr %operands, i64 %scratch) {
entry:
  %ctx = alloca i64, i64 MAX_CONTEXT_WORDS, align 64
  %count = load i64, ptr %jobs
  br label %next_job
next_job:
  %j = phi i64 [ 0, %entry ], [ %j1, %ran ]
  %at = phi i64 [ 1, %entry ], [ %following, %ran ]
  %more = icmp slt i64 %j, %count
  br i1 %more, label %job, label %exit
job:
  %task_p = getelementptr inbounds i64, ptr %jobs, i64 %at
  %task = load ptr, ptr %task_p
  %units_at = add i64 %at, 1
  %units_p = getelementptr inbounds i64, ptr %jobs, i64 %units_at
  %units = load i64, ptr %units_p
  %words_at = add i64 %at, 2
  %words_p = getelementptr inbounds i64, ptr %jobs, i64 %words_at
  %words = load i64, ptr %words_p
  %first = add i64 %at, 3
  br label %next_word
next_word:
  %w = phi i64 [ 0, %job ], [ %w1, %stored ]
  %more_words = icmp slt i64 %w, %words
  br i1 %more_words, label %read_word, label %call
read_word:
  %pair = shl i64 %w, 1
  %kind_at = add i64 %first, %pair
  %kind_p = getelementptr inbounds i64, ptr %jobs, i64 %kind_at
  %kind = load i64, ptr %kind_p
  %value_p = getelementptr inbounds i64, ptr %kind_p, i64 1
  %value = load i64, ptr %value_p
  switch i64 %kind, label %literal [ i64 1, label %operand
                                     i64 2, label %in_scratch ]
literal:
  br label %store
operand:
  %operand_p = getelementptr inbounds ptr, ptr %operands, i64 %value
  %pointer = load i64, ptr %operand_p
  br label %store
in_scratch:
  %address = add i64 %scratch, %value
  br label %store
store:
  %word = phi i64 [ %value, %literal ], [ %pointer, %operand ], [ %address, %in_scratch ]
  %slot_p = getelementptr inbounds i64, ptr %ctx, i64 %w
  store i64 %word, ptr %slot_p
  br label %stored
stored:
  %w1 = add i64 %w, 1
  br label %next_word
call:
  %any = icmp sgt i64 %units, 0
  br i1 %any, label %run, label %ran
run:
  call void @jaxlite_pool_run(ptr %task, ptr %ctx, i64 %units)
  br label %ran
ran:
  %j1 = add i64 %j, 1
  %pairs = shl i64 %words, 1
  %following = add i64 %first, %pairs
  br label %next_job
exit:
  ret void
}

define void @jaxlite_pool_after_fork() {
  store atomic i32 0, ptr @sleepers seq_cst, align 4
  store atomic i32 0, ptr @busy seq_cst, align 4
  ret void
}
""".replace("SYS_FUTEX", str(_SYS_FUTEX)).replace("SYS_SCHED_YIELD", str(_SYS_SCHED_YIELD)).replace("FUTEX_WAKE", str(_FUTEX_WAKE_PRIVATE)) \
   .replace("FUTEX_WAIT", str(_FUTEX_WAIT_PRIVATE)) \
   .replace("MAX_CONTEXT_WORDS", str(MAX_CONTEXT_WORDS))

_RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_lock = threading.Lock()


class _Pool:
    """The process's pool: its machine code and worker threads."""

    def __init__(self, workers):
        from jaxlite.lower import program_cache
        llvm.add_symbol("jaxlite_syscall", ctypes.cast(ctypes.CDLL(None).syscall, ctypes.c_void_p).value)
        self.code = program_cache.helper_module(_POOL_IR, "the native worker pool")
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


def pool():
    """The process's pool, started on first use with a worker per further available CPU."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                from jaxlite.lower.gemm import available_cpus
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
    """The time-stamp counter's rate, measured against the clock over ~1 ms."""
    t0, c0 = time.perf_counter(), cycles()
    while time.perf_counter() - t0 < 1e-3:
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
    loads = "\n".join(f"  %p{i} = getelementptr inbounds i64, ptr %ctx, i64 {5 + i}\n"
                      f"  %w{i} = load i64, ptr %p{i}" for i in range(words))
    args = [f"i64 %w{i}" for i in range(words)] + (["i64 %scratch"] if scratch else []) + ["i64 %lo", "i64 %hi"]
    text = f"""
define void @ranged_task(ptr %ctx, i64 %unit, i64 %slot) {{
  %fn = load ptr, ptr %ctx
  %count_p = getelementptr inbounds i64, ptr %ctx, i64 1
  %count = load i64, ptr %count_p
  %units_p = getelementptr inbounds i64, ptr %ctx, i64 2
  %units = load i64, ptr %units_p
  %base_p = getelementptr inbounds i64, ptr %ctx, i64 3
  %base = load i64, ptr %base_p
  %stride_p = getelementptr inbounds i64, ptr %ctx, i64 4
  %stride = load i64, ptr %stride_p
  %offset = mul i64 %slot, %stride
  %scratch = add i64 %base, %offset
  %lo_n = mul i64 %count, %unit
  %lo = sdiv i64 %lo_n, %units
  %next = add i64 %unit, 1
  %hi_n = mul i64 %count, %next
  %hi = sdiv i64 %hi_n, %units
{loads}
  call void %fn({", ".join(args)})
  ret void
}}
"""
    from jaxlite.lower import program_cache
    return program_cache.helper_module(text, f"the pool's task over {words} words")


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

@dataclass(frozen=True)
class ContextWord:
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
