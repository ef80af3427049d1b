"""Special functions: erf, erfc, erf_inv, lgamma, digamma and polygamma.

numpy has none of these, so each impl computes in float64 and rounds to the
operand's dtype, which makes the float32 results correctly rounded or nearly so.
The approximations:

- erf near 0 is x * P(x^2); elsewhere erfc(x) = exp(-x^2) * erfcx(x), where
  erfcx(x) (1 + 2x) is smooth in t = (x - K) / (x + K) on [-1, 1]. Both P and
  that function are Chebyshev interpolants fitted at import time against
  Python's math.erf/math.erfc (a few hundred calls, ~1e-13 relative error), so
  no magic table of coefficients has to be trusted.
- lgamma, digamma and polygamma shift the argument up by their recurrences until
  an asymptotic (Stirling-type) series converges to double precision, and use
  the reflection formulas below 1/2.
- erf_inv starts from a closed-form guess (relative error ~2e-3) and polishes it
  with Newton steps, on erfc's logarithm in the tails so 1 - |y| keeps its digits.
"""
import math

import numpy as np
from numpy.polynomial import chebyshev

from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import FLOAT, as_operand, elementwise_aval, scalar_like, unary_primitive
from jaxlite.lax.elementwise import _bind_unary, exp, mul, neg, square
from jaxlite.lower import fusion_rules
from jaxlite.transforms import batching
from jaxlite.transforms.ad import defjvp, defjvp_with_output

_SQRT_PI = math.sqrt(math.pi)


def _in_float64(fn):
    """Run a float64 numpy implementation on the flattened operand and round the
    result back to the operand's shape and dtype."""
    def impl(x, **params):
        with np.errstate(all="ignore"):
            out = fn(np.asarray(x, np.float64).ravel(), **params)
        return np.asarray(out).reshape(x.shape).astype(x.dtype)
    return impl


def _piecewise(x, near_zero, small_fn, large_fn):
    """small_fn where near_zero, large_fn elsewhere, each evaluated only where it is used."""
    out = np.empty_like(x)
    out[near_zero] = small_fn(x[near_zero])
    out[~near_zero] = large_fn(x[~near_zero])
    return out


# ---------------------------------------------------------------- erf and erfc

_ERF_SMALL = 1.0   # below this |x|, erf comes from its Taylor-like series
_ERFCX_K = 4.0     # centre of the map x -> t for the erfcx interpolant


def _erf_over_x_ref(u):
    x = math.sqrt(u)
    return math.erf(x) / x if x else 2 / _SQRT_PI


def _erfcx_asymptotic(x):
    """exp(x^2) erfc(x) for x > 25 from its asymptotic series, converged here to double precision."""
    total, term = 1.0, 1.0
    for n in range(1, 30):
        term *= -(2 * n - 1) / (2 * x * x)
        total += term
    return total / (x * _SQRT_PI)


def _erfcx_scaled_ref(t):
    if t >= 1:
        return 2 / _SQRT_PI
    x = _ERFCX_K * (1 + t) / (1 - t)
    erfcx = _erfcx_asymptotic(x) if x > 25 else math.erfc(x) * math.exp(x * x)
    return erfcx * (1 + 2 * x)


_ERF_SMALL_COEFS = chebyshev.chebinterpolate(
    np.vectorize(lambda s: _erf_over_x_ref((s + 1) / 2 * _ERF_SMALL ** 2)), 24)
_ERFCX_COEFS = chebyshev.chebinterpolate(np.vectorize(_erfcx_scaled_ref), 36)


def _erf_small(x):
    """erf for |x| <= _ERF_SMALL."""
    s = 2 * np.square(x) / _ERF_SMALL ** 2 - 1
    return x * chebyshev.chebval(s, _ERF_SMALL_COEFS)


def _erfcx_nonnegative(x):
    """exp(x^2) erfc(x) for x >= 0 (inf maps to 0)."""
    t = (x - _ERFCX_K) / (x + _ERFCX_K)
    t = np.where(np.isinf(x), 1.0, t)
    return chebyshev.chebval(t, _ERFCX_COEFS) / (1 + 2 * x)


def _erfc_nonnegative(x):
    return np.exp(-np.square(x)) * _erfcx_nonnegative(x)


def _erf64(x):
    def tail(x):
        return np.sign(x) * (1 - _erfc_nonnegative(np.abs(x)))
    return _piecewise(x, np.abs(x) <= _ERF_SMALL, _erf_small, tail)


def _erfc64(x):
    def tail(x):
        upper = _erfc_nonnegative(np.abs(x))
        return np.where(x > 0, upper, 2 - upper)
    return _piecewise(x, np.abs(x) <= _ERF_SMALL, lambda x: 1 - _erf_small(x), tail)


