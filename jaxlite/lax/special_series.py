"""Special functions built from other lax primitives: the incomplete gamma and beta
functions, Hurwitz's zeta and the scaled Bessel functions I0 and I1.

Each is a series, a continued fraction or an asymptotic expansion written in lax
operations (loops with a convergence test and an iteration cap, or fixed unrolled sums),
with select between regimes. So jit compiles them like any other composition: fused
elementwise kernels and native loops, no special support in the compiler.

Where a branch is not taken, its inputs are replaced by harmless values before it is
evaluated, so neither its value nor its derivative can leak NaN through the select.
"""
import math
from typing import Callable, NamedTuple

import numpy as np

from jaxlite.core import dtypes
from jaxlite.lax.base import as_operand, composite_primitive
from jaxlite.lax.control_flow import while_loop
from jaxlite.lax.elementwise import (abs, convert_element_type, exp, floor, full_like, is_finite,
                                     log, log1p, pow, select_n, sign, sqrt)
from jaxlite.lax.reductions import reduce_or
from jaxlite.lax.special import digamma, lgamma
from jaxlite.transforms import ad
from jaxlite.transforms.ad import jvp
from jaxlite.transforms.custom_derivatives import custom_jvp

_MAX_ITERATIONS = 2000


def where(condition, if_true, if_false):
    """select_n with the cases broadcast to the condition's shape (Python scalars included)."""
    like = if_true if hasattr(if_true, "dtype") else if_false
    cases = [c if getattr(c, "shape", None) == condition.shape else full_like(like, 0, shape=condition.shape) + c
             for c in (if_false, if_true)]
    return select_n(condition, *cases)


def _float_operands(name, *args):
    """Operands of one float dtype and shape (integers become the default float), as JAX's
    special-function primitives require of their arguments after jax.scipy's promotion."""
    args = [as_operand(a) for a in args]
    dtype = dtypes.result_type(*args)
    if not dtypes.is_float(dtype):
        dtype = dtypes.default_float_dtype()
    args = [convert_element_type(a, dtype, weak_type=getattr(a, "weak_type", False)) for a in args]
    shapes = {a.shape for a in args if a.ndim}
    if len(shapes) > 1:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        + ", ".join(str(a.shape) for a in args))
    shape = shapes.pop() if shapes else ()
    return [a if a.shape == shape else full_like(a, 0, shape=shape) + a for a in args]


def _eps(x):
    return float(dtypes.finfo(x.dtype).eps)


def _tiny(x):
    return float(dtypes.finfo(x.dtype).tiny)


def _any(x):
    return reduce_or(x, tuple(range(x.ndim)))


def _nonzero(d, tiny):
    """Lentz's guard: a denominator that vanished is replaced by a tiny number."""
    return where(abs(d) < tiny, tiny, d)


# ---------------------------------------------------------------- incomplete gamma

class _Iteration(NamedTuple):
    """A convergent iteration over the parameters `params` (a tuple of arrays): carry starts at
    init(params), steps by step(params, carry) until no element is unconverged(carry), and
    finish(params, carry) gives the value. tangent_unconverged(carry, carry_dot) judges the
    derivative's convergence, which can lag the value's (a continued fraction that terminates
    at integer a has converged values but not derivatives)."""
    init: Callable
    step: Callable
    unconverged: Callable
    tangent_unconverged: Callable
    finish: Callable


def _converge(iteration, params):
    def cond(state):
        return (state[0] < _MAX_ITERATIONS) & _any(iteration.unconverged(state[1]))

    def body(state):
        return state[0] + 1, iteration.step(params, state[1])

    carry = while_loop(cond, body, (0, iteration.init(params)))[1]
    return iteration.finish(params, carry)


def _along(iteration, params_dot):
    """The iteration of (value, derivative along params_dot) pairs, run until both converge."""
    def init(params):
        return jvp(iteration.init, (params,), (params_dot,))

    def step(params, carry):
        return jvp(iteration.step, (params, carry[0]), (params_dot, carry[1]))

    def unconverged(carry):
        return iteration.unconverged(carry[0]) | iteration.tangent_unconverged(*carry)

    def tangent_unconverged(carry, carry_dot):
        return (iteration.tangent_unconverged(carry[0], carry_dot[0])
                | iteration.tangent_unconverged(carry[0], carry_dot[1]))

    def finish(params, carry):
        return jvp(iteration.finish, (params, carry[0]), (params_dot, carry[1]))

    return _Iteration(init, step, unconverged, tangent_unconverged, finish)


