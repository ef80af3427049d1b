"""More elementwise functions: trigonometry, logarithms in other bases, rounding,
sign manipulation and clipping. Built on lax with NumPy broadcasting and JAX's
promotion (integers become the default float for the transcendental ones)."""
import functools
import math

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.lax.base import scalar_like
from jaxlite.lax.cumulative import logaddexp as _lax_logaddexp
from jaxlite.core.abstract import broadcast_shapes
from jaxlite.numpy.ufuncs import _as_bool, _inexact_unary, _numeric, power
from jaxlite.transforms.custom_derivatives import custom_jvp
from jaxlite.numpy.util import (broadcast_to, check_arraylike, promote_and_broadcast, promote_dtypes,
                               promote_to_inexact)

tan = _inexact_unary("tan", lax.tan)
arcsin = _inexact_unary("arcsin", lax.asin)
arccos = _inexact_unary("arccos", lax.acos)
arctan = _inexact_unary("arctan", lax.atan)
sinh = _inexact_unary("sinh", lax.sinh)
cosh = _inexact_unary("cosh", lax.cosh)
arcsinh = _inexact_unary("arcsinh", lax.asinh)
arccosh = _inexact_unary("arccosh", lax.acosh)
arctanh = _inexact_unary("arctanh", lax.atanh)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


def _scaled(name, factor):
    """x * factor for a float constant, computed in x's (inexact) dtype."""
    def fn(x):
        (x,) = promote_to_inexact(name, x)
        return lax.mul(x, scalar_like(x, factor))
    fn.__name__ = name
    return fn


deg2rad = radians = _scaled("deg2rad", math.pi / 180)
rad2deg = degrees = _scaled("rad2deg", 180 / math.pi)
# Strong constants: JAX's log2 and log10 of Python scalars are strongly typed.
log2 = _inexact_unary("log2", lambda x: lax.div(lax.log(x), lax.full((), math.log(2), x.dtype)))
log10 = _inexact_unary("log10", lambda x: lax.div(lax.log(x), lax.full((), math.log(10), x.dtype)))


def _weak_when_inputs_are(fn):
    """Keep the result weakly typed when the inputs' promotion is, as JAX does (hypot(True, 2.0)
    is weak, sinc(True) and hypot(True, True) are strong: a Python bool is a strong bool).

    Some of these functions select among constants made in the operand's dtype,
    which are strongly typed; the result's weak type is restored here.
    """
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        weak = dtypes.result_type(*args, return_weak_type_flag=True)[1]
        return lax.convert_element_type(out, out.dtype, weak_type=True) if weak else out
    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


def _same_shape(args):
    """Broadcast rank-0 operands too: select_n needs cases of the selector's shape."""
    shape = broadcast_shapes(*(x.shape for x in args))
    return [broadcast_to(x, shape) for x in args]


def _inexact_binary(name, lax_fn):
    def fn(x1, x2):
        return lax_fn(*_same_shape(promote_to_inexact(name, x1, x2)))
    fn.__name__ = name
    return _weak_when_inputs_are(fn)


def _hypot(x, y):
    # Scale by the larger magnitude so the squares neither overflow nor underflow.
    x, y = lax.abs(x), lax.abs(y)
    big, small = lax.max(x, y), lax.min(x, y)
    safe_big = lax.select_n(lax.eq(big, lax.full_like(big, 0)), big, lax.full_like(big, 1))
    ratio = lax.div(small, safe_big)
    out = lax.mul(big, lax.sqrt(lax.add(lax.square(ratio), scalar_like(ratio, 1))))
    # An infinite side wins even over NaN, as in C's hypot.
    inf = lax.full_like(big, np.inf)
    return lax.select_n(lax.bitwise_or(lax.eq(x, inf), lax.eq(y, inf)), out, inf)


hypot = _inexact_binary("hypot", _hypot)


@custom_jvp
def _logaddexp(a, b):
    return _lax_logaddexp(a, b)


@custom_jvp
def _logaddexp2(a, b):
    ln2 = scalar_like(a, math.log(2))
    return lax.div(_lax_logaddexp(lax.mul(a, ln2), lax.mul(b, ln2)), ln2)


def _logaddexp_jvp(function, exp):
    """d out = a_dot exp(a - out) + b_dot exp(b - out), with +inf read as 0 in each exponent,
    as JAX takes it: at (inf, inf) the gradient is (1, 1), at (inf, 1) it is (1, e), and at
    (-inf, -inf) NaN."""
    def jvp(primals, tangents):
        (a, b), (a_dot, b_dot) = primals, tangents
        out = function(a, b)

        def weight(x):
            return exp(lax.sub(_finite_or_zero(x), _finite_or_zero(out)))
        return out, lax.add(lax.mul(a_dot, weight(a)), lax.mul(b_dot, weight(b)))
    function.defjvp(jvp)


