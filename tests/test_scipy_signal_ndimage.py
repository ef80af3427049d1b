"""jaxlite.scipy.signal, .integrate, .ndimage, .interpolate and .cluster against scipy:
every mode and shape combination, JAX's errors, jit native, grads, vmap."""
import numpy as np
import pytest
import scipy.cluster.vq as scipy_vq
import scipy.integrate as si
import scipy.interpolate as sinterp
import scipy.ndimage as sn
import scipy.signal as ss
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.scipy import integrate, interpolate, ndimage, signal
from jaxlite.scipy.cluster import vq
from jaxlite.test_util import check_grads, check_vmap, enable_x64, fallback_steps

shapes_1d = st.tuples(st.integers(1, 7))
shapes_2d = st.tuples(st.integers(1, 5), st.integers(1, 5))


@pytest.mark.parametrize("name", ["convolve", "correlate", "convolve2d", "correlate2d"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_convolutions_as_scipy(name, mode, data):
    shapes = shapes_2d if name.endswith("2d") else data.draw(st.sampled_from([shapes_1d, shapes_2d]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    dtype = data.draw(st.sampled_from([np.float32, np.complex64]))
    a, b = (_standard_normal(rng, data.draw(shapes), dtype) for _ in range(2))
    try:
        want = getattr(ss, name)(a, b, mode)
    except ValueError:
        with pytest.raises(ValueError):
            getattr(signal, name)(a, b, mode)
        return
    got = getattr(signal, name)(a, b, mode)
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def _standard_normal(rng, shape, dtype):
    values = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def test_signal_dtypes_and_errors_as_jax():
    assert signal.convolve(np.array([1, 2, 3]), np.array([1, 1])).dtype == np.float32
    with pytest.raises(ValueError, match="same number of dimensions"):
        signal.convolve(np.ones((2, 2)), np.ones(3))
    with pytest.raises(NotImplementedError, match="boundary='fill'"):
        signal.convolve2d(np.ones((2, 2)), np.ones((2, 2)), boundary="wrap")


@pytest.mark.parametrize("kind", ["linear", "constant"])
def test_detrend(kind):
    x = np.random.default_rng(0).standard_normal((4, 12)).astype(np.float32) + np.arange(12)
    np.testing.assert_allclose(np.asarray(signal.detrend(x, type=kind)), ss.detrend(x, type=kind), atol=1e-5)
    np.testing.assert_allclose(np.asarray(signal.detrend(x, axis=0, type=kind)), ss.detrend(x, axis=0, type=kind), atol=1e-5)
    if kind == "linear":
        np.testing.assert_allclose(np.asarray(signal.detrend(x, bp=[3, 7])), ss.detrend(x, bp=[3, 7]), atol=1e-5)


def test_trapezoid():
    rng = np.random.default_rng(1)
    y, x = rng.standard_normal((3, 6)).astype(np.float32), np.sort(rng.uniform(0, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(integrate.trapezoid(y)), si.trapezoid(y), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(integrate.trapezoid(y, x)), si.trapezoid(y, x), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(integrate.trapezoid(y, dx=0.3, axis=0)), si.trapezoid(y, dx=0.3, axis=0), rtol=1e-6)
    assert integrate.trapezoid(np.arange(4)).dtype == np.float32


SCIPY_MODE = {"constant": "grid-constant", "wrap": "grid-wrap", "nearest": "nearest", "mirror": "mirror",
              "reflect": "reflect"}


@pytest.mark.parametrize("mode", sorted(SCIPY_MODE))
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_as_scipy(mode, order):
    rng = np.random.default_rng(2)
    image = rng.standard_normal((5, 7)).astype(np.float32)
    # away from half-integers, where order 0's rounding convention differs from scipy's
    coordinates = np.round(rng.uniform(-6, 12, (2, 40)), 1) + 0.03
    want = sn.map_coordinates(image, coordinates, order=order, mode=SCIPY_MODE[mode], cval=1.5)
    got = ndimage.map_coordinates(image, list(coordinates.astype(np.float32)), order, mode=mode, cval=1.5)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_map_coordinates_errors_and_integers():
    with pytest.raises(NotImplementedError, match="order<=1"):
        ndimage.map_coordinates(np.ones((2, 2)), [np.zeros(1), np.zeros(1)], order=3)
    with pytest.raises(NotImplementedError, match="mode"):
        ndimage.map_coordinates(np.ones((2, 2)), [np.zeros(1), np.zeros(1)], order=1, mode="grid-mirror")
    with pytest.raises(ValueError, match="length input.ndim"):
        ndimage.map_coordinates(np.ones((2, 2)), [np.zeros(1)], order=1)
    got = ndimage.map_coordinates(np.array([0, 10]), [np.array([0.26, 0.75])], order=1)
    assert got.dtype == np.int32 and np.asarray(got).tolist() == [3, 8]


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_regular_grid_interpolator_as_scipy(method):
    rng = np.random.default_rng(3)
    points = (np.linspace(0, 1, 4), np.sort(rng.uniform(0, 2, 5)))
    values = rng.standard_normal((4, 5, 2))
    xi = rng.uniform(-0.2, 2.1, (7, 2))
    want = sinterp.RegularGridInterpolator(points, values, method=method, bounds_error=False)(xi)
    got = interpolate.RegularGridInterpolator(points, values.astype(np.float32), method=method)(xi)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    extrapolated = interpolate.RegularGridInterpolator(points, values, fill_value=None)(xi)
    np.testing.assert_allclose(np.asarray(extrapolated),
                               sinterp.RegularGridInterpolator(points, values, bounds_error=False, fill_value=None)(xi),
                               rtol=1e-5, atol=1e-5)
    leaves = jaxlite.tree_util.tree_leaves(interpolate.RegularGridInterpolator(points, values))
    assert len(leaves) == 4    # two grids, the values, the fill value


def test_vq_as_scipy():
    rng = np.random.default_rng(4)
    obs, book = rng.standard_normal((20, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    codes, distances = vq.vq(obs, book)
    want_codes, want_distances = scipy_vq.vq(obs, book)
    np.testing.assert_array_equal(np.asarray(codes), want_codes)
    np.testing.assert_allclose(np.asarray(distances), want_distances, rtol=1e-5)
    assert codes.dtype == np.int32


CALLS = {
    "convolve2d": lambda a, c: signal.convolve2d(a, a[:2, :3], mode="same"),
    "detrend": lambda a, c: signal.detrend(a, bp=[2]),
    "trapezoid": lambda a, c: integrate.trapezoid(a, axis=0),
    "map_coordinates": lambda a, c: ndimage.map_coordinates(a, [c[0], c[1]], 1, mode="mirror"),
    "interpolator": lambda a, c: interpolate.RegularGridInterpolator((jnp.arange(5.0), jnp.arange(6.0)), a)(c.T),
    "vq": lambda a, c: vq.vq(a, a[:2])[1],
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_jit_is_native_and_agrees_with_eager(name):
    rng = np.random.default_rng(5)
    a, c = rng.standard_normal((5, 6)).astype(np.float32), rng.uniform(-1, 6, (2, 9)).astype(np.float32)
    assert fallback_steps(CALLS[name], a, c) == []
    np.testing.assert_allclose(np.asarray(jaxlite.jit(CALLS[name])(a, c)), np.asarray(CALLS[name](a, c)),
                               rtol=1e-5, atol=1e-6)


def test_gradients_and_vmap():
    rng = np.random.default_rng(6)
    with enable_x64():
        a, b = rng.standard_normal((4, 5)), rng.standard_normal((2, 3))
        check_grads(lambda a, b: signal.correlate(a, b, "same"), [a, b], order=2)
        coords = [rng.uniform(0.1, 3.9, 6), rng.uniform(0.1, 4.9, 6)]
        check_grads(lambda a, x: ndimage.map_coordinates(a, [x, coords[1]], 1), [a, coords[0]], order=1)
        check_grads(lambda y, x: integrate.trapezoid(y, x), [a, np.sort(rng.uniform(0, 1, 5))], order=1)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    check_vmap(lambda x: signal.convolve(x, x[:3]), [x], atol=1e-5, rtol=1e-5)
