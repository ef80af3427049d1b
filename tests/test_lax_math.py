"""New elementwise lax primitives: values against numpy and math, JVPs against
central differences, batching against a loop, XLA's shift semantics."""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
from jaxlite import lax
from finite_diff import check_jvp, x64  # noqa: F401  (x64 is a fixture)

rng = np.random.default_rng(0)

# name -> (lax function, float64 reference, a sampler of valid arguments)
UNARY = {
    "tan": (lax.tan, np.tan, lambda n: rng.uniform(-1.4, 1.4, n)),
    "asin": (lax.asin, np.arcsin, lambda n: rng.uniform(-0.95, 0.95, n)),
    "acos": (lax.acos, np.arccos, lambda n: rng.uniform(-0.95, 0.95, n)),
    "atan": (lax.atan, np.arctan, lambda n: rng.normal(0, 3, n)),
    "sinh": (lax.sinh, np.sinh, lambda n: rng.normal(0, 3, n)),
    "cosh": (lax.cosh, np.cosh, lambda n: rng.normal(0, 3, n)),
    "asinh": (lax.asinh, np.arcsinh, lambda n: rng.normal(0, 3, n)),
    "acosh": (lax.acosh, np.arccosh, lambda n: rng.uniform(1.1, 10, n)),
    "atanh": (lax.atanh, np.arctanh, lambda n: rng.uniform(-0.95, 0.95, n)),
    "erf": (lax.erf, np.vectorize(math.erf), lambda n: rng.normal(0, 2, n)),
    "erfc": (lax.erfc, np.vectorize(math.erfc), lambda n: rng.normal(0, 2, n)),
    "lgamma": (lax.lgamma, np.vectorize(math.lgamma), lambda n: rng.uniform(0.1, 30, n)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_unary_matches_reference(name, dtype):
    fn, reference, sample = UNARY[name]
    x = sample(200).astype(dtype)
    out = fn(x)
    assert out.dtype == np.dtype(dtype) and out.shape == x.shape
    eps = float(jaxlite.numpy.finfo(dtype).eps)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(x.astype(np.float64)),
                               rtol=4 * eps, atol=4 * eps)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_jvp(name, x64):
    fn, _, sample = UNARY[name]
    check_jvp(fn, [sample(7)])


@pytest.mark.parametrize("fn", [lax.digamma, lambda x: lax.polygamma(1, x),
                                lambda x: lax.polygamma(2, x), lax.erf_inv])
def test_special_jvp(fn, x64):
    check_jvp(fn, [rng.uniform(-0.9, 0.9, 5)], rtol=1e-4)
    check_jvp(fn, [-rng.uniform(0.1, 0.9, 5) - 3] if fn is not lax.erf_inv else [rng.uniform(-0.99, -0.9, 5)],
              rtol=1e-4)


def test_erf_float64_accuracy(x64):
    x = np.concatenate([rng.normal(0, 3, 5000), np.linspace(-6, 6, 1001)])
    np.testing.assert_allclose(lax.erf(x), [math.erf(v) for v in x], rtol=1e-13, atol=1e-300)
    big = x[x < 25]
    np.testing.assert_allclose(lax.erfc(big), [math.erfc(v) for v in big], rtol=1e-12)


def test_lgamma_float64_accuracy_and_poles(x64):
    x = np.concatenate([rng.uniform(-30, 30, 3000), np.geomspace(1e-6, 1e6, 500)])
    x = x[x != np.floor(x)]
    expected = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(lax.lgamma(x), expected, rtol=1e-13, atol=1e-13)
    assert np.all(np.isposinf(np.asarray(lax.lgamma(np.array([0.0, -1.0, -7.0, np.inf])))))


def test_digamma_values(x64):
    gamma = 0.5772156649015329
    np.testing.assert_allclose(lax.digamma(np.array([1.0, 0.5, 10.0])),
                               [-gamma, -gamma - 2 * math.log(2), -gamma + sum(1 / k for k in range(1, 10))],
                               rtol=1e-14)
    x = rng.uniform(-20, 20, 2000)
    # The recurrence psi(x + 1) = psi(x) + 1/x, across the reflection point too.
    np.testing.assert_allclose(lax.digamma(x + 1), np.asarray(lax.digamma(x)) + 1 / x, rtol=1e-9, atol=1e-9)
    assert np.all(np.isnan(np.asarray(lax.digamma(np.array([0.0, -3.0])))))


def test_digamma_is_lgamma_derivative(x64):
    x = rng.uniform(-10, 10, 500)
    x = x[np.abs(x - np.round(x)) > 0.05]
    h = 1e-5
    numeric = (np.array([math.lgamma(v + h) - math.lgamma(v - h) for v in x])) / (2 * h)
    np.testing.assert_allclose(lax.digamma(x), numeric, rtol=1e-7, atol=1e-7)


def test_erf_inv_inverts_erf(x64):
    y = np.concatenate([rng.uniform(-1, 1, 3000), 1 - np.geomspace(1e-300, 0.5, 300)])
    x = np.asarray(lax.erf_inv(y))
    central = np.abs(y) <= 0.5
    np.testing.assert_allclose([math.erf(v) for v in x[central]], y[central], rtol=1e-14, atol=1e-16)
    tail_q = np.array([math.erfc(abs(v)) for v in x[~central]])
    np.testing.assert_allclose(tail_q, 1 - np.abs(y[~central]), rtol=1e-12)
    np.testing.assert_array_equal(lax.erf_inv(np.array([1.0, -1.0, 0.0])), [np.inf, -np.inf, 0.0])
    assert np.isnan(np.asarray(lax.erf_inv(1.5)))


def test_erf_inv_float32():
    y = rng.uniform(-0.999, 0.999, 500).astype(np.float32)
    x = np.asarray(lax.erf_inv(y))
    assert x.dtype == np.float32
    np.testing.assert_allclose([math.erf(v) for v in x.astype(np.float64)], y, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [lax.tan, lax.erf, lax.lgamma, lax.digamma, lax.atanh])
def test_integer_operands_rejected(fn):
    with pytest.raises(TypeError, match="floating-point"):
        fn(np.arange(3, dtype=np.int32))


@settings(deadline=None, max_examples=20)
@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))
def test_vmap_agrees_with_loop(shape):
    x = rng.uniform(0.1, 0.9, shape).astype(np.float32)
    for fn in (lax.erf, lax.lgamma, lax.asin, lax.erf_inv):
        batched = jaxlite.vmap(fn)(x)
        np.testing.assert_array_equal(batched, np.stack([np.asarray(fn(row)) for row in x]))


