"""The rest of jnp.linalg and lax.linalg (eigh, qr, geqrf, svd's modes and the compositions)
against numpy and against values recorded from JAX; derivatives, jit and vmap."""
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.lax import linalg as lax_linalg
from jaxlite.test_util import assert_jit_matches_eager_bits, check_grads, check_vmap

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from record_jax_linalg import cases  # noqa: E402

EXPECTED = np.load(DATA / "jax_linalg.npz")


@pytest.mark.parametrize("name", sorted(EXPECTED.files))
def test_matches_jax(name, enable_x64):
    got = np.asarray(cases(jaxlite, jnp, lax_linalg)[name]())
    assert got.shape == EXPECTED[name].shape
    np.testing.assert_allclose(got, EXPECTED[name], rtol=1e-7, atol=1e-9)


batches = st.lists(st.integers(1, 3), max_size=2).map(tuple)
sizes = st.integers(0, 5)
float_dtypes = st.sampled_from([np.float32, np.float64])


def _tolerance(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


@pytest.mark.usefixtures("enable_x64")
@settings(deadline=None, max_examples=25)
@given(batches, sizes, float_dtypes)
def test_eigh_against_numpy(batch, n, dtype):
    a = np.random.default_rng(n).standard_normal(batch + (n, n)).astype(dtype)
    for uplo in ("L", "U"):
        w, v = jnp.linalg.eigh(a, UPLO=uplo, symmetrize_input=False)
        want_w, want_v = np.linalg.eigh(a, UPLO=uplo)
        assert w.dtype == dtype and v.dtype == dtype
        np.testing.assert_allclose(w, want_w, **_tolerance(dtype))
        np.testing.assert_allclose(np.abs(v), np.abs(want_v), **_tolerance(dtype))
    np.testing.assert_allclose(jnp.linalg.eigvalsh(a), np.linalg.eigvalsh((a + np.swapaxes(a, -1, -2)) / 2),
                               **_tolerance(dtype))


@pytest.mark.usefixtures("enable_x64")
@settings(deadline=None, max_examples=25)
@given(batches, sizes, sizes, float_dtypes)
def test_qr_modes_against_numpy(batch, m, n, dtype):
    a = np.random.default_rng(m * 7 + n).standard_normal(batch + (m, n)).astype(dtype)
    for mode in ("reduced", "complete", "r", "raw"):
        got, want = jnp.linalg.qr(a, mode=mode), np.linalg.qr(a, mode=mode)
        for g, w in zip(*((got, want) if mode != "r" else ((got,), (want,)))):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, **_tolerance(dtype))
    q, r, p = (np.asarray(x) for x in lax_linalg.qr(a, pivoting=True, full_matrices=False))
    np.testing.assert_allclose(q @ r, np.take_along_axis(a, p[..., None, :], -1), **_tolerance(dtype))
    diagonal = np.abs(np.diagonal(r, 0, -2, -1))
    assert np.all(diagonal[..., :-1] >= diagonal[..., 1:] * (1 - 1e-5))


@pytest.mark.usefixtures("enable_x64")
@settings(deadline=None, max_examples=25)
@given(batches, sizes, sizes, float_dtypes, st.booleans())
def test_svd_and_compositions_against_numpy(batch, m, n, dtype, full_matrices):
    a = np.random.default_rng(m * 5 + n).standard_normal(batch + (m, n)).astype(dtype)
    result = jnp.linalg.svd(a, full_matrices=full_matrices)
    assert type(result).__name__ == "SVDResult"
    for got, want in zip(result, np.linalg.svd(a, full_matrices=full_matrices)):
        assert got.shape == want.shape
        np.testing.assert_allclose(np.abs(got), np.abs(want), **_tolerance(dtype))
    np.testing.assert_allclose(jnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False), **_tolerance(dtype))
    np.testing.assert_allclose(jnp.linalg.pinv(a), np.linalg.pinv(a), rtol=1e-3 if dtype == np.float32 else 1e-8,
                               atol=1e-3 if dtype == np.float32 else 1e-8)
    np.testing.assert_array_equal(jnp.linalg.matrix_rank(a), np.linalg.matrix_rank(a))
    if m and n:
        for ord in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
            np.testing.assert_allclose(jnp.linalg.matrix_norm(a, ord=ord if ord else "fro"),
                                       np.linalg.matrix_norm(a, ord=ord if ord else "fro"), **_tolerance(dtype))
    if m == n:
        sign, log_abs = jnp.linalg.slogdet(a, method="qr")
        want = np.linalg.slogdet(a)
        np.testing.assert_allclose(sign, want.sign, **_tolerance(dtype))
        np.testing.assert_allclose(log_abs, want.logabsdet, **_tolerance(dtype))


