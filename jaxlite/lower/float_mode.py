"""Eager arithmetic in the floating-point mode of compiled code: subnormals flushed.

Compiled programs run with FTZ/DAZ set in MXCSR (llvm_helpers.save_and_flush_denormals), as
XLA:CPU runs JAX's programs, eager and jit alike: a subnormal operand of add, mul, a
comparison, ... reads as a signed zero and a subnormal result becomes one. Eager jaxlite
runs numpy, so its elementwise arithmetic and reductions call numpy with the same two
bits set in this thread's MXCSR (and the caller's restored), by two tiny compiled
functions: the hardware then gives exactly what compiled code gives, at the cost of
two ctypes calls (~0.5 us) per operation.
"""
import ctypes

from llvmlite import ir

from jaxlite.lower import llvm_target
from jaxlite.lower.llvm_helpers import I32, VOID, restore_mxcsr, save_and_flush_denormals


def _mxcsr_functions():
    """(flush() -> the caller's MXCSR, restore(saved)) from one compiled module."""
    module = ir.Module(name="jaxlite_float_mode")
    flush = ir.Function(module, ir.FunctionType(I32, []), "jaxlite_flush_subnormals")
    b = ir.IRBuilder(flush.append_basic_block("entry"))
    b.ret(b.load(save_and_flush_denormals(b), typ=I32))
    restore = ir.Function(module, ir.FunctionType(VOID, [I32]), "jaxlite_restore_mxcsr")
    b = ir.IRBuilder(restore.append_basic_block("entry"))
    slot = b.alloca(I32)
    b.store(restore.args[0], slot)
    restore_mxcsr(b, slot)
    b.ret_void()
    code = llvm_target.compile_ir(module, optimize_ir=False)
    return (code,
            ctypes.CFUNCTYPE(ctypes.c_uint32)(code.address("jaxlite_flush_subnormals")),
            ctypes.CFUNCTYPE(None, ctypes.c_uint32)(code.address("jaxlite_restore_mxcsr")))


_functions = []
_build = llvm_target.compile_once(_mxcsr_functions)


def flushing_subnormals(numpy_fn):
    """numpy_fn run with FTZ/DAZ set in this thread, as compiled code runs."""
    def run(*args, **params):
        if not _functions:
            _functions.extend(_build())
        _, flush, restore = _functions
        saved = flush()
        try:
            return numpy_fn(*args, **params)
        finally:
            restore(saved)
    return run
