"""lax.linalg (cholesky, triangular_solve, lu, svd) and jnp.linalg."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.test_util import check_grads, check_vmap


def _matrices(batch, n, seed=0):
    return np.random.default_rng(seed).standard_normal(batch + (n, n))


def _spd(batch, n, seed=0):
    a = _matrices(batch, n, seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _well_conditioned(batch, n, seed=0):
    return _matrices(batch, n, seed) + 2 * n * np.eye(n)


batches = st.lists(st.integers(1, 3), max_size=2).map(tuple)


@pytest.mark.usefixtures("enable_x64")
@settings(deadline=None, max_examples=20)
@given(batches, st.integers(1, 5))
def test_cholesky_and_lu_reconstruct(batch, n):
    a = _spd(batch, n)
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


def test_cholesky_of_indefinite_matrix_is_nan_below_the_diagonal():
    """As JAX: NaNs in the lower triangle, zeros above it."""
    out = np.asarray(lax.cholesky(-np.eye(2, dtype=np.float32)))
    assert np.isnan(out[np.tril_indices(2)]).all() and out[0, 1] == 0


@pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal",
                         list(itertools.product([True, False], repeat=4)))
def test_triangular_solve_variants(left_side, lower, transpose_a, unit_diagonal, enable_x64):
    a = _well_conditioned((2,), 4)
    b = np.random.default_rng(3).standard_normal((2, 4, 3) if left_side else (2, 3, 4))
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    x = np.asarray(lax.triangular_solve(a, b, **params))
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri[..., np.arange(4), np.arange(4)] = 1
    op = np.swapaxes(tri, -1, -2) if transpose_a else tri
    np.testing.assert_allclose(op @ x if left_side else x @ op, b, atol=1e-10)
    check_grads(lambda a, b: lax.triangular_solve(a, b, **params), [a, b], order=2)
    check_vmap(lambda a, b: lax.triangular_solve(a, b, **params), [a.astype(np.float32),
                                                                   b.astype(np.float32)], rtol=1e-5)
    check_vmap(lambda b: lax.triangular_solve(a[0].astype(np.float32), b, **params),
               [b.astype(np.float32)], rtol=1e-5)


def test_factorization_derivatives_and_vmap(enable_x64):
    check_grads(lambda a: lax.cholesky(a), [_spd((2,), 4)], order=2)
    check_grads(lambda a: lax.lu(a)[0], [_matrices((2,), 4, seed=4)], order=2)
    check_vmap(lax.cholesky, [_spd((3,), 3).astype(np.float32)])
    check_vmap(lax.lu, [_matrices((3,), 3).astype(np.float32)], in_axes=1)


# ---------------------------------------------------------------- jnp.linalg


@pytest.mark.usefixtures("enable_x64")
@settings(deadline=None, max_examples=15)
@given(batches, st.integers(1, 4))
def test_solve_inv_det_slogdet_match_numpy(batch, n):
    a = _matrices(batch, n, seed=5)
    b = np.random.default_rng(6).standard_normal(batch + (n, 2))
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
    np.testing.assert_allclose(jnp.linalg.solve(matrix, vector), np.linalg.solve(matrix, vector),
                               rtol=1e-8, atol=1e-8)


def test_linalg_derivatives(enable_x64):
    a = _well_conditioned((), 3, seed=7)
    b = np.random.default_rng(8).standard_normal((3, 2))
    check_grads(jnp.linalg.solve, [a, b], order=2)
    check_grads(jnp.linalg.inv, [a], order=2)
    check_grads(jnp.linalg.det, [a], order=2)
    check_grads(lambda a: jnp.linalg.slogdet(a)[1], [a], order=2)


VECTOR_ORDS = [None, 1, 2, 3, 0.5, np.inf, -np.inf, 0, -1]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"]


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


def test_norm_errors_and_gradient(enable_x64):
    with pytest.raises(ValueError, match="Invalid order 3 for matrix norm"):
        jnp.linalg.norm(np.eye(2), 3)
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.solve(np.ones((2, 3)), np.ones(2))
    check_grads(lambda x: jnp.linalg.norm(x, axis=1), [np.random.default_rng(10).standard_normal((3, 4))],
                order=2)
    check_grads(lambda x: jnp.linalg.norm(x, 2), [np.random.default_rng(10).standard_normal((3, 4))],
                order=2)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2)])
def test_lu_of_rectangular_matrices(shape, enable_x64):
    a = np.random.default_rng(11).standard_normal(shape)
    lu, _, permutation = (np.asarray(v) for v in lax.lu(a))
    m, n = shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    np.testing.assert_allclose(lower @ upper, np.take_along_axis(a, permutation[..., None], -2), atol=1e-12)
    check_grads(lambda a: lax.lu(a)[0], [a], order=2)


@settings(deadline=None, max_examples=20)
@given(batches, st.integers(1, 5), st.integers(1, 5), st.booleans())
def test_svd_matches_numpy(batch, m, n, full_matrices):
    a = np.random.default_rng(m * 7 + n).standard_normal(batch + (m, n)).astype(np.float32)
    u, s, vh = jnp.linalg.svd(a, full_matrices=full_matrices)
    expected_u, expected_s, expected_vh = np.linalg.svd(a, full_matrices=full_matrices)
    assert u.shape == expected_u.shape and vh.shape == expected_vh.shape
    np.testing.assert_allclose(s, expected_s, rtol=1e-5, atol=1e-6)
    k = min(m, n)
    rebuilt = (np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jnp.linalg.svd(a, compute_uv=False), expected_s, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_svd_derivatives(shape, enable_x64):
    """Functions of u and v that do not depend on their signs (which are arbitrary)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape)
    k = min(shape[-2:])
    u_weights = rng.standard_normal(shape[:-1] + (k,))
    v_weights = rng.standard_normal(shape[:-2] + (k, shape[-1]))

    def sign_free(a):
        u, s, vt = lax.linalg.svd(a, full_matrices=False)
        return s, (u * u * u_weights).sum(), (vt * vt * v_weights).sum()
    check_grads(sign_free, [a], order=2)
    check_vmap(lambda a: lax.linalg.svd(a, compute_uv=False), [rng.standard_normal((2,) + shape).astype(np.float32)])