def test_named_results_and_empty_matrices():
    assert jnp.linalg.eigh(np.eye(2))._fields == ("eigenvalues", "eigenvectors")
    assert jnp.linalg.qr(np.eye(2))._fields == ("Q", "R")
    assert jnp.linalg.slogdet(np.eye(2))._fields == ("sign", "logabsdet")
    empty = np.zeros((2, 0, 0), np.float32)
    np.testing.assert_array_equal(jnp.linalg.det(empty), [1, 1])
    assert jnp.linalg.inv(empty).shape == (2, 0, 0) and jnp.linalg.eigh(empty).eigenvalues.shape == (2, 0)
    assert jnp.linalg.pinv(np.zeros((0, 3))).shape == (3, 0)
    np.testing.assert_array_equal(jnp.linalg.qr(np.zeros((3, 0)), mode="complete").Q, np.eye(3))
    x, residuals, rank, s = jnp.linalg.lstsq(np.zeros((0, 2)), np.zeros(0))
    assert x.shape == (2,) and int(rank) == 0 and s.shape == (0,)
    sign, log_abs = jnp.linalg.slogdet(empty)
    np.testing.assert_array_equal(sign, [1, 1])
    np.testing.assert_array_equal(log_abs, [0, 0])
    # A Jacobian with respect to an empty matrix is empty (the basis has no vectors).
    assert jaxlite.jacfwd(jnp.linalg.det)(empty[0]).shape == (0, 0)
    assert jaxlite.jacrev(jnp.linalg.slogdet)(empty[0]).logabsdet.shape == (0, 0)


