"""lax functions composed of primitives (lax.composites) and the *_p exports."""
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.primitive import Primitive

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from record_jax_lax_conv import cases  # noqa: E402
from record_jax_reduce_precision import cases as precision_cases  # noqa: E402

CONV_EXPECTED = np.load(DATA / "jax_lax_conv.npz")
PRECISION_EXPECTED = np.load(DATA / "jax_reduce_precision.npz")


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 17), axis=st.integers(0, 1), reverse=st.booleans())
def test_associative_scan_is_a_cumulative_sum_and_product(n, axis, reverse):
    x = np.random.default_rng(n).uniform(0.5, 1.5, (n, 3) if axis == 0 else (3, n)).astype(np.float32)
    expected = np.flip(np.cumsum(np.flip(x, axis), axis), axis) if reverse else np.cumsum(x, axis)
    np.testing.assert_allclose(lax.associative_scan(lax.add, x, reverse=reverse, axis=axis), expected, rtol=1e-5)
    np.testing.assert_allclose(lax.associative_scan(lax.mul, x, axis=axis), np.cumprod(x, axis), rtol=1e-5)


def test_associative_scan_of_a_pytree_under_jit_and_grad():
    pairs = lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1]))
    x = jnp.array([3.0, -1.0, 4.0, 1.0, -5.0])
    total, running_max = jaxlite.jit(lambda x: lax.associative_scan(pairs, (x, x)))(x)
    np.testing.assert_allclose(total, np.cumsum(x))
    np.testing.assert_allclose(running_max, np.maximum.accumulate(x))
    grad = jaxlite.grad(lambda x: lax.associative_scan(lax.mul, x).sum())(x)
    np.testing.assert_allclose(grad, jaxlite.grad(lambda x: jnp.cumprod(x).sum())(x), rtol=1e-5)


@pytest.mark.parametrize("computation, init, reference", [
    (lax.add, 0.0, np.sum), (lax.max, -np.inf, np.max), (lambda a, b: a * b + 1, 1.0, None)])
def test_reduce(computation, init, reference):
    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    got = lax.reduce(x, init, computation, (1,))
    if reference is None:   # not a monoid: a left fold in index order
        expected = [((1 * r[0] + 1) * r[1] + 1) * r[2] + 1 for r in x]
    else:
        expected = reference(x, axis=1)
    np.testing.assert_allclose(got, expected)
    np.testing.assert_allclose(jaxlite.jit(lambda x: lax.reduce(x, init, computation, (1,)))(x), expected)


def test_shape_helpers_match_numpy():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(lax.tile(x, (2, 2)), np.tile(x, (2, 2)))
    np.testing.assert_array_equal(lax.tile(x, (3, 1, 1)), np.tile(x, (3, 1, 1)))
    assert [p.shape for p in lax.split(x, (1, 2), axis=1)] == [(2, 1), (2, 2)]
    with pytest.raises(ValueError, match="Sum of sizes"):
        lax.split(x, (1, 1), axis=1)
    np.testing.assert_array_equal(lax.stack([x, x], axis=2), np.stack([x, x], 2))
    np.testing.assert_array_equal(lax.unstack(x, 1)[2], x[:, 2])
    assert lax.collapse(np.zeros((2, 3, 4, 5)), 1, 3).shape == (2, 12, 5)
    assert lax.broadcast_to_rank(x, 4).shape == (1, 1, 2, 3)
    assert lax.broadcast_like(np.ones(3), np.zeros((2, 3))).shape == (2, 3)
    assert lax.padtype_to_pads((10, 9), (3, 4), (2, 1), "SAME") == [(0, 1), (1, 2)]
    assert lax.padtype_to_pads((10,), (3,), (2,), "SAME_LOWER") == [(1, 0)]
    np.testing.assert_array_equal(lax.select(x > 2, x, -x), np.where(x > 2, x, -x))
    assert lax.reciprocal(4.0) == 0.25 and lax.dtype(2) == np.int32
    assert lax.optimization_barrier((x, 1.0))[1] == 1.0


def test_primitive_exports():
    exported = {n: getattr(lax, n) for n in dir(lax) if n.endswith("_p")}
    assert len(exported) >= 100 and all(isinstance(p, Primitive) for p in exported.values())
    eqn_names = [e.primitive for e in jaxlite.make_jaxpr(lambda x: lax.sin(x) + 1.0)(1.0).jaxpr.eqns]
    assert eqn_names == [lax.sin_p, lax.add_p] and lax.scatter_add_p.name == "scatter-add"


