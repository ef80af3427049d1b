"""Precision lowering: bf16/int8 transforms, their compositions, and the low-precision GEMMs."""
import functools

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax, precision
from jaxlite.core.ir import typecheck
from jaxlite.examples import mlp

RNG = np.random.default_rng(0)


def normal(*shape):
    return RNG.normal(size=shape).astype(np.float32)


@functools.lru_cache(maxsize=None)
def trained_mlp():
    """A 2-32-32-2 MLP trained on two spirals with the numpy baseline, plus test points."""
    params = mlp.init_params([2, 32, 32, 2], seed=0)
    x, labels = mlp.two_spirals(200, seed=0)
    y = mlp.one_hot(labels, 2)
    for _ in range(600):
        params, _ = mlp.numpy_train_step(params, x, y, 0.3)
    test_x, test_labels = mlp.two_spirals(500, seed=1)
    return params, test_x, test_labels


def predict(params, x):
    return mlp.logits(jnp, params, x)


def accuracy(logits, labels):
    return float(np.mean(np.asarray(logits).argmax(1) == labels))


# ----------------------------------------------------------------------------- accuracy

def test_trained_mlp_is_accurate_in_float32():
    params, x, labels = trained_mlp()
    assert accuracy(predict(params, x), labels) > 0.9


@pytest.mark.parametrize("lowering, tolerance", [
    (precision.bf16, 0.02),
    (functools.partial(precision.bf16, elementwise=True), 0.02),
    (precision.int8, 0.05),
])
def test_lowered_predictions_are_close_to_float32(lowering, tolerance):
    params, x, labels = trained_mlp()
    (result,) = precision.compare(predict, lowering(predict), params, x, verbose=False)
    assert result.relative_error <= tolerance
    assert result.argmax_agreement >= 0.99
    lowered_logits = lowering(predict)(params, x)
    assert abs(accuracy(lowered_logits, labels) - accuracy(predict(params, x), labels)) <= 0.01


def test_compare_prints_each_output(capsys):
    x, w = normal(8, 5), normal(5, 3)
    results = precision.compare(lambda x, w: (x @ w, (x @ w).sum()),
                                precision.bf16(lambda x, w: (x @ w, (x @ w).sum())), x, w)
    printed = capsys.readouterr().out
    assert len(results) == 2 and "output 0 (8, 3)" in printed and "argmax agreement" in printed
    assert results[1].argmax_agreement is None and 0 < results[0].relative_error < 1e-2


# ----------------------------------------------------------------------------- semantics

def _bf16_round(x):
    return np.asarray(x, np.float32).astype(jnp.bfloat16).astype(np.float32)


def test_bf16_dot_rounds_operands_and_accumulates_in_float32():
    x, w = normal(16, 40), normal(40, 8)
    out = precision.bf16(jnp.matmul)(x, w)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _bf16_round(x) @ _bf16_round(w), rtol=1e-5, atol=1e-5)


def test_int8_dot_matches_a_numpy_reference():
    x, w = normal(6, 32), normal(32, 5)
    sx = np.abs(x).max(1, keepdims=True) / 127
    sw = np.abs(w).max(0, keepdims=True) / 127
    qx, qw = np.rint(x / sx).astype(np.int32), np.rint(w / sw).astype(np.int32)
    np.testing.assert_allclose(precision.int8(jnp.matmul)(x, w), (qx @ qw) * sx * sw, rtol=1e-6)


@pytest.mark.parametrize("lowering, key", [(precision.bf16, ("bfloat16", "float32")),
                                           (precision.int8, ("int8", "int32"))])
def test_big_eager_products_run_compiled_once_per_shape(lowering, key, monkeypatch):
    """Eagerly, a product above EAGER_COMPILE_MIN_WORK runs as a compiled program (on the
    low-precision GEMMs) cached by shape; it agrees with the numpy path."""
    from jaxlite.lower import step_policy
    compiled = []
    original = step_policy.LOW_PRECISION_GEMMS[key]
    monkeypatch.setitem(step_policy.LOW_PRECISION_GEMMS, key,
                        lambda *shape, **options: compiled.append(shape) or original(*shape, **options))
    x, w = normal(37, 66), normal(66, 51)
    on_numpy = lowering(jnp.matmul)(x, w)
    monkeypatch.setattr(precision, "EAGER_COMPILE_MIN_WORK", 0)
    for _ in range(2):
        if lowering is precision.int8:
            np.testing.assert_array_equal(lowering(jnp.matmul)(x, w), on_numpy)
        else:
            np.testing.assert_allclose(lowering(jnp.matmul)(x, w), on_numpy, rtol=1e-5, atol=1e-5)
    assert compiled == [(37, 51, 66)]


def test_int8_batched_dot_general_scales_per_row_and_channel():
    x, w = normal(3, 4, 16), normal(3, 16, 5)
    f = lambda x, w: lax.dot_general(x, w, (((2,), (1,)), ((0,), (0,))))
    lowered = precision.int8(f)(x, w)
    for b in range(3):
        np.testing.assert_allclose(lowered[b], precision.int8(jnp.matmul)(x[b], w[b]), rtol=1e-6)


def test_int8_of_zero_rows_is_zero():
    x = np.zeros((2, 8), np.float32)
    np.testing.assert_array_equal(precision.int8(jnp.matmul)(x, normal(8, 3)), 0)


def test_outputs_keep_the_function_types():
    x, w = normal(4, 8), normal(8, 3)
    f = lambda x, w: (jnp.maximum(x @ w, 0.0), jnp.arange(3))
    for lowered in (precision.bf16(f, elementwise=True), precision.int8(f)):
        out, ints = lowered(x, w)
        assert out.dtype == np.float32 and ints.dtype == np.int32


