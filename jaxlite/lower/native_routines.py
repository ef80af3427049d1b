"""Hand-written native routines for the sequential primitives: sorting and dense linear algebra.

Sorts and factorizations do not fit the fused loop nests (their loops carry data-dependent
state: merge positions, pivots, a failed factorization), so each is generated here as its own
LLVM function with the static shapes baked in, the way gemm.py generates the GEMM:

    void name(ptr operand0, ..., ptr result0, ..., ptr scratch)

Only data pointers cross the interface, so the program's native code calls a routine
directly (native_flow.py). The routine loops over the batch (the leading axes, or every lane
of a sort) itself; its twin `name_range(..., ptr scratch, i64 start, i64 stop)` does the
batch entries [start, stop), so the native pool splits big batches over threads, each with
its own scratch.
"""
import ctypes
import functools
import os

from llvmlite import ir

from jaxlite.lower import llvm_target
from jaxlite.lower.llvm_helpers import I64, PTR, VOID, as_i64, emit_loop

# A batch entry handed to another thread must repay the hand-off (under a microsecond to a
# spinning worker of the native pool, ~50 us to a sleeping one).
_MIN_WORK_PER_THREAD = 2e6
_SCRATCH_ALIGN = 64


def gep(b, pointer, index, element_type):
    return b.gep(pointer, [as_i64(index)], inbounds=True, source_etype=element_type)


def load(b, pointer, index, element_type):
    return b.load(gep(b, pointer, index, element_type), typ=element_type)


def store(b, value, pointer, index):
    b.store(value, gep(b, pointer, index, value.type))


def define_routine(name, pointer_count, batch, emit_entry):
    """A module holding `name` and `name_range` over `batch` entries. `emit_entry(b, pointers,
    scratch, index)` emits the work of batch entry `index` (an i64 value)."""
    module = ir.Module(name=name)
    ranged = ir.Function(module, ir.FunctionType(VOID, [PTR] * (pointer_count + 1) + [I64, I64]),
                         name + "_range")
    b = ir.IRBuilder(ranged.append_basic_block("entry"))
    *pointers, scratch, start, stop = ranged.args
    emit_loop(b, start, stop, lambda index: emit_entry(b, pointers, scratch, index), name="entry")
    b.ret_void()
    whole = ir.Function(module, ir.FunctionType(VOID, [PTR] * (pointer_count + 1)), name)
    b = ir.IRBuilder(whole.append_basic_block("entry"))
    b.call(ranged, list(whole.args) + [as_i64(0), as_i64(batch)])
    b.ret_void()
    for function in (ranged, whole):
        llvm_target.add_function_attributes(function)
    return module


class Routine:
    """A compiled routine, called from native code (native_flow.py): `address` is the
    whole-batch entry point, whose scratch pointer must point at `scratch_bytes` writable
    bytes; `ranged_address` the entry over a range of the batch, which the native pool
    runs in `threads` units, each thread in its own `slot_bytes` of scratch.

    `optimize` runs LLVM's IR passes, which cost ~200 ms a routine: worth it where loops
    vectorize (linear algebra, 5x faster), not for the sorts' scalar loops, which the code
    generator alone compiles about as well (measured: within noise of the optimized code).

    `initialize`: the module defines `name_init()`, run once whenever the code is bound (it
    fills tables the routine reads, such as the FFT's twiddles, held in zeroed globals so
    that they cost no object code and survive the persistent cache)."""

    def __init__(self, module, name, batch, scratch_bytes, work_per_entry, optimize=True, initialize=False):
        self.name, self.pointer_count, self.initialize = name, _pointer_count(module, name), initialize
        self.batch, self.scratch_bytes = batch, scratch_bytes + _SCRATCH_ALIGN
        self.slot_bytes = -(-self.scratch_bytes // _SCRATCH_ALIGN) * _SCRATCH_ALIGN
        self.threads = max(1, min(os.cpu_count() or 1, batch, int(batch * work_per_entry // _MIN_WORK_PER_THREAD)))
        self.bind(llvm_target.compile_ir(module, optimize_ir=optimize))

    def bind(self, compiled):
        """Attach machine code (compiled now, or loaded from the persistent cache)."""
        self.compiled = compiled
        self.address = compiled.address(self.name)
        self.ranged_address = compiled.address(self.name + "_range")
        if getattr(self, "initialize", False):
            ctypes.CFUNCTYPE(None)(compiled.address(self.name + "_init"))()


@functools.lru_cache(maxsize=None)
def compile_routine(spec):
    """The Routine of a spec (a frozen dataclass with `build() -> Routine`): compiled once per
    process, and loaded from the persistent compilation cache when one is configured."""
    from jaxlite.lower import program_cache
    return program_cache.native_routine(spec)


def _pointer_count(module, name):
    return len(module.globals[name].args) - 1