def _unit(params, position):
    return tuple(full_like(p, 1.0 if i == position else 0.0) for i, p in enumerate(params))


def _converged_partial(make_iteration, position):
    """d/d params[position] of the value that make_iteration(params[-1]) converges to, as a
    function of params. Its own partials iterate the second derivatives along to convergence,
    so reverse mode (which cannot transpose a while_loop) still reaches second order: each
    derivative is a value that multiplies a tangent."""
    def partial(*params):
        return _converge(_along(make_iteration(params[-1]), _unit(params, position)), params)[1]

    wrapped = custom_jvp(partial)

    @wrapped.defjvp
    def rule(primals, tangents):
        first = _along(make_iteration(primals[-1]), _unit(primals, position))
        seconds = [_converge(_along(first, _unit(primals, j)), primals)[1][1] for j in range(len(primals))]
        return wrapped(*primals), sum(second * t for second, t in zip(seconds, tangents))
    return wrapped


class _SeriesCarry(NamedTuple):
    i: object
    term: object
    total: object


def _gamma_series(x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)); for x <= max(a, 1)."""
    eps = _eps(x)

    def init(params):
        ones = full_like(params[1], 1)
        return _SeriesCarry(ones, ones, ones)

    def step(params, carry):
        a, x = params
        term = carry.term * x / (a + carry.i)
        return _SeriesCarry(carry.i + 1, term, carry.total + term)

    def finish(params, carry):
        a, x = params
        return exp(a * log(x) - x - lgamma(a + 1)) * carry.total

    return _Iteration(init, step, lambda c: abs(c.term) > eps * abs(c.total),
                      lambda c, c_dot: abs(c_dot.term) > eps * abs(c_dot.total), finish)


class _LentzCarry(NamedTuple):
    i: object
    b: object
    c: object
    d: object
    h: object
    delta: object


def _gamma_continued_fraction(x):
    """Q(a, x) by Legendre's continued fraction (modified Lentz); for x > max(a, 1)."""
    eps, tiny = _eps(x), _tiny(x)

    def init(params):
        a, x = params
        b = x + 1 - a
        d = 1 / _nonzero(b, tiny)
        return _LentzCarry(full_like(x, 1), b, full_like(x, 1 / tiny), d, d, full_like(x, 2))

    def step(params, carry):
        an = -carry.i * (carry.i - params[0])
        b = carry.b + 2
        d = 1 / _nonzero(an * carry.d + b, tiny)
        c = _nonzero(b + an / carry.c, tiny)
        return _LentzCarry(carry.i + 1, b, c, d, carry.h * d * c, d * c)

    def finish(params, carry):
        a, x = params
        return exp(a * log(x) - x - lgamma(a)) * carry.h

    return _Iteration(init, step, lambda c: abs(c.delta - 1) > eps,
                      lambda c, c_dot: abs(c_dot.delta) > eps, finish)


def _igamma_regimes(a, x):
    """Which elements take the series, and the inputs each regime sees (harmless elsewhere)."""
    use_series = (x <= 1) | (x <= a)
    inside = (a > 0) & (x > 0) & is_finite(x) & is_finite(a)
    series_params = (where(use_series & inside, a, 1.0), where(use_series & inside, x, 0.5))
    fraction_params = (where(use_series | ~inside, 1.0, a), where(use_series | ~inside, 2.0, x))
    return use_series, series_params, fraction_params


def _igamma_pair(a, x):
    """(P, Q) in the interior of the domain; the regime decides which is computed directly."""
    use_series, series_params, fraction_params = _igamma_regimes(a, x)
    series = _converge(_gamma_series(x), series_params)
    fraction = _converge(_gamma_continued_fraction(x), fraction_params)
    return where(use_series, series, 1 - fraction), where(use_series, 1 - series, fraction)


def _igamma_edges(a, x, value, at_zero, at_infinity):
    """JAX's values at the boundary: x = 0, x = inf, a = 0, and NaN outside the domain."""
    value = where(x == 0, at_zero, value)
    value = where(x == np.inf, at_infinity, value)
    value = where((a == 0) & (x > 0), at_infinity, value)
    invalid = (x < 0) | (a < 0) | (a == np.inf) | ((a == 0) & (x == 0)) | (a != a) | (x != x)
    return where(invalid, np.nan, value)