def _finite_or_zero(x):
    return lax.select_n(lax.eq(x, lax.full_like(x, np.inf)), x, lax.full_like(x, 0))


_logaddexp_jvp(_logaddexp, lax.exp)
_logaddexp_jvp(_logaddexp2, lax.exp2)
logaddexp = _inexact_binary("logaddexp", _logaddexp)
logaddexp2 = _inexact_binary("logaddexp2", _logaddexp2)


def _copysign(x, y):
    magnitude = lax.abs(x)
    return lax.select_n(_sign_bit(y), magnitude, lax.neg(magnitude))


_copysign_of_broadcast = _inexact_binary("copysign", _copysign)


def copysign(x1, x2, /):
    """|x1| with the sign of x2."""
    _check_where_shapes(x1, x2)
    if any(dtypes.is_complex(dtypes.result_type(x)) for x in (x1, x2)):
        raise TypeError("copysign does not support complex-valued inputs")
    return _copysign_of_broadcast(x1, x2)


def _check_where_shapes(x1, x2):
    """JAX builds copysign and heaviside on jnp.where, so operands of any ranks that do not
    broadcast are where's ValueError (not the elementwise TypeError of equal ranks)."""
    broadcast_shapes(np.shape(x1), np.shape(x2))


def _sign_bit(x):
    """True where x's sign bit is set: negative numbers, -0.0 and negative NaNs."""
    if not dtypes.is_float(x.dtype):
        return lax.lt(x, lax.full_like(x, 0, x.dtype))  # strong, as JAX's
    width = np.dtype(f"i{x.dtype.itemsize}")
    return lax.lt(lax.bitcast_convert_type(x, width), lax.full_like(x, 0, width))


def signbit(x):
    (x,) = promote_and_broadcast("signbit", x)
    return lax.full_like(x, False, dtypes.bool_) if dtypes.is_bool(x.dtype) else _sign_bit(x)


def _nan_ignoring(name, lax_fn):
    """fmax/fmin: like maximum/minimum, but a NaN loses to a number."""
    def fn(x1, x2):
        a, b = _same_shape(promote_and_broadcast(name, x1, x2))
        if not dtypes.is_float(a.dtype):
            return lax_fn(a, b)
        return lax.select_n(lax.ne(a, a), lax.select_n(lax.ne(b, b), lax_fn(a, b), a), b)
    fn.__name__ = name
    return fn


fmax = _nan_ignoring("fmax", lax.max)
fmin = _nan_ignoring("fmin", lax.min)


@_weak_when_inputs_are
def heaviside(x1, x2):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    _check_where_shapes(x1, x2)
    x, at_zero = _same_shape(promote_to_inexact("heaviside", x1, x2))
    zero, one = lax.full_like(x, 0), lax.full_like(x, 1)
    positive = lax.select_n(lax.gt(x, zero), zero, one)
    return lax.select_n(lax.eq(x, zero), positive, at_zero)


def fmod(x1, x2):
    """C's fmod: the remainder takes the sign of the dividend."""
    a, b = promote_and_broadcast("fmod", x1, x2)
    if dtypes.is_bool(a.dtype):
        raise TypeError("fmod does not accept boolean arrays")
    return lax.rem(a, b)


@_weak_when_inputs_are
def float_power(x1, x2):
    """x1 ** x2 in the operands' inexact type (JAX's, not numpy's widest type)."""
    check_arraylike("float_power", x1, x2)
    return power(*promote_to_inexact("float_power", x1, x2))


def _float_only(name, lax_fn):
    """Rounding functions leave integers as they are."""
    def fn(x):
        (x,) = promote_and_broadcast(name, x)
        return lax_fn(x) if dtypes.is_float(x.dtype) else x
    fn.__name__ = name
    return fn


def _trunc(x):
    return lax.select_n(lax.lt(x, lax.full_like(x, 0)), lax.floor(x), lax.ceil(x))


trunc = _float_only("trunc", _trunc)


def rint(x, /):
    """x rounded to the nearest integer, ties to even; integers and bools become the default
    float (as JAX's rint, unlike its other rounding functions)."""
    (x,) = promote_and_broadcast("rint", x)
    if dtypes.is_complex(x.dtype):
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    if not dtypes.is_float(x.dtype):
        return lax.convert_element_type(x, dtypes.default_float_dtype())
    return lax.round(x, rounding_method=1)


