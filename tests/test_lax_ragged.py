"""lax.ragged_dot / ragged_dot_general against a numpy loop over the groups, with gradients,
jit and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.test_util import check_grads, check_vmap


def numpy_ragged_dot(lhs, rhs, group_sizes):
    out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float64)
    start = 0
    for g, size in enumerate(group_sizes):
        out[start:start + size] = lhs[start:start + size] @ rhs[g]
        start += size
    return out


@st.composite
def problems(draw):
    groups, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(0, 3), min_size=groups, max_size=groups))
    m = sum(sizes) + draw(st.integers(0, 2))      # rows past the last group come out zero
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    rhs = rng.standard_normal((groups, k, n)).astype(np.float32)
    return lhs, rhs, np.array(sizes, np.int32)


@settings(deadline=None, max_examples=30)
@given(problems())
def test_ragged_dot_matches_a_loop_over_groups(problem):
    lhs, rhs, sizes = problem
    got = lax.ragged_dot(lhs, rhs, sizes)
    assert got.shape == (lhs.shape[0], rhs.shape[2]) and got.dtype == np.float32
    np.testing.assert_allclose(got, numpy_ragged_dot(lhs, rhs, sizes), rtol=1e-5, atol=1e-5)


def test_ragged_contracting_and_batch_modes():
    rng = np.random.default_rng(1)
    lhs, rhs, sizes = rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 5, 6)), np.array([2, 3], np.int32)
    lhs, rhs = lhs.astype(np.float32), rhs.astype(np.float32)
    contracting = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [2], [])
    out = lax.ragged_dot_general(lhs, rhs, sizes, contracting)
    assert out.shape == (2, 2, 4, 6)
    np.testing.assert_allclose(out[1], np.einsum("bmk,bkn->bmn", lhs[:, :, 2:], rhs[:, 2:]), rtol=1e-5, atol=1e-5)
    batch = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], [])
    np.testing.assert_allclose(lax.ragged_dot_general(lhs, rhs, np.array([1, 1], np.int32), batch),
                               np.einsum("bmk,bkn->bmn", lhs, rhs), rtol=1e-5, atol=1e-5)
    grouped = lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [0])), [1], [1])
    rhs3 = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    out = lax.ragged_dot_general(lhs, rhs3, np.array([2, 1, 1], np.int32), grouped)
    np.testing.assert_allclose(out[:, 2:3], np.einsum("bmk,bkn->bmn", lhs[:, 2:3], rhs3[:, 1]), rtol=1e-5, atol=1e-5)


def test_derivatives_jit_vmap_and_jaxpr():
    rng = np.random.default_rng(2)
    lhs, rhs = rng.standard_normal((5, 3)), rng.standard_normal((2, 3, 4))
    sizes = np.array([2, 2], np.int32)
    check_grads(lambda a, b: lax.ragged_dot(a, b, sizes), (lhs.astype(np.float32), rhs.astype(np.float32)), order=2)
    lhs32, rhs32 = lhs.astype(np.float32), rhs.astype(np.float32)
    np.testing.assert_allclose(jaxlite.jit(lax.ragged_dot)(lhs32, rhs32, sizes), lax.ragged_dot(lhs32, rhs32, sizes),
                               rtol=1e-6)
    check_vmap(lambda a: lax.ragged_dot(a, rhs32, sizes), (np.stack([lhs32, 2 * lhs32]),))
    check_vmap(lambda s: lax.ragged_dot(lhs32, rhs32, s), (np.array([[2, 2], [1, 3], [5, 0]], np.int32),))
    text = str(jaxlite.make_jaxpr(lax.ragged_dot)(lhs32, rhs32, sizes))
    assert "ragged_dot_general[" in text and "lhs_ragged_dimensions=(0,)" in text
    bf16 = lax.ragged_dot(lhs32.astype(jnp.bfloat16), rhs32.astype(jnp.bfloat16), sizes,
                          preferred_element_type=jnp.float32)
    assert bf16.dtype == np.float32


def test_errors():
    lhs, rhs = np.ones((4, 3), np.float32), np.ones((2, 3, 4), np.float32)
    with pytest.raises(TypeError, match="group_sizes to have shape \\(2,\\)"):
        lax.ragged_dot(lhs, rhs, np.array([[2, 2]], np.int32))
    with pytest.raises(TypeError, match="subtype of np.integer"):
        lax.ragged_dot(lhs, rhs, np.array([2.0, 2.0], np.float32))