def test_polygamma_rejects_nonstatic_order():
    with pytest.raises(TypeError, match="static integer"):
        lax.polygamma(1.5, 2.0)


# ---------------------------------------------------------------- bit operations

def _xla_shift(x, y, kind, bits):
    """One shift with XLA's rules, on Python ints (x read as a bits-wide value)."""
    amount = y % (1 << bits)
    signed_x = x - (1 << bits) if x >= 1 << (bits - 1) else x
    unsigned_x = x % (1 << bits)
    if kind == "left":
        return 0 if amount >= bits else (unsigned_x << amount) % (1 << bits)
    if kind == "logical":
        return 0 if amount >= bits else unsigned_x >> amount
    return (signed_x >> min(amount, bits - 1)) % (1 << bits)


INT_DTYPES = [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32]
SHIFTS = {"left": lax.shift_left, "logical": lax.shift_right_logical,
          "arithmetic": lax.shift_right_arithmetic}


@settings(deadline=None, max_examples=30)
@given(st.sampled_from(INT_DTYPES), st.sampled_from(sorted(SHIFTS)), st.data())
def test_shifts_follow_xla(dtype, kind, data):
    info = np.iinfo(dtype)
    bits = info.bits
    x = data.draw(hnp.arrays(dtype, 6, elements=st.integers(info.min, info.max)))
    y = data.draw(hnp.arrays(dtype, 6, elements=st.integers(max(info.min, -3), min(info.max, bits + 3))))
    out = np.asarray(SHIFTS[kind](x, y))
    expected = [_xla_shift(int(a) % (1 << bits), int(b), kind, bits) for a, b in zip(x, y)]
    np.testing.assert_array_equal(out.view(f"u{out.itemsize}"), expected)


@settings(deadline=None, max_examples=20)
@given(st.sampled_from(INT_DTYPES), st.data())
def test_population_count_and_clz(dtype, data):
    info = np.iinfo(dtype)
    x = data.draw(hnp.arrays(dtype, 8, elements=st.integers(info.min, info.max)))
    unsigned = [int(v) % (1 << info.bits) for v in x]
    np.testing.assert_array_equal(lax.population_count(x), [bin(v).count("1") for v in unsigned])
    np.testing.assert_array_equal(lax.clz(x), [info.bits - v.bit_length() for v in unsigned])


def test_shift_rejects_floats_and_mismatched_dtypes():
    with pytest.raises(TypeError, match="integer"):
        lax.shift_left(np.ones(2, np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.shift_left(np.ones(2, np.int32), np.ones(2, np.int8))


def test_shift_operators_on_arrays_and_tracers():
    x = jaxlite.numpy.array([1, 2, -8], dtype=np.int32)
    np.testing.assert_array_equal(x << 2, [4, 8, -32])
    np.testing.assert_array_equal(x >> 1, [0, 1, -4])
    np.testing.assert_array_equal(3 << x[:2], [6, 12])
    np.testing.assert_array_equal(jaxlite.vmap(lambda v: v << 1)(x), [2, 4, -16])


def test_special_values_at_the_edges():
    x = np.array([-np.inf, np.inf, np.nan, -0.0], np.float32)
    np.testing.assert_array_equal(lax.lgamma(x), [np.inf, np.inf, np.nan, np.inf])
    np.testing.assert_array_equal(lax.digamma(x), [np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(lax.erf(x), [-1, 1, np.nan, 0])
    np.testing.assert_array_equal(lax.erfc(x), [2, 0, np.nan, 1])
    assert np.signbit(np.asarray(lax.erf_inv(np.float32(-0.0))))
    assert np.signbit(np.asarray(lax.erf(np.float32(-0.0))))
