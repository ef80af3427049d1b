"""lax's remaining helpers (lax/other.py) against numpy, with jit, vmap and gradients."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.test_util import check_grads, check_vmap

RNG = np.random.default_rng(0)


@settings(deadline=None, max_examples=20)
@given(st.lists(st.integers(1, 3), min_size=0, max_size=2), st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))
def test_batch_matmul_is_numpy_matmul(batch, m, k, n):
    lhs = RNG.standard_normal((*batch, m, k)).astype(np.float32)
    rhs = RNG.standard_normal((*batch, k, n)).astype(np.float32)
    np.testing.assert_allclose(lax.batch_matmul(lhs, rhs), lhs @ rhs, rtol=1e-5, atol=1e-5)


def test_batch_matmul_errors():
    with pytest.raises(ValueError, match="equal rank"):
        lax.batch_matmul(np.ones((2, 3, 4)), np.ones((4, 5)))


def test_index_take_and_scatter_apply():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    idxs = np.array([[0, 1], [1, 2], [1, 0]])
    np.testing.assert_array_equal(lax.index_take(x, idxs, (0, 2)), [x[i, :, j] for i, j in idxs])
    np.testing.assert_array_equal(jaxlite.jit(lambda s: lax.index_take(s, idxs, (0, 2)))(x),
                                  [x[i, :, j] for i, j in idxs])
    v = np.arange(6.0, dtype=np.float32)
    numbers = lax.ScatterDimensionNumbers((), (0,), (0,))
    out = lax.scatter_apply(v, np.array([[1], [3]]), jnp.sin, numbers, update_shape=(2,))
    np.testing.assert_allclose(out, np.where(np.isin(np.arange(6), [1, 3]), np.sin(v), v), rtol=1e-6)
    grad = jaxlite.grad(lambda a: lax.scatter_apply(a, np.array([[1], [3]]), jnp.sin, numbers,
                                                    update_shape=(2,)).sum())(v)
    np.testing.assert_allclose(grad, np.where(np.isin(np.arange(6), [1, 3]), np.cos(v), 1.0), rtol=1e-6)


def numpy_local_conv(lhs, rhs, strides, padding, filter_shape):
    """NCHW / OIHW locally connected convolution, one filter per output position."""
    padded = np.pad(lhs, ((0, 0), (0, 0), *padding))
    n, c = lhs.shape[:2]
    o, _, out_h, out_w = rhs.shape
    kh, kw = filter_shape
    out = np.zeros((n, o, out_h, out_w))
    for h in range(out_h):
        for w in range(out_w):
            window = padded[:, :, h * strides[0]:h * strides[0] + kh, w * strides[1]:w * strides[1] + kw]
            out[:, :, h, w] = window.reshape(n, c * kh * kw) @ rhs[:, :, h, w].T
    return out


@pytest.mark.parametrize("strides,padding", [((1, 1), ((0, 0), (0, 0))), ((2, 2), ((0, 0), (1, 0)))])
def test_conv_general_dilated_local_is_a_per_position_filter(strides, padding):
    lhs = RNG.standard_normal((2, 2, 5, 5)).astype(np.float32)
    out_h = (5 + sum(padding[0]) - 3) // strides[0] + 1
    out_w = (5 + sum(padding[1]) - 3) // strides[1] + 1
    rhs = RNG.standard_normal((3, 18, out_h, out_w)).astype(np.float32)
    spec = ("NCHW", "OIHW", "NCHW")
    local = lambda a, b: lax.conv_general_dilated_local(a, b, strides, padding, (3, 3), dimension_numbers=spec)
    np.testing.assert_allclose(local(lhs, rhs), numpy_local_conv(lhs, rhs, strides, padding, (3, 3)),
                               rtol=1e-4, atol=1e-4)
    channels_last = lax.conv_general_dilated_local(lhs.transpose(0, 2, 3, 1), rhs.transpose(2, 3, 1, 0), strides,
                                                   padding, (3, 3), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(channels_last.transpose(0, 3, 1, 2), local(lhs, rhs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jaxlite.jit(local)(lhs, rhs), local(lhs, rhs), rtol=1e-5, atol=1e-5)
    check_vmap(local, (np.stack([lhs, 2 * lhs]), rhs), in_axes=(0, None), atol=1e-4, rtol=1e-4)
    check_grads(local, (lhs[:1, :1].repeat(2, 1), rhs), order=1, modes=("rev",), atol=3e-2, rtol=3e-2)


def test_platform_dependent_shape_as_value_stage_and_types():
    assert float(lax.platform_dependent(2.0, cpu=lambda x: x * 3, default=lambda x: x)) == 6.0
    assert float(lax.platform_dependent(2.0, tpu=lambda x: x * 3, default=lambda x: x + 1)) == 3.0
    with pytest.raises(NotImplementedError, match="no branch for the cpu platform"):
        lax.platform_dependent(2.0, tpu=lambda x: x)
    assert lax.shape_as_value((2, 3)).tolist() == [2, 3]
    assert lax.stage(2.0).dtype == np.float32
    assert lax.DotAlgorithmPreset.BF16_BF16_F32.value == 9 and lax.AccuracyMode.HIGHEST.value == 1
    algorithm = lax.DotAlgorithm(jnp.float32, jnp.float32, jnp.float32)
    assert algorithm.lhs_component_count == 1 and lax.Tolerance(rtol=1e-3).rtol == 1e-3
