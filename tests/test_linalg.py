"""lax.linalg (cholesky, triangular_solve, lu) and jnp.linalg."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.lax import linalg
from fd_check import check_jvp, check_transpose, check_vmap, x64


def _matrices(batch, n, seed=0):
    return np.random.default_rng(seed).standard_normal(batch + (n, n))


def _spd(batch, n, seed=0):
    a = _matrices(batch, n, seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _well_conditioned(batch, n, seed=0):
    return _matrices(batch, n, seed) + 2 * n * np.eye(n)


batches = st.lists(st.integers(1, 3), max_size=2).map(tuple)


@settings(deadline=None, max_examples=20)
@given(batches, st.integers(1, 5))
def test_cholesky_and_lu_reconstruct(batch, n):
    a = _spd(batch, n)
    with x64():
        factor = np.asarray(lax.cholesky(a))
        np.testing.assert_allclose(factor, np.linalg.cholesky(a), rtol=1e-10, atol=1e-10)
        m = _matrices(batch, n, seed=1)
        lu, pivots, permutation = (np.asarray(v) for v in lax.lu(m))
    lower = np.tril(lu, -1) + np.eye(n)
    upper = np.triu(lu)
    np.testing.assert_allclose(lower @ upper, np.take_along_axis(m, permutation[..., None], -2), atol=1e-10)
    assert np.all(np.abs(np.tril(lu, -1)) <= 1 + 1e-12)  # partial pivoting
    # The permutation is the product of the pivot swaps.
    swapped = np.broadcast_to(np.arange(n), batch + (n,)).copy()
    for index in np.ndindex(*batch):
        for k, p in enumerate(pivots[index]):
            swapped[index][[k, p]] = swapped[index][[p, k]]
    np.testing.assert_array_equal(swapped, permutation)


def test_cholesky_of_indefinite_matrix_is_nan():
    assert np.isnan(np.asarray(lax.cholesky(-np.eye(2, dtype=np.float32)))).all()


@pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal",
                         list(itertools.product([True, False], repeat=4)))
def test_triangular_solve_variants(left_side, lower, transpose_a, unit_diagonal):
    a = _well_conditioned((2,), 4)
    b = np.random.default_rng(3).standard_normal((2, 4, 3) if left_side else (2, 3, 4))
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    with x64():
        x = np.asarray(lax.triangular_solve(a, b, **params))
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri[..., np.arange(4), np.arange(4)] = 1
    op = np.swapaxes(tri, -1, -2) if transpose_a else tri
    np.testing.assert_allclose(op @ x if left_side else x @ op, b, atol=1e-10)
    check_jvp(lambda a, b: lax.triangular_solve(a, b, **params), [a, b])
    check_transpose(linalg.triangular_solve_p, b if left_side else b, [a, b], [1], params)
    check_vmap(lambda a, b: lax.triangular_solve(a, b, **params), [a.astype(np.float32),
                                                                   b.astype(np.float32)], rtol=1e-5)
    check_vmap(lambda b: lax.triangular_solve(a[0].astype(np.float32), b, **params),
               [b.astype(np.float32)], rtol=1e-5)


def test_factorization_derivatives_and_vmap():
    check_jvp(lambda a: lax.cholesky(a), [_spd((2,), 4)])
    check_jvp(lambda a: lax.lu(a)[0], [_matrices((2,), 4, seed=4)])
    check_vmap(lax.cholesky, [_spd((3,), 3).astype(np.float32)])
    check_vmap(lax.lu, [_matrices((3,), 3).astype(np.float32)], in_axes=1)


# ---------------------------------------------------------------- jnp.linalg


@settings(deadline=None, max_examples=15)
@given(batches, st.integers(1, 4))
def test_solve_inv_det_slogdet_match_numpy(batch, n):
    a = _matrices(batch, n, seed=5)
    b = np.random.default_rng(6).standard_normal(batch + (n, 2))
    with x64():
        np.testing.assert_allclose(jnp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(jnp.linalg.inv(a), np.linalg.inv(a), rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(jnp.linalg.det(a), np.linalg.det(a), rtol=1e-8, atol=1e-10)
        sign, logdet = jnp.linalg.slogdet(a)
        expected = np.linalg.slogdet(a)
        np.testing.assert_allclose(sign, expected.sign)
        np.testing.assert_allclose(logdet, expected.logabsdet, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(jnp.linalg.cholesky(_spd(batch, n)), np.linalg.cholesky(_spd(batch, n)))
    vector = b[..., 0] if not batch else b[(0,) * len(batch)][..., 0]
    matrix = a if not batch else a[(0,) * len(batch)]
    with x64():
        np.testing.assert_allclose(jnp.linalg.solve(matrix, vector), np.linalg.solve(matrix, vector),
                                   rtol=1e-8, atol=1e-8)


def test_linalg_derivatives():
    a = _well_conditioned((), 3, seed=7)
    b = np.random.default_rng(8).standard_normal((3, 2))
    check_jvp(jnp.linalg.solve, [a, b])
    check_jvp(jnp.linalg.inv, [a])
    check_jvp(jnp.linalg.det, [a])
    check_jvp(lambda a: jnp.linalg.slogdet(a)[1], [a])


VECTOR_ORDS = [None, 1, 2, 3, 0.5, np.inf, -np.inf, 0, -1]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=3), st.data())
def test_norm_matches_numpy(shape, data):
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    keepdims = data.draw(st.booleans())
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ord = data.draw(st.sampled_from(VECTOR_ORDS))
    np.testing.assert_allclose(jnp.linalg.norm(x, ord, axis, keepdims),
                               np.linalg.norm(x, ord, axis, keepdims), rtol=1e-5)
    axes = tuple(data.draw(st.permutations(range(len(shape))))[:2])
    ord = data.draw(st.sampled_from(MATRIX_ORDS))
    np.testing.assert_allclose(jnp.linalg.norm(x, ord, axes, keepdims),
                               np.linalg.norm(x, ord, axes, keepdims), rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.norm(x, keepdims=keepdims),
                               np.linalg.norm(x, keepdims=keepdims), rtol=1e-5)


def test_norm_errors_and_gradient():
    with pytest.raises(NotImplementedError, match="svd"):
        jnp.linalg.norm(np.eye(2), 2)
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.solve(np.ones((2, 3)), np.ones(2))
    check_jvp(lambda x: jnp.linalg.norm(x, axis=1), [np.random.default_rng(10).standard_normal((3, 4))])


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2)])
def test_lu_of_rectangular_matrices(shape):
    a = np.random.default_rng(11).standard_normal(shape)
    with x64():
        lu, _, permutation = (np.asarray(v) for v in lax.lu(a))
    m, n = shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    np.testing.assert_allclose(lower @ upper, np.take_along_axis(a, permutation[..., None], -2), atol=1e-12)
    check_jvp(lambda a: lax.lu(a)[0], [a])
