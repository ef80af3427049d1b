"""lax.fft and jnp.fft against numpy.fft: values (eager and jit), dtypes, errors as JAX raises
them, derivatives (numerically, both modes), the transposes, and vmap against a loop."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.lax.fft import fft_p
from jaxlite.test_util import check_grads, check_vmap, enable_x64
from jaxlite.transforms.ad import UndefinedPrimal, tangent_aval, transpose_rules

SIZES = [1, 2, 3, 4, 5, 6, 8, 12, 17]
NORMS = [None, "backward", "ortho", "forward"]
ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
MANY_AXES = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]
REAL_INPUT = {"rfft", "ihfft", "rfftn", "rfft2"}


def _signal(rng, shape, name):
    x = rng.standard_normal(shape).astype(np.float32)
    if name in REAL_INPUT:
        return x
    return (x + 1j * rng.standard_normal(shape)).astype(np.complex64)


def _assert_close(got, want, rtol=2e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, atol=rtol * scale * 8, rtol=rtol)


@st.composite
def problems(draw):
    shape = tuple(draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=3)))
    name = draw(st.sampled_from(ONE_AXIS + MANY_AXES))
    norm = draw(st.sampled_from(NORMS))
    ndim = len(shape)
    if name in ONE_AXIS:
        axis = draw(st.integers(-ndim, ndim - 1))
        n = draw(st.one_of(st.none(), st.sampled_from(SIZES)))
        return name, shape, dict(n=n, axis=axis, norm=norm)
    count = 2 if name.endswith("2") else draw(st.integers(1, ndim))
    if count > ndim:
        shape = shape + (3,) * (count - ndim)
        ndim = count
    axes = tuple(draw(st.permutations(range(-ndim, 0)))[:count])
    s = draw(st.one_of(st.none(), st.lists(st.sampled_from(SIZES), min_size=count, max_size=count).map(tuple)))
    return name, shape, dict(s=s, axes=axes, norm=norm)


def _with_numpy_lengths(name, shape, kwargs):
    """The problem, with a length given where the default 2 (m - 1) of a length-1 axis is 0
    (numpy refuses it)."""
    if name in ("irfft", "hfft") and kwargs["n"] is None and shape[kwargs["axis"]] == 1:
        kwargs["n"] = 2
    if name.startswith("irfft") and name != "irfft" and kwargs["s"] is None:
        if shape[kwargs["axes"][-1]] == 1:
            kwargs["s"] = tuple(2 if i == len(kwargs["axes"]) - 1 else shape[a] for i, a in enumerate(kwargs["axes"]))
    return name, shape, kwargs


@settings(deadline=None, max_examples=60)
@given(problems(), st.integers(0, 2 ** 16))
def test_jnp_fft_matches_numpy(problem, seed):
    name, shape, kwargs = _with_numpy_lengths(*problem)
    x = _signal(np.random.default_rng(seed), shape, name)
    got = getattr(jnp.fft, name)(x, **kwargs)
    want = getattr(np.fft, name)(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), **kwargs)
    assert got.dtype == (np.float32 if want.dtype == np.float64 else np.complex64)
    _assert_close(got, want)


@settings(deadline=None, max_examples=12)
@given(problems(), st.integers(0, 2 ** 16))
def test_jit_fft_matches_numpy(problem, seed):
    """Under jit each axis is a native routine (strided axes a group of lines as SIMD lanes):
    any shape, axes, lengths and norm agree with numpy's transform."""
    name, shape, kwargs = _with_numpy_lengths(*problem)
    x = _signal(np.random.default_rng(seed), shape, name)
    got = jaxlite.jit(lambda v: getattr(jnp.fft, name)(v, **kwargs))(x)
    want = getattr(np.fft, name)(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), **kwargs)
    _assert_close(got, want)


JIT_CASES = {
    "fft 1-D, mixed radix": (lambda x: jnp.fft.fft(x), (3, 60), False),
    "ifft, Bluestein": (lambda x: jnp.fft.ifft(x, norm="ortho"), (2, 37), False),
    "fftn over 3 axes, middle axes strided": (lambda x: jnp.fft.fftn(x, axes=(0, 2, 1)), (4, 6, 5), False),
    "rfft even": (lambda x: jnp.fft.rfft(x, axis=0), (16, 3), True),
    "irfftn odd last length": (lambda x: jnp.fft.irfftn(x, s=(4, 9)), (2, 4, 5), False),
    "rfft2 then irfft2 (a filter)": (lambda x: jnp.fft.irfft2(jnp.fft.rfft2(x) * 0.5, s=x.shape[-2:]), (3, 8, 6), True),
    "hfft": (lambda x: jnp.fft.hfft(x, 10), (2, 6), False),
}


