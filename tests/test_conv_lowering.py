"""conv_general_dilated under jit: rewritten to im2col (conv_patches) and a GEMM.

jit is compared with eager execution (the numpy implementation) over hypothesis-drawn
configurations, for values and gradients; the lowered program is checked for its shape
(one patch kernel, the product on the GEMM, no im2col for 1x1 windows); a small CNN
trains under jit as it does eagerly.
"""
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax, precision
from jaxlite.examples import cnn
from jaxlite.lower.fusion import EqnStep, KernelStep
from jaxlite.test_util import enable_x64

SPATIAL_LETTERS = "HWD"


@st.composite
def conv_configs(draw, max_rank=3):
    n_spatial = draw(st.integers(1, max_rank))
    letters = SPATIAL_LETTERS[:n_spatial]
    small = st.sampled_from([1, 2, 3, 5, 7]) if n_spatial < 3 else st.sampled_from([1, 2, 3])
    in_spatial = [draw(small) for _ in letters]
    window = [draw(st.integers(1, 3)) for _ in letters]
    feature_groups, batch_groups = draw(st.sampled_from([(1, 1), (2, 1), (3, 1), (1, 2)]))
    in_features = draw(st.integers(1, 3))
    out_features = draw(st.integers(1, 2)) * feature_groups * batch_groups
    batch = draw(st.integers(1, 2)) * batch_groups
    padding = draw(st.one_of(st.sampled_from(["SAME", "VALID"]),
                             st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 2)),
                                      min_size=n_spatial, max_size=n_spatial)))
    specs = tuple("".join(draw(st.permutations(first + letters))) for first in ("NC", "OI", "NC"))
    lhs_shape = _shape(specs[0], {"N": batch, "C": in_features * feature_groups, **dict(zip(letters, in_spatial))})
    rhs_shape = _shape(specs[1], {"O": out_features, "I": in_features, **dict(zip(letters, window))})
    params = dict(window_strides=[draw(st.integers(1, 3)) for _ in letters], padding=padding,
                  lhs_dilation=[draw(st.integers(1, 2)) for _ in letters],
                  rhs_dilation=[draw(st.integers(1, 2)) for _ in letters],
                  dimension_numbers=specs, feature_group_count=feature_groups,
                  batch_group_count=batch_groups)
    return lhs_shape, rhs_shape, params


def _shape(spec, sizes):
    return tuple(sizes[letter] for letter in spec)


def _operands(lhs_shape, rhs_shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=lhs_shape).astype(dtype), rng.normal(size=rhs_shape).astype(dtype)


def _drawn_case(config, dtype):
    """(convolution, lhs, rhs) for a drawn configuration."""
    lhs_shape, rhs_shape, params = config
    return (lambda x, w: lax.conv_general_dilated(x, w, **params)), *_operands(lhs_shape, rhs_shape, dtype)


def _eager_or_skip(fun, *args):
    try:
        return fun(*args)
    except (TypeError, ValueError):
        assume(False)   # a configuration the convolution itself rejects (e.g. no output)


@settings(deadline=None, max_examples=40)
@given(conv_configs())
def test_jit_matches_eager(config):
    f, x, w = _drawn_case(config, np.float32)
    expected = _eager_or_skip(f, x, w)
    np.testing.assert_allclose(jaxlite.jit(f)(x, w), expected, rtol=2e-5, atol=2e-5)


@settings(deadline=None, max_examples=10)
@given(conv_configs(max_rank=2))
def test_jit_matches_eager_float64(config):
    f, x, w = _drawn_case(config, np.float64)
    with enable_x64():
        expected = _eager_or_skip(f, x, w)
        result = jaxlite.jit(f)(x, w)
    assert result.dtype == np.float64
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


@settings(deadline=None, max_examples=20)
@given(conv_configs(max_rank=2))
def test_jit_grad_matches_eager_grad(config):
    f, x, w = _drawn_case(config, np.float32)
    out = _eager_or_skip(f, x, w)
    ct = np.random.default_rng(1).normal(size=out.shape).astype(np.float32)
    grad = jaxlite.grad(lambda x, w: jnp.sum(f(x, w) * ct), argnums=(0, 1))
    for got, want in zip(jaxlite.jit(grad)(x, w), grad(x, w)):
        np.testing.assert_allclose(got, want, rtol=5e-5, atol=5e-5)


def _steps(fun, *args):
    return jaxlite.jit(fun).lower(*args).program.steps


def _nhwc_conv(strides=(1, 1), padding="SAME"):
    return lambda x, w: lax.conv_general_dilated(x, w, strides, padding,
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))