def test_integer_products_are_not_lowered():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    jaxpr = jaxlite.make_jaxpr(precision.int8(jnp.matmul))(a, a.T)
    assert "i8" not in str(jaxpr) and "bf16" not in str(jaxpr)


# ----------------------------------------------------------------------------- jaxprs

def mlp_layer(x, w, b):
    z = jnp.maximum(x @ w + b, 0.0)
    return z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))


def test_bf16_jaxpr_shows_bf16_operands_and_float32_accumulation():
    jaxpr = jaxlite.make_jaxpr(precision.bf16(mlp_layer))(normal(4, 8), normal(8, 3), normal(3))
    typecheck(jaxpr)
    text = str(jaxpr)
    assert "bf16[4,8] = convert_element_type" in text and "preferred_element_type=float32" in text
    assert "bf16[4,3] = add" not in text   # elementwise stays float32 by default


def test_bf16_elementwise_keeps_reductions_and_transcendentals_in_float32():
    jaxpr = jaxlite.make_jaxpr(precision.bf16(mlp_layer, elementwise=True))(
        normal(4, 8), normal(8, 3), normal(3))
    typecheck(jaxpr)
    out_dtypes = {eqn.primitive.name: eqn.outputs[0].aval.dtype for eqn in jaxpr.jaxpr.eqns}
    assert out_dtypes["add"] == jnp.bfloat16 and out_dtypes["max"] == jnp.bfloat16
    for name in ("exp", "log", "reduce_sum"):
        assert out_dtypes[name] == np.float32
    assert jaxpr.out_avals[0].dtype == np.float32


def test_int8_jaxpr_shows_int8_operands_and_int32_accumulation():
    jaxpr = jaxlite.make_jaxpr(precision.int8(mlp_layer))(normal(4, 8), normal(8, 3), normal(3))
    typecheck(jaxpr)
    text = str(jaxpr)
    assert "i8[4,8]" in text and "i8[8,3]" in text and "i32[4,3] = dot_general" in text


# ----------------------------------------------------------------------------- compositions

LOWERINGS = [precision.bf16, functools.partial(precision.bf16, elementwise=True), precision.int8]