@pytest.mark.parametrize("case", sorted(JIT_CASES))
def test_jit_matches_eager(case):
    fun, shape, real = JIT_CASES[case]
    x = _signal(np.random.default_rng(0), shape, "rfft" if real else "fft")
    _assert_close(jaxlite.jit(fun)(x), fun(x))


def test_lax_fft_dtypes_and_types():
    x = np.arange(8, dtype=np.float32)
    assert lax.fft(x, lax.FftType.FFT, (8,)).dtype == np.complex64
    assert lax.fft(x, "rfft", (8,)).dtype == np.complex64
    assert lax.fft(np.arange(8), "IFFT", (8,)).dtype == np.complex64
    assert lax.fft(np.ones(5, np.complex64), "irfft", (8,)).dtype == np.float32
    assert lax.fft(x, "fft", ()).dtype == np.complex64         # (no axes: converted only)
    with enable_x64():
        assert lax.fft(x.astype(np.float64), "rfft", (8,)).dtype == np.complex128
        _assert_close(lax.fft(x.astype(np.float64), "fft", (8,)), np.fft.fft(x.astype(np.float64)), rtol=1e-12)
    assert isinstance(lax.FftType.IRFFT, int) and lax.FftType.IRFFT == 3


def test_fft_params_print_as_jax():
    """JAX prints FftType by str(), its integer: fft_type=0 and fft_type=3 as make_jaxpr shows them."""
    assert "fft[fft_lengths=(8,) fft_type=0]" in str(jaxlite.make_jaxpr(jnp.fft.fft)(np.ones(8, np.complex64)))
    irfft2 = str(jaxlite.make_jaxpr(jnp.fft.irfft2)(np.ones((4, 8), np.complex64)))
    assert "f32[4,14] = fft[fft_lengths=(4, 14) fft_type=3]" in irfft2