def _igamma_dx(a, x):
    """d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a)."""
    return exp((a - 1) * log(x) - x - lgamma(a))


@custom_jvp
def _igamma(a, x):
    return _igamma_edges(a, x, _igamma_pair(a, x)[0], 0.0, 1.0)


@custom_jvp
def _igammac(a, x):
    return _igamma_edges(a, x, _igamma_pair(a, x)[1], 1.0, 0.0)


def _igamma_jvp(sign_of_result):
    def rule(primals, tangents):
        a, x = primals
        a_dot, x_dot = tangents
        fun = _igamma if sign_of_result > 0 else _igammac
        out = fun(a, x)
        out_dot = sign_of_result * (igamma_grad_a(a, x) * a_dot + _igamma_dx(a, x) * x_dot)
        return out, out_dot
    return rule


_igamma.defjvp(_igamma_jvp(1))
_igammac.defjvp(_igamma_jvp(-1))


# JAX's primitives for these functions, each computed by its composition (lax.base).
igamma_p = composite_primitive("igamma", _igamma)
igammac_p = composite_primitive("igammac", _igammac)


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return igamma_p.bind(*_float_operands("igamma", a, x))


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return igammac_p.bind(*_float_operands("igammac", a, x))


def igamma_grad_a(a, x):
    """d/da P(a, x): the series' or the continued fraction's derivative, iterated along."""
    return igamma_grad_a_p.bind(*_float_operands("igamma_grad_a", a, x))


_series_d_a = _converged_partial(_gamma_series, 0)
_fraction_d_a = _converged_partial(_gamma_continued_fraction, 0)


def _igamma_grad_a(a, x):
    use_series, series_params, fraction_params = _igamma_regimes(a, x)
    grad = where(use_series, _series_d_a(*series_params), -_fraction_d_a(*fraction_params))
    valid = (a > 0) & (x > 0) & is_finite(x)
    return where(valid, grad, where((x == 0) | (x == np.inf), 0.0, full_like(x, np.nan)))


# JAX has no derivative of igamma_grad_a; here the composition's (through _converged_partial)
# gives igamma, igammac and random_gamma_grad every second derivative, in reverse mode too.
igamma_grad_a_p = composite_primitive("igamma_grad_a", _igamma_grad_a)


def random_gamma_grad(a, x):
    """d sample / d a for a Gamma(a, 1) sample x, holding its quantile P(a, x) fixed."""
    a, x = _float_operands("random_gamma_grad", a, x)
    return -igamma_grad_a(a, x) / _igamma_dx(a, x)


# ---------------------------------------------------------------- incomplete beta

def lbeta(a, b):
    """log |B(a, b)|. Once the larger argument reaches 8, log Gamma(large) - log Gamma(a + b)
    comes from Stirling's series with its logarithms regrouped so that they do not cancel;
    once both do, log Gamma(small) joins the regrouping."""
    small, large = where(a < b, a, b), where(a < b, b, a)
    stirling, both = large >= 8, small >= 8
    direct = lgamma(where(stirling, 1.0, a)) + lgamma(where(stirling, 1.0, b)) - lgamma(
        where(stirling, 2.0, a + b))
    large = where(stirling, large, 8.0)
    corrections = _stirling_correction(large) - _stirling_correction(small + large)
    one_large = (lgamma(where(both, 1.0, small)) - (large - 0.5) * log1p(small / large)
                 - small * log(small + large) + small)
    s = where(both, small, 8.0)
    share = s / (s + large)
    two_large = ((s - 0.5) * log(share) + (large - 0.5) * log1p(-share) - 0.5 * log(s + large)
                 + 0.5 * math.log(2 * math.pi) + _stirling_correction(s))
    return where(stirling, where(both, two_large, one_large) + corrections, direct)


_BERNOULLI_EVEN = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
                   43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730]   # B_2 ... B_24


def _stirling_correction(z):
    """log Gamma(z) - (z - 1/2) log z + z - log(2 pi) / 2, for z >= 8."""
    inverse_square = 1 / (z * z)
    total, power = 0.0, 1 / z
    for k, b in enumerate(_BERNOULLI_EVEN[:6]):
        total = total + power * (b / ((2 * k + 1) * (2 * k + 2)))
        power = power * inverse_square
    return total


class _BetaCarry(NamedTuple):
    m: object
    c: object
    d: object
    h: object
    delta: object


