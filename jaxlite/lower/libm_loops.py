"""libm's scalar functions over whole arrays, for eager primitives whose kernels call libm.

Compiled kernels compute pow (and llvm_math's other _LIBM_* functions) by calling libm
lane by lane, as XLA:CPU's code does for JAX. numpy's float32 versions are its own SIMD
approximations instead, which round differently for a fifth of pow's inputs, and even
float64 rounded to float32 differs from libm's powf near a rounding tie (powf's error is
up to ~0.3 ulp before its rounding). So an eager primitive that must give jit's bits
calls the same libm function, through one small compiled loop per function and type.
"""
import ctypes

import numpy as np
from llvmlite import ir

from jaxlite.lower import llvm_target
from jaxlite.lower.llvm_helpers import F32, F64, I64, PTR, VOID, declare, emit_loop, load, store

_TYPES = {np.dtype(np.float32): (F32, "f"), np.dtype(np.float64): (F64, "")}


def _loop_module(name, arity, dtype):
    """`void jaxlite_libm_loop(args..., out, n)`: out[i] = name(args[0][i], ...) for i < n."""
    scalar, suffix = _TYPES[dtype]
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


@llvm_target.compile_once
def _loop(name, arity, dtype):
    # Unoptimized: LLVM's library-call simplifications would not change these calls' results,
    # but there is nothing to gain from them in a loop of opaque calls either.
    code = llvm_target.compile_ir(_loop_module(name, arity, dtype), optimize_ir=False)
    call = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (arity + 1), ctypes.c_int64)(code.address("jaxlite_libm_loop"))
    return code, call


def apply(name, *operands):
    """libm's `name` (powf for float32 operands, pow for float64) elementwise, broadcasting."""
    dtype = np.result_type(*operands)
    contiguous = [np.asarray(x, dtype, order="C") for x in np.broadcast_arrays(*operands)]
    out = np.empty(contiguous[0].shape, dtype)
    _, call = _loop(name, len(operands), dtype)
    call(*[x.ctypes.data for x in contiguous], out.ctypes.data, out.size)
    return out