def small_net(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_vmap_in_either_order_agrees_with_a_loop(lowering):
    xs, w1, w2 = normal(5, 3, 8), normal(8, 16), normal(16, 4)
    loop = np.stack([lowering(small_net)(x, w1, w2) for x in xs])
    outer = jaxlite.vmap(lowering(small_net), (0, None, None))(xs, w1, w2)
    inner = lowering(jaxlite.vmap(small_net, (0, None, None)))(xs, w1, w2)
    np.testing.assert_allclose(outer, loop, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(inner, loop, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_vmap_over_weights_agrees_with_a_loop(lowering):
    x, w1s, w2 = normal(3, 8), normal(4, 8, 16), normal(16, 4)
    loop = np.stack([lowering(small_net)(x, w1, w2) for w1 in w1s])
    batched = jaxlite.vmap(lowering(small_net), (None, 0, None))(x, w1s, w2)
    np.testing.assert_allclose(batched, loop, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_jvp_in_either_order(lowering):
    args = (normal(3, 8), normal(8, 16), normal(16, 4))
    tangents = (normal(3, 8), normal(8, 16), normal(16, 4))
    out, t_out = jaxlite.jvp(lowering(small_net), args, tangents)
    out_inner, t_inner = lowering(lambda a, t: jaxlite.jvp(small_net, a, t))(args, tangents)
    np.testing.assert_allclose(out, lowering(small_net)(*args), rtol=1e-6)
    np.testing.assert_allclose(out_inner, out, rtol=1e-6)
    # Inside, the lowering also narrows the tangent products; both are close to float32's.
    _, t_float = jaxlite.jvp(small_net, args, tangents)
    tolerance = 0.05 if lowering is precision.int8 else 0.02
    for t in (t_out, t_inner):
        assert np.linalg.norm(t - t_float) <= tolerance * np.linalg.norm(t_float)


def test_int8_jvp_is_the_straight_through_estimator():
    x, w, x_dot, w_dot = normal(4, 8), normal(8, 3), normal(4, 8), normal(8, 3)
    _, tangent = jaxlite.jvp(precision.int8(jnp.matmul), (x, w), (x_dot, w_dot))
    np.testing.assert_allclose(tangent, x_dot @ w + x @ w_dot, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lowering, tolerance", [(precision.bf16, 0.02), (precision.int8, 0.05)])
def test_loss_gradients_through_lowering_are_close_to_float32(lowering, tolerance):
    """The derivative along the float32 gradient g is |g|^2 exactly; lowered, it must stay close
    (a direction the gradient is large along, so the comparison is not drowned by cancellation)."""
    params = mlp.init_params([2, 64, 64, 2], seed=3)
    x, labels = mlp.two_spirals(200, seed=2)
    y = mlp.one_hot(labels, 2)
    _, grads = mlp.numpy_loss_and_grads(params, x, y)
    squared_norm = sum(float(np.sum(gw ** 2) + np.sum(gb ** 2)) for gw, gb in grads)
    loss = lambda p: mlp.loss(jnp, p, x, y)
    _, exact = jaxlite.jvp(loss, (params,), (grads,))
    _, lowered = jaxlite.jvp(lowering(loss), (params,), (grads,))
    np.testing.assert_allclose(float(exact), squared_norm, rtol=1e-4)
    assert abs(float(lowered) - squared_norm) <= tolerance * squared_norm


@pytest.mark.parametrize("lowering, tolerance", [(precision.bf16, 0.02), (precision.int8, 0.05)])
def test_grad_through_lowering_is_close_to_float32_in_either_order(lowering, tolerance):
    params = mlp.init_params([2, 64, 64, 2], seed=3)
    x, labels = mlp.two_spirals(200, seed=2)
    y = mlp.one_hot(labels, 2)
    _, expected = mlp.numpy_loss_and_grads(params, x, y)
    loss = lambda p: mlp.loss(jnp, p, x, y)
    flat = lambda grads: np.concatenate([np.ravel(g) for layer in grads for g in layer])
    for grads in (jaxlite.grad(lowering(loss))(params), lowering(jaxlite.grad(loss))(params)):
        error = np.linalg.norm(flat(grads) - flat(expected)) / np.linalg.norm(flat(expected))
        assert error <= tolerance


def test_int8_grad_is_the_straight_through_estimator():
    x, w, ct = normal(4, 8), normal(8, 3), normal(4, 3)
    gx, gw = jaxlite.grad(lambda x, w: jnp.sum(precision.int8(jnp.matmul)(x, w) * ct), (0, 1))(x, w)
    np.testing.assert_allclose(gx, ct @ w.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw, x.T @ ct, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_jit_in_either_order_agrees_with_eager(lowering):
    args = (normal(3, 8), normal(8, 16), normal(16, 4))
    eager = lowering(small_net)(*args)
    np.testing.assert_allclose(jaxlite.jit(lowering(small_net))(*args), eager, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lowering(jaxlite.jit(small_net))(*args), eager, rtol=1e-5, atol=1e-5)
    grad = jaxlite.grad(lambda *a: jnp.sum(lowering(small_net)(*a)))
    np.testing.assert_allclose(jaxlite.jit(grad)(*args), grad(*args), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_lowering_reaches_into_control_flow(lowering):
    x, w = normal(4, 8), normal(8, 8)

    def f(x, w):
        step = lambda h, _: (jnp.tanh(h @ w), None)
        h, _ = lax.scan(step, x, None, length=3)
        return lax.cond(True, lambda h: h @ w, lambda h: h, h)

    def unrolled(x, w):
        for _ in range(3):
            x = jnp.tanh(x @ w)
        return x @ w
    np.testing.assert_allclose(lowering(f)(x, w), lowering(unrolled)(x, w), rtol=1e-5, atol=1e-5)
    assert not np.allclose(lowering(f)(x, w), f(x, w), rtol=1e-6, atol=0)
    typecheck(jaxlite.make_jaxpr(lowering(f))(x, w))


BF16_OF_INT8 = lambda f: precision.bf16(precision.int8(f))
COMPOSABLE = [precision.bf16, precision.int8, BF16_OF_INT8]


def composition_case():
    params = mlp_params([8, 16, 4], seed=5)
    x = normal(5, 8)
    y = jnp.asarray(mlp.one_hot(np.arange(5) % 4, 4))
    return params, x, lambda p: mlp.loss(jnp, p, x, y)


def assert_trees_close(got, want, tolerance):
    for g, w in zip(jaxlite.tree_util.tree_leaves(got), jaxlite.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("lowering", COMPOSABLE)
def test_grad_and_jit_in_every_order_agree(lowering):
    """Lowering inside grad narrows the forward products; outside, the backward ones too, so
    each placement is checked against its own eager result (both against float32 above)."""
    params, _, loss = composition_case()
    expected = jaxlite.grad(lowering(loss))(params)
    for grads in (jaxlite.jit(jaxlite.grad(lowering(loss)))(params),      # jit . grad
                  jaxlite.grad(jaxlite.jit(lowering(loss)))(params),      # grad . jit
                  jaxlite.grad(lowering(jaxlite.jit(loss)))(params)):     # grad . lowering . jit
        assert_trees_close(grads, expected, 1e-4)
    expected = lowering(jaxlite.grad(loss))(params)
    for grads in (jaxlite.jit(lowering(jaxlite.grad(loss)))(params),
                  lowering(jaxlite.jit(jaxlite.grad(loss)))(params),
                  lowering(jaxlite.grad(jaxlite.jit(loss)))(params)):
        assert_trees_close(grads, expected, 1e-4)


@pytest.mark.parametrize("lowering", COMPOSABLE)
def test_vmap_and_jit_in_every_order_agree_with_a_loop(lowering):
    """Per-example predictions (in_axes=(None, 0)): batched rows keep their own scales."""
    params, x, _ = composition_case()
    predict_one = lowering(predict)
    loop = np.stack([predict_one(params, row) for row in x])
    for batched in (jaxlite.vmap(jaxlite.jit(predict_one), (None, 0)),       # vmap . jit
                    jaxlite.jit(jaxlite.vmap(predict_one, (None, 0))),       # jit . vmap
                    lowering(jaxlite.jit(jaxlite.vmap(predict, (None, 0)))),
                    lowering(jaxlite.vmap(jaxlite.jit(predict), (None, 0)))):
        np.testing.assert_allclose(batched(params, x), loop, rtol=1e-5, atol=1e-5)


def test_make_jaxpr_of_nested_lowerings_shows_both_types():
    jaxpr = jaxlite.make_jaxpr(BF16_OF_INT8(mlp_layer))(normal(4, 8), normal(8, 3), normal(3))
    typecheck(jaxpr)
    text = str(jaxpr)
    assert "i8[4,8]" in text and "i32[4,3] = dot_general" in text and jaxpr.out_avals[0].dtype == np.float32


def test_make_jaxpr_of_jvp_of_int8_typechecks():
    f = lambda x, w: jaxlite.jvp(precision.int8(small_net), (x, w, w.T), (x, w, w.T))
    typecheck(jaxlite.make_jaxpr(f)(normal(2, 5), normal(5, 5)))


def test_nested_lowerings_compose():
    x, w = normal(4, 8), normal(8, 3)
    out = precision.bf16(precision.int8(jnp.matmul))(x, w)
    np.testing.assert_allclose(out, precision.int8(jnp.matmul)(x, w), rtol=0.02)


# ----------------------------------------------------------------------------- convolution

def conv(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def test_bf16_convolution_rounds_operands():
    x, k = normal(2, 6, 6, 3), normal(3, 3, 3, 4)
    np.testing.assert_allclose(precision.bf16(conv)(x, k), conv(_bf16_round(x), _bf16_round(k)),
                               rtol=1e-5, atol=1e-5)


def test_int8_convolution_is_close_and_straight_through():
    x, k, x_dot = normal(2, 6, 6, 3), normal(3, 3, 3, 4), normal(2, 6, 6, 3)
    reference = conv(x, k)
    lowered = precision.int8(conv)(x, k)
    assert np.linalg.norm(lowered - reference) <= 0.02 * np.linalg.norm(reference)
    assert "i32[2,4,6,6] = conv_general_dilated" in str(jaxlite.make_jaxpr(precision.int8(conv))(x, k))
    _, tangent = jaxlite.jvp(precision.int8(conv), (x, k), (x_dot, np.zeros_like(k)))
    np.testing.assert_allclose(tangent, conv(x_dot, k), rtol=1e-5, atol=1e-5)
    batched = jaxlite.vmap(precision.int8(conv), (0, None))(x[:, None], k)
    np.testing.assert_allclose(batched[:, 0], lowered, rtol=1e-6, atol=1e-6)


def grouped_conv(x, k, groups):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups)


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (0, None)])
def test_vmap_of_int8_convolution_agrees_with_a_loop(in_axes, groups):
    """Per-example kernels included: the batch folds into output features or feature groups,
    each example keeping its own activation and per-output-channel weight scales."""
    xs, ks = normal(3, 2, 5, 5, 4), normal(3, 3, 3, 4 // groups, 6)
    x_at = lambda i: xs[i] if in_axes[0] == 0 else xs[0]
    k_at = lambda i: ks[i] if in_axes[1] == 0 else ks[0]
    args = (xs if in_axes[0] == 0 else xs[0], ks if in_axes[1] == 0 else ks[0])
    f = functools.partial(grouped_conv, groups=groups)
    loop = np.stack([precision.int8(f)(x_at(i), k_at(i)) for i in range(3)])
    for batched in (jaxlite.vmap(precision.int8(f), in_axes), precision.int8(jaxlite.vmap(f, in_axes)),
                    jaxlite.jit(jaxlite.vmap(precision.int8(f), in_axes))):
        np.testing.assert_allclose(batched(*args), loop, rtol=1e-5, atol=1e-5)


def test_grad_of_vmapped_int8_convolution_over_kernels_is_straight_through():
    x, ks, ct = normal(2, 5, 5, 4), normal(3, 3, 3, 4, 6), normal(3, 2, 5, 5, 6)
    loss = lambda f: lambda x, ks: jnp.sum(jaxlite.vmap(f, (None, 0))(x, ks) * ct)
    expected = jaxlite.grad(loss(conv), (0, 1))(x, ks)
    for grad in (jaxlite.grad(loss(precision.int8(conv)), (0, 1)),
                 jaxlite.jit(jaxlite.grad(loss(precision.int8(conv)), (0, 1)))):
        for got, want in zip(grad(x, ks), expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- kernels

from hypothesis import given, settings, strategies as st  # noqa: E402

from jaxlite.core.dtypes import bfloat16  # noqa: E402
from jaxlite.lower import gemm, gemm_lowp  # noqa: E402

needs_bf16 = pytest.mark.skipif(not gemm_lowp.has_native("bf16"), reason="host lacks AVX512_BF16")
needs_vnni = pytest.mark.skipif(not gemm_lowp.has_native("int8"), reason="host lacks AVX512_VNNI")

# Shapes reach edge tiles (m, n not multiples of the tile), K not a whole number of groups,
# and the packed path (operands over 96 KB, or K deeper than one kc slice of words).
shapes = st.tuples(st.integers(1, 40), st.integers(1, 70), st.integers(1, 40)) | st.sampled_from(
    [(64, 200, 700), (9, 33, 1100), (130, 100, 257)])


def bf16_operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, k)).astype(bfloat16), rng.normal(size=(k, n)).astype(bfloat16)


def int8_operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(-128, 128, (m, k)).astype(np.int8),
            rng.integers(-128, 128, (k, n)).astype(np.int8))


@settings(deadline=None, max_examples=12)
@given(shapes, st.booleans())
def test_bf16_gemm_matches_numpy(shape, portable):
    m, n, k = shape
    a, b = bf16_operands(m, n, k)
    out = gemm_lowp.compile_gemm_bf16(m, n, k, portable=portable or None)(a, b)
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    bound = k * np.finfo(np.float32).eps * (np.abs(wide_a) @ np.abs(wide_b)) + 1e-30
    assert out.dtype == np.float32
    assert np.all(np.abs(out - wide_a @ wide_b) <= bound)


@settings(deadline=None, max_examples=12)
@given(shapes, st.booleans())
def test_int8_gemm_matches_numpy_exactly(shape, portable):
    m, n, k = shape
    a, b = int8_operands(m, n, k)
    out = gemm_lowp.compile_gemm_int8(m, n, k, portable=portable or None)(a, b)
    np.testing.assert_array_equal(out, a.astype(np.int32) @ b.astype(np.int32))


@needs_bf16
@pytest.mark.parametrize("shape", [(17, 45, 33), (200, 300, 700)])
def test_bf16_instruction_agrees_with_the_fallback(shape):
    a, b = bf16_operands(*shape, seed=1)
    fast = gemm_lowp.compile_gemm_bf16(*shape)
    fallback = gemm_lowp.compile_gemm_bf16(*shape, portable=True)
    np.testing.assert_allclose(fast(a, b), fallback(a, b), rtol=1e-6, atol=1e-6)


@needs_vnni
@pytest.mark.parametrize("shape", [(17, 45, 33), (200, 300, 1500)])
def test_int8_instruction_agrees_with_the_fallback_exactly(shape):
    a, b = int8_operands(*shape, seed=1)
    fast = gemm_lowp.compile_gemm_int8(*shape)
    fallback = gemm_lowp.compile_gemm_int8(*shape, portable=True)
    np.testing.assert_array_equal(fast(a, b), fallback(a, b))


@needs_bf16
@needs_vnni
def test_kernels_use_the_dot_product_instructions():
    assert "vdpbf16ps" in gemm_lowp.compile_gemm_bf16(64, 64, 64).asm()
    assert "vpdpbusd" in gemm_lowp.compile_gemm_int8(64, 64, 64).asm()
    for portable in (gemm_lowp.compile_gemm_bf16(64, 64, 64, portable=True),
                     gemm_lowp.compile_gemm_int8(64, 64, 64, portable=True)):
        asm = portable.asm()
        assert "vdpbf16ps" not in asm and "vpdpbusd" not in asm


def test_bf16_gemm_with_prepared_weights_epilogue_and_threads():
    m, n, k = 96, 130, 300
    a, b = bf16_operands(m, n, k, seed=2)
    bias = np.random.default_rng(3).normal(size=n).astype(np.float32)
    kernel = gemm_lowp.compile_gemm_bf16(m, n, k, epilogue=gemm.chain(gemm.BIAS, gemm.RELU))
    out = kernel.run(a, kernel.prepare_b(b), bias, threads=2)
    expected = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("portable", [None, True])
@pytest.mark.parametrize("m, n, k", [(96, 130, 300), (9, 17, 1200), (40, 10, 64)])
def test_bf16_gemm_writing_bf16_matches_rounding_its_float32_output(m, n, k, portable):
    """The epilogue's rounding (NaN and edge columns included) equals rounding C afterwards."""
    a, b = bf16_operands(m, n, k, seed=4)
    a[0, 0] = np.nan
    bias = np.random.default_rng(5).normal(size=n).astype(np.float32)
    epilogue = gemm.chain(gemm.BIAS, gemm.RELU)
    wide = gemm_lowp.compile_gemm_bf16(m, n, k, epilogue=epilogue, portable=portable)
    narrow = gemm_lowp.compile_gemm_bf16(m, n, k, epilogue=epilogue, portable=portable, bf16_output=True)
    out = narrow.run(a, narrow.prepare_b(b), bias, threads=2)
    expected = wide.run(a, wide.prepare_b(b), bias, threads=2).astype(bfloat16)
    assert out.dtype == bfloat16
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("portable", [None, True])
@pytest.mark.parametrize("m, n, k", [(96, 130, 300), (9, 17, 1200), (40, 10, 64)])
def test_bf16_gemm_rounding_float32_operands_as_it_packs_them(m, n, k, portable):
    """float32_a / float32_b: the operands' rounding (NaN, subnormals, edges included) in the
    GEMM's packing gives the products of operands rounded first (round_b's words), to the bit."""
    rng = np.random.default_rng(7)
    x, w = rng.normal(size=(m, k)).astype(np.float32), rng.normal(size=(k, n)).astype(np.float32)
    x[0, :2], w[0, :3] = (np.nan, 1e-40), (np.nan, 1e-40, -np.inf)
    bias = rng.normal(size=n).astype(np.float32)
    for bf16_output in (False, True):
        options = {"epilogue": gemm.BIAS, "portable": portable, "bf16_output": bf16_output}
        passed = gemm_lowp.compile_gemm_bf16(m, n, k, **options)
        expected = passed.run(x.astype(bfloat16), passed.round_b(w), bias, threads=2)
        for float32_a, float32_b in [(False, True), (True, False), (True, True)]:
            packing = gemm_lowp.compile_gemm_bf16(m, n, k, float32_a=float32_a, float32_b=float32_b, **options)
            a = x if float32_a else x.astype(bfloat16)
            b = w if float32_b else packing.round_b(w)
            np.testing.assert_array_equal(packing.run(a, b, bias, threads=2).view(np.uint8), expected.view(np.uint8))


def test_float32_operands_need_an_even_k():
    with pytest.raises(ValueError, match="even k"):
        gemm_lowp.compile_gemm_bf16(8, 8, 7, float32_a=True)


@pytest.mark.parametrize("inputs", [50, 51])
@pytest.mark.parametrize("closed_over", [False, True])
def test_bf16_mlp_layers_write_the_next_layers_bf16_operand(closed_over, inputs):
    """Under jit, bias, relu and the next product's rounding run in each bf16 GEMM's epilogue,
    and the GEMMs round their float32 operands (weights passed as arguments, the input; an
    odd K leaves the input to a conversion kernel) as they pack them: no kernel between the
    products, and eager's result (up to float32 summation order)."""
    params = [(jnp.asarray(w), jnp.asarray(b + 0.1)) for w, b in mlp.init_params([inputs, 64, 40, 10], seed=1)]
    x = normal(33, inputs)
    f = precision.bf16(lambda p, x: mlp.logits(jnp, p, x))
    g = functools.partial(f, params) if closed_over else f
    args = (x,) if closed_over else (params, x)
    jaxpr = lowered_program(g, *args).closed.jaxpr
    products = [eqn for eqn in jaxpr.eqns if eqn.primitive.name == "dot_epilogue"]
    assert [eqn.params["epilogue"] for eqn in products] == [("bias", "relu", "round_bf16")] * 2 + [("bias",)]
    input_rounded = inputs % 2 == 0
    assert [eqn.primitive.name for eqn in jaxpr.eqns] == ["convert_element_type"] * (not input_rounded) + \
        ["dot_epilogue"] * 3
    weights = () if closed_over else (1,)
    assert [eqn.params.get("rounded", ()) for eqn in products] == \
        [(0,) * input_rounded + weights] + [weights] * 2
    np.testing.assert_allclose(jaxlite.jit(g)(*args), g(*args), rtol=1e-5, atol=1e-5)


def test_int8_gemm_extremes_do_not_overflow_the_offset():
    a = np.full((8, 64), -128, np.int8)
    b = np.full((64, 16), -128, np.int8)
    out = gemm_lowp.compile_gemm_int8(8, 16, 64).run(a, b, threads=2)
    np.testing.assert_array_equal(out, 64 * 128 * 128)


def test_lowp_gemm_rejects_wrong_shapes():
    kernel = gemm_lowp.compile_gemm_int8(4, 4, 8)
    with pytest.raises(ValueError, match="shape"):
        kernel(np.zeros((4, 7), np.int8), np.zeros((8, 4), np.int8))


@pytest.mark.parametrize("portable", [None, True])
def test_int8_quantizer_and_dequantizing_epilogue_match_the_transform(portable):
    m, n, k = 33, 50, 70
    x, w = normal(m, k), normal(k, n)
    x[3] = 0     # an all-zero row quantizes to zeros
    bias = normal(n)
    kernel = gemm_lowp.compile_gemm_int8(m, n, k, portable=portable, epilogue=gemm_lowp.DEQUANTIZE_RELU)
    words, row_scale = kernel.quantize_a(x)
    q_ref, scale_ref = (np.asarray(v) for v in precision.quantize(jnp.asarray(x), (1,)))
    np.testing.assert_array_equal(row_scale, scale_ref)
    q_w, w_scale = (np.asarray(v) for v in precision.quantize(jnp.asarray(w), (0,)))
    out = kernel.run_words(words, kernel.prepare_b(q_w), row_scale, w_scale, bias, threads=2)
    expected = np.maximum(np.asarray(precision.int8(jnp.matmul)(x, w)) + bias, 0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    int_kernel = gemm_lowp.compile_gemm_int8(m, n, k, portable=portable)
    np.testing.assert_array_equal(int_kernel.run_words(words, q_w), q_ref.astype(np.int32) @ q_w.astype(np.int32))


@pytest.mark.parametrize("lowering, key", [(precision.bf16, ("bfloat16", "float32")),
                                           (precision.int8, ("int8", "int32"))])
def test_jit_runs_lowered_products_on_the_low_precision_gemms(lowering, key, monkeypatch):
    from jaxlite.lower import step_policy
    compiled = []
    original = step_policy.LOW_PRECISION_GEMMS[key]
    monkeypatch.setitem(step_policy.LOW_PRECISION_GEMMS, key,
                        lambda *shape, **options: compiled.append(shape) or original(*shape, **options))
    x, w = normal(64, 96), normal(96, 40)
    f = lambda x, w: jnp.maximum(x @ w, 0.0)
    np.testing.assert_allclose(jaxlite.jit(lowering(f))(x, w), lowering(f)(x, w), rtol=1e-5, atol=1e-4)
    assert compiled == [(64, 40, 96)]


# ----------------------------------------------------------------------------- under jit: weights, fused int8

def lowered_program(fun, *args):
    from jaxlite.lower import pipeline
    return pipeline.lower_jaxpr(jaxlite.make_jaxpr(fun)(*args))


def equation_names(program):
    return [eqn.primitive.name for eqn in program.closed.jaxpr.eqns]


def mlp_params(sizes, seed):
    return [(jnp.asarray(w), jnp.asarray(normal(w.shape[1]))) for w, _ in mlp.init_params(sizes, seed=seed)]


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_jit_with_weights_closed_over_agrees_with_eager(lowering):
    """The weights' rounding/quantization is folded at compile time by running the same
    primitive implementations as eager execution (int8 results agree to the bit; bf16
    ones up to the float32 GEMM's order of summation)."""
    params = mlp_params([48, 64, 64, 10], seed=3)
    x = normal(40, 48)
    f = lowering(lambda x: predict(params, x))
    compiled = jaxlite.jit(f)
    for _ in range(2):      # the second call reuses the weights prepared by the first
        if lowering is precision.int8:
            np.testing.assert_array_equal(compiled(x), f(x))
        else:
            np.testing.assert_allclose(compiled(x), f(x), rtol=1e-5, atol=1e-5)
    consts = lowered_program(f, x).closed.consts
    narrow = "int8" if lowering is precision.int8 else "bfloat16"
    weights = sorted(c.shape for c in map(np.asarray, consts) if c.dtype.name == narrow)
    assert weights == sorted(w.shape for w, _ in params)


@pytest.mark.parametrize("weights_closed_over", [True, False])
def test_int8_products_fuse_quantize_gemm_and_dequantize(weights_closed_over):
    params = mlp_params([48, 64, 64, 10], seed=4)
    x = normal(40, 48)
    x[5] = 0        # an all-zero row
    if weights_closed_over:
        f = precision.int8(lambda x: predict(params, x))
        args = (x,)
    else:
        f = precision.int8(predict)
        args = (params, x)
    names = equation_names(lowered_program(f, *args))
    assert names.count("int8_matmul") == 3 and "dot_general" not in names
    # Bias and relu went into the GEMM epilogue with the scales: nothing else is left
    # beyond quantizing the weights passed as arguments.
    assert "add" not in names and "max" not in names or not weights_closed_over
    np.testing.assert_array_equal(jaxlite.jit(f)(*args), f(*args))


def test_int8_matmul_impl_matches_the_transform():
    from jaxlite.lower.quantized import int8_matmul_p
    x, w, bias = normal(9, 20), normal(20, 7), normal(7)
    q_w, w_scale = (np.asarray(v) for v in precision.quantize(jnp.asarray(w), (0,)))
    out = int8_matmul_p.impl(x, q_w, w_scale, bias, dimension_numbers=(((1,), (0,)), ((), ())), relu=True,
                            quantize_weights=False)
    np.testing.assert_array_equal(out, int8_matmul_p.impl(x, w, bias, dimension_numbers=(((1,), (0,)), ((), ())),
                                                          relu=True, quantize_weights=True))
    expected = precision.int8(lambda x, w: jnp.maximum(x @ w + bias, 0.0))(x, w)
    np.testing.assert_array_equal(out, expected)


def test_products_outside_the_pattern_stay_int8_dots():
    """A batched product, or quantized operands used elsewhere, keep the plain int8 dot."""
    x, w = normal(3, 5, 8), normal(3, 8, 4)
    f = precision.int8(lambda x, w: jnp.matmul(x, w))
    assert "int8_matmul" not in equation_names(lowered_program(f, x, w))
    np.testing.assert_allclose(jaxlite.jit(f)(x, w), f(x, w), rtol=1e-5, atol=1e-5)


def executable_of(fun, *args):
    return jaxlite.jit(fun).lower(*args).compile().executable


@pytest.mark.parametrize("lowering", [precision.bf16, precision.int8])
@pytest.mark.parametrize("weights_closed_over", [True, False])
@pytest.mark.parametrize("k", [96, 95])
def test_products_run_inside_one_native_call(lowering, weights_closed_over, k, monkeypatch):
    """A lowered product is jobs of the native pool run from the program's one entry point:
    no Python between them; constant weights are packed once, when the code is bound."""
    from jaxlite.lower import gemm_lowp, native_flow, runtime
    prepared = []
    original = gemm_lowp.LowPrecisionGemm.prepare_b
    monkeypatch.setattr(gemm_lowp.LowPrecisionGemm, "prepare_b",
                        lambda self, b, **options: prepared.append(b.shape) or original(self, b, **options))
    monkeypatch.setattr(runtime.PythonStep, "run_on", lambda *a: pytest.fail("a step ran from Python"))
    monkeypatch.setattr(native_flow.HostBridge, "_run_step", lambda *a: pytest.fail("native code called back"))
    x, w, b = normal(64, k), normal(k, 40), normal(40)
    layer = lambda x, w: jnp.tanh(jnp.maximum(x @ w + b, 0.0) @ w.T)
    f = lowering((lambda x: layer(x, w)) if weights_closed_over else layer)
    args = (x,) if weights_closed_over else (x, w)
    jitted = jaxlite.jit(f)
    first = jitted(*args)
    assert len(prepared) == (2 if weights_closed_over else 0)
    np.testing.assert_allclose(first, f(*args), rtol=2e-5, atol=2e-5)
    for _ in range(3):
        np.testing.assert_array_equal(jitted(*args), first)
    assert len(prepared) == (2 if weights_closed_over else 0)
    exe = executable_of(f, *args)
    assert exe._native is not None and not exe._runners


@pytest.mark.parametrize("lowering", [precision.bf16, precision.int8])
def test_products_in_a_loop_body_run_natively(lowering):
    """Weights closed over by the body (its constants) and carried ones alike."""
    x, w, v = normal(32, 48), normal(48, 48), normal(48, 48)

    def f(x, v):
        return lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h @ w) @ v, x)
    lowered = lowering(f)
    np.testing.assert_allclose(jaxlite.jit(lowered)(x, v), lowered(x, v), rtol=2e-5, atol=2e-5)
    exe = executable_of(lowered, x, v)
    assert exe._native is not None and not exe._runners and not exe._host_steps


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.int8])
@pytest.mark.parametrize("k", [64, 63, 62])
def test_narrow_operands_computed_in_the_program(dtype, k):
    """Narrow operands the program computes (not rounded from float32 by the GEMM): padded
    and packed by jobs on every call."""
    x, w = normal(40, k), normal(k, 24)
    accumulator = jnp.float32 if dtype == jnp.bfloat16 else jnp.int32

    def f(x, w):
        narrow = lambda v: (v * 8.0).astype(dtype) if dtype == jnp.int8 else v.astype(dtype)
        a, b = narrow(x), narrow(w)
        return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=accumulator), a, b
    out, a, b = jaxlite.jit(f)(x, w)
    expected = np.asarray(a).astype(np.float64) @ np.asarray(b).astype(np.float64)
    if dtype == jnp.int8:
        np.testing.assert_array_equal(out, expected.astype(np.int32))
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)
    exe = executable_of(f, x, w)
    assert exe._native is not None and not exe._runners