def _beta_continued_fraction(x):
    """I_x(a, b) by its continued fraction (modified Lentz), for x < (a + 1) / (a + b + 2),
    where it converges fast."""
    eps, tiny = _eps(x), _tiny(x)

    def lentz(c, d, coefficient):
        d = 1 / _nonzero(1 + coefficient * d, tiny)
        c = _nonzero(1 + coefficient / c, tiny)
        return c, d, d * c

    def init(params):
        a, b, x = params
        d = 1 / _nonzero(1 - (a + b) * x / (a + 1), tiny)
        return _BetaCarry(full_like(x, 1), full_like(x, 1), d, d, full_like(x, 2))

    def step(params, carry):
        a, b, x = params
        m = carry.m
        c, d, even = lentz(carry.c, carry.d, m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)))
        c, d, odd = lentz(c, d, -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m)))
        return _BetaCarry(m + 1, c, d, carry.h * even * odd, odd)

    def finish(params, carry):
        a, b, x = params
        return exp(a * log(x) + b * log1p(-x) - lbeta(a, b)) / a * carry.h

    return _Iteration(init, step, lambda c: abs(c.delta - 1) > eps,
                      lambda c, c_dot: abs(c_dot.delta) > eps, finish)


def _betainc_flipped(a, b, x):
    """Parameters for the continued fraction, through I_x(a, b) = 1 - I_(1-x)(b, a) where
    x is beyond (a + 1) / (a + b + 2); a, b > 0 and 0 < x < 1."""
    flip = x > (a + 1) / (a + b + 2)
    return flip, (where(flip, b, a), where(flip, a, b), where(flip, 1 - x, x))


def _betainc_inside(a, b, x):
    inside = (a > 0) & (b > 0) & (x > 0) & (x < 1)
    return inside, (where(inside, a, 1.0), where(inside, b, 1.0), where(inside, x, 0.5))


@custom_jvp
def _betainc(a, b, x):
    inside, safe = _betainc_inside(a, b, x)
    flip, params = _betainc_flipped(*safe)
    value = _converge(_beta_continued_fraction(x), params)
    value = where(flip, 1 - value, value)
    value = where(x == 0, 0.0, where(x == 1, 1.0, value))
    value = where((a == 0) & (b > 0), 1.0, where((b == 0) & (a > 0), 0.0, value))
    invalid = (a < 0) | (b < 0) | ((a == 0) & (b == 0)) | (x < 0) | (x > 1) | (x != x)
    return where(invalid, np.nan, value)


_fraction_d_first = _converged_partial(_beta_continued_fraction, 0)
_fraction_d_second = _converged_partial(_beta_continued_fraction, 1)


def _betainc_parameter_partials(a, b, x):
    """d/da and d/db: the continued fraction's derivatives iterated along with it."""
    inside, safe = _betainc_inside(a, b, x)
    flip, params = _betainc_flipped(*safe)
    along_first, along_second = _fraction_d_first(*params), _fraction_d_second(*params)
    d_a = where(flip, -along_second, along_first)
    d_b = where(flip, -along_first, along_second)
    return where(inside, d_a, 0.0), where(inside, d_b, 0.0)


def _betainc_d_x(a, b, x):
    """The beta density."""
    inside, (sa, sb, sx) = _betainc_inside(a, b, x)
    return where(inside, exp((sa - 1) * log(sx) + (sb - 1) * log1p(-sx) - lbeta(sa, sb)), 0.0)


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    """Partial derivatives as values (the tangents enter linearly, so reverse mode transposes
    them); the partials' own derivatives are values too, so second order works in reverse."""
    partials = [*_betainc_parameter_partials(*primals), _betainc_d_x(*primals)]
    return _betainc(*primals), sum(p * t for p, t in zip(partials, tangents))


regularized_incomplete_beta_p = composite_primitive("regularized_incomplete_beta", _betainc)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    return regularized_incomplete_beta_p.bind(*_float_operands("betainc", a, b, x))


regularized_incomplete_beta = betainc


# ---------------------------------------------------------------- Hurwitz zeta

_ZETA_SHIFT = 9