ERRORS = [
    (lambda: lax.fft(np.ones(4), "foo", (4,)), ValueError, "Unknown FFT type 'foo'"),
    (lambda: lax.fft(np.ones(4), 3.0, (4,)), TypeError, "Unknown FFT type value"),
    (lambda: lax.fft(np.ones(4, np.complex64), "rfft", (4,)), ValueError, "only real valued inputs"),
    (lambda: lax.fft(np.ones(4), "fft", (5,)), ValueError, "minor dimensions must be equal to fft_lengths"),
    (lambda: lax.fft(np.ones(4), "irfft", (4,)), ValueError, "must end in (3,)"),
    (lambda: lax.fft(np.ones(4), "fft", (1, 2, 3, 4)), ValueError, "1 to 3 axes"),
    (lambda: jnp.fft.fft(np.ones(4), norm="bad"), ValueError, 'Invalid norm value bad; should be "backward"'),
    (lambda: jnp.fft.fftn(np.ones((3, 4)), axes=(0, 0)), ValueError, "does not support repeated axes"),
    (lambda: jnp.fft.fftn(np.ones((3, 4)), s=(2, 3), axes=(0,)), ValueError, "Shape and axes have different lengths"),
    (lambda: jnp.fft.fft(np.ones((3, 4)), axis=2), ValueError, "axis 2 is out of bounds for array of dimension 2"),
    (lambda: jnp.fft.fft(np.ones(4), n=0), ValueError, "Shape should be positive"),
    (lambda: jnp.fft.fft(np.ones(4), n=2.0), TypeError, "cannot be interpreted as an integer"),
    (lambda: jnp.fft.fft(np.ones((3, 4)), axis=(0, 1)), ValueError, "Please use jax.numpy.fft.fftn"),
    (lambda: jnp.fft.fft2(np.ones((3, 4, 5)), axes=(0, 1, 2)), ValueError, "only supports 2 axes"),
    (lambda: jnp.fft.fft([1.0, 2.0]), TypeError, "requires ndarray or scalar arguments"),
    (lambda: jnp.fft.fftfreq(4, d=[1.0, 2.0]), ValueError, "only takes a single value"),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_as_jax(index):
    fun, error, message = ERRORS[index]
    with pytest.raises(error, match=None) as info:
        fun()
    assert message in str(info.value)


def test_more_than_three_axes_and_empty_axes():
    x = _signal(np.random.default_rng(1), (2, 3, 2, 4, 3), "fft")
    _assert_close(jnp.fft.fftn(x), np.fft.fftn(x.astype(np.complex128)))
    _assert_close(jnp.fft.ifftn(x, axes=(4, 0, 2, 1)), np.fft.ifftn(x.astype(np.complex128), axes=(4, 0, 2, 1)))
    r = x.real.astype(np.float32)
    _assert_close(jnp.fft.rfftn(r), np.fft.rfftn(r.astype(np.float64)))
    _assert_close(jnp.fft.irfftn(x), np.fft.irfftn(x.astype(np.complex128)))
    assert jnp.fft.rfftn(r, axes=()).dtype == np.float32      # JAX returns the operand
    assert jnp.fft.fftn(np.float32(2.0)).dtype == np.complex64
    assert jnp.fft.irfft(np.ones(1, np.complex64)).shape == (0,)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_frequencies_and_shifts(n):
    _assert_close(jnp.fft.fftfreq(n, 0.1), np.fft.fftfreq(n, 0.1))
    _assert_close(jnp.fft.rfftfreq(n, 0.5), np.fft.rfftfreq(n, 0.5))
    assert jnp.fft.fftfreq(n).dtype == np.float32
    x = np.arange(n * 3).reshape(n, 3)
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    assert jaxlite.jit(lambda d: jnp.fft.fftfreq(n, d))(0.25).shape == (n,)


# ---------------------------------------------------------------- derivatives and transposes

def _power(x):
    spectrum = jnp.fft.rfft(x * x)
    return jnp.real(spectrum * jnp.conj(spectrum))


GRAD_CASES = {
    "rfft power spectrum": (_power, [(7,)]),
    "irfft of a real spectrum": (lambda x: jnp.fft.irfft(x * 1.5 + 0.0j, 8), [(2, 5)]),
    "fft of a complex signal": (lambda x, y: jnp.imag(jnp.fft.fft(lax.complex(x, y) * x) ** 2), [(6,), (6,)]),
    "ifftn then real": (lambda x, y: jnp.real(jnp.fft.ifftn(lax.complex(jnp.sin(x), y))), [(3, 4), (3, 4)]),
    "rfft2 filter": (lambda x: jnp.fft.irfft2(jnp.fft.rfft2(x) ** 2, s=(4, 5)), [(4, 5)]),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_numerically(case):
    fun, shapes = GRAD_CASES[case]
    rng = np.random.default_rng(2)
    with enable_x64():
        args = [jnp.asarray(rng.standard_normal(s)) for s in shapes]
        check_grads(fun, args, order=2, atol=1e-6, rtol=1e-6)


def _pairing(ct, y):
    """JAX's cotangent pairing: Re(sum(ct * y)), no conjugate."""
    return float(np.real(np.sum(np.asarray(ct) * np.asarray(y))))


@pytest.mark.parametrize("fft_type,lengths,shape", [
    ("FFT", (6,), (2, 6)), ("IFFT", (3, 4), (3, 4)), ("RFFT", (7,), (2, 7)), ("RFFT", (4, 6), (4, 6)),
    ("IRFFT", (8,), (2, 5)), ("IRFFT", (3, 5), (3, 3)), ("IRFFT", (2, 3, 4), (2, 3, 3))])
def test_transpose_rules(fft_type, lengths, shape):
    fft_type = lax.FftType[fft_type]
    rng = np.random.default_rng(3)
    with enable_x64():
        dtype = np.float64 if fft_type is lax.FftType.RFFT else np.complex128
        x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype == np.complex128 else 0)
        y = fft_p.bind(jnp.asarray(x.astype(dtype)), fft_type=fft_type, fft_lengths=lengths)
        ct = rng.standard_normal(y.shape) + (1j * rng.standard_normal(y.shape) if y.dtype == np.complex128 else 0)
        ct = jnp.asarray(ct.astype(y.dtype))
        undefined = UndefinedPrimal(tangent_aval(jnp.asarray(x.astype(dtype)).aval))
        x_ct, = transpose_rules[fft_p](ct, undefined, fft_type=fft_type, fft_lengths=lengths)
        assert x_ct.dtype == dtype
        np.testing.assert_allclose(_pairing(x_ct, x.astype(dtype)), _pairing(ct, y), rtol=1e-10)


def test_jit_of_grad_and_vmap_against_a_loop():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 16)).astype(np.float32)
    loss = lambda v: jnp.sum(_power(v))
    _assert_close(jaxlite.jit(jaxlite.grad(loss))(x[0]), jaxlite.grad(loss)(x[0]), rtol=1e-4)
    check_vmap(jnp.fft.fft, [_signal(rng, (4, 5, 3), "fft")], in_axes=1, atol=1e-5, rtol=1e-5)
    check_vmap(lambda v: jnp.fft.irfft(jnp.fft.rfft(v, axis=0), 5, axis=0), [x[:, :5]], in_axes=0,
               atol=1e-5, rtol=1e-5)
    check_vmap(jaxlite.jit(lambda v: jnp.fft.fft2(v)), [_signal(rng, (3, 4, 6), "fft")], in_axes=2,
               atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- the spectral example (jaxlite/examples/spectral.py)

def test_spectral_poisson_solver():
    from jaxlite.examples import spectral
    x = np.linspace(0, 2 * np.pi, 64, endpoint=False).astype(np.float32)
    _assert_close(spectral.solve_poisson(-np.sin(3 * x) + 0.5, 2 * np.pi), np.sin(3 * x) / 9, rtol=1e-5)


def test_spectral_filter_gradient_is_jax_conjugate_covector_and_fit_converges():
    from jaxlite.examples import spectral
    signal, target, true_response = spectral.demo_problem(n=16, batch=4)
    response = (np.random.default_rng(5).standard_normal(9) * (1 + 1j)).astype(np.complex64)
    grad = np.asarray(jaxlite.grad(spectral.filter_loss)(response, signal, target))
    eps, k = 1e-2, 3
    step = np.zeros(9, np.complex64)
    step[k] = eps

    def loss_at(r):
        return float(spectral.filter_loss(r, signal, target))
    d_re = (loss_at(response + step) - loss_at(response - step)) / (2 * eps)
    d_im = (loss_at(response + 1j * step) - loss_at(response - 1j * step)) / (2 * eps)
    np.testing.assert_allclose([grad[k].real, grad[k].imag], [d_re, -d_im], rtol=2e-3, atol=1e-5)
    fitted, loss = spectral.fit_filter(signal, target, steps=100)
    assert loss < 1e-8
    _assert_close(np.asarray(fitted)[:-1], true_response[:-1], rtol=1e-3)


@settings(deadline=None, max_examples=20)
@given(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=1, max_size=2),
       st.lists(st.sampled_from([1, 2, 4]), min_size=2, max_size=2), st.sampled_from(["full", "same", "valid"]),
       st.booleans(), st.integers(0, 2 ** 16))
