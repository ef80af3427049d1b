"""Eager arithmetic in the floating-point mode of compiled code: subnormals flushed.

Compiled programs run with FTZ/DAZ set in MXCSR (llvm_helpers.save_and_flush_denormals), as
XLA:CPU runs JAX's programs, eager and jit alike: a subnormal operand of add, mul, a
comparison, ... reads as a signed zero and a subnormal result becomes one. Eager jaxlite
runs numpy, so its elementwise arithmetic and reductions call numpy with the same two
bits set in this thread's MXCSR (and the caller's restored), by two tiny machine-code
functions: the hardware then gives exactly what compiled code gives, at the cost of
two ctypes calls (~0.5 us) per operation.

On x86-64 Linux the two functions are nine instructions written here as bytes into a page
of their own: an eager program then never loads LLVM (~50 ms CPU: llvmlite's import,
target initialization, a compile). Elsewhere LLVM compiles the same two functions.
"""
import ctypes
import functools
import mmap
import platform
import sys

# FTZ and DAZ, MXCSR's flush-to-zero and denormals-are-zero bits: subnormals slow float code
# by an order of magnitude here, so native code runs with them set (as XLA:CPU does).
FTZ_DAZ = 0x8040

_FLUSH_TYPE = ctypes.CFUNCTYPE(ctypes.c_uint32)
_RESTORE_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_uint32)

# System V x86-64, leaf functions using the red zone below rsp for the 32-bit MXCSR image.
_FLUSH_CODE = bytes([
    0x0F, 0xAE, 0x5C, 0x24, 0xFC,          # stmxcsr [rsp-4]
    0x8B, 0x44, 0x24, 0xFC,                # mov eax, [rsp-4]        (returned: the caller's MXCSR)
    0x89, 0xC1,                            # mov ecx, eax
    0x81, 0xC9, *FTZ_DAZ.to_bytes(4, "little"),   # or ecx, FTZ_DAZ
    0x89, 0x4C, 0x24, 0xF8,                # mov [rsp-8], ecx
    0x0F, 0xAE, 0x54, 0x24, 0xF8,          # ldmxcsr [rsp-8]
    0xC3,                                  # ret
])
_RESTORE_CODE = bytes([
    0x89, 0x7C, 0x24, 0xFC,                # mov [rsp-4], edi        (the saved MXCSR)
    0x0F, 0xAE, 0x54, 0x24, 0xFC,          # ldmxcsr [rsp-4]
    0xC3,                                  # ret
])


def executable_bytes(code):
    """(page, address): machine code written into a page of its own mapped readable and
    executable (keep the page alive while the code may run). Raises OSError (or ValueError,
    TypeError) where the system allows no such mapping."""
    page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    return page, ctypes.addressof(ctypes.c_char.from_buffer(page))


def machine_code_runs_here():
    """Whether this module's hand-written x86-64 System V code can run in this process."""
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def _mxcsr_functions_from_bytes():
    """(page, flush, restore) from the bytes above."""
    page, address = executable_bytes(_FLUSH_CODE + _RESTORE_CODE)
    return (page, _FLUSH_TYPE(address), _RESTORE_TYPE(address + len(_FLUSH_CODE)))


def _mxcsr_functions_compiled():
    """(code, flush, restore) compiled by LLVM from one module."""
    from llvmlite import ir

    from jaxlite.lower import llvm_target
    from jaxlite.lower.llvm_helpers import I32, VOID, restore_mxcsr, save_and_flush_denormals
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
    return (code, _FLUSH_TYPE(code.address("jaxlite_flush_subnormals")),
            _RESTORE_TYPE(code.address("jaxlite_restore_mxcsr")))


@functools.lru_cache(maxsize=None)
def _mxcsr_functions():
    if machine_code_runs_here():
        try:
            return _mxcsr_functions_from_bytes()
        except (OSError, ValueError, TypeError):    # no writable executable mapping allowed here
            pass
    return _mxcsr_functions_compiled()


def flushing_subnormals(numpy_fn):
    """numpy_fn run with FTZ/DAZ set in this thread, as compiled code runs."""
    def run(*args, **params):
        _, flush, restore = _mxcsr_functions()
        saved = flush()
        try:
            return numpy_fn(*args, **params)
        finally:
            restore(saved)
    return run
