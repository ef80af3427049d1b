"""The native worker pool: every unit runs exactly once, on distinct slots, under
concurrent callers, nested calls, fork and interpreter exit."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from jaxlite.lower import llvm_target, native_pool

# fill(out, scratch, lo, hi): out[i] = scratch + 1 for i in [lo, hi) (scratch is the slot's
# offset: slot * stride), so the result says which slot ran each element.
_FILL = llvm_target.compile_ir("""
define void @fill(i64 %out, i64 %scratch, i64 %lo, i64 %hi) {
entry:
  %p = inttoptr i64 %out to ptr
  br label %loop
loop:
  %i = phi i64 [ %lo, %entry ], [ %n, %body ]
  %m = icmp slt i64 %i, %hi
  br i1 %m, label %body, label %exit
body:
  %q = getelementptr i64, ptr %p, i64 %i
  %old = load i64, ptr %q
  %v = add i64 %scratch, 1
  %sum = add i64 %old, %v
  store i64 %sum, ptr %q
  %n = add i64 %i, 1
  br label %loop
exit:
  ret void
}
""")


def _fill(out, units):
    context = native_pool.RangedContext(_FILL.address("fill"), [out.ctypes.data], out.size, units, scratch_stride=1)
    context.run(scratch_base=0)


@pytest.mark.parametrize("size, units", [(1, 1), (7, 3), (1000, 2), (1000, 64), (5, 8)])
def test_every_element_written_once_by_some_slot(size, units):
    out = np.zeros(size, np.int64)
    _fill(out, units)
    # Each element was added to once, with its slot + 1 (slots 0 .. slots-1).
    assert out.min() >= 1 and out.max() <= native_pool.slots()


def test_concurrent_callers_each_get_their_units():
    errors = []

    def hammer():
        out = np.zeros(997, np.int64)
        for _ in range(2000):
            out[:] = 0
            _fill(out, 5)
            if out.min() < 1 or out.max() > native_pool.slots():
                errors.append(out.copy())
                return
    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


def test_more_units_than_slots_use_every_slot_eventually():
    """A worker asleep (futex) wakes for a job long enough to wait for it (~4 ms here)."""
    if native_pool.slots() < 2:
        pytest.skip("one CPU: the caller runs every unit")
    seen, out = set(), np.zeros(1 << 22, np.int64)
    for _ in range(50):
        out[:] = 0
        _fill(out, 64)
        seen |= set(np.unique(out[::4096]).tolist())
        if len(seen) == native_pool.slots():
            break
    assert seen == set(range(1, native_pool.slots() + 1))


_CHILD = """
import os, sys, numpy as np
sys.path.insert(0, {root!r})
import tests.test_native_pool as t
out = np.zeros(4096, np.int64)
t._fill(out, 4)
pid = os.fork()
if pid == 0:
    out[:] = 0
    t._fill(out, 4)
    os._exit(0 if out.min() >= 1 else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


def test_fork_and_exit_with_workers_running():
    """A forked child runs pool jobs (fresh workers), and the interpreter exits cleanly
    while workers spin (they stop before their machine code is freed)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", _CHILD.format(root=root)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "child 0" in result.stdout


_ONE_CPU = """
import os, sys
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
sys.path.insert(0, %r)
import numpy as np, jaxlite, jaxlite.numpy as jnp
from jaxlite.lower import native_pool
x = np.random.default_rng(0).random((512, 784), np.float32)
w = np.random.default_rng(1).random((784, 512), np.float32)
f = jaxlite.jit(lambda x, w: jnp.sort(jnp.tanh(x @ w), axis=1))
np.testing.assert_allclose(np.asarray(f(x, w)), np.sort(np.tanh(x @ w), axis=1), rtol=1e-4, atol=1e-4)
print("slots", native_pool.slots())
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_a_process_on_one_cpu_runs_everything_on_the_caller():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", _ONE_CPU % root], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "slots 1" in result.stdout


# copy_add(src, dst, addend, lo, hi): dst[i] = src[i] + addend (int64) for i in [lo, hi).
_COPY_ADD = llvm_target.compile_ir("""
define void @copy_add(i64 %src, i64 %dst, i64 %addend, i64 %lo, i64 %hi) {
entry:
  %s = inttoptr i64 %src to ptr
  %d = inttoptr i64 %dst to ptr
  br label %loop
loop:
  %i = phi i64 [ %lo, %entry ], [ %n, %body ]
  %m = icmp slt i64 %i, %hi
  br i1 %m, label %body, label %exit
body:
  %p = getelementptr i64, ptr %s, i64 %i
  %v = load i64, ptr %p
  %w = add i64 %v, %addend
  %q = getelementptr i64, ptr %d, i64 %i
  store i64 %w, ptr %q
  %n = add i64 %i, 1
  br label %loop
exit:
  ret void
}
""")


class _Function:
    address = _COPY_ADD.address("copy_add")


def test_a_job_list_runs_its_jobs_in_order_with_operands_scratch_and_constants():
    import ctypes
    values = np.arange(1000, dtype=np.int64)
    out = np.zeros_like(values)
    jobs = native_pool.JobList()
    scratch = [jobs.scratch(8 * values.size) for _ in range(2)]
    steps = [(native_pool.operand(0), scratch[0], 1), (scratch[0], scratch[1], 10),
             (scratch[1], native_pool.operand(1), 100)]
    for units, (source, destination, addend) in zip((1, 2, 7), steps):
        jobs.add_ranged(_Function, [source, destination, addend], values.size, units)
    table = jobs.table()
    assert jobs.scratch_bytes == 2 * 8 * values.size
    workspace = np.zeros(jobs.scratch_bytes, np.uint8)
    operands = (ctypes.c_void_p * 2)(values.ctypes.data, out.ctypes.data)
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(native_pool.pool().jobs_address)
    run(table.ctypes.data, ctypes.addressof(operands), workspace.ctypes.data)
    np.testing.assert_array_equal(out, values + 111)
    np.testing.assert_array_equal(workspace.view(np.int64)[values.size:], values + 11)


def test_a_job_context_has_a_bounded_length():
    with pytest.raises(ValueError, match="at most"):
        native_pool.JobList().add(0, 1, [0] * (native_pool.MAX_CONTEXT_WORDS + 1))
