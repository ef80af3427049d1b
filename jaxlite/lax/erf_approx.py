"""erf, erfc and the inverse of erf composed from existing lax operations.

Stand-ins until lax has `erf`, `erfc` and `erf_inv` primitives; then jaxlite.random and
jaxlite.nn should call those and this module can go. Being compositions, they
already trace, batch and differentiate. Both evaluate in float32 (16-bit inputs
are widened, as XLA does), so float64 inputs get float32 accuracy.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.lax import elementwise as ew
from jaxlite.lax.base import FLOAT, as_operand, check_dtype


def _horner(coefficients, x):
    """The polynomial with the given coefficients (highest degree first) at x."""
    result = ew.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        result = ew.add(ew.mul(result, x), c)
    return result


def _in_float32(fn):
    """Evaluate fn at least in float32 and return the input's dtype."""
    def wrapped(x):
        x = as_operand(x)
        check_dtype(fn.__name__, x.aval, FLOAT)
        wide = x.dtype if x.dtype.itemsize >= 4 else dtypes.float32
        return ew.convert_element_type(fn(ew.convert_element_type(x, wide)), x.dtype)
    wrapped.__name__ = fn.__name__
    return wrapped


# Maclaurin series of erf(x) / x in powers of x^2, scaled by 2/sqrt(pi); truncated where the
# next term is below float32 resolution for |x| <= 1/2.
_ERF_SERIES = [2 / np.sqrt(np.pi) * (-1) ** n / (np.prod(np.arange(1, n + 1)) * (2 * n + 1))
               for n in reversed(range(6))]
# erfc(z) ~ t exp(-z^2 + P(t)) with t = 1 / (1 + z/2): a Chebyshev fit with relative
# error below 1.2e-7 for all z >= 0 (Press et al., Numerical Recipes, section 6.2).
_ERFC_EXPONENT = [0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
                  -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223]


def _erf_series(x):
    """erf near zero, with full relative accuracy where 1 - erfc(|x|) would cancel."""
    return ew.mul(x, _horner(_ERF_SERIES, ew.square(x)))


def _erfc_of_abs(x):
    z = ew.abs(x)
    t = ew.div(1.0, ew.add(ew.mul(z, 0.5), 1.0))
    return ew.mul(t, ew.exp(ew.sub(_horner(_ERFC_EXPONENT, t), ew.square(z))))


def _near_zero(x):
    return ew.le(ew.abs(x), 0.5)


@_in_float32
def erf(x):
    tail = ew.mul(ew.sign(x), ew.sub(1.0, _erfc_of_abs(x)))
    return ew.select_n(_near_zero(x), tail, _erf_series(x))


@_in_float32
def erfc(x):
    """1 - erf(x), accurate in relative terms for large positive x where it is tiny."""
    small = _erfc_of_abs(x)
    tail = ew.select_n(ew.lt(x, 0.0), small, ew.sub(2.0, small))
    return ew.select_n(_near_zero(x), tail, ew.sub(1.0, _erf_series(x)))


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision:
# erfinv(x) = x P(w) with w = -log(1 - x^2), one polynomial for w < 5 and one in sqrt(w) beyond.
# XLA uses the same approximation, so samples match JAX's to float32 rounding.
_ERF_INV_CENTRAL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                    0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERF_INV_TAIL = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


@_in_float32
def erf_inv(x):
    w = ew.neg(ew.log1p(ew.neg(ew.square(x))))
    central = ew.lt(w, 5.0)
    p_central = _horner(_ERF_INV_CENTRAL, ew.sub(w, 2.5))
    p_tail = _horner(_ERF_INV_TAIL, ew.sub(ew.sqrt(w), 3.0))
    result = ew.mul(ew.select_n(central, p_tail, p_central), x)
    at_pole = ew.eq(ew.abs(x), 1.0)
    return ew.select_n(at_pole, result, ew.mul(x, float("inf")))
