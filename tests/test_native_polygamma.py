"""polygamma, eager and under jit (llvm_math.emit_polygamma): accuracy against an exact
reference, and eager's values at poles, infinities and NaN under jit."""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.lower import llvm_math
from jaxlite.test_util import enable_x64

ORDERS = [1, 2, 3, 4, 6, 11, 20]
_TAIL_FROM = 40     # the reference sums exactly up to x + k >= _TAIL_FROM + m


def _even_bernoulli(count):
    numbers = [Fraction(1)]
    for n in range(1, 2 * count + 1):
        numbers.append(-sum(math.comb(n + 1, k) * numbers[k] for k in range(n)) / (n + 1))
    return numbers[2::2]


_BERNOULLI = _even_bernoulli(12)


def reference(m, x):
    """(psi^(m)(x), the size of the terms it sums) for a non-pole float x.

    psi^(m)(x) = (-1)^(m+1) m! zeta(m + 1, x): the first terms of the Hurwitz zeta sum in exact
    rationals, the rest by Euler-Maclaurin at w >= 40 + m, whose truncation is below 1e-30
    relative. The size bounds what rounding the terms may cost near a zero of psi^(m)."""
    x = Fraction(float(x))
    count = max(0, math.ceil(-x)) + _TAIL_FROM + m
    terms = [1 / (x + k) ** (m + 1) for k in range(count)]
    w = x + count
    tail = 1 / (m * w ** m) + 1 / (2 * w ** (m + 1))
    rising = Fraction(1)
    for j, b in enumerate(_BERNOULLI, start=1):
        rising *= (m + 2 * j - 1) if j == 1 else (m + 2 * j - 2) * (m + 2 * j - 1)
        tail += b * rising / math.factorial(2 * j) / w ** (m + 2 * j)
    factorial = math.factorial(m)
    value = (-1) ** (m + 1) * factorial * (sum(terms) + tail)
    return float(value), float(factorial * (sum(abs(t) for t in terms) + tail))


def _jit_polygamma(m, x):
    return np.asarray(jaxlite.jit(lambda v: lax.polygamma(m, v))(x))


def _eager_polygamma(m, x):
    return np.asarray(lax.polygamma(m, x))


RUNS = {"jit": _jit_polygamma, "eager": _eager_polygamma}


def _assert_accurate(m, x, got, ulps, relative_rounding):
    for point, value in zip(x, got):
        want, size = reference(m, point)
        with np.errstate(over="ignore"):
            rounded = np.asarray(want, got.dtype)
        if np.isinf(rounded):       # beyond the dtype's range
            assert value == rounded, (m, point, value, want)
            continue
        ulp = float(np.spacing(np.abs(rounded)))
        allowed = ulps * ulp + relative_rounding * (m + 1) * size
        assert abs(float(value) - want) <= allowed, (m, point, float(value), want)


def _points(rng, count, dtype):
    """Positive (tiny to large) and negative (near poles, between poles) arguments, no poles."""
    positive = np.exp(rng.uniform(np.log(1e-3), np.log(1e4), count))
    negative = -rng.uniform(0, 30, count)
    x = np.concatenate([positive, negative, [0.5, 1.0, 2.5, -0.5, -1.5, -2.75, -29.5, 1e-3, -1e-3]])
    x = x.astype(dtype)
    return x[~((x <= 0) & (x == np.floor(x)))]


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize("m", ORDERS)
def test_float32_accuracy(m, run):
    x = _points(np.random.default_rng(m), 60, np.float32)
    _assert_accurate(m, x, RUNS[run](m, x), ulps=1, relative_rounding=2.0 ** -50)


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize("m", [1, 2, 3, 6, 20])
def test_float64_accuracy(m, run):
    with enable_x64():
        x = _points(np.random.default_rng(m), 40, np.float64)
        # Eager's series stops at B_20 from argument 20 on: ~1e-14 relative at order 20.
        _assert_accurate(m, x, RUNS[run](m, x), ulps=4 if run == "jit" else 2 ** 7, relative_rounding=2.0 ** -51)


SPECIAL = np.array([0.0, -0.0, -1.0, -2.0, -30.0, np.inf, -np.inf, np.nan, -np.nan], np.float32)


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 12])
def test_special_points_are_eagers(m):
    """Poles give inf (odd m) or NaN (even m), +inf a zero signed (-1)^(m+1), NaN stays NaN."""
    got, want = _jit_polygamma(m, SPECIAL), np.asarray(lax.polygamma(m, SPECIAL))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite_or_inf = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite_or_inf], want[finite_or_inf])
    np.testing.assert_array_equal(np.signbit(got[finite_or_inf]), np.signbit(want[finite_or_inf]))


@settings(deadline=None, max_examples=20)
@given(st.sampled_from([1, 2, 3, 5, 12]), st.sampled_from([np.float32, np.float16, dtypes.bfloat16]),
       st.integers(0, 2 ** 16))
def test_jit_agrees_with_eager(m, dtype, seed):
    """Both compute in double: within a rounding of the dtype (16-bit results round twice under jit)."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(0.05, 30, 20), -rng.uniform(0.05, 1e4, 20)]).astype(dtype)
    x = x[~((x <= 0) & (x == np.floor(x)))]
    got, want = _jit_polygamma(m, x).astype(np.float64), np.asarray(lax.polygamma(m, x)).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=4 * float(jnp.finfo(dtype).eps), atol=0)


def test_orders_beyond_the_emitter_run_eagerly():
    m = llvm_math.POLYGAMMA_MAX_ORDER + 1
    x = np.array([60.0, 150.0], np.float32)     # values within float32
    np.testing.assert_array_equal(_jit_polygamma(m, x), np.asarray(lax.polygamma(m, x)))


def test_gradient_under_jit_is_the_next_order():
    x = np.array([0.3, 1.7, -2.4], np.float32)
    grad = jaxlite.jit(jaxlite.vmap(jaxlite.grad(lambda v: lax.polygamma(2, v))))(x)
    np.testing.assert_allclose(np.asarray(grad), _jit_polygamma(3, x), rtol=1e-6)
