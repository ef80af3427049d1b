"""libm's scalar functions over whole arrays, for eager primitives whose kernels call libm.

Compiled kernels compute pow (and llvm_math's other _LIBM_* functions) by calling libm
lane by lane, as XLA:CPU's code does for JAX. numpy's float32 versions are its own SIMD
approximations instead, which round differently for a fifth of pow's inputs, and even
float64 rounded to float32 differs from libm's powf near a rounding tie (powf's error is
up to ~0.3 ulp before its rounding). So an eager primitive that must give jit's bits
calls the same libm function, through one small loop per function and type: on x86-64
Linux a loop over a two-argument function is 75 bytes of machine code written here (as
float_mode's MXCSR functions are), so that an eager pow does not load LLVM (~50 ms CPU);
elsewhere LLVM compiles the loop.
"""
import ctypes
import functools

import numpy as np

from jaxlite.lower import float_mode

_SUFFIXES = {np.dtype(np.float32): "f", np.dtype(np.float64): ""}


def _binary_loop_code(dtype):
    """`void loop(x, y, out, n, fn)`: out[i] = fn(x[i], y[i]), System V x86-64 (rdi, rsi, rdx,
    rcx, r8); five pushes keep the stack 16-byte aligned at the call."""
    prefix, size = (0xF3, 4) if dtype == np.float32 else (0xF2, 8)     # movss / movsd
    body = bytes([
        prefix, 0x0F, 0x10, 0x03,                      # movs xmm0, [rbx]
        prefix, 0x41, 0x0F, 0x10, 0x0C, 0x24,          # movs xmm1, [r12]
        0x41, 0xFF, 0xD7,                              # call r15
        prefix, 0x41, 0x0F, 0x11, 0x45, 0x00,          # movs [r13], xmm0
        0x48, 0x83, 0xC3, size,                        # add rbx, size
        0x49, 0x83, 0xC4, size,                        # add r12, size
        0x49, 0x83, 0xC5, size,                        # add r13, size
        0x49, 0xFF, 0xCE,                              # dec r14
    ])
    body += bytes([0x75, (-(len(body) + 2)) & 0xFF])   # jnz loop
    return bytes([
        0x53, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57,     # push rbx, r12, r13, r14, r15
        0x48, 0x89, 0xFB, 0x49, 0x89, 0xF4, 0x49, 0x89, 0xD5,     # mov rbx, rdi; r12, rsi; r13, rdx
        0x49, 0x89, 0xCE, 0x4D, 0x89, 0xC7,                       # mov r14, rcx; r15, r8
        0x4D, 0x85, 0xF6, 0x74, len(body),                        # test r14, r14; jz done
    ]) + body + bytes([0x41, 0x5F, 0x41, 0x5E, 0x41, 0x5D, 0x41, 0x5C, 0x5B, 0xC3])   # pops; ret


@functools.lru_cache(maxsize=None)
def _binary_loop_from_bytes(name, dtype):
    """(page, call) of a loop over libm's `name` for dtype, or None where none can be mapped."""
    try:
        page, address = float_mode.executable_bytes(_binary_loop_code(dtype))
    except (OSError, ValueError, TypeError):
        return None
    function = ctypes.cast(getattr(ctypes.CDLL(None), name + _SUFFIXES[dtype]), ctypes.c_void_p).value
    loop = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, ctypes.c_int64, ctypes.c_void_p)(address)

    def call(x, y, out, n, page=page):      # the page lives as long as the loop
        loop(x, y, out, n, function)
    return page, call


def _loop_module(name, arity, dtype):
    """`void jaxlite_libm_loop(args..., out, n)`: out[i] = name(args[0][i], ...) for i < n."""
    from llvmlite import ir

    from jaxlite.lower.llvm_helpers import F32, F64, I64, PTR, VOID, declare, emit_loop, load, store
    scalar, suffix = {np.dtype(np.float32): F32, np.dtype(np.float64): F64}[dtype], _SUFFIXES[dtype]
    module = ir.Module(name="jaxlite_libm_" + name + suffix)
    function = declare(module, name + suffix, scalar, [scalar] * arity)
    loop = ir.Function(module, ir.FunctionType(VOID, [PTR] * (arity + 1) + [I64]), "jaxlite_libm_loop")
    *operands, out, n = loop.args
    builder = ir.IRBuilder(loop.append_basic_block("entry"))

    def body(i):
        store(builder, builder.call(function, [load(builder, p, i, scalar) for p in operands]), out, i)
    emit_loop(builder, 0, n, body)
    builder.ret_void()
    return module


def _compile_loop(name, arity, dtype):
    from jaxlite.lower import llvm_target
    # Unoptimized: LLVM's library-call simplifications would not change these calls' results,
    # but there is nothing to gain from them in a loop of opaque calls either.
    code = llvm_target.compile_ir(_loop_module(name, arity, dtype), optimize_ir=False)
    call = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (arity + 1), ctypes.c_int64)(code.address("jaxlite_libm_loop"))
    return code, call


@functools.lru_cache(maxsize=None)
def _compiled_loops():
    from jaxlite.lower import llvm_target       # loads llvmlite: only where no machine code runs
    return llvm_target.compile_once(_compile_loop)


def _compiled_loop(name, arity, dtype):
    return _compiled_loops()(name, arity, dtype)


def _loop(name, arity, dtype):
    if arity == 2 and float_mode.machine_code_runs_here():
        from_bytes = _binary_loop_from_bytes(name, dtype)
        if from_bytes is not None:
            return from_bytes
    return _compiled_loop(name, arity, dtype)


def apply(name, *operands):
    """libm's `name` (powf for float32 operands, pow for float64) elementwise, broadcasting."""
    dtype = np.result_type(*operands)
    contiguous = [np.asarray(x, dtype, order="C") for x in np.broadcast_arrays(*operands)]
    out = np.empty(contiguous[0].shape, dtype)
    _, call = _loop(name, len(operands), dtype)
    call(*[x.ctypes.data for x in contiguous], out.ctypes.data, out.size)
    return out
