"""float8 formats in generated code: carried as float32 in registers (as bfloat16 is), one byte
in memory, and rounded to the format after every operation, as ml_dtypes' kernels (eager) and
XLA's CPU backend (which widens each float8 operation and rounds its result) compute them.

Encoding rounds to nearest even, in integer arithmetic on the float32 bits for normal values and
by float32 addition of a power of two for subnormal ones; overflow gives the format's infinity
(e5m2) or NaN (e4m3fn, which has no infinity), as ml_dtypes does. Both directions are selects
of integer operations, so loops over them vectorize.
"""
import numpy as np
from llvmlite import ir

from jaxlite.lower.llvm_helpers import F32, I8, I32


class Float8Format:
    """One float8 layout: exponent and mantissa bits, bias, and whether the all-ones exponent
    holds infinities and NaNs (IEEE-like, e5m2) or only the NaN with an all-ones mantissa (fn)."""

    def __init__(self, exponent_bits, mantissa_bits, has_infinity):
        self.mantissa_bits = mantissa_bits
        self.bias = (1 << (exponent_bits - 1)) - 1
        self.exponent_mask = (1 << exponent_bits) - 1
        self.has_infinity = has_infinity
        self.largest_code = 0x7B if has_infinity else 0x7E     # the largest finite magnitude
        self.overflow_code = 0x7C if has_infinity else 0x7F    # +inf, or the NaN
        self.nan_code = 0x7E if has_infinity else 0x7F         # the NaN ml_dtypes returns
        self.subnormal_quantum = 2.0 ** (1 - self.bias - mantissa_bits)


def _formats():
    import ml_dtypes
    return {np.dtype(ml_dtypes.float8_e4m3fn): Float8Format(4, 3, has_infinity=False),
            np.dtype(ml_dtypes.float8_e5m2): Float8Format(5, 2, has_infinity=True)}


_FORMATS = None


def format_of(dtype):
    """The Float8Format of a dtype lowered natively, or None."""
    global _FORMATS
    dtype = np.dtype(dtype)
    if dtype.itemsize != 1 or dtype.kind in "biu":     # ml_dtypes is loaded only for its own types
        return None
    if _FORMATS is None:
        _FORMATS = _formats()
    return _FORMATS.get(dtype)


def _i32(value):
    return ir.Constant(I32, value)


def emit_f32_to_bits(b, x, fmt):
    """The format's byte for a float32 value, rounded to nearest even."""
    bits = b.bitcast(x, I32)
    sign = b.lshr(b.and_(bits, _i32(0x80000000)), _i32(24))
    magnitude = b.and_(bits, _i32(0x7FFFFFFF))
    shift = 23 - fmt.mantissa_bits
    odd = b.and_(b.lshr(magnitude, _i32(shift)), _i32(1))
    rounded = b.add(magnitude, b.add(_i32((1 << (shift - 1)) - 1), odd))
    normal = b.sub(b.lshr(rounded, _i32(shift)), _i32((127 - fmt.bias) << fmt.mantissa_bits))
    normal = b.select(b.icmp_signed(">", normal, _i32(fmt.largest_code)), _i32(fmt.overflow_code), normal)
    # below the smallest normal: a multiple of the subnormal quantum, rounded by the addition
    magic = ir.Constant(F32, fmt.subnormal_quantum * 2.0 ** 23)
    absolute = b.bitcast(magnitude, F32)
    steps = b.fsub(b.fadd(absolute, magic), magic)
    subnormal = b.fptoui(b.fmul(steps, ir.Constant(F32, 1 / fmt.subnormal_quantum)), I32)
    is_subnormal = b.icmp_unsigned("<", magnitude, _i32((127 - fmt.bias + 1) << 23))
    code = b.select(is_subnormal, subnormal, normal)
    code = b.select(b.icmp_unsigned(">", magnitude, _i32(0x7F800000)), _i32(fmt.nan_code), code)
    return b.trunc(b.or_(code, sign), I8)


def emit_bits_to_f32(b, raw, fmt):
    """The float32 value of a format's byte."""
    byte = b.zext(raw, I32)
    sign = b.shl(b.and_(byte, _i32(0x80)), _i32(24))
    exponent = b.and_(b.lshr(byte, _i32(fmt.mantissa_bits)), _i32(fmt.exponent_mask))
    mantissa = b.and_(byte, _i32((1 << fmt.mantissa_bits) - 1))
    normal = b.or_(b.shl(b.add(exponent, _i32(127 - fmt.bias)), _i32(23)),
                   b.shl(mantissa, _i32(23 - fmt.mantissa_bits)))
    subnormal = b.bitcast(b.fmul(b.uitofp(mantissa, F32), ir.Constant(F32, fmt.subnormal_quantum)), I32)
    magnitude = b.select(b.icmp_unsigned("==", exponent, _i32(0)), subnormal, normal)
    top = b.icmp_unsigned("==", exponent, _i32(fmt.exponent_mask))
    if fmt.has_infinity:       # the all-ones exponent: inf (mantissa 0) or NaN
        special = b.or_(_i32(0x7F800000), b.shl(mantissa, _i32(23 - fmt.mantissa_bits)))
        magnitude = b.select(top, special, magnitude)
    else:                      # only S.1111.111 is special: NaN
        is_nan = b.and_(top, b.icmp_unsigned("==", mantissa, _i32((1 << fmt.mantissa_bits) - 1)))
        magnitude = b.select(is_nan, _i32(0x7FC00000), magnitude)
    return b.bitcast(b.or_(magnitude, sign), F32)


def emit_round(b, x, fmt):
    """A float32 value rounded to the format (still held as float32)."""
    return emit_bits_to_f32(b, emit_f32_to_bits(b, x, fmt), fmt)