def _erf_derivative(x):
    return mul(exp(neg(square(x))), scalar_like(x, 2 / _SQRT_PI))


erf_p = unary_primitive("erf", _in_float64(_erf64), FLOAT, subnormals_as_zero=True)
fusion_rules.elementwise(erf_p, "erf")
erf = _bind_unary(erf_p)
defjvp(erf_p, lambda t, x: mul(t, _erf_derivative(x)))

erfc_p = unary_primitive("erfc", _in_float64(_erfc64), FLOAT, underflows=True)
fusion_rules.elementwise(erfc_p, "erfc")
erfc = _bind_unary(erfc_p)
defjvp(erfc_p, lambda t, x: mul(neg(t), _erf_derivative(x)))

# ---------------------------------------------------------------- erf_inv


def _erf_inv_guess(y):
    """Winitzki's closed form: x with erf(x) ~ y to about 2e-3 relative error."""
    a = 0.147
    log_q = np.log1p(-np.square(y))
    b = 2 / (math.pi * a) + log_q / 2
    return np.sign(y) * np.sqrt(np.sqrt(np.square(b) - log_q / a) - b)


def _erf_inv_central(size):
    """Newton on erf(x) - |y|, for |y| <= 1/2."""
    x = np.abs(_erf_inv_guess(size))
    for _ in range(3):
        x = x - (_erf64(x) - size) * _SQRT_PI / 2 * np.exp(np.square(x))
    return x


def _erf_inv_tail(size):
    """Newton on log erfc(x) - log(1 - |y|), whose derivative is -2 / (sqrt(pi) erfcx(x))."""
    log_q = np.log(1 - size)   # exact: 1 - |y| loses no digits for |y| >= 1/2
    x = np.abs(_erf_inv_guess(size))
    for _ in range(3):
        erfcx = _erfcx_nonnegative(x)
        x = x + (np.log(erfcx) - np.square(x) - log_q) * _SQRT_PI / 2 * erfcx
    return np.where(size == 1, np.inf, np.where(size > 1, np.nan, x))


def _erf_inv64(y):
    size = np.abs(y)
    return np.copysign(_piecewise(size, size <= 0.5, _erf_inv_central, _erf_inv_tail), y)


erf_inv_p = unary_primitive("erf_inv", _in_float64(_erf_inv64), FLOAT)
fusion_rules.elementwise(erf_inv_p, "erf_inv")
erf_inv = _bind_unary(erf_inv_p)
defjvp_with_output(erf_inv_p, lambda ts, out, y: mul(ts[0], mul(exp(square(out)), scalar_like(out, _SQRT_PI / 2))))

# ---------------------------------------------------------------- gamma family

_ASYMPTOTIC_FROM = 20.0
_BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330]   # B_2, B_4, ..., B_20


def _shift_up(z, step_term):
    """Apply a recurrence f(z) = f(z + 1) + step_term(z) until z >= _ASYMPTOTIC_FROM.

    Returns the shifted arguments and the sum of the step terms. The step count
    is set by the smallest argument, so very negative arguments cost more.
    """
    finite = np.isfinite(z)
    lowest = np.min(z, where=finite, initial=_ASYMPTOTIC_FROM)
    total = np.zeros_like(z)
    for _ in range(int(np.ceil(_ASYMPTOTIC_FROM - lowest))):
        below = finite & (z < _ASYMPTOTIC_FROM)
        total += np.where(below, step_term(np.where(below, z, 1.0)), 0.0)
        z = np.where(below, z + 1, z)
    return z, total


def _near_integer(x):
    """x minus its nearest integer, exact, so sin(pi x) and tan(pi x) vanish at integers."""
    return x - np.round(x)


def _is_pole(x):
    return (x <= 0) & (x == np.floor(x))


def _stirling(z):
    """log Gamma(z) for z >= _ASYMPTOTIC_FROM."""
    series = sum(b / ((2 * k + 1) * (2 * k + 2) * z ** (2 * k + 1)) for k, b in enumerate(_BERNOULLI[:7]))
    return (z - 0.5) * np.log(z) - z + 0.5 * math.log(2 * math.pi) + series


def _lgamma64(x):
    reflect = x < 0.5
    z = np.where(reflect, 1 - x, x)
    shifted, log_steps = _shift_up(z, np.log)
    positive = np.where(np.isinf(z), np.inf, _stirling(shifted) - log_steps)
    reflected = math.log(math.pi) - np.log(np.abs(np.sin(math.pi * _near_integer(x)))) - positive
    return np.where(x == -np.inf, np.inf, np.where(reflect, reflected, positive))


def _digamma_asymptotic(z):
    series = sum(b / (2 * (k + 1) * z ** (2 * k + 2)) for k, b in enumerate(_BERNOULLI[:7]))
    return np.log(z) - 0.5 / z - series


