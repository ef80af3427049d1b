"""NaN-skipping reductions, order statistics, averages and cumulative jnp functions vs numpy."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.test_util import check_grads

rng = np.random.default_rng(0)


@st.composite
def array_and_axis(draw, min_side=1, nan=True):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=5))
    x = rng.normal(size=shape).astype(np.float32)
    if nan and draw(st.booleans()):
        x[rng.uniform(size=shape) < 0.2] = np.nan
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    return x, axis, draw(st.booleans())


NAN_REDUCTIONS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"]


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(NAN_REDUCTIONS), array_and_axis())
def test_nan_reductions(name, case):
    x, axis, keepdims = case
    with warnings.catch_warnings():  # numpy warns about all-NaN slices
        warnings.simplefilter("ignore")
        expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    out = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5)


@settings(deadline=None, max_examples=50)
@given(array_and_axis(nan=False),
       st.sampled_from(["median", "ptp", "count_nonzero", "average", "var", "std"]))
def test_other_reductions(case, name):
    x, axis, keepdims = case
    x = np.round(x) if name == "count_nonzero" else x
    kwargs = {} if name == "average" else {"keepdims": keepdims}
    expected = getattr(np, name)(x, axis=axis, **kwargs)
    out = getattr(jnp, name)(x, axis=axis, **kwargs)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5)


@settings(deadline=None, max_examples=40)
@given(array_and_axis(), st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]),
       st.lists(st.floats(0, 1), min_size=0, max_size=3))
def test_quantile(case, method, qs):
    x, axis, keepdims = case
    q = np.array(qs) if qs else 0.3
    expected = np.quantile(x, q, axis=axis, method=method, keepdims=keepdims)
    out = jnp.quantile(x, q, axis=axis, method=method, keepdims=keepdims)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_percentile_and_median_errors():
    x = np.arange(10.0, dtype=np.float32)
    np.testing.assert_allclose(jnp.percentile(x, [25, 50]), np.percentile(x, [25, 50]))
    with pytest.raises(ValueError, match="range"):
        jnp.quantile(x, 1.5)
    with pytest.raises(ValueError, match="method"):
        jnp.quantile(x, 0.5, method="bogus")
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.median(x, axis=1)


def test_median_gradient(enable_x64):
    check_grads(jnp.median, [rng.permutation(7) / 7.0], order=2)
    check_grads(lambda v: jnp.median(v, axis=1), [rng.permutation(12).reshape(3, 4) / 7.0], order=2)


def test_weighted_average():
    x = rng.normal(size=(3, 4)).astype(np.float32)
    w = rng.uniform(0.1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(jnp.average(x, axis=1, weights=w), np.average(x, axis=1, weights=w), rtol=1e-5)
    avg, total = jnp.average(x, axis=1, weights=w, returned=True)
    expected_avg, expected_total = np.average(x, axis=1, weights=w, returned=True)
    np.testing.assert_allclose(total, expected_total, rtol=1e-5)
    with pytest.raises(ValueError, match="weights"):
        jnp.average(x, axis=None, weights=w)


@settings(deadline=None, max_examples=50)
@given(array_and_axis(min_side=0, nan=False), st.sampled_from(["cumsum", "cumprod", "nancumsum", "nancumprod"]),
       st.sampled_from([None, np.int32, np.float32, np.bool_, np.int8]))
def test_cumulative(case, name, in_dtype):
    x, axis, _ = case
    x = (x * 2).astype(in_dtype) if in_dtype is not None else x
    out = getattr(jnp, name)(x, axis=axis)
    expected = getattr(np, name)(x, axis=axis)
    if x.dtype == np.bool_:
        assert out.dtype == np.int32
    elif in_dtype is not None:
        assert out.dtype == x.dtype
    np.testing.assert_allclose(out, expected.astype(out.dtype), rtol=1e-5, atol=1e-5)


def test_cumulative_dtype_argument_and_cumulative_sum():
    x = np.arange(5, dtype=np.int32)
    assert jnp.cumsum(x, dtype=jnp.float32).dtype == np.float32
    np.testing.assert_array_equal(jnp.cumulative_sum(x, include_initial=True), [0, 0, 1, 3, 6, 10])
    with pytest.raises(ValueError, match="axis"):
        jnp.cumulative_sum(np.ones((2, 2)))


@settings(deadline=None, max_examples=40)
@given(array_and_axis(min_side=0, nan=False), st.integers(0, 3), st.booleans())
def test_diff(case, n, with_edges):
    x, axis, _ = case
    axis = -1 if axis is None else axis
    kwargs = {"prepend": 1.5, "append": np.float32(-2)} if with_edges else {}
    expected = np.diff(x, n=n, axis=axis, **kwargs)
    np.testing.assert_allclose(jnp.diff(x, n=n, axis=axis, **kwargs), expected, rtol=1e-5, atol=1e-5)


def test_diff_of_booleans_and_errors():
    b = np.array([True, False, False, True])
    np.testing.assert_array_equal(jnp.diff(b), np.diff(b))
    with pytest.raises(ValueError, match="at least one dimensional"):
        jnp.diff(np.float32(1))


def test_cumsum_under_vmap_and_jvp():
    # Its own draws: the module's generator made the input depend on the tests run before.
    x = np.random.default_rng(133).normal(size=(3, 4)).astype(np.float32)
    # A partial sum can cancel to near zero, so the bound is float32's rounding of the terms.
    np.testing.assert_allclose(jaxlite.vmap(jnp.cumsum)(x), np.cumsum(x, axis=1), rtol=1e-6,
                               atol=4 * np.finfo(np.float32).eps * np.abs(x).sum(axis=1, keepdims=True).max())
    _, tangent = jaxlite.jvp(jnp.cumprod, (x[0],), (np.ones(4, np.float32),))
    # d/dt cumprod(x + t)[k] = sum over j <= k of the product of the other x_i, i <= k.
    expected = [sum(np.prod(np.delete(x[0, :k + 1], j)) for j in range(k + 1)) for k in range(4)]
    np.testing.assert_allclose(tangent, expected, rtol=1e-5)


def test_array_methods():
    x = jnp.arange(6.0).reshape(2, 3)
    expected = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(x.cumsum(1), expected.cumsum(1))
    np.testing.assert_array_equal(x.cumprod(), expected.cumprod())
    np.testing.assert_array_equal(x.clip(1, 3), expected.clip(1, 3))
    np.testing.assert_array_equal(x.repeat(2, 0), expected.repeat(2, 0))
    assert float(x.trace()) == expected.trace()
    np.testing.assert_array_equal(x.real, expected)
    np.testing.assert_array_equal(x.imag, np.zeros_like(expected))
    np.testing.assert_array_equal(jaxlite.vmap(lambda r: r.cumsum())(x), expected.cumsum(1))


def test_wrong_axis_and_float_axis_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.cumsum(x, axis=2)
    with pytest.raises(TypeError, match="integer"):
        jnp.cumsum(x, axis=1.0)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.nansum(x, axis=-3)
    with pytest.raises(TypeError, match="integer"):
        jnp.diff(x, axis=0.5)
