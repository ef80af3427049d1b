"""Cumulative primitives: values against numpy, JVPs against central differences,
cumsum's transpose by the inner-product identity, batching against a loop."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
from jaxlite import lax
from jaxlite.core.abstract import ShapedArray
from jaxlite.lax import cumulative
from jaxlite.transforms import ad
from finite_diff import check_jvp, x64  # noqa: F401  (x64 is a fixture)

rng = np.random.default_rng(0)


def _reference(name, x, axis, reverse):
    ufunc = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum,
             "cummin": np.minimum, "cumlogsumexp": np.logaddexp}[name]
    x = np.flip(x, axis) if reverse else x
    out = ufunc.accumulate(x, axis=axis)
    return np.flip(out, axis) if reverse else out


OPS = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax,
       "cummin": lax.cummin, "cumlogsumexp": lax.cumlogsumexp}


@st.composite
def array_and_axis(draw, dtypes=(np.float32, np.int32, np.int8)):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    dtype = draw(st.sampled_from(dtypes))
    x = rng.uniform(-2, 2, shape).astype(dtype)
    return x, draw(st.integers(-len(shape), len(shape) - 1)), draw(st.booleans())


@settings(deadline=None, max_examples=40)
@given(st.sampled_from(sorted(OPS)), array_and_axis())
def test_matches_numpy(name, case):
    x, axis, reverse = case
    if name == "cumlogsumexp":
        x = x.astype(np.float32)
    out = OPS[name](x, axis, reverse)
    assert out.dtype == x.dtype and out.shape == x.shape
    np.testing.assert_allclose(out, _reference(name, x, axis, reverse), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("reverse", [False, True])
def test_jvp(name, reverse, x64):
    # Distinct values keep cummax/cummin away from ties, where they are not differentiable.
    x = rng.permutation(12).reshape(3, 4) / 3.0 + 0.5
    check_jvp(lambda v: OPS[name](v, 1, reverse), [x])
    check_jvp(lambda v: OPS[name](v, 0, reverse), [x])


def test_cumprod_jvp_with_zeros(x64):
    check_jvp(lambda v: lax.cumprod(v, 0), [np.array([2.0, 0.0, 3.0, 0.0, 1.5])])


def test_cummax_ties_share_the_tangent():
    _, tangent = jaxlite.jvp(lambda v: lax.cummax(v, 0), (np.array([1.0, 1.0], np.float32),),
                             (np.array([1.0, 3.0], np.float32),))
    np.testing.assert_allclose(tangent, [1.0, 2.0])


def test_cumlogsumexp_handles_infinities():
    x = np.array([-np.inf, 0.0, -np.inf], np.float32)
    out, tangent = jaxlite.jvp(lambda v: lax.cumlogsumexp(v, 0), (x,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(out, [-np.inf, 0.0, 0.0])
    assert np.all(np.isfinite(np.asarray(tangent)))


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_transpose_inner_product(reverse):
    x = rng.normal(size=(3, 5)).astype(np.float32)
    ct = rng.normal(size=(3, 5)).astype(np.float32)
    (x_ct,) = ad.transpose_rules[cumulative.cumsum_p](
        ct, ad.UndefinedPrimal(ShapedArray(x.shape, x.dtype)), axis=1, reverse=reverse)
    lhs = np.sum(ct * np.asarray(lax.cumsum(x, 1, reverse)))
    np.testing.assert_allclose(lhs, np.sum(np.asarray(x_ct) * x), rtol=1e-5)


@settings(deadline=None, max_examples=25)
@given(st.sampled_from(sorted(OPS)), array_and_axis(dtypes=(np.float32,)), st.integers(0, 3))
def test_vmap_agrees_with_loop(name, case, in_axis):
    x, axis, reverse = case
    in_axis = in_axis % x.ndim
    if x.shape[in_axis] == 0:
        return
    logical_ndim = x.ndim - 1
    if logical_ndim == 0:
        return
    axis = axis % logical_ndim
    fn = lambda v: OPS[name](v, axis, reverse)
    batched = jaxlite.vmap(fn, in_axes=in_axis)(x)
    loop = np.stack([np.asarray(fn(np.take(x, i, in_axis))) for i in range(x.shape[in_axis])])
    np.testing.assert_allclose(batched, loop, rtol=1e-6)


def test_make_jaxpr_records_params():
    jaxpr = jaxlite.make_jaxpr(lambda v: lax.cumsum(v, 0, reverse=True))(np.ones(3, np.float32))
    assert "cumsum[axis=0 reverse=True]" in str(jaxpr)


def test_errors():
    with pytest.raises(ValueError, match="out of bounds"):
        lax.cumsum(np.ones((2, 3), np.float32), 2)
    with pytest.raises(TypeError, match="floating-point"):
        lax.cumlogsumexp(np.ones(3, np.int32))
    with pytest.raises(TypeError, match="integer"):
        lax.cumsum(np.ones(3, np.float32), 0.5)