@pytest.mark.parametrize("name", sorted(cases(lax)))
def test_convolution_helpers_and_approx_top_k_match_jax(name):
    out = cases(lax)[name]()
    for i, part in enumerate(out if isinstance(out, (tuple, list)) else (out,)):
        expected = CONV_EXPECTED[f"{name} #{i}"]
        assert part.shape == expected.shape and part.dtype == expected.dtype
        np.testing.assert_allclose(part, expected, rtol=1e-5, atol=5e-6)


def test_conv_transpose_with_transposed_kernel_is_the_input_gradient():
    # With VALID padding and (size - kernel) divisible by the stride, the shapes line up exactly.
    x = jnp.asarray(np.random.default_rng(2).normal(size=(1, 7, 5, 2)).astype(np.float32))
    w = jnp.asarray(np.random.default_rng(3).normal(size=(3, 3, 2, 4)).astype(np.float32))
    dn = ("NHWC", "HWIO", "NHWC")
    forward = lambda x: lax.conv_general_dilated(x, w, (2, 2), "VALID", dimension_numbers=dn)
    ct = jnp.ones(forward(x).shape)
    grad = jaxlite.vjp(forward, x)[1](ct)[0]
    np.testing.assert_allclose(lax.conv_transpose(ct, w, (2, 2), "VALID", dimension_numbers=dn,
                                                  transpose_kernel=True), grad, rtol=1e-5, atol=1e-5)
    assert lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), dn) == lax.ConvDimensionNumbers(
        (0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))


def test_shape_tuples():
    dn = ("NHWC", "HWIO", "NHWC")
    assert lax.conv_general_shape_tuple((1, 9, 8, 3), (3, 3, 3, 5), (2, 1), "SAME", dn) == (1, 5, 8, 5)
    assert lax.conv_transpose_shape_tuple((1, 9, 8, 3), (3, 3, 3, 5), (2, 1), "SAME", dn) == (1, 18, 8, 5)
    assert lax.conv_shape_tuple((1, 3, 9, 8), (5, 3, 3, 3), (2, 1), ((1, 1), (0, 0))) == (1, 5, 5, 6)
    pads = ((0, 0), (1, 1), (0, 0), (0, 0))
    assert lax.reduce_window_shape_tuple((1, 9, 8, 3), (1, 3, 3, 1), (1, 2, 2, 1), pads) == (1, 5, 3, 3)
    assert lax.conv_general_permutations(dn) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))


@pytest.mark.parametrize("name", sorted(PRECISION_EXPECTED.files))
def test_reduce_precision_is_bit_identical_to_jax(name):
    got = np.asarray(precision_cases(lax, jnp.bfloat16)[name]()).astype(np.float32)
    np.testing.assert_array_equal(got, PRECISION_EXPECTED[name])


def test_reduce_precision_under_jit_and_grad():
    x = jnp.array([1.3, 2.7, -0.11])
    np.testing.assert_array_equal(jaxlite.jit(lambda x: lax.reduce_precision(x, 5, 2))(x),
                                  lax.reduce_precision(x, 5, 2))
    grad = jaxlite.grad(lambda x: (lax.reduce_precision(x, 5, 2) * jnp.array([1.0, 1.3, 3.0])).sum())(x)
    np.testing.assert_array_equal(grad, [1.0, 1.25, 3.0])   # the cotangent, rounded the same way
    with pytest.raises(TypeError, match="floating-point"):
        lax.reduce_precision(jnp.arange(3), 5, 2)


def test_scatter_sub_and_empty():
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    got = lax.scatter_sub(jnp.ones(4), jnp.array([[1], [3], [1]]), jnp.array([1.0, 2.0, 3.0]), dnums)
    np.testing.assert_array_equal(got, [1.0, -3.0, 1.0, -1.0])
    grad = jaxlite.grad(lambda u: lax.scatter_sub(jnp.ones(4), jnp.array([[1], [3]]), u, dnums).sum())(jnp.ones(2))
    np.testing.assert_array_equal(grad, [-1.0, -1.0])
    assert lax.empty((2, 3), np.int8).shape == (2, 3) and lax.empty((2,), np.int8).dtype == np.int8
