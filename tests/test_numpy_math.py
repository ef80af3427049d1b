"""jnp elementwise math against numpy: values, dtypes (JAX promotion), broadcasting."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.test_util import check_grads

rng = np.random.default_rng(0)

# name -> a sampler of valid float64 arguments
UNARY = {
    "tan": lambda s: rng.uniform(-1.4, 1.4, s), "arcsin": lambda s: rng.uniform(-1, 1, s),
    "arccos": lambda s: rng.uniform(-1, 1, s), "arctan": lambda s: rng.normal(0, 3, s),
    "sinh": lambda s: rng.normal(0, 3, s), "cosh": lambda s: rng.normal(0, 3, s),
    "arcsinh": lambda s: rng.normal(0, 3, s), "arccosh": lambda s: rng.uniform(1, 9, s),
    "arctanh": lambda s: rng.uniform(-0.99, 0.99, s), "deg2rad": lambda s: rng.normal(0, 90, s),
    "rad2deg": lambda s: rng.normal(0, 3, s), "log2": lambda s: rng.uniform(0.01, 100, s),
    "log10": lambda s: rng.uniform(0.01, 100, s), "sinc": lambda s: rng.normal(0, 2, s),
    "trunc": lambda s: rng.normal(0, 3, s),
    "rint": lambda s: rng.normal(0, 3, s) , "signbit": lambda s: rng.normal(0, 3, s),
    "real": lambda s: rng.normal(0, 3, s), "imag": lambda s: rng.normal(0, 3, s),
    "conj": lambda s: rng.normal(0, 3, s), "exp2": lambda s: rng.normal(0, 3, s),
}

BINARY = {
    "hypot": lambda s: rng.normal(0, 3, s), "logaddexp": lambda s: rng.normal(0, 3, s),
    "logaddexp2": lambda s: rng.normal(0, 3, s), "copysign": lambda s: rng.normal(0, 3, s),
    "fmax": lambda s: rng.normal(0, 3, s), "fmin": lambda s: rng.normal(0, 3, s),
    "heaviside": lambda s: np.round(rng.normal(0, 1, s)), "fmod": lambda s: rng.uniform(0.5, 3, s) * rng.choice([-1, 1], s),
    "float_power": lambda s: rng.uniform(0.1, 3, s), "left_shift": None, "right_shift": None,
}

shapes = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(sorted(UNARY)), shapes, st.sampled_from([np.float32, np.int32]))
def test_unary(name, shape, dtype):
    x = UNARY[name](shape)
    if dtype == np.int32:
        if name in ("arccosh", "arctanh", "arcsin", "arccos"):
            return
        x = np.round(x)
    x = x.astype(dtype)
    out = getattr(jnp, name)(x)
    expected = getattr(np, name)(x)
    assert out.shape == expected.shape
    if name in ("signbit",):
        assert out.dtype == np.bool_
    elif name in ("trunc", "real", "imag", "conj") or dtype == np.float32:   # JAX: rint of integers is float
        assert out.dtype == x.dtype
    else:
        assert out.dtype == np.float32  # integers promote to the default float, as in JAX
    np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=2e-6, atol=2e-6)


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(sorted(BINARY)), shapes, shapes)
def test_binary_broadcasting(name, shape1, shape2):
    try:
        np.broadcast_shapes(shape1, shape2)
    except ValueError:
        # As JAX: operands of two ranks fail to broadcast, of one rank the primitive's shape
        # check; copysign and heaviside are jnp.where in JAX, which fails to broadcast.
        where_based = name in ("copysign", "heaviside")
        error = ValueError if len(shape1) != len(shape2) or where_based else TypeError
        with pytest.raises(error, match="(?i)incompatible shapes for broadcasting"):
            getattr(jnp, name)(np.ones(shape1, np.int32), np.ones(shape2, np.int32))
        return
    if BINARY[name] is None:
        a = rng.integers(-100, 100, shape1).astype(np.int32)
        b = rng.integers(0, 8, shape2).astype(np.int32)
    else:
        a, b = BINARY[name](shape1).astype(np.float32), BINARY[name](shape2).astype(np.float32)
    out = getattr(jnp, name)(a, b)
    expected = getattr(np, name)(a, b)
    assert out.shape == expected.shape
    np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=2e-6, atol=2e-6)


def test_nan_and_signed_zero_cases():
    nan = np.float32(np.nan)
    np.testing.assert_array_equal(jnp.fmax(np.array([nan, 1, nan], np.float32), np.array([2, nan, nan], np.float32)),
                                  [2, 1, nan])
    np.testing.assert_array_equal(jnp.signbit(np.array([-0.0, 0.0, -np.inf], np.float32)), [True, False, True])
    np.testing.assert_array_equal(jnp.copysign(np.float32(2), np.array([-0.0, 0.0], np.float32)), [-2, 2])
    np.testing.assert_array_equal(jnp.hypot(np.array([np.inf, 0], np.float32), np.array([nan, 0], np.float32)),
                                  [np.inf, 0])
    np.testing.assert_array_equal(jnp.logaddexp(np.float32(-np.inf), np.float32(-np.inf)), -np.inf)
    np.testing.assert_array_equal(jnp.heaviside(np.array([-1.0, 0.0, 2.0]), 0.5), [0, 0.5, 1])


def test_weak_types_are_kept():
    x = np.ones(3, np.float16)
    assert jnp.clip(x, 0.5, 2).dtype == np.float16
    assert jnp.where(x > 0, x, 0.0).dtype == np.float16
    assert jnp.hypot(x, 2.0).dtype == np.float16
    assert jnp.where(True, 1.0, 2.0).weak_type


@settings(deadline=None, max_examples=30)
@given(shapes, shapes, shapes)
def test_where_broadcasts_three_ways(s1, s2, s3):
    try:
        expected_shape = np.broadcast_shapes(s1, s2, s3)
    except ValueError:
        return
    c = rng.normal(size=s1) > 0
    x, y = rng.normal(size=s2).astype(np.float32), rng.integers(0, 9, s3).astype(np.int8)
    out = jnp.where(c, x, y)
    assert out.shape == expected_shape and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.where(c, x, y))


def test_where_needs_both_branches():
    with pytest.raises(ValueError, match="both or neither"):
        jnp.where(np.ones(3) > 0, 1.0)


@settings(deadline=None, max_examples=30)
@given(shapes, st.one_of(st.none(), st.floats(-1, 0)), st.one_of(st.none(), st.floats(0, 1)))
def test_clip(shape, low, high):
    x = rng.normal(size=shape).astype(np.float32)
    if low is None and high is None:
        np.testing.assert_array_equal(jnp.clip(x), x)
        return
    # A subnormal bound is flushed to a signed zero, as XLA (and JAX) flush it.
    np.testing.assert_allclose(jnp.clip(x, low, high), np.clip(x, low, high), rtol=1e-6,
                               atol=float(np.finfo(np.float32).tiny))


def test_isclose_allclose():
    a = np.array([1.0, np.nan, np.inf, 1e-9], np.float32)
    b = np.array([1.0 + 1e-7, np.nan, np.inf, 0.0], np.float32)
    np.testing.assert_array_equal(jnp.isclose(a, b), np.isclose(a, b))
    np.testing.assert_array_equal(jnp.isclose(a, b, equal_nan=True), np.isclose(a, b, equal_nan=True))
    assert bool(jnp.allclose(a[[0, 3]], b[[0, 3]]))


@pytest.mark.parametrize("name", ["arcsin", "arctanh", "sinc", "hypot", "logaddexp", "log2",
                                  "copysign", "logaddexp2"])
def test_gradients_by_finite_differences(name, enable_x64):
    fn = getattr(jnp, name)
    if name in ("hypot", "logaddexp", "copysign", "logaddexp2"):
        check_grads(fn, [rng.uniform(0.2, 0.9, 4), rng.uniform(0.2, 0.9, 4)], order=2)
    else:
        check_grads(fn, [rng.uniform(0.2, 0.9, 4)], order=2)


def test_sinc_gradient_at_zero_is_finite():
    _, tangent = jaxlite.jvp(jnp.sinc, (np.float32(0),), (np.float32(1),))
    assert np.asarray(tangent) == 0


def test_shift_functions_reject_floats():
    with pytest.raises(TypeError, match="integer"):
        jnp.left_shift(np.ones(2, np.float32), 1)


def test_vmap_of_where_and_clip():
    x = rng.normal(size=(4, 3)).astype(np.float32)
    out = jaxlite.vmap(lambda r: jnp.where(r > 0, jnp.clip(r, 0, 0.5), jnp.tan(r)))(x)
    np.testing.assert_allclose(out, np.where(x > 0, np.clip(x, 0, 0.5), np.tan(x)), rtol=1e-6)


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2", "copysign", "fmax", "heaviside",
                                  "float_power", "fmod"])
def test_binary_functions_of_python_scalars_are_weak(name):
    assert getattr(jnp, name)(0.5, 0.25).weak_type
    assert not getattr(jnp, name)(np.float32(0.5), 0.25).weak_type


@pytest.mark.parametrize("name", ["sinc", "imag", "tan", "arcsinh", "trunc", "deg2rad"])
def test_unary_functions_of_python_scalars_are_weak(name):
    assert getattr(jnp, name)(0.5).weak_type


def test_shape_and_dtype_errors_are_jax_classes():
    """JAX builds copysign and heaviside on where: shapes that do not broadcast are a
    ValueError whatever their ranks; ldexp's equal-rank mismatch is the elementwise TypeError."""
    for fn in (jnp.copysign, jnp.heaviside):
        for a, b in [((3,), (2,)), ((2, 3), (3, 2)), ((2, 3), (2,))]:
            with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
                fn(jnp.ones(a), jnp.ones(b))
    with pytest.raises(TypeError, match="ldexp got incompatible shapes"):
        jnp.ldexp(jnp.ones(3), jnp.ones(2, jnp.int32))
    with pytest.raises(TypeError, match="copysign does not support complex-valued inputs"):
        jnp.copysign(jnp.ones(2, jnp.complex64), 1.0)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_narrow_floats_with_internal_constants(dtype):
    """isclose/allclose, logaddexp2, percentile and angle(deg=True) on float16 and bfloat16
    keep the dtype (their constants and tolerances take it, as JAX converts them); before,
    lax refused float16 times a float32 constant."""
    x = np.array([1, 2, 3], dtype)
    wide = x.astype(np.float64)
    assert jnp.isclose(x, 2.0).tolist() == [False, True, False] and jnp.allclose(x, x)
    np.testing.assert_array_equal(jnp.isclose(x, x, rtol=np.float32(0.1)), [True] * 3)
    for got, want in [(jnp.logaddexp2(x, 2.0), np.logaddexp2(wide, 2.0)), (jnp.percentile(x, 30.0), np.percentile(wide, 30.0)),
                      (jnp.angle(-x, deg=True), np.angle(-wide, deg=True))]:
        assert got.dtype == dtype
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-2)
