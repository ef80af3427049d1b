"""Elementwise functions with NumPy's broadcasting and JAX's type promotion."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast, promote_to_inexact, promote_to_numeric


def _numeric(name, lax_fn):
    def fn(x1, x2):
        return lax_fn(*promote_and_broadcast(name, x1, x2))
    fn.__name__ = name
    return fn


def _inexact_unary(name, lax_fn):
    def fn(x):
        return lax_fn(*promote_to_inexact(name, x))
    fn.__name__ = name
    return fn


def _unary(name, lax_fn):
    def fn(x):
        return lax_fn(*promote_and_broadcast(name, x))
    fn.__name__ = name
    return fn


def _numeric_or_logical(name, lax_fn, logical_fn):
    """As NumPy (and JAX): on booleans, + and maximum are `or`, * and minimum are `and`."""
    def fn(x1, x2):
        a, b = promote_and_broadcast(name, x1, x2)
        return logical_fn(a, b) if a.dtype == dtypes.bool_ else lax_fn(a, b)
    fn.__name__ = name
    return fn


add = _numeric_or_logical("add", lax.add, lax.bitwise_or)
subtract = _numeric("subtract", lax.sub)
multiply = _numeric_or_logical("multiply", lax.mul, lax.bitwise_and)
maximum = _numeric_or_logical("maximum", lax.max, lax.bitwise_or)
minimum = _numeric_or_logical("minimum", lax.min, lax.bitwise_and)
equal = _numeric("equal", lax.eq)
not_equal = _numeric("not_equal", lax.ne)
def _ordered(compare):
    """A comparison jnp also makes of complex values: lexicographic, real parts first (as
    JAX and numpy; lax refuses complex operands)."""
    def fn(a, b):
        if not dtypes.is_complex(a.dtype):
            return compare(a, b)
        ties = lax.bitwise_and(lax.eq(lax.real(a), lax.real(b)), compare(lax.imag(a), lax.imag(b)))
        strict = lax.gt if compare in (lax.gt, lax.ge) else lax.lt
        return lax.bitwise_or(strict(lax.real(a), lax.real(b)), ties)
    return fn


less = _numeric("less", _ordered(lax.lt))
less_equal = _numeric("less_equal", _ordered(lax.le))
greater = _numeric("greater", _ordered(lax.gt))
greater_equal = _numeric("greater_equal", _ordered(lax.ge))
bitwise_and = _numeric("bitwise_and", lax.bitwise_and)
bitwise_or = _numeric("bitwise_or", lax.bitwise_or)
bitwise_xor = _numeric("bitwise_xor", lax.bitwise_xor)
logical_and = _numeric("logical_and", lambda a, b: lax.bitwise_and(_as_bool(a), _as_bool(b)))
logical_or = _numeric("logical_or", lambda a, b: lax.bitwise_or(_as_bool(a), _as_bool(b)))
logical_xor = _numeric("logical_xor", lambda a, b: lax.bitwise_xor(_as_bool(a), _as_bool(b)))
arctan2 = _numeric("arctan2", lambda a, b: lax.atan2(*promote_to_inexact("arctan2", a, b)))
nextafter = _numeric("nextafter", lambda a, b: lax.nextafter(*promote_to_inexact("nextafter", a, b)))


def _as_bool(x):
    return x if x.dtype == dtypes.bool_ else lax.ne(x, lax.full_like(x, 0))


def true_divide(x1, x2):
    return lax.div(*promote_to_inexact("true_divide", x1, x2))


divide = true_divide


def floor_divide(x1, x2):
    a, b = promote_and_broadcast("floor_divide", x1, x2)
    if dtypes.is_bool(a.dtype):
        raise TypeError("floor_divide does not accept boolean arrays")
    if dtypes.is_float(a.dtype):
        return lax.floor(lax.div(a, b))
    if dtypes.is_unsigned(a.dtype):
        return lax.div(a, b)
    # lax.div rounds toward zero; step down where the signs differ and it was inexact.
    quotient = lax.div(a, b)
    needs_fix = lax.bitwise_and(lax.ne(lax.sign(a), lax.sign(b)), lax.ne(lax.rem(a, b), lax.full_like(a, 0)))
    return lax.select_n(needs_fix, quotient, lax.sub(quotient, lax.full_like(quotient, 1)))


def remainder(x1, x2):
    """Python's modulo: the result takes the sign of the divisor; integer x % 0 is 0, as JAX."""
    a, b = promote_and_broadcast("remainder", x1, x2)
    if dtypes.is_int(b.dtype):
        b = lax.select_n(lax.eq(b, lax.full_like(b, 0)), b, lax.full_like(b, 1))
    r = lax.rem(a, b)
    zero = lax.full_like(r, 0)
    wrong_sign = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(b, lax.full_like(b, 0))))
    return lax.select_n(wrong_sign, r, lax.add(r, b))


mod = remainder


def power(x1, x2):
    check_arraylike("power", x1, x2)
    x2 = _static_integer_exponent(x2)
    if isinstance(x2, int) and not isinstance(x2, bool):
        (a,) = promote_to_numeric("power", x1)
        return lax.integer_pow(a, x2)
    a, b = promote_to_numeric("power", x1, x2)
    if dtypes.is_int(a.dtype):
        return _integer_power(a, b)
    return lax.pow(a, b)