def test_scipy_signal_fftconvolve_matches_scipy(shape, kernel_sizes, mode, complex_input, seed):
    import scipy.signal
    import jaxlite.scipy.signal as jsignal
    rng = np.random.default_rng(seed)
    kernel_shape = tuple(kernel_sizes[:len(shape)])
    if mode == "valid" and not all(a >= b for a, b in zip(shape, kernel_shape)):
        kernel_shape = tuple(shape)
    x = _signal(rng, tuple(shape), "fft" if complex_input else "rfft")
    k = rng.standard_normal(kernel_shape).astype(np.float32)
    wide = x.astype(np.complex128 if complex_input else np.float64)
    _assert_close(jsignal.fftconvolve(x, k, mode), scipy.signal.fftconvolve(wide, k, mode), rtol=1e-5)


def test_jit_runs_the_native_fft_routine(caplog):
    """Under jit every transform is the native routine on the interleaved parts: nothing is
    logged as running with its numpy implementation."""
    x = _signal(np.random.default_rng(6), (2, 12, 10), "rfft")
    functions = [jnp.fft.rfft2, lambda v: jnp.fft.irfft(jnp.fft.fft(v), 12, axis=1), jnp.fft.ifftn]
    with caplog.at_level("WARNING", logger="jaxlite.jit"):
        for fun in functions:
            _assert_close(jaxlite.jit(fun)(x), fun(x))
    assert not [r.getMessage() for r in caplog.records if "numpy implementation" in r.getMessage()]


@pytest.mark.parametrize("fun", [jnp.fft.fft, jnp.fft.ifft2, lambda v: jnp.fft.ifft(jnp.fft.fft(v))])
def test_jit_passes_complex_buffers_to_the_routine_without_copies(fun):
    """A complex argument or result is the interleaved parts the routine reads and writes: no
    kernel slices the parts out or concatenates them back around it."""
    x = _signal(np.random.default_rng(7), (4, 16), "fft")
    lowered = jaxlite.jit(fun).lower(x)
    assert "fft_pairs" in lowered.as_text()
    assert not [line for line in lowered.as_text().splitlines() if line.startswith("kernel")]
    _assert_close(jaxlite.jit(fun)(x), fun(x))
