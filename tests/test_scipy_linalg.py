"""jaxlite.scipy.linalg against scipy.linalg: factorizations, solves, expm and its Frechet
derivative, QR and Hessenberg, and the special matrices; jit native, grads, vmap."""
import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.scipy.linalg as L
from jaxlite.test_util import check_grads, check_vmap, enable_x64, fallback_steps


def _matrix(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _spd(rng, n, dtype=np.float32):
    a = rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(dtype)


def _close(got, want, tol=2e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


@settings(max_examples=4, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 2 ** 16), lower=st.booleans(), vector=st.booleans())
def test_cholesky_and_cho_solve(n, seed, lower, vector):
    rng = np.random.default_rng(seed)
    a = _spd(rng, n)
    b = _matrix(rng, (n,) if vector else (n, 2))
    _close(L.cholesky(a, lower=lower), sl.cholesky(a.astype(float), lower=lower))
    _close(L.cho_solve(L.cho_factor(a, lower=lower), b), sl.cho_solve(sl.cho_factor(a.astype(float), lower=lower), b))
    _close(L.solve(a, b, assume_a="pos"), np.linalg.solve(a.astype(float), b), 1e-4)


@settings(max_examples=4, deadline=None)
@given(m=st.integers(1, 6), n=st.integers(1, 6), seed=st.integers(0, 2 ** 16))
def test_lu(m, n, seed):
    a = _matrix(np.random.default_rng(seed), (m, n))
    for got, want in zip(L.lu(a), sl.lu(a.astype(float))):
        _close(got, want, 1e-4)
    pl, u = L.lu(a, permute_l=True)
    _close(np.asarray(pl) @ np.asarray(u), a, 1e-5)


@settings(max_examples=4, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 2 ** 16), trans=st.sampled_from([0, 1, 2]))
def test_lu_factor_and_solve(n, seed, trans):
    rng = np.random.default_rng(seed)
    a, b = _matrix(rng, (n, n)) + 3 * np.eye(n, dtype=np.float32), _matrix(rng, (n, 3))
    packed, pivots = L.lu_factor(a)
    want_packed, want_pivots = sl.lu_factor(a.astype(float))
    _close(packed, want_packed, 1e-4)
    np.testing.assert_array_equal(np.asarray(pivots), want_pivots)
    _close(L.lu_solve((packed, pivots), b, trans=trans), sl.lu_solve((want_packed, want_pivots), b, trans=trans), 1e-4)