def _static_integer_exponent(x2):
    """A concrete integer scalar (Python, numpy, or a 0-d array that is not traced) as a Python
    int, which takes the integer_pow path, as in JAX (so int ** negative raises TypeError)."""
    from jaxlite.core.array import Array
    # type(), not isinstance: tracers count as Array instances for isinstance (as in JAX).
    if (isinstance(x2, (np.ndarray, np.integer)) or type(x2) is Array) and np.ndim(x2) == 0 \
            and dtypes.is_int(np.result_type(x2)) and not dtypes.is_bool(np.result_type(x2)):
        return int(x2)
    return x2


def _integer_power(base, exponent):
    """Integer ** integer array, by repeated squaring over the exponent's bits."""
    from jaxlite.numpy.util import broadcast_to
    shape = exponent.shape if exponent.ndim else base.shape
    base, exponent = broadcast_to(base, shape), broadcast_to(exponent, shape)
    result = lax.full_like(base, 1)
    bits = 8 * base.dtype.itemsize
    for _ in range(bits):
        odd = lax.ne(lax.bitwise_and(exponent, lax.full_like(exponent, 1)), lax.full_like(exponent, 0))
        result = lax.select_n(odd, result, lax.mul(result, base))
        base = lax.mul(base, base)
        exponent = lax.div(exponent, lax.full_like(exponent, 2))
    return result


negative = _unary("negative", lax.neg)
positive = _unary("positive", lambda x: x)
sign = _unary("sign", lax.sign)
def square(x, /):
    return lax.square(*promote_to_numeric("square", x))



invert = _unary("invert", lax.bitwise_not)
bitwise_not = invert
exp = _inexact_unary("exp", lax.exp)
exp2 = _inexact_unary("exp2", lax.exp2)
expm1 = _inexact_unary("expm1", lax.expm1)
log = _inexact_unary("log", lax.log)
log1p = _inexact_unary("log1p", lax.log1p)
sqrt = _inexact_unary("sqrt", lax.sqrt)
cbrt = _inexact_unary("cbrt", lax.cbrt)
sin = _inexact_unary("sin", lax.sin)
cos = _inexact_unary("cos", lax.cos)
tanh = _inexact_unary("tanh", lax.tanh)
def _is_finite(x):
    if dtypes.is_complex(x.dtype):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    if not dtypes.is_inexact(x.dtype):   # a strong True, as JAX's
        return lax.full(x.shape, True, dtypes.bool_)
    return lax.is_finite(x)


isfinite = _unary("isfinite", _is_finite)


def absolute(x):
    (x,) = promote_and_broadcast("absolute", x)
    return x if dtypes.is_unsigned(x.dtype) or dtypes.is_bool(x.dtype) else lax.abs(x)


abs = absolute


def logical_not(x):
    check_arraylike("logical_not", x)
    (x,) = promote_and_broadcast("logical_not", x)
    return lax.bitwise_not(_as_bool(x))


def floor(x):
    (x,) = promote_and_broadcast("floor", x)
    return lax.floor(x) if dtypes.is_inexact(x.dtype) else x


def ceil(x):
    (x,) = promote_and_broadcast("ceil", x)
    return lax.ceil(x) if dtypes.is_inexact(x.dtype) else x


def round(a, decimals=0):
    """Round half to even, as NumPy does."""
    (x,) = promote_and_broadcast("round", a)
    if dtypes.is_complex(x.dtype):      # each part rounds, as in NumPy and JAX
        return lax.complex(round(lax.real(x), decimals), round(lax.imag(x), decimals))
    if not dtypes.is_float(x.dtype):
        return x
    if decimals == 0:
        return lax.round(x, rounding_method=1)
    factor = 10.0 ** decimals
    return lax.div(lax.round(lax.mul(x, factor), rounding_method=1), factor)


around = round


def isnan(x):
    (x,) = promote_and_broadcast("isnan", x)
    return lax.ne(x, x)  # False for every integer too, weakly typed when x is (as JAX's)


def isinf(x):
    (x,) = promote_and_broadcast("isinf", x)
    if dtypes.is_complex(x.dtype):
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    if not dtypes.is_float(x.dtype):
        return lax.full_like(x, False, dtypes.bool_)
    return lax.eq(lax.abs(x), lax.full_like(x, float("inf"), x.dtype))  # strong, as JAX's


def reciprocal(x):
    (x,) = promote_to_inexact("reciprocal", x)
    return lax.div(lax.full_like(x, 1), x)


def _integer_operands(name, *args):
    args = promote_and_broadcast(name, *args)
    if not dtypes.is_int(args[0].dtype):
        raise TypeError(f"{name} needs integer arguments, got {args[0].dtype}")
    return args


def left_shift(x1, x2):
    return lax.shift_left(*_integer_operands("left_shift", x1, x2))


def right_shift(x1, x2):
    """Arithmetic for signed integers and logical for unsigned ones, as in NumPy."""
    a, b = _integer_operands("right_shift", x1, x2)
    if dtypes.is_unsigned(a.dtype):
        return lax.shift_right_logical(a, b)
    return lax.shift_right_arithmetic(a, b)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift
