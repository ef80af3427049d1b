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
from jaxlite.test_util import check_vmap, enable_x64


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
    import scipy.fft
    c = _complex(np.random.default_rng(0), (3, 5))
    for name in ["dct", "idct", "dctn", "idctn"]:
        got = getattr(jaxlite.scipy.fft, name)(c, norm="ortho")
        assert got.dtype == np.complex64
        _close(got, getattr(scipy.fft, name)(c.astype(complex), norm="ortho"), 1e-5)
    with enable_x64():
        assert jaxlite.scipy.fft.dct(np.arange(4)).dtype == np.float64


def test_vmap_of_the_schur_family_agrees_with_a_loop():
    stack = np.random.default_rng(9).standard_normal((2, 4, 4)).astype(np.float32)
    check_vmap(lambda a: L.schur(a)[0], [stack], atol=1e-5, rtol=1e-5)
    check_vmap(L.sqrtm, [stack], atol=1e-5, rtol=1e-5)


def _assert_schur(a, t, z, quasi):
    a, t, z = (np.asarray(x) for x in (a, t, z))
    n = a.shape[-1]
    tol = 1e-5 if a.dtype in (np.float32, np.complex64) else 1e-12
    scale = max(1.0, float(np.abs(a).max()))
    np.testing.assert_allclose(z @ t @ z.conj().T, a, atol=tol * scale * n)
    np.testing.assert_allclose(z.conj().T @ z, np.eye(n), atol=tol * n)
    assert np.all(np.tril(t, -2 if quasi else -1) == 0)
    if quasi:   # no two blocks overlap; each 2 x 2 block is standard (equal diagonal, b c < 0)
        sub = np.diagonal(t, -1)
        assert not np.any((sub[1:] != 0) & (sub[:-1] != 0))
        for k in np.flatnonzero(sub):
            assert t[k, k] == t[k + 1, k + 1] and t[k, k + 1] * t[k + 1, k] < 0
    distances = np.abs(np.linalg.eigvals(t)[:, None] - np.linalg.eigvals(a)[None, :])
    assert distances.min(0).max() < 1e-3 * scale and distances.min(1).max() < 1e-3 * scale


MATRICES = {
    "random": lambda rng, n: rng.standard_normal((n, n)),
    "jordan": lambda rng, n: np.eye(n) + np.eye(n, k=1),
    "ones": lambda rng, n: np.ones((n, n)),
    "permutation": lambda rng, n: np.roll(np.eye(n), 1, 0),
    "integers": lambda rng, n: np.arange(n * n, dtype=float).reshape(n, n),
    "scaled": lambda rng, n: 1e4 * rng.standard_normal((n, n)),
}


@pytest.mark.parametrize("kind", sorted(MATRICES))
@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur_is_a_unitary_similarity_to_triangular(kind, output):
    rng = np.random.default_rng(len(kind))
    a = MATRICES[kind](rng, 4).astype(np.float32)
    t, z = L.schur(a, output)
    assert t.dtype == z.dtype == (np.float32 if output == "real" else np.complex64)
    _assert_schur(a, t, z, quasi=output == "real")


@settings(max_examples=2, deadline=None)
@given(n=st.sampled_from([1, 4]), seed=st.integers(0, 2 ** 16))
def test_schur_of_complex_and_x64_matrices(n, seed):
    rng = np.random.default_rng(seed)
    c = _complex(rng, (n, n))
    _assert_schur(c, *L.schur(c), quasi=False)
    with enable_x64():
        a = rng.standard_normal((n, n))
        t, z = L.schur(a)
        assert t.dtype == np.float64
        _assert_schur(a, t, z, quasi=True)


def test_schur_batches_jits_and_raises_as_jax():
    rng = np.random.default_rng(3)
    stack = rng.standard_normal((2, 4, 4)).astype(np.float32)
    t, z = L.schur(stack)
    for k in range(2):
        _assert_schur(stack[k], t[k], z[k], quasi=True)
        np.testing.assert_allclose(np.asarray(L.schur(stack[k])[0]), np.asarray(t[k]), atol=1e-5)
    jt, jz = jaxlite.jit(L.schur, static_argnums=1)(stack[0], "complex")
    et, ez = L.schur(stack[0], "complex")
    np.testing.assert_allclose(np.asarray(jt), np.asarray(et), atol=1e-5)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'schur' not implemented"):
        jaxlite.grad(lambda a: L.schur(a)[0].sum())(stack[0])
    with pytest.raises(ValueError, match="must be a square matrix"):
        L.schur(np.ones((2, 3)))
    with pytest.raises(ValueError, match="either 'real' or 'complex'"):
        L.schur(np.ones((2, 2)), output="foo")
    with pytest.raises(TypeError, match="does not accept dtype int32"):
        L.schur(np.ones((2, 2), np.int32))


def test_rsf2csf_as_scipy_with_gradients():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 4))
    t_real, z_real = sl.schur(a)
    t, z = L.rsf2csf(t_real.astype(np.float32), z_real.astype(np.float32))
    want_t, want_z = sl.rsf2csf(t_real, z_real)
    assert t.dtype == np.complex64
    _close(t, want_t, 1e-5)
    _close(z, want_z, 1e-5)
    t, z = L.rsf2csf(*L.schur(a.astype(np.float32)))
    _assert_schur(a.astype(np.float32), t, z, quasi=False)
    with enable_x64():
        # perturbations keep the quasi-triangular structure (a new block is a jump, not a slope)
        structure = (np.triu(np.ones((4, 4))) + np.diag(np.diagonal(t_real, -1) != 0, -1)).astype(bool)
        def parts(t):
            t, z = L.rsf2csf(jaxlite.numpy.where(structure, t, 0), z_real)
            return t.real + 2 * t.imag, z.real - z.imag
        check_grads(parts, [t_real], order=1)
    with pytest.raises(ValueError, match="Input array shapes must match"):
        L.rsf2csf(np.eye(2), np.eye(3))


@pytest.mark.parametrize("kind", ["random", "jordan", "integers"])
def test_sqrtm_and_funm_as_scipy(kind):
    rng = np.random.default_rng(7)
    a = MATRICES[kind](rng, 4) + (4 * np.eye(4) if kind == "integers" else 0)
    want = sl.sqrtm(a.astype(complex))
    root = L.sqrtm(a.astype(np.float32))
    assert root.dtype == np.complex64
    _close(root, want, 1e-4)
    f, err = L.funm(a.astype(np.float32), jaxlite.numpy.exp, disp=False)
    if kind != "random":   # repeated eigenvalues: Parlett's recurrence fails, and says so (as JAX's)
        assert float(err) == 1
    else:
        _close(f, sl.expm(a.astype(complex)), 1e-4)
        assert err.dtype == np.float32 and float(err) < 1e-3
        np.testing.assert_allclose(np.asarray(L.funm(a, jaxlite.numpy.sin)), sl.funm(a, np.sin), atol=1e-4 * np.abs(a).max())
    assert np.all(np.asarray(L.sqrtm(np.zeros((3, 3)))) == 0)
    with pytest.raises(NotImplementedError, match="Blocked version"):
        L.sqrtm(a, blocksize=2)
    with pytest.raises(ValueError, match="expected square array_like input"):
        L.funm(np.ones((2, 3)), jaxlite.numpy.exp)


def test_sqrtm_under_jit_and_x64():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(L.sqrtm)(a)), np.asarray(L.sqrtm(a)), atol=1e-5)
    with enable_x64():
        c = _complex(rng, (4, 4), np.complex128)
        root = L.sqrtm(c)
        assert root.dtype == np.complex128
        np.testing.assert_allclose(np.asarray(root) @ np.asarray(root), c, atol=1e-12)


# ---------------------------------------------------------------- signal: the windowed FFTs

import scipy.signal as ss   # noqa: E402 (the signal half of the file)

from jaxlite.scipy import signal   # noqa: E402
from jaxlite.test_util import check_grads, fallback_steps   # noqa: E402


@st.composite
def spectral_problems(draw):
    nperseg = draw(st.integers(2, 12))
    length = draw(st.integers(nperseg, 40))
    return {
        "shape": draw(st.sampled_from([(length,), (2, length), (length, 3)])),
        "nperseg": nperseg,
        "noverlap": draw(st.one_of(st.none(), st.integers(0, nperseg - 1))),
        "nfft_extra": draw(st.sampled_from([None, 0, 3])),
        "window": draw(st.sampled_from(["hann", "boxcar", ("tukey", 0.25), "array"])),
        "onesided": draw(st.booleans()),
        "complex": draw(st.booleans()),
        "seed": draw(st.integers(0, 2 ** 16)),
    }


def _spectral_arguments(problem):
    rng = np.random.default_rng(problem["seed"])
    shape = problem["shape"]
    x = (_complex(rng, shape) if problem["complex"] else rng.standard_normal(shape).astype(np.float32))
    nperseg = problem["nperseg"]
    window = rng.uniform(0.5, 1, nperseg) if problem["window"] == "array" else problem["window"]
    nfft = None if problem["nfft_extra"] is None else nperseg + problem["nfft_extra"]
    kwargs = dict(window=window, nperseg=nperseg, noverlap=problem["noverlap"], nfft=nfft,
                  return_onesided=problem["onesided"], axis=0 if len(shape) == 2 and shape[1] == 3 else -1)
    return x, kwargs


def _close_all(got, want, tol=2e-5):
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(w), initial=0))))


@pytest.mark.filterwarnings("ignore:Input data is complex")
@settings(max_examples=12, deadline=None)
@given(problem=spectral_problems(), boundary=st.sampled_from(["zeros", "even", "odd", "constant", None]),
       padded=st.booleans(), detrend=st.sampled_from([False, "constant", "linear"]))
def test_stft_as_scipy(problem, boundary, padded, detrend):
    x, kwargs = _spectral_arguments(problem)
    got = signal.stft(x, fs=2.0, boundary=boundary, padded=padded, detrend=detrend, **kwargs)
    want = ss.stft(x, fs=2.0, boundary=boundary, padded=padded, detrend=detrend, **kwargs)
    assert got[2].dtype == np.complex64 and got[0].dtype == np.float32
    _close_all(got, want)


@pytest.mark.filterwarnings("ignore:Input data is complex")
@settings(max_examples=12, deadline=None)
@given(problem=spectral_problems(), scaling=st.sampled_from(["density", "spectrum"]),
       average=st.sampled_from(["mean", "median"]), cross=st.booleans())
def test_welch_and_csd_as_scipy(problem, scaling, average, cross):
    x, kwargs = _spectral_arguments(problem)
    if cross:
        y = np.roll(x, 1) * 0.5 + 1
        got, want = signal.csd(x, y, fs=3.0, scaling=scaling, average=average, **kwargs), \
            ss.csd(x, y, fs=3.0, scaling=scaling, average=average, **kwargs)
        assert got[1].dtype == np.complex64
    else:
        got, want = signal.welch(x, fs=3.0, scaling=scaling, average=average, **kwargs), \
            ss.welch(x, fs=3.0, scaling=scaling, average=average, **kwargs)
        assert got[1].dtype == np.float32
    _close_all(got, want, 5e-5)


@pytest.mark.parametrize("onesided", [True, False])
@pytest.mark.parametrize("nperseg,noverlap", [(16, None), (15, 10)])
def test_istft_inverts_stft_as_scipy(onesided, nperseg, noverlap):
    rng = np.random.default_rng(nperseg)
    x = rng.standard_normal((2, 60)) if onesided else _complex(rng, (2, 60), np.complex128)
    _, _, zxx = ss.stft(x, nperseg=nperseg, noverlap=noverlap, return_onesided=onesided)
    got = signal.istft(zxx.astype(np.complex64), nperseg=nperseg, noverlap=noverlap, input_onesided=onesided)
    _close_all(got, ss.istft(zxx, nperseg=nperseg, noverlap=noverlap, input_onesided=onesided), 1e-5)
    np.testing.assert_allclose(np.asarray(got[1])[:, :60], x, atol=1e-5)
    moved = np.moveaxis(zxx, -1, 0)
    _close_all(signal.istft(moved.astype(np.complex64), nperseg=nperseg, noverlap=noverlap,
                            input_onesided=onesided, time_axis=0, freq_axis=-1),
               ss.istft(moved, nperseg=nperseg, noverlap=noverlap, input_onesided=onesided,
                        time_axis=0, freq_axis=-1), 1e-5)


def test_spectral_functions_jit_vmap_grad_and_errors():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    welch = lambda x, fs: signal.welch(x, fs=fs, nperseg=16)[1]
    assert fallback_steps(welch, x, 2.0) == []
    assert fallback_steps(lambda x: signal.csd(x, x + 1, nperseg=16, average="median")[1], x) == []
    np.testing.assert_allclose(np.asarray(jaxlite.jit(welch)(x, 2.0)), np.asarray(welch(x, 2.0)), rtol=1e-5, atol=1e-7)
    stft = lambda x: signal.stft(x, nperseg=16)[2]
    np.testing.assert_allclose(np.asarray(jaxlite.jit(stft)(x)), np.asarray(stft(x)), rtol=1e-5, atol=1e-6)
    assert fallback_steps(stft, x) == [] and fallback_steps(lambda z: signal.istft(z, nperseg=16)[1], stft(x)) == []
    check_vmap(lambda x: signal.csd(x, x[::-1], nperseg=16)[1], [x], atol=1e-5, rtol=1e-5)
    check_vmap(lambda z: signal.istft(z, nperseg=16)[1], [np.asarray(stft(x))], atol=1e-5, rtol=1e-5)
    with enable_x64():
        check_grads(lambda x: signal.welch(x, nperseg=8, average="median")[1], [x[0, :24].astype(np.float64)], order=2)
        check_grads(lambda x: signal.stft(x, nperseg=8)[2], [x[0, :20].astype(np.float64)], order=1)
        check_grads(lambda z: signal.istft(z, nperseg=8)[1], [np.asarray(signal.stft(x[0, :20].astype(np.float64), nperseg=8)[2])],
                    order=1)
    for call, error, message in [
            (lambda: signal.welch(x, nperseg=8, noverlap=8), ValueError, "noverlap must be less than nperseg"),
            (lambda: signal.welch(x, nperseg=8, nfft=4), ValueError, "nfft must be greater than or equal to nperseg"),
            (lambda: signal.welch(x, scaling="bad"), ValueError, "Unknown scaling: bad"),
            (lambda: signal.welch(x, nperseg=8, average="mode"), ValueError, 'average must be "median" or "mean"'),
            (lambda: signal.stft(x, boundary="wrap"), ValueError, "Unknown boundary option 'wrap'"),
            (lambda: signal.stft(x, window=np.ones((2, 2))), ValueError, "window must be 1-D"),
            (lambda: signal.csd(x, x[0]), ValueError, "two-arguments must have the same rank"),
            (lambda: signal.istft(np.ones(4)), ValueError, "at least 2d"),
            (lambda: signal.istft(np.ones((4, 4)), time_axis=0, freq_axis=0), ValueError, "differing time and frequency"),
    ]:
        with pytest.raises(error, match=message):
            call()
    with pytest.warns(UserWarning, match="nperseg = 256 is greater than input length"):
        assert signal.welch(x)[1].shape == (3, 33)


# ---------------------------------------------------------------- special: wofz and sph_harm_y

import scipy.special as sp   # noqa: E402

from jaxlite.scipy import special   # noqa: E402


def _relative_error(got, want):
    got, want = np.asarray(got), np.asarray(want)
    representable = np.abs(want) < np.finfo(np.real(got).dtype).max / 4
    return np.max(np.abs(got - want)[representable] / np.abs(want)[representable])


def _mpmath_wofz(z):
    import mpmath
    with mpmath.workdps(40):
        return np.array([complex(mpmath.exp(-mpmath.mpc(v) ** 2) * mpmath.erfc(-1j * mpmath.mpc(v))) for v in z])