def test_patches_are_one_kernel_and_the_product_a_gemm():
    x, w = _operands((8, 9, 9, 3), (3, 3, 3, 8), np.float32)     # a product above step_policy.SMALL_PRODUCT
    steps = _steps(_nhwc_conv((2, 2)), x, w)
    assert len(steps) == 2
    patch_kernel, product = steps
    assert isinstance(patch_kernel, KernelStep) and patch_kernel.outputs[0].aval.shape == (8, 5, 5, 3, 3, 3)
    assert isinstance(product, EqnStep) and product.kind == "gemm"


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_1x1_convolution_needs_no_im2col(strides):
    x, w = _operands((4, 8, 8, 64), (1, 1, 64, 16), np.float32)     # products above step_policy.SMALL_PRODUCT
    f = _nhwc_conv(strides, "VALID")
    text = jaxlite.jit(f).lower(x, w).as_text()
    assert "conv_patches" not in text and "gemm: " in text
    if strides == (1, 1):       # the GEMM reads the input as it is (only the kernel is copied)
        copies = [v for step in _steps(f, x, w) if isinstance(step, KernelStep) for v in step.outputs]
        assert all(v.aval.size == w.size for v in copies)
    np.testing.assert_allclose(jaxlite.jit(f)(x, w), f(x, w), rtol=2e-5, atol=2e-5)


def test_a_convolution_and_its_kernel_gradient_share_one_patch_matrix():
    x, w = _operands((4, 9, 9, 3), (3, 3, 3, 8), np.float32)
    f = _nhwc_conv((2, 2))
    steps = _steps(jaxlite.value_and_grad(lambda w: jnp.sum(f(x, w) ** 2)), w)
    patch_kernels = [s for s in steps if isinstance(s, KernelStep) and s.outputs[0].aval.ndim == 6]
    assert len(patch_kernels) == 1 and len(patch_kernels[0].outputs) == 1


def test_strided_convolution_gradient_skips_the_dilated_zeros():
    """The lhs gradient of a strided convolution multiplies the cotangent by the kernel
    (a GEMM as big as the forward one) instead of convolving a zero-dilated cotangent."""
    x, w = _operands((4, 10, 10, 8), (3, 3, 8, 16), np.float32)
    f = _nhwc_conv((2, 2))
    grad = jaxlite.grad(lambda x, w: jnp.sum(f(x, w) ** 2))
    steps = _steps(grad, x, w)
    patch_sizes = [v.aval.size for step in steps if isinstance(step, KernelStep) for v in step.outputs]
    assert max(patch_sizes) <= 4 * 5 * 5 * 9 * 16
    np.testing.assert_allclose(jaxlite.jit(grad)(x, w), grad(x, w), rtol=5e-5, atol=5e-5)


def test_bf16_convolution_runs_on_the_bf16_gemm():
    x, w = _operands((8, 12, 12, 16), (3, 3, 16, 32), np.float32)
    f = precision.bf16(_nhwc_conv())
    gemms = [step.eqn for step in _steps(f, x, w) if isinstance(step, EqnStep) and step.kind == "gemm"]
    assert [eqn.inputs[0].aval.dtype.name for eqn in gemms] == ["bfloat16"]
    np.testing.assert_allclose(jaxlite.jit(f)(x, w), f(x, w), rtol=1e-3, atol=1e-3)


def test_int8_convolution_under_jit():
    x, w = _operands((8, 10, 10, 16), (3, 3, 16, 32), np.float32)
    f = precision.int8(_nhwc_conv((2, 2)))
    np.testing.assert_allclose(jaxlite.jit(f)(x, w), f(x, w), rtol=1e-4, atol=1e-3)


def test_convolution_in_a_vmapped_jit():
    x, w = _operands((3, 2, 7, 7, 2), (3, 3, 3, 2, 4), np.float32)
    f = jaxlite.vmap(_nhwc_conv())
    np.testing.assert_allclose(jaxlite.jit(f)(x, w), f(x, w), rtol=2e-5, atol=2e-5)


def _small_cnn():
    params = cnn.init_params(channels=(1, 4, 8), seed=0)
    images, labels = cnn.batch(size=16, side=12, seed=1)
    return params, images, labels


def test_cnn_jit_grad_matches_eager():
    params, images, labels = _small_cnn()
    grad = jaxlite.grad(lambda p, x, y: cnn.loss(jnp, lax, p, x, y))
    for got, want in zip(jaxlite.jit(grad)(params, images, labels), grad(params, images, labels)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_cnn_loss_decreases_under_jit_sgd():
    params, images, labels = _small_cnn()
    loss = lambda p: cnn.loss(jnp, lax, p, images, labels)
    step = jaxlite.jit(lambda p: cnn.sgd(p, jaxlite.grad(loss)(p), 0.1))
    losses = [float(loss(params))]
    for _ in range(5):
        params = step(params)
        losses.append(float(loss(params)))
    assert losses[-1] < losses[0] - 0.05
    assert all(b < a for a, b in zip(losses, losses[1:]))