@pytest.mark.parametrize("call, error, match", [
    (lambda: jnp.linalg.eigh(np.ones((3, 4))), TypeError, "square"),
    (lambda: lax_linalg.eigh(np.ones((3, 4)), symmetrize_input=False), ValueError, "square"),
    (lambda: jnp.linalg.eigh(np.eye(2), UPLO="X"), ValueError, "UPLO"),
    (lambda: lax_linalg.eigh(np.eye(3), subset_by_index=(0, 2)), NotImplementedError, "subset_by_index"),
    (lambda: lax_linalg.qr(np.eye(3, dtype=np.int32)), TypeError, "int32"),
    (lambda: lax_linalg.qr(np.ones(3)), ValueError, "matrices"),
    (lambda: jnp.linalg.qr(np.eye(2), mode="foo"), ValueError, "Unsupported QR decomposition mode"),
    (lambda: jnp.linalg.slogdet(np.eye(2), method="x"), ValueError, "Unknown slogdet method"),
    (lambda: jnp.linalg.lstsq(np.ones((2, 3, 4)), np.ones((2, 3))), TypeError, "two-dimensional"),
    (lambda: jnp.linalg.lstsq(np.ones((4, 3)), np.ones(3)), ValueError, "Leading dimensions"),
    (lambda: jnp.linalg.matrix_power(np.eye(2), 2.0), TypeError, "integer"),
    (lambda: jnp.linalg.matrix_power(np.ones((2, 3)), 2), TypeError, "square"),
    (lambda: jnp.linalg.tensorinv(np.ones((2, 3)), ind=1), ValueError, "tensorinv"),
    (lambda: jnp.linalg.tensorsolve(np.ones((2, 3, 6)), np.ones(5)), ValueError, "leading shape"),
    (lambda: jnp.linalg.multi_dot([np.ones((2, 2, 2)), np.ones((2, 2))]), ValueError, "two-dimensional"),
    (lambda: jnp.linalg.cross(np.ones(2), np.ones(2)), ValueError, "3-dimensional"),
    (lambda: jnp.linalg.outer(np.ones((2, 2)), np.ones(2)), ValueError, "one-dimensional"),
    (lambda: jnp.linalg.cond(np.ones((3, 4)), 1), ValueError, "square"),
    (lambda: jnp.linalg.norm(np.ones(3), "fro"), ValueError, "vector norm"),
    (lambda: jnp.linalg.norm(np.ones((2, 2, 2)), axis=(0, 1, 2)), ValueError, "Improper number of axes"),
    (lambda: jnp.linalg.solve(np.ones((2, 3, 3)), np.ones((2, 3))), ValueError, "Invalid shapes for solve"),
    (lambda: jnp.linalg.matrix_transpose(np.ones(3)), ValueError, "at least 2 dimensions"),
])
def test_errors_as_jax(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _sign_free_eigh(a):
    w, v = lax_linalg.eigh(a)
    return w, (v * v * np.arange(1.0, 1 + a.shape[-1])).sum(-1)


@pytest.mark.usefixtures("enable_x64")
@pytest.mark.parametrize("name, fun, shape", [
    ("eigh", _sign_free_eigh, (4, 4)),
    ("qr tall", lambda a: lax_linalg.qr(a, full_matrices=False), (5, 3)),
    ("qr tall full", lambda a: lax_linalg.qr(a), (4, 2)),
    ("qr wide", lambda a: lax_linalg.qr(a), (2, 4)),
    ("qr pivoting", lambda a: lax_linalg.qr(a, pivoting=True)[:2], (4, 3)),
    ("svdvals", jnp.linalg.svdvals, (4, 3)),
    ("pinv", jnp.linalg.pinv, (4, 3)),
    ("lstsq", lambda a: jnp.linalg.lstsq(a, np.arange(4.0))[0], (4, 3)),
    ("slogdet qr", lambda a: jnp.linalg.slogdet(a, method="qr")[1], (3, 3)),
    ("matrix_power", lambda a: jnp.linalg.matrix_power(a, -2), (3, 3)),
    ("cond", jnp.linalg.cond, (3, 3)),
    ("nuclear norm", lambda a: jnp.linalg.norm(a, "nuc"), (3, 4)),
    ("householder_product", lambda a: lax_linalg.householder_product(a, a[:2, 0]), (4, 3)),
])
def test_derivatives_to_second_order(name, fun, shape):
    a = np.random.default_rng(len(name)).standard_normal(shape)
    a = a + a.T if name == "eigh" else a + 2 * np.eye(*shape)
    check_grads(fun, [a], order=2, atol=1e-5, rtol=1e-5)


def test_svd_full_matrices_derivative_needs_square_matrices():
    with pytest.raises(NotImplementedError, match="full_matrices"):
        jaxlite.jvp(lambda a: lax_linalg.svd(a)[0], (np.ones((3, 2), np.float32),), (np.ones((3, 2), np.float32),))


@pytest.mark.parametrize("fun", [
    lambda a: lax_linalg.eigh(a), lambda a: lax_linalg.eigh(a, lower=False, symmetrize_input=False),
    lambda a: lax_linalg.qr(a), lambda a: lax_linalg.qr(a, full_matrices=False), lambda a: lax_linalg.geqrf(a),
    lambda a: lax_linalg.svd(a, compute_uv=False),
], ids=["eigh", "eigh upper", "qr", "qr thin", "geqrf", "svdvals"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 5, 5), (5, 3), (2, 3, 4), (0, 0)])
def test_native_under_jit_gives_eager_bits(fun, shape):
    if "eigh" in fun.__code__.co_names and shape[-1] != shape[-2]:
        pytest.skip("eigh needs square matrices")
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert_jit_matches_eager_bits(fun, a)