def test_svd_full_matrices_derivative_is_undefined_for_non_square():
    import jaxlite
    with pytest.raises(NotImplementedError, match="full_matrices"):
        jaxlite.jvp(lambda a: lax.linalg.svd(a, full_matrices=True)[0], (np.ones((3, 2), np.float32),),
                    (np.ones((3, 2), np.float32),))


@pytest.mark.parametrize("compile", [False, True], ids=["eager", "jit"])
def test_singular_matrices_give_jaxs_zeros_and_infs(compile):
    # As JAX (LAPACK getrf skips a zero pivot): det 0, slogdet (0, -inf), solve/inv inf
    # and NaN -- never numpy's LinAlgError, and the same eager and under jit.
    wrap = jaxlite.jit if compile else (lambda f: f)
    zero, rank_one = jnp.zeros((2, 2)), jnp.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_array_equal(wrap(lambda a: jaxlite.lax.lu(a)[0])(zero), np.zeros((2, 2)))
    assert float(wrap(jnp.linalg.det)(zero)) == 0.0 and float(wrap(jnp.linalg.det)(rank_one)) == 0.0
    sign, logdet = wrap(jnp.linalg.slogdet)(zero)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    np.testing.assert_array_equal(wrap(jnp.linalg.solve)(zero, jnp.ones(2)), [np.nan, np.inf])
    np.testing.assert_array_equal(wrap(jnp.linalg.inv)(rank_one), [[-np.inf, np.inf], [np.inf, -np.inf]])


def test_det_derivatives_to_second_order_and_at_singular_matrices(enable_x64):
    """det's JVP is trace(adj(a) da): numerically checked to second order at a regular matrix;
    at singular ones the adjugate by SVD (JAX's values: tests/test_semantics_vs_jax.py)."""
    from jaxlite.test_util import check_grads
    a = np.array([[2.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.1, 0.4, 1.5]])
    check_grads(jnp.linalg.det, [a], order=2)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(jaxlite.grad(jnp.linalg.det)(singular), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(jaxlite.jacfwd(jnp.linalg.det)(singular), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


@pytest.mark.parametrize("matrix, expected", [
    ([[1.0, 2.0], [2.0, 4.0]], [[np.inf, -np.inf], [-np.inf, np.inf]]),
    ([[0.0, 1.0], [0.0, 1.0]], [[np.inf, np.nan], [-np.inf, np.nan]]),
    ([[0.0, 0.0], [0.0, 0.0]], [[np.nan, np.nan], [np.nan, np.nan]]),
    ([[0.0]], [[np.inf]]),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
     [[-np.inf, np.inf, -np.inf], [np.inf, -np.inf, np.inf], [np.nan, np.nan, np.nan]])])
def test_grad_of_slogdet_at_a_singular_matrix_is_jaxs(matrix, expected):
    """JAX's values: 1x1 and 2x2 by the written-out determinant, larger through the LU solve
    (the LU's own JVP gave NaN everywhere)."""
    a = np.float32(matrix)
    loss = lambda m: jnp.linalg.slogdet(m)[1]
    for grad in (jaxlite.grad(loss), jaxlite.jit(jaxlite.grad(loss))):
        np.testing.assert_array_equal(grad(a), np.float32(expected))
    _, tangent = jaxlite.jvp(loss, (a,), (np.ones_like(a),))
    assert np.isnan(tangent) or np.isinf(tangent)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_slogdet_derivatives_of_batches_of_regular_matrices(n):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((3, n, n)) + 2 * np.eye(n)).astype(np.float32)
    check_grads(lambda m: jnp.linalg.slogdet(m)[1], [a], order=2)
    np.testing.assert_allclose(jaxlite.grad(lambda m: jnp.linalg.slogdet(m)[1].sum())(a),
                               np.linalg.inv(a).transpose(0, 2, 1), rtol=2e-4, atol=1e-5)
