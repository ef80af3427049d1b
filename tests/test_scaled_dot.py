"""lax.scaled_dot and jax.nn's block-scaled products, against values recorded from JAX and numpy."""
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax, nn
from jaxlite.test_util import check_vmap

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from record_jax_scaled_dot import cases, grad_cases  # noqa: E402

EXPECTED = np.load(DATA / "jax_scaled_dot.npz")


def _recorded_calls():
    return {**cases(lax, nn, jnp), **grad_cases(nn, jnp, jaxlite.grad)}


@pytest.mark.parametrize("name", sorted(EXPECTED.files))
def test_matches_jax_eager_and_jit(name):
    call = _recorded_calls()[name]
    # float32 sums of 64 terms in another order: a few ulps of the largest value
    atol = 1e-6 * np.abs(EXPECTED[name]).max()
    np.testing.assert_allclose(np.asarray(call()).astype(np.float32), EXPECTED[name], rtol=0, atol=atol)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(call)()).astype(np.float32), EXPECTED[name],
                               rtol=0, atol=atol)


def _blockwise(x, scale, axis):
    return x.astype(np.float64) * np.repeat(scale.astype(np.float64), x.shape[axis] // scale.shape[axis], axis)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.sampled_from([2, 4, 8]),
       st.integers(1, 3), st.integers(0, 2 ** 16))
def test_scaled_dot_is_the_blockwise_scaled_product(batch, m, n, block, k_blocks, seed):
    rng = np.random.default_rng(seed)
    k = block * k_blocks
    # Quarters in [-2, 2] (exact in e5m2) and scales 2^-2..2^2: every product is a multiple of
    # 2^-8 of magnitude at most 2^6, so a sum of at most 24 of them is exact in float32 in any order.
    lhs = (rng.integers(-8, 9, size=(batch, m, k)) / 4).astype(jnp.float8_e5m2)
    rhs = (rng.integers(-8, 9, size=(batch, k, n)) / 4).astype(jnp.float8_e5m2)
    lhs_scale = np.exp2(rng.integers(-2, 3, size=(batch, m, k_blocks))).astype(jnp.float8_e8m0fnu)
    rhs_scale = np.exp2(rng.integers(-2, 3, size=(batch, k_blocks, n))).astype(jnp.float8_e8m0fnu)
    got = lax.scaled_dot(lhs, rhs, lhs_scale=lhs_scale, rhs_scale=rhs_scale, preferred_element_type=np.float32)
    want = np.einsum("bmk,bkn->bmn", _blockwise(lhs, lhs_scale, 2), _blockwise(rhs, rhs_scale, 1))
    assert got.dtype == np.float32 and got.shape == (batch, m, n)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_scaled_dot_defaults_vmap_and_dimension_numbers():
    rng = np.random.default_rng(1)
    lhs = rng.normal(size=(2, 3, 4, 8)).astype(jnp.float8_e4m3fn)
    rhs = rng.normal(size=(2, 3, 8, 5)).astype(jnp.float8_e4m3fn)
    out = lax.scaled_dot(lhs, rhs)
    assert out.dtype == jnp.bfloat16 and out.shape == (2, 3, 4, 5)
    check_vmap(lambda a, b: lax.scaled_dot(a, b, preferred_element_type=np.float32), [lhs, rhs])
    unbatched = lax.scaled_dot(lhs[0], rhs[0], dimension_numbers=(((2,), (1,)), ((), ())),
                               preferred_element_type=np.float32)
    assert unbatched.shape == (3, 4, 3, 5)


def test_scaled_dot_errors():
    lhs, rhs = jnp.ones((4, 8), jnp.float8_e4m3fn), jnp.ones((8, 3), jnp.float8_e4m3fn)
    with pytest.raises(TypeError, match="0-rank and 1-rank"):
        lax.scaled_dot(lhs[0], rhs[:, 0])
    with pytest.raises(TypeError, match="LHS dim 0 of size 4 does not match"):
        lax.scaled_dot(lhs, rhs, lhs_scale=jnp.ones((3, 2), jnp.float8_e8m0fnu))
    with pytest.raises(TypeError, match="at least twice"):
        lax.scaled_dot(lhs, rhs, rhs_scale=jnp.ones((8, 3), jnp.float8_e8m0fnu))
    with pytest.raises(TypeError, match="one rank"):
        lax.scaled_dot(lhs, rhs, lhs_scale=jnp.ones((4, 2, 1), jnp.float8_e8m0fnu))


def test_scaled_matmul_as_documented():
    a, b = jnp.array([1, 2, 3]).reshape((1, 1, 3)), jnp.array([4, 5, 6]).reshape((1, 1, 3))
    half = jnp.array([0.5]).reshape((1, 1, 1))
    out = nn.scaled_matmul(a, b, half, half)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[[8.0]]])
    with pytest.raises(ValueError, match="3-dimensional"):
        nn.scaled_matmul(a[0], b[0], half[0], half[0])
    with pytest.raises(ValueError, match="non-contract dimensions"):
        nn.scaled_matmul(a, b, jnp.ones((1, 2, 1)), half)


def test_scaled_dot_general_without_configs_and_errors():
    x, y = jnp.ones((2, 3)), jnp.ones((3, 4))
    dims = (((1,), (0,)), ((), ()))
    np.testing.assert_array_equal(nn.scaled_dot_general(x, y, dims), lax.dot_general(x, y, dims))
    config = nn.get_scaled_dot_general_config("mxfp8")
    assert (config.block_size, config.data_type, config.global_scale) == (32, jnp.float8_e4m3fn, None)
    with pytest.raises(ValueError, match="Unsupported mode"):
        nn.get_scaled_dot_general_config("int8")
    with pytest.raises(TypeError, match="preferred_element_type"):
        nn.scaled_dot_general(x, y, dims, preferred_element_type=np.int32, configs=[config] * 3)
    with pytest.raises(ValueError, match="block size 32"):
        nn.scaled_dot_general(x, y, dims, configs=[config] * 3)