def test_compositions_under_jit_match_eager():
    a = np.random.default_rng(1).standard_normal((2, 4, 4)).astype(np.float32)
    for fun in (jnp.linalg.pinv, jnp.linalg.cond, lambda x: jnp.linalg.svd(x, hermitian=True).S,
                lambda x: jnp.linalg.matrix_power(x, 5), jnp.linalg.matrix_rank, lambda x: jnp.linalg.norm(x, 2, (1, 2))):
        np.testing.assert_allclose(jaxlite.jit(fun)(a), fun(a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fun", [
    lambda a: lax_linalg.eigh(a), lambda a: lax_linalg.qr(a), lambda a: lax_linalg.geqrf(a),
    lambda a: lax_linalg.qr(a, pivoting=True), lambda a: lax_linalg.svd(a, compute_uv=False),
    lambda a: jnp.linalg.lstsq(a, a[:, 0])[0],
], ids=["eigh", "qr", "geqrf", "qr pivoting", "svdvals", "lstsq"])
def test_vmap_matches_a_loop(fun):
    a = np.random.default_rng(2).standard_normal((3, 4, 4)).astype(np.float32)
    check_vmap(fun, [a], atol=1e-5, rtol=1e-5)
    check_vmap(fun, [np.swapaxes(a, 0, 2)], in_axes=2, atol=1e-5, rtol=1e-5)


def _complex_matrix(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.usefixtures("enable_x64")
@settings(deadline=None, max_examples=20)
@given(batches, st.integers(1, 4), st.sampled_from([np.complex64, np.complex128]))
def test_complex_matrices_against_numpy(batch, n, dtype):
    a = (_complex_matrix(batch + (n, n), n, dtype) + 2 * n * np.eye(n)).astype(dtype)
    b = _complex_matrix(batch + (n, 2), n + 1, dtype)
    hermitian = a @ np.conj(np.swapaxes(a, -1, -2))
    tolerance = _tolerance(np.float32 if dtype == np.complex64 else np.float64)
    for got, want in [(jnp.linalg.det(a), np.linalg.det(a)), (jnp.linalg.inv(a), np.linalg.inv(a)),
                      (jnp.linalg.solve(a, b), np.linalg.solve(a, b)), (jnp.linalg.slogdet(a).sign, np.linalg.slogdet(a).sign),
                      (jnp.linalg.cholesky(hermitian), np.linalg.cholesky(hermitian)),
                      (jnp.linalg.eigvalsh(hermitian), np.linalg.eigvalsh(hermitian)),
                      (jnp.linalg.qr(a).R, np.linalg.qr(a).R), (jnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False)),
                      (jnp.linalg.pinv(a), np.linalg.pinv(a)), (jnp.linalg.norm(a, "nuc", (-2, -1)), np.linalg.norm(a, "nuc", (-2, -1)))]:
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tolerance["rtol"] * 10, atol=tolerance["atol"] * 10 * n)
    w, v = (np.asarray(x) for x in jnp.linalg.eig(a))
    assert w.dtype == dtype and v.dtype == dtype
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=1e-3, atol=1e-3 if dtype == np.complex64 else 1e-9)