def test_passes_on_several_threads_match_one(monkeypatch):
    from jaxlite.lower import gemm_lowp
    monkeypatch.setattr(gemm_lowp, "PASS_MIN_ELEMENTS_PER_THREAD", 1)     # split even these small passes
    x, w = normal(300, 400), normal(400, 90)
    int8, bf16 = gemm_lowp.compile_gemm_int8(300, 90, 400), gemm_lowp.compile_gemm_bf16(300, 90, 400)
    for one, two in [(int8.quantize_a(x, threads=1), int8.quantize_a(x, threads=2)),
                     (int8.quantize_b(w, threads=1), int8.quantize_b(w, threads=2)),
                     ((bf16.round_b(w, threads=1),), (bf16.round_b(w, threads=2),))]:
        for a, b in zip(one, two):
            a, b = (v.words if isinstance(v, gemm_lowp.PreparedB) else v for v in (a, b))
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("portable", [None, True])
@pytest.mark.parametrize("k, n", [(70, 50), (33, 7), (64, 130)])
def test_quantize_b_matches_quantize_then_prepare_b(k, n, portable):
    from jaxlite.lower import gemm_lowp
    w = normal(k, n)
    w[:, 3] = 0     # an all-zero column quantizes to zeros
    kernel = gemm_lowp.compile_gemm_int8(16, n, k, portable=portable)
    prepared, scales = kernel.quantize_b(w, threads=2)
    q_w, w_scale = (np.asarray(v) for v in precision.quantize(jnp.asarray(w), (0,)))
    expected = kernel.prepare_b(q_w)
    np.testing.assert_array_equal(scales, w_scale)
    np.testing.assert_array_equal(prepared.words, expected.words)
    if expected.column_correction is None:
        assert prepared.column_correction is None
    else:
        np.testing.assert_array_equal(prepared.column_correction, expected.column_correction)