@pytest.mark.parametrize("trans", [0, 1, "T"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular_solve_inv_det(trans, lower):
    rng = np.random.default_rng(2)
    a = np.triu(_matrix(rng, (4, 4))) + 4 * np.eye(4, dtype=np.float32)
    a = a.T.copy() if lower else a
    b = _matrix(rng, (4,))
    _close(L.solve_triangular(a, b, trans=trans, lower=lower), sl.solve_triangular(a, b, trans=trans, lower=lower))
    _close(L.solve_triangular(a, b, lower=lower, unit_diagonal=True),
           sl.solve_triangular(a, b, lower=lower, unit_diagonal=True))
    full = _matrix(rng, (4, 4)) + 4 * np.eye(4, dtype=np.float32)
    _close(L.solve(full, b), sl.solve(full, b))
    _close(L.inv(full), sl.inv(full))
    _close(L.det(full), sl.det(full), 1e-4)


@settings(max_examples=4, deadline=None)
@given(n=st.integers(1, 6), scale=st.sampled_from([0.1, 1.0, 20.0]), seed=st.integers(0, 2 ** 16))
def test_expm_and_frechet(n, scale, seed):
    rng = np.random.default_rng(seed)
    a, e = scale * _matrix(rng, (n, n)) / np.sqrt(n), _matrix(rng, (n, n))
    want = sl.expm(a.astype(float))
    np.testing.assert_allclose(np.asarray(L.expm(a)), want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    got_expm, got_frechet = L.expm_frechet(a, e)
    want_expm, want_frechet = sl.expm_frechet(a.astype(float), e.astype(float))
    np.testing.assert_allclose(np.asarray(got_frechet), want_frechet, rtol=1e-3, atol=1e-4 * np.abs(want_frechet).max())
    assert np.isnan(np.asarray(L.expm(1e6 * np.eye(2, dtype=np.float32), max_squarings=4))).all()


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_qr_hessenberg_polar_svd(shape):
    a = _matrix(np.random.default_rng(4), shape)
    for mode in ["full", "economic"]:
        for got, want in zip(L.qr(a, mode=mode), sl.qr(a.astype(float), mode=mode)):
            _close(got, want)
    _close(L.qr(a, mode="r")[0], sl.qr(a.astype(float), mode="r")[0])
    c = _matrix(np.random.default_rng(5), (2, shape[0]))
    _close(L.qr_multiply(a, c)[0], sl.qr_multiply(a.astype(float), c)[0])
    for side in ["right", "left"]:
        for got, want in zip(L.polar(a, side=side), sl.polar(a.astype(float), side=side)):
            _close(got, want, 1e-4)
    _close(L.svd(a, compute_uv=False), sl.svd(a, compute_uv=False))
    if shape[0] == shape[1]:
        h, q = L.hessenberg(a, calc_q=True)
        want_h, want_q = sl.hessenberg(a.astype(float), calc_q=True)
        _close(h, want_h)
        _close(q, want_q)


def test_solve_sylvester():
    rng = np.random.default_rng(6)
    a, b, c = _matrix(rng, (4, 4)), _matrix(rng, (3, 3)), _matrix(rng, (4, 3))
    _close(L.solve_sylvester(a, b, c), sl.solve_sylvester(a, b, c), 1e-4)


def test_special_matrices_as_scipy():
    c, r = np.array([1, 2, 3]), np.array([9, 8, 7, 6])
    for name, args in [("toeplitz", (c,)), ("toeplitz", (c, r)), ("hankel", (c,)), ("hankel", (c, r)),
                       ("circulant", (c,)), ("fiedler", (c,)), ("companion", (c,)),
                       ("fiedler_companion", (np.array([1.0, 2, 3, 4, 5]),)),
                       ("leslie", (np.array([1.0, 2, 3]), np.array([0.5, 0.25])))]:
        np.testing.assert_allclose(np.asarray(getattr(L, name)(*args)), getattr(sl, name)(*args), rtol=1e-6)
    for mode in ["full", "same", "valid"]:
        for n in [2, 5]:
            np.testing.assert_array_equal(np.asarray(L.convolution_matrix(c, n, mode)), sl.convolution_matrix(c, n, mode))
    for n in [1, 4]:
        for name in ["hilbert", "invhilbert", "pascal", "invpascal", "helmert"]:
            np.testing.assert_allclose(np.asarray(getattr(L, name)(n)), getattr(sl, name)(n), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(L.pascal(4, "lower")), sl.pascal(4, "lower"))
    np.testing.assert_array_equal(np.asarray(L.invpascal(4, "upper")), sl.invpascal(4, "upper"))
    np.testing.assert_array_equal(np.asarray(L.hadamard(8)), sl.hadamard(8))
    np.testing.assert_allclose(np.asarray(L.helmert(4, full=True)), sl.helmert(4, full=True), rtol=1e-6)
    blocks = [np.ones((1, 2)), 3, np.array([[4, 5]])]
    np.testing.assert_array_equal(np.asarray(L.block_diag(*blocks)), sl.block_diag(*blocks))
    assert L.toeplitz(np.ones((2, 3), np.float32)).shape == (2, 3, 3)
    assert L.hilbert(3).dtype == np.float32 and L.hadamard(4).dtype == np.int32


@pytest.mark.parametrize("name", ["expm", "qr", "cho_solve", "lu_solve", "toeplitz"])
def test_jit_is_native_and_agrees_with_eager(name):
    rng = np.random.default_rng(7)
    a, b = _spd(rng, 4), _matrix(rng, (4, 2))
    fun = {"expm": lambda a, b: L.expm(a / 4),
           "qr": lambda a, b: L.qr(a),
           "cho_solve": lambda a, b: L.cho_solve(L.cho_factor(a), b),
           "lu_solve": lambda a, b: L.lu_solve(L.lu_factor(a), b),
           "toeplitz": lambda a, b: L.toeplitz(a[0], b[:, 0])}[name]
    assert fallback_steps(fun, a, b) == []
    for got, want in zip(jaxlite.tree_util.tree_leaves(jaxlite.jit(fun)(a, b)), jaxlite.tree_util.tree_leaves(fun(a, b))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_gradients():
    rng = np.random.default_rng(8)
    with enable_x64():
        a, b = rng.standard_normal((3, 3)) / 2, rng.standard_normal((3, 2))
        check_grads(L.expm, [a], order=1, atol=1e-5, rtol=1e-5)
        check_grads(lambda a, b: L.solve_triangular(a, b, lower=True), [np.tril(a) + 3 * np.eye(3), b], order=1)
        check_grads(lambda a: L.qr(a)[1], [a], order=1, atol=1e-5, rtol=1e-5)
        check_grads(lambda a, b: L.cho_solve(L.cho_factor(a), b), [_spd(rng, 3, np.float64), b], order=1)


def test_vmap_agrees_with_a_loop():
    a = _matrix(np.random.default_rng(9), (3, 4, 4)) / 2
    check_vmap(L.expm, [a], atol=1e-5, rtol=1e-5)
    check_vmap(lambda a: L.qr(a)[1], [a], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 5, 12])
def test_eigh(n):
    rng = np.random.default_rng(n)
    a = _matrix(rng, (n, n))
    symmetric = np.tril(a) + np.tril(a, -1).T
    w, v = L.eigh(a)                      # reads the lower triangle, as scipy does
    want = sl.eigh(symmetric.astype(float), eigvals_only=True)
    np.testing.assert_allclose(np.asarray(w), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    w, v = np.asarray(w), np.asarray(v)
    np.testing.assert_allclose(symmetric @ v, v * w, atol=2e-5 * max(1, np.abs(w).max()))
    np.testing.assert_allclose(v.T @ v, np.eye(n), atol=2e-5)
    np.testing.assert_allclose(np.asarray(L.eigh(a, lower=False, eigvals_only=True)),
                               sl.eigh(np.triu(a) + np.triu(a, 1).T, eigvals_only=True), rtol=1e-5, atol=1e-5)
    d, e = _matrix(rng, (n,)), _matrix(rng, (n - 1,))
    np.testing.assert_allclose(np.asarray(L.eigh_tridiagonal(d, e, eigvals_only=True)),
                               sl.eigh_tridiagonal(d, e, eigvals_only=True), rtol=1e-5, atol=1e-5)
    if n > 2:
        np.testing.assert_allclose(np.asarray(L.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2))),
                                   sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)),
                                   rtol=1e-5, atol=1e-5)


def test_eigh_is_native_batches_and_differentiates():
    rng = np.random.default_rng(10)
    a = _matrix(rng, (3, 6, 6))
    a = a + np.swapaxes(a, -1, -2)
    assert fallback_steps(lambda a: L.eigh(a), a) == []
    np.testing.assert_allclose(np.asarray(jaxlite.jit(L.eigh)(a)[0]), np.linalg.eigvalsh(a), rtol=1e-5, atol=1e-5)
    with enable_x64():
        m = rng.standard_normal((4, 4))
        check_grads(lambda m: L.eigh(m, eigvals_only=True), [m + m.T], order=1, atol=1e-5, rtol=1e-5)
        check_grads(lambda m: jaxlite.numpy.abs(L.eigh(m)[1]), [m + m.T], order=1, atol=1e-5, rtol=1e-5)