@_weak_when_inputs_are
def sinc(x):
    """sin(pi x) / (pi x), with its limit 1 at 0, where every derivative is the limit too
    (grad(grad(sinc))(0.) = -pi**2 / 3, as JAX: the series' coefficients of pi x times pi per
    order, rounded as JAX's are)."""
    (x,) = promote_to_inexact("sinc", x)
    is_zero = lax.eq(x, lax.full_like(x, 0))
    pi_x = lax.mul(scalar_like(x, math.pi), x)
    safe = lax.select_n(is_zero, pi_x, lax.full_like(x, 1))
    return lax.select_n(is_zero, lax.div(lax.sin(safe), safe), _sin_over_t_derivative_at_zero(0, pi_x))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _sin_over_t_derivative_at_zero(order, t):
    """The order-th derivative of sin(t) / t at 0, at t's shape: from sin t / t = sum (-t^2)^k /
    (2k+1)!, (-1)^(order/2) / (order + 1) for even orders, 0 for odd ones. Its JVP is the next
    order, so every derivative of sinc at 0 is its limit."""
    value = 0.0 if order % 2 else (-1) ** (order // 2) / (order + 1)
    return lax.full_like(t, value)


@_sin_over_t_derivative_at_zero.defjvp
def _sin_over_t_derivative_at_zero_jvp(order, primals, tangents):
    (t,), (t_dot,) = primals, tangents
    return _sin_over_t_derivative_at_zero(order, t), lax.mul(_sin_over_t_derivative_at_zero(order + 1, t), t_dot)


def clip(arr=None, min=None, max=None, a=None, a_min=None, a_max=None):
    """Limit values to [min, max]; either bound may be None. (a, a_min, a_max: NumPy's old names.)"""
    arr = a if arr is None else arr
    low = a_min if min is None else min
    high = a_max if max is None else max
    check_arraylike("clip", arr)
    out = arr
    if low is not None:
        out = _numeric("clip", lax.max)(out, low)
    if high is not None:
        out = _numeric("clip", lax.min)(out, high)
    return promote_and_broadcast("clip", out)[0]


def where(condition, x=None, y=None, *, size=None, fill_value=None):
    """x where condition holds, else y. The one-argument form is nonzero(condition)."""
    if x is None and y is None:
        from jaxlite.numpy.sorting import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided to jnp.where")
    check_arraylike("where", condition, x, y)
    (condition,), (x, y) = promote_and_broadcast("where", condition), promote_dtypes(x, y)
    condition, x, y = _same_shape([_as_bool(condition), x, y])
    return lax.select_n(condition, y, x)


def _real_only(name, fn):
    def op(x):
        (x,) = promote_and_broadcast(name, x)
        return fn(x)
    op.__name__ = name
    return op


def _on_complex(name, complex_fn, real_fn):
    """complex_fn on complex values, real_fn on the others (jnp's parts of a real array)."""
    def op(x):
        (x,) = promote_and_broadcast(name, x)
        return complex_fn(x) if dtypes.is_complex(x.dtype) else real_fn(x)
    op.__name__ = name
    return op


real = _on_complex("real", lax.real, lambda x: x)
imag = _weak_when_inputs_are(_on_complex("imag", lax.imag, lambda x: lax.full_like(x, 0)))
conj = conjugate = _on_complex("conjugate", lax.conj, lambda x: x)


def angle(z, deg=False):
    """The argument of z in radians (degrees with deg=True); real inputs give 0 or pi."""
    (z,) = promote_and_broadcast("angle", z)
    if not dtypes.is_inexact(z.dtype) or (dtypes.is_float(z.dtype) and z.ndim == 0):
        # As JAX: integers, bools and real scalars take the default float.
        z = lax.convert_element_type(z, dtypes.default_float_dtype())
    parts = (lax.imag(z), lax.real(z)) if dtypes.is_complex(z.dtype) else (lax.full_like(z, 0), z)
    out = lax.atan2(*parts)
    return lax.mul(out, scalar_like(out, 180 / np.pi)) if deg else out


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = promote_to_inexact("isclose", a, b)
    magnitude = lax.abs(b)
    # The tolerances in the operands' (real) dtype, as JAX converts them: float16 stays float16.
    rtol, atol = (lax.convert_element_type(t, magnitude.dtype) for t in (rtol, atol))
    close = lax.le(lax.abs(lax.sub(a, b)), lax.add(lax.mul(magnitude, rtol), atol))
    both_inf = lax.eq(a, b)
    out = lax.bitwise_or(close, both_inf)
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(lax.ne(a, a), lax.ne(b, b)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    from jaxlite.numpy.reductions import all
    return all(isclose(a, b, rtol, atol, equal_nan))