def _digamma64(x):
    reflect = x < 0.5
    z = np.where(reflect, 1 - x, x)
    shifted, steps = _shift_up(z, lambda s: 1 / s)
    positive = np.where(np.isinf(z), np.inf, _digamma_asymptotic(shifted) - steps)
    cot_term = math.pi / np.tan(math.pi * _near_integer(x))
    out = np.where(reflect, positive - cot_term, positive)
    return np.where(_is_pole(x), np.nan, out)


def _polygamma_asymptotic(z, m):
    """psi^(m)(z) for m >= 1 and large z, without its sign (-1)^(m+1)."""
    leading = math.factorial(m - 1) / z ** m + math.factorial(m) / (2 * z ** (m + 1))
    series = sum(b * math.factorial(2 * k + m + 1) / (math.factorial(2 * k + 2) * z ** (2 * k + m + 2))
                 for k, b in enumerate(_BERNOULLI))
    return leading + series


def cot_derivative(m):
    """Integer coefficients, lowest power first, of D_m with d^m/dt^m cot(t) = D_m(cot t):
    D_0(c) = c and D_(k+1)(c) = -(1 + c^2) D_k'(c). Each D_m has terms of one parity whose
    coefficients share one sign, so evaluating it does not cancel. (Also the native
    polygamma's, llvm_math.)"""
    coefficients = [0, 1]
    for _ in range(m):
        derivative = [k * c for k, c in enumerate(coefficients)][1:]
        coefficients = [-(a + b) for a, b in zip(derivative + [0, 0], [0, 0] + derivative)]
    return coefficients


def _cot_pi(x):
    """cot(pi x), reduced exactly to r = x - round(x), and beyond |r| = 1/4 taken as
    tan(pi (1/2 - |r|)), exact argument: cot vanishes exactly at half-integers."""
    r = _near_integer(x)
    size = np.abs(r)
    near_half = size > 0.25
    tangent = np.tan(math.pi * np.where(near_half, 0.5 - size, size))
    return np.copysign(np.where(near_half, tangent, 1 / tangent), r)


def _polygamma64(x, m):
    """psi^(m)(x) = (-1)^(m+1) m! sum_k 1 / (x + k)^(m+1), shifted up by that sum's first terms;
    below 0, reflected: psi^(m)(x) = (-1)^m psi^(m)(1 - x) - pi^(m+1) D_m(cot(pi x))."""
    reflect = x < 0
    z = np.where(reflect, 1 - x, x)
    shifted, steps = _shift_up(z, lambda s: math.factorial(m) / s ** (m + 1))
    magnitude = np.where(np.isinf(z), 0.0, _polygamma_asymptotic(shifted, m) + steps)
    cot_term = np.polynomial.polynomial.polyval(_cot_pi(x), [float(c) * math.pi ** (m + 1) for c in cot_derivative(m)])
    out = np.where(reflect, -magnitude - cot_term, (-1) ** (m + 1) * magnitude)
    return np.where(_is_pole(x), np.inf if m % 2 else np.nan, out)


lgamma_p = unary_primitive("lgamma", _in_float64(_lgamma64), FLOAT, subnormals_as_zero=True)
fusion_rules.elementwise(lgamma_p, "lgamma")
lgamma = _bind_unary(lgamma_p)

digamma_p = unary_primitive("digamma", _in_float64(_digamma64), FLOAT, subnormals_as_zero=True)
fusion_rules.elementwise(digamma_p, "digamma")
digamma = _bind_unary(digamma_p)
defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))

polygamma_p = Primitive("polygamma")


def _polygamma_fusible(eqn):
    """Orders the native series covers; higher ones run numpy's loop (as good there)."""
    from jaxlite.lower.llvm_math import POLYGAMMA_MAX_ORDER     # loads llvmlite: only when jit compiles
    return eqn.params["m"] <= POLYGAMMA_MAX_ORDER


fusion_rules.elementwise(polygamma_p, "polygamma", fusible=_polygamma_fusible)
polygamma_p.def_impl(_in_float64(_polygamma64))
polygamma_p.def_abstract_eval(lambda x, m: elementwise_aval("polygamma", [x], FLOAT))
batching.vectorized_rule(polygamma_p)
defjvp(polygamma_p, lambda t, x, m: mul(t, polygamma(m + 1, x)))
defjvp(digamma_p, lambda t, x: mul(t, polygamma(1, x)))


def polygamma(m, x):
    """The m-th derivative of digamma, for a static integer m >= 1 (JAX takes m as an array)."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise TypeError(f"polygamma order m must be a static integer >= 1, got {m!r}")
    return polygamma_p.bind(as_operand(x), m=int(m))