def test_eig_is_complex_for_real_input_and_its_left_eigenvectors():
    a = np.random.default_rng(3).standard_normal((2, 4, 4)).astype(np.float32)
    w, vl, vr = (np.asarray(x) for x in lax_linalg.eig(a))
    assert w.dtype == vl.dtype == vr.dtype == np.complex64
    np.testing.assert_allclose(np.conj(np.swapaxes(vl, -1, -2)) @ a, w[..., :, None] * np.conj(np.swapaxes(vl, -1, -2)),
                               atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        jaxlite.jvp(lambda x: jnp.linalg.eig(x).eigenvectors, (a[0],), (a[0],))
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.eig(np.ones((3, 4)))


@pytest.mark.usefixtures("enable_x64")
@pytest.mark.parametrize("name, fun, hermitian", [
    ("det", jnp.linalg.det, False), ("solve", lambda a: jnp.linalg.solve(a, a[:, :2]), False),
    ("slogdet", lambda a: jnp.linalg.slogdet(a), False), ("cholesky", jnp.linalg.cholesky, True),
    ("eigh", lambda a: (lambda v, w: (w, (v * v.conj()).real.sum(-1)))(*lax_linalg.eigh(a)), True),
    ("qr", lambda a: lax_linalg.qr(a), False), ("svdvals", jnp.linalg.svdvals, False), ("pinv", jnp.linalg.pinv, False),
])
def test_complex_derivatives_to_second_order(name, fun, hermitian):
    a = _complex_matrix((3, 3), len(name), np.complex128) + 3 * np.eye(3)
    a = a @ a.conj().T if hermitian else a
    check_grads(fun, [a], order=2, atol=1e-5, rtol=1e-5)


@pytest.mark.usefixtures("enable_x64")
def test_eig_derivatives():
    a = np.random.default_rng(4).standard_normal((4, 4))
    check_grads(jnp.linalg.eigvals, [a], order=1, atol=1e-5, rtol=1e-5)
    check_grads(lambda x: lax_linalg.eig(x, enable_eigvec_derivs=True)[1:], [a], order=1, modes=("fwd",),
                atol=1e-5, rtol=1e-5)
    check_vmap(lambda x: lax_linalg.eig(x), [np.random.default_rng(5).standard_normal((3, 4, 4))])


@pytest.mark.usefixtures("enable_x64")
def test_lax_linalg_compositions():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 5, 5))
    _, pivots, permutation = lax_linalg.lu(a)
    np.testing.assert_array_equal(lax_linalg.lu_pivots_to_permutation(pivots, 5), permutation)
    np.testing.assert_array_equal(lax_linalg.lu_pivots_to_permutation(np.array([2, 2, 2], np.int32), 4), [2, 0, 1, 3])
    tall, c = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    h, taus = lax_linalg.geqrf(tall)
    q = np.linalg.qr(tall, mode="complete")[0]
    np.testing.assert_allclose(lax_linalg.ormqr(h, taus, c, transpose=True), q.T @ c, atol=1e-12)
    np.testing.assert_allclose(lax_linalg.ormqr(h, taus, c.T, left=False), c.T @ q, atol=1e-12)
    r, w = np.linalg.cholesky(tall.T @ tall).T, rng.standard_normal(3)
    np.testing.assert_allclose(lax_linalg.cholesky_update(r, w), np.linalg.cholesky(r.T @ r + np.outer(w, w)).T,
                               atol=1e-12)
    np.testing.assert_allclose(lax_linalg.symmetric_product(tall, np.eye(5), alpha=2.0, beta=3.0),
                               2 * tall @ tall.T + 3 * np.eye(5), atol=1e-12)
    m = 6
    dl, d, du = rng.standard_normal((2, m)), rng.standard_normal((2, m)) + 4, rng.standard_normal((2, m))
    dl[:, 0], du[:, -1] = 0, 0
    b = rng.standard_normal((2, m, 3))
    dense = np.stack([np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1) for i in range(2)])
    for solve in (lax_linalg.tridiagonal_solve, jaxlite.jit(lax_linalg.tridiagonal_solve)):
        np.testing.assert_allclose(solve(dl, d, du, b), np.linalg.solve(dense, b), atol=1e-12)
    check_grads(lambda d, b: lax_linalg.tridiagonal_solve(dl, d, du, b), [d, b], order=2, atol=1e-5, rtol=1e-5)


def test_vecdot_conjugates_its_first_argument():
    x = np.array([[1 + 2j, 3j], [1j, 2]], np.complex64)
    np.testing.assert_allclose(jnp.linalg.vecdot(x, x[0]), np.vecdot(x, x[0]))
    np.testing.assert_allclose(jnp.vecdot(x, x, axis=0), np.vecdot(x, x, axis=0))


def test_outer_keeps_signed_zeros():
    np.testing.assert_array_equal(np.signbit(jnp.linalg.outer(np.array([0.0]), np.array([-1.0]))), [[True]])
    np.testing.assert_array_equal(jnp.outer(np.arange(2), np.arange(3)), np.outer(np.arange(2), np.arange(3)))