@pytest.mark.parametrize("portable", [None, True])
@pytest.mark.parametrize("k, n", [(70, 50), (33, 7), (1, 130)])
def test_round_b_matches_rounding_then_prepare_b(k, n, portable):
    w = normal(k, n)
    w[0, :3] = np.nan, 1e-40, -np.inf
    kernel = gemm_lowp.compile_gemm_bf16(16, n, k, portable=portable)
    rounded = kernel.round_b(w, threads=2)
    expected = kernel.prepare_b(np.asarray(jnp.asarray(w).astype(jnp.bfloat16)))
    np.testing.assert_array_equal(rounded.words.view(np.uint32), expected.words.view(np.uint32))
    assert rounded.column_correction is None


@pytest.mark.parametrize("layer, rounded_by_gemm", [
    (lambda x, w, b: jnp.maximum(x @ w + b, 0.0), True),
    (lambda x, w, b: x @ w + (2.0 * x) @ w, False),     # one rounding, read by two GEMMs
])
def test_bf16_weights_as_arguments_are_rounded_by_the_gemm_step(layer, rounded_by_gemm):
    """A product whose rounded weights nothing else reads is one GEMM step taking the float32
    weights: no conversion kernel for them is left."""
    x, w, b = normal(64, 96), normal(96, 40), normal(40)
    f = precision.bf16(layer)
    jaxpr = lowered_program(f, x, w, b).closed.jaxpr
    gemm_weights = [eqn.inputs[1].aval.dtype for eqn in jaxpr.eqns if eqn.primitive.name.startswith("dot_")]
    converted = [eqn.inputs[0] for eqn in jaxpr.eqns if eqn.primitive.name == "convert_element_type"]
    if rounded_by_gemm:
        assert gemm_weights == [np.float32] and jaxpr.invars[1] not in converted
    else:
        assert gemm_weights == [np.dtype(jnp.bfloat16)] * 2 and jaxpr.invars[1] in converted
    np.testing.assert_allclose(jaxlite.jit(f)(x, w, b), f(x, w, b), rtol=1e-5, atol=1e-5)