def _zeta_interior(s, q):
    """sum_k (q + k)^-s by Euler-Maclaurin: the first _ZETA_SHIFT terms summed directly, the
    rest as an integral and its Bernoulli corrections at q + _ZETA_SHIFT."""
    total = 0.0
    for k in range(_ZETA_SHIFT):
        total = total + pow(q + k, -s)
    w = q + _ZETA_SHIFT
    tail = pow(w, -s)
    total = total + w * tail / (s - 1) + tail / 2
    rising, factorial, power = s, 2.0, tail / w
    for j, b in enumerate(_BERNOULLI_EVEN):
        total = total + b / factorial * rising * power
        rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
        factorial = factorial * (2 * j + 3) * (2 * j + 4)
        power = power / (w * w)
    return total


def zeta(x, q):
    """Hurwitz's zeta function sum_k (q + k)^-x, for x > 1."""
    return zeta_p.bind(*_float_operands("zeta", x, q))


def _zeta(x, q):
    pole = (q <= 0) & (q == floor(q))
    valid = (x > 1) & ~pole
    value = _zeta_interior(where(valid, x, 2.0), where(valid, q, 1.0))
    value = where((x == 1) | (pole & (x > 1)), np.inf, where(valid, value, np.nan))
    return where(x == np.inf, where(q == 1, 1.0, where(q > 1, 0.0, full_like(x, np.inf))), value)


zeta_p = composite_primitive("zeta", _zeta)


# ---------------------------------------------------------------- Bessel I0 and I1, scaled

_BESSEL_ASYMPTOTIC_FROM = {np.dtype(np.float32): 15.0, np.dtype(np.float64): 30.0}


def _bessel_series(x, order, terms):
    """exp(-x) I_order(x) for 0 <= x below the asymptotic regime: positive terms, no cancellation."""
    quarter_square = x * x / 4
    term = full_like(x, 1.0) if order == 0 else x / 2
    total = term
    for k in range(1, terms):
        term = term * quarter_square / (k * (k + order))
        total = total + term
    return total * exp(-x)


def _bessel_asymptotic(x, order, terms):
    """exp(-x) I_order(x) ~ (2 pi x)^-1/2 sum_k (-1)^k prod_j (4 order^2 - (2j - 1)^2) / (k! (8x)^k)."""
    mu = 4 * order * order
    term, total = 1.0, 1.0
    for k in range(1, terms):
        term = term * -(mu - (2 * k - 1) ** 2) / (k * 8 * x)
        total = total + term
    return total / sqrt(2 * math.pi * x)


def _bessel_scaled(x, order):
    size = abs(x)
    start = _BESSEL_ASYMPTOTIC_FROM.get(x.dtype, 15.0)
    near = size < start
    series = _bessel_series(where(near, size, 0.0), order, int(2 * start) + 10)
    asymptotic = _bessel_asymptotic(where(near, start, size), order, int(start))
    value = where(near, series, where(size == np.inf, 0.0, asymptotic))
    return value if order == 0 else sign(x) * value


bessel_i0e_p = composite_primitive("bessel_i0e", lambda x: _bessel_scaled(x, 0))
bessel_i1e_p = composite_primitive("bessel_i1e", lambda x: _bessel_scaled(x, 1))


def bessel_i0e(x):
    """exp(-|x|) I0(x)."""
    return bessel_i0e_p.bind(*_float_operands("bessel_i0e", x))


def bessel_i1e(x):
    """exp(-|x|) I1(x)."""
    return bessel_i1e_p.bind(*_float_operands("bessel_i1e", x))


# Derivatives in closed form (I0' = I1, I1' = I0 - I1 / x), not through the series: the
# series' own derivative doubles its length, and under jit its float64 transpose made one
# kernel too deep to lower. Each rule calls the other primitive, so every order follows.
def _bessel_i0e_jvp(x_dot, x):
    return x_dot * (bessel_i1e_p.bind(x) - sign(x) * bessel_i0e_p.bind(x))


def _bessel_i1e_jvp(tangents, out, x):
    """At |x| <= eps, where 1/x overflows, the slope is its limit 1/2."""
    eps = dtypes.finfo(x.dtype).eps
    not_tiny = abs(x) > eps
    safe_x = where(not_tiny, x, full_like(x, eps))
    slope = bessel_i0e_p.bind(safe_x) - out * (sign(safe_x) + 1 / safe_x)
    return tangents[0] * where(not_tiny, slope, full_like(x, 0.5))


ad.defjvp(bessel_i0e_p, _bessel_i0e_jvp)
ad.defjvp_with_output(bessel_i1e_p, _bessel_i1e_jvp)
