"""The native entry points of a compiled program: `void entry(ptr objects, i64 start, i64 stop)`
running one step (or all of them) on the buffers it reads out of the numpy array objects,
and the pool tasks that share a big kernel's parallel loop among the worker threads."""
from llvmlite import ir

from jaxlite.lower import llvm_helpers, llvm_target, native_pool
from jaxlite.lower.llvm_helpers import I8, I32, I64, PTR, VOID, declare
from jaxlite.lower.native_call import DATA_OFFSET
def emit_slot_object(b, objects, slot):
    """The object pointer in entry `slot` of an entry point's objects array."""
    address = b.gep(objects, [ir.Constant(I64, slot)], inbounds=True, source_etype=I64)
    return b.inttoptr(b.load(address, typ=I64), PTR)


def emit_array_data(b, array_object):
    """The data pointer of a numpy array object (numpy's stable ABI: right after the header)."""
    field = b.gep(array_object, [ir.Constant(I64, DATA_OFFSET)], inbounds=True, source_etype=I8)
    return b.load(field, typ=PTR)


def emit_object_entry(module, name, calls):
    """`void name(ptr objects, i64 start, i64 stop)`: FTZ/DAZ on, each kernel on its buffers,
    MXCSR restored. Data pointers are read out of the numpy array objects (slot 0: the
    workspace). A call's `bounds` is True to pass start/stop on to the kernel's parallel
    loop, an extent to run all of it, or None for a kernel without one. A call without
    `sources` is a control-flow step's function: it takes the objects and returns nonzero
    when a Python callback raised, which ends the call. A call with bounds "split" is a
    task of emit_pool_task, run by the native pool."""
    function = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64]), name)
    llvm_target.add_function_attributes(function)
    objects, start, stop = function.args
    b = ir.IRBuilder(function.append_basic_block("entry"))
    mxcsr = llvm_helpers.save_and_flush_denormals(b)
    pointers = {}

    def pointer(source):
        if source not in pointers:
            kind, value = source
            if kind == "object":
                pointers[source] = emit_array_data(b, emit_slot_object(b, objects, value))
            else:
                base = pointer(("object", 0))
                pointers[source] = b.gep(base, [ir.Constant(I64, value)], inbounds=True, source_etype=I8)
        return pointers[source]

    finish = function.append_basic_block("finish")
    for kernel_function, sources, bounds in calls:
        if bounds == "split":
            run = declare(module, "jaxlite_pool_run", VOID, [PTR, PTR, I64])
            b.call(run, [kernel_function, objects, ir.Constant(I64, native_pool.available_cpus())])
            continue
        if sources is None:
            status = b.call(kernel_function, [objects])
            resume = function.append_basic_block("resume")
            b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), finish, resume)
            b.position_at_end(resume)
            continue
        args = [pointer(s) for s in sources]
        if bounds is True:
            args += [start, stop]
        elif bounds is not None:
            args += [ir.Constant(I64, 0), ir.Constant(I64, bounds)]
        b.call(kernel_function, args)
    b.branch(finish)
    b.position_at_end(finish)
    llvm_helpers.restore_mxcsr(b, mxcsr)
    b.ret_void()
    return function


def splits(kernel):
    """Whether a kernel's parallel loop is worth sharing among the pool's threads."""
    return kernel.parallel_loop() is not None and kernel.points() >= PARALLEL_MIN_POINTS and native_pool.available_cpus() > 1


SHARE = "_share"    # a split kernel's pool task: its entry point's name and this


def emit_pool_task(module, entry, extent):
    """`void task(ptr objects, i64 unit, i64 slot)`: share `unit` (of one per CPU) of the
    parallel loop of a kernel's entry point (which sets FTZ/DAZ on the thread it runs on)."""
    task = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64]),
                       entry.name + SHARE)
    objects, unit, _ = task.args
    b = ir.IRBuilder(task.append_basic_block("entry"))
    extent, units = ir.Constant(I64, extent), ir.Constant(I64, native_pool.available_cpus())
    bound = lambda u: b.sdiv(b.mul(extent, u), units)
    b.call(entry, [objects, bound(unit), bound(b.add(unit, ir.Constant(I64, 1)))])
    b.ret_void()
    return task


# Below this a kernel runs on one thread: a share must repay a hand-off to a worker of the
# pool (under a microsecond when it spins, ~50 us to wake one that sleeps).
PARALLEL_MIN_POINTS = 1 << 16