@settings(max_examples=4, deadline=None)
@given(scale=st.sampled_from([0.01, 1.0, 6.0, 50.0]), seed=st.integers(0, 2 ** 16))
def test_wofz_as_scipy_in_both_precisions(scale, seed):
    rng = np.random.default_rng(seed)
    z = scale * (rng.standard_normal(400) + 1j * rng.standard_normal(400))
    z64 = z.astype(np.complex64)
    got = special.wofz(z64)
    assert got.dtype == np.complex64
    # the lower half plane's reflection 2 exp(-z^2) - w(-z) cancels a little near the real axis
    assert _relative_error(got, sp.wofz(z64.astype(complex))) < 5e-6
    assert _relative_error(jaxlite.jit(special.wofz)(z64), sp.wofz(z64.astype(complex))) < 5e-6
    upper = z64.imag >= 0
    assert _relative_error(np.asarray(got)[upper], sp.wofz(z64[upper].astype(complex))) < 1e-6
    with enable_x64():
        got = np.asarray(special.wofz(z))
        assert got.dtype == np.complex128
        assert _relative_error(got[z.imag >= 0], sp.wofz(z[z.imag >= 0])) < 1e-13
        # below, scipy rounds the phase 2xy once (1e-13 at |z| = 50): compare with 40 digits
        lower = z[z.imag < 0][:40]
        assert _relative_error(got[z.imag < 0][:40], _mpmath_wofz(lower)) < 5e-15


def test_wofz_special_values_dtypes_grads_and_vmap():
    assert special.wofz(1.0).dtype == np.complex64 and special.wofz(np.arange(3)).dtype == np.complex64
    np.testing.assert_allclose(np.asarray(special.wofz(np.array([0, 100j, -100j, 1e20]))),
                               sp.wofz(np.array([0, 100j, -100j, 1e20])), rtol=1e-6)
    z = np.array([0.3 + 0.2j, -1.5 + 2j, 2 - 0.5j, 0.1 - 3j])
    with enable_x64():
        check_grads(special.wofz, [z], order=2)
        # holomorphic: w'(z) = 2i / sqrt(pi) - 2 z w(z)
        derivative = jaxlite.vmap(jaxlite.grad(special.wofz, holomorphic=True))(z)
        np.testing.assert_allclose(np.asarray(derivative), 2j / np.sqrt(np.pi) - 2 * z * sp.wofz(z), rtol=1e-12)
    check_vmap(special.wofz, [z.astype(np.complex64)], atol=1e-6, rtol=1e-6)
    assert fallback_steps(special.wofz, z.astype(np.complex64)) == []


@settings(max_examples=6, deadline=None)
@given(n_max=st.integers(0, 9), seed=st.integers(0, 2 ** 16))
def test_sph_harm_y_as_scipy(n_max, seed):
    rng = np.random.default_rng(seed)
    n = rng.integers(0, n_max + 1, 50)
    m = rng.integers(-n_max - 1, n_max + 2, 50)
    theta, phi = rng.uniform(-1, 4, 50), rng.uniform(-4, 4, 50)
    got = special.sph_harm_y(n, m, theta.astype(np.float32), phi.astype(np.float32))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), sp.sph_harm_y(n, m, theta.astype(np.float32), phi.astype(np.float32)),
                               atol=2e-6 * (n_max + 1))
    with enable_x64():
        got = special.sph_harm_y(n, m, theta, phi, n_max=n_max + 1)
        assert got.dtype == np.complex128
        np.testing.assert_allclose(np.asarray(got), sp.sph_harm_y(n, m, theta, phi), atol=1e-13)


def test_sph_harm_y_jit_vmap_grads_and_errors():
    n, m = np.array([0, 1, 2, 3, 4]), np.array([0, -1, 2, 1, -3])
    theta, phi = np.linspace(0.2, 2.8, 5, dtype=np.float32), np.linspace(-3, 3, 5, dtype=np.float32)
    fixed = lambda t, p: special.sph_harm_y(n, m, t, p, n_max=4)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(fixed)(theta, phi)), np.asarray(fixed(theta, phi)), atol=1e-6)
    assert fallback_steps(fixed, theta, phi) == []
    check_vmap(lambda t: special.sph_harm_y(2, 1, t, 0.4), [theta], atol=1e-6)
    with enable_x64():
        check_grads(lambda t, p: special.sph_harm_y(n, m, t, p), [theta.astype(float), phi.astype(float)], order=2)
    with pytest.raises(jaxlite.errors.ConcretizationTypeError, match="n_max"):
        jaxlite.jit(special.sph_harm_y)(n, m, theta, phi)
    with pytest.raises(NotImplementedError, match="diff_n"):
        special.sph_harm_y(n, m, theta, phi, diff_n=1)