def test_fold_constant_operands_keeps_folded_outputs_defined():
    from jaxlite.core.staging import eval_jaxpr
    from jaxlite.lower import passes
    w, x = jnp.asarray(normal(8, 6)), normal(4, 8)

    def f(x):
        doubled = w * 2.0
        # `doubled` is folded on the way to the product's operand and read by nothing else
        return x @ (doubled + 1.0), doubled
    closed = jaxlite.make_jaxpr(f)(x)
    folded = passes.fold_constant_operands(closed, lambda eqn: eqn.primitive.name == "dot_general")
    typecheck(folded)
    assert [eqn.primitive.name for eqn in folded.jaxpr.eqns] == ["dot_general"]
    for got, want in zip(eval_jaxpr(folded.jaxpr, folded.consts, x), f(x)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("lowering", [precision.bf16, precision.int8])
def test_lowered_programs_load_from_the_disk_cache(lowering, tmp_path):
    """Constant weights are packed again when the cached code is bound, in the loaded process."""
    from jaxlite.test_util import jit_twice_through_the_disk_cache
    x, w, v = normal(48, 64), normal(64, 32), normal(32, 32)
    f = lowering(lambda x, v: lax.fori_loop(0, 2, lambda i, h: jnp.tanh(h @ v), jnp.maximum(x @ w, 0.0)))
    first, second = jit_twice_through_the_disk_cache(f, (x, v), tmp_path / "cache")
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, f(x, v), rtol=2e-5, atol=2e-5)


def test_compiled_text_shows_the_low_precision_gemms_and_their_plans():
    x, w = normal(256, 512), normal(512, 384)
    text = jaxlite.jit(precision.int8(lambda x, w: x @ w)).lower(x, w).compile().as_text()
    assert "gemm 256x384x512 int8-" in text and "thread" in text
