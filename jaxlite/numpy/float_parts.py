"""Elementwise functions on the parts of numbers: divmod, modf, frexp/ldexp, spacing,
gcd/lcm, fabs, isposinf/isneginf and nan_to_num (NumPy's semantics, JAX's dtypes)."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.lax.control_flow import while_loop
from jaxlite.numpy import reductions, ufuncs
from jaxlite.numpy.math_functions import trunc
from jaxlite.core.abstract import broadcast_shapes
from jaxlite.numpy.util import (broadcast_mismatch, broadcast_to, check_arraylike, promote_and_broadcast,
                                promote_to_inexact)


def divmod(x1, x2, /):
    return ufuncs.floor_divide(x1, x2), ufuncs.remainder(x1, x2)


def modf(x, /, out=None):
    (x,) = promote_to_inexact("modf", x)
    whole = trunc(x)
    return lax.sub(x, whole), whole


def fabs(x, /):
    return lax.abs(*promote_to_inexact("fabs", x))


# float dtype -> (same-width integer dtype, mantissa bits, exponent bias)
_LAYOUT = {dtypes.float32: (dtypes.int32, 23, 127), dtypes.float64: (dtypes.int64, 52, 1023)}


def frexp(x, /):
    """Mantissa in [0.5, 1) and int32 exponent with x = mantissa * 2**exponent, read from
    the bits (subnormals are scaled into the normal range first). Zeros, subnormals and
    non-finite values are told apart by their bits, not by float comparisons, because
    float arithmetic flushes subnormals (as XLA's does): a subnormal then scales to a
    signed zero and comes out as (+-0.5, -149), as in JAX."""
    (x,) = promote_to_inexact("frexp", x)
    narrow = x.dtype not in _LAYOUT
    wide = lax.convert_element_type(x, dtypes.float32) if narrow else x
    int_dtype, mantissa_bits, bias = _LAYOUT[wide.dtype]

    def constant(value):
        return lax.full(wide.shape, value, int_dtype)

    def exponent_field(bits):
        return lax.bitwise_and(lax.shift_right_logical(bits, constant(mantissa_bits)), constant(2 * bias + 1))

    raw = lax.bitcast_convert_type(wide, int_dtype)
    magnitude_bits = lax.bitwise_and(raw, constant((1 << (8 * wide.dtype.itemsize - 1)) - 1))
    zero = lax.eq(magnitude_bits, constant(0))
    subnormal = lax.bitwise_and(lax.eq(exponent_field(raw), constant(0)), lax.bitwise_not(zero))
    special = lax.bitwise_or(zero, lax.eq(exponent_field(raw), constant(2 * bias + 1)))
    if x.dtype == dtypes.bfloat16:
        # JAX (XLA:CPU) gives a bfloat16 subnormal back as (x, 0), eager and jit alike.
        special = lax.bitwise_or(special, subnormal)
    scaled = lax.select_n(subnormal, wide, lax.mul(wide, lax.full_like(wide, 2.0 ** mantissa_bits)))
    bits = lax.bitcast_convert_type(scaled, int_dtype)
    exponent = lax.sub(exponent_field(bits), constant(bias - 1))
    exponent = lax.select_n(subnormal, exponent, lax.sub(exponent, constant(mantissa_bits)))
    cleared = lax.bitwise_and(bits, constant(~((2 * bias + 1) << mantissa_bits)))
    mantissa = lax.bitcast_convert_type(lax.bitwise_or(cleared, constant((bias - 1) << mantissa_bits)), wide.dtype)
    mantissa = lax.select_n(special, mantissa, wide)
    exponent = lax.select_n(special, lax.convert_element_type(exponent, dtypes.int32),
                            lax.full(wide.shape, 0, dtypes.int32))
    return (lax.convert_element_type(mantissa, x.dtype) if narrow else mantissa), exponent


def ldexp(x1, x2, /):
    """x1 * 2**x2 for integer x2, in two halves so that 2**x2 itself never overflows."""
    check_arraylike("ldexp", x1, x2)
    if not dtypes.is_int(dtypes.result_type(x2)):
        raise ValueError(f"ldexp not supported for input types ({dtypes.result_type(x1)!r}, "
                         f"{dtypes.result_type(x2)!r})")
    (x1,) = promote_to_inexact("ldexp", x1)
    (x2,) = promote_and_broadcast("ldexp", x2)
    try:
        shape = broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise broadcast_mismatch("ldexp", [x1.shape, x2.shape]) from None
    x1, x2 = broadcast_to(x1, shape), broadcast_to(x2, shape)
    half = lax.div(x2, lax.full_like(x2, 2))
    rest = lax.sub(x2, half)
    two = lambda n: lax.exp2(lax.convert_element_type(n, x1.dtype))
    return lax.mul(lax.mul(x1, two(half)), two(rest))


def spacing(x, /):
    """The distance to the next representable number away from zero (signed like x)."""
    (x,) = promote_to_inexact("spacing", x)
    away = lax.select_n(lax.lt(x, lax.full_like(x, 0)), lax.full_like(x, np.inf),
                        lax.full_like(x, -np.inf))
    return lax.sub(lax.nextafter(x, away), x)


def _integers(name, x1, x2):
    check_arraylike(name, x1, x2)
    x1, x2 = promote_and_broadcast(name, x1, x2)
    if not dtypes.is_int(x1.dtype):
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    shape = broadcast_shapes(x1.shape, x2.shape)
    return broadcast_to(x1, shape), broadcast_to(x2, shape)


def _gcd(a, b):
    """Euclid's algorithm on magnitudes, run until every pair is done."""
    def step(pair):
        a, b = pair
        done = lax.eq(b, lax.full_like(b, 0))
        safe_b = lax.select_n(done, b, lax.full_like(b, 1))
        return lax.select_n(done, b, a), lax.select_n(done, lax.rem(a, safe_b), b)

    def running(pair):
        return reductions.any(lax.ne(pair[1], lax.full_like(pair[1], 0)))

    return while_loop(running, step, (lax.abs(a), lax.abs(b)))[0]


def gcd(x1, x2):
    return _gcd(*_integers("gcd", x1, x2))


def lcm(x1, x2):
    x1, x2 = _integers("lcm", x1, x2)
    divisor = _gcd(x1, x2)
    zero = lax.eq(divisor, lax.full_like(divisor, 0))
    quotient = lax.div(lax.abs(x1), lax.select_n(zero, divisor, lax.full_like(divisor, 1)))
    return lax.select_n(zero, lax.mul(quotient, lax.abs(x2)), lax.full_like(divisor, 0))


def _infinity_test(name, sign):
    def fn(x, /, out=None):
        (x,) = promote_and_broadcast(name, x)
        if not dtypes.is_float(x.dtype):
            return lax.full(x.shape, False, dtypes.bool_)
        return lax.eq(x, lax.full_like(x, sign * np.inf, x.dtype))  # strong, as JAX's
    fn.__name__ = name
    return fn


isposinf = _infinity_test("isposinf", 1)
isneginf = _infinity_test("isneginf", -1)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN to `nan`, infinities to `posinf`/`neginf` (default: the dtype's extremes)."""
    check_arraylike("nan_to_num", x)
    (x,) = promote_and_broadcast("nan_to_num", x)
    if dtypes.is_complex(x.dtype):      # each part, as numpy and JAX
        parts = (nan_to_num(part, copy, nan, posinf, neginf) for part in (lax.real(x), lax.imag(x)))
        return lax.complex(*parts)
    if not dtypes.is_float(x.dtype):
        return x
    info = dtypes.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    # Strongly typed constants: JAX's nan_to_num of a Python scalar is strong.
    x = lax.select_n(lax.ne(x, x), x, lax.full_like(x, nan, x.dtype))
    x = lax.select_n(lax.eq(x, lax.full_like(x, np.inf)), x, lax.full_like(x, posinf, x.dtype))
    return lax.select_n(lax.eq(x, lax.full_like(x, -np.inf)), x, lax.full_like(x, neginf, x.dtype))
