"""jaxlite.nn: activations against NumPy formulas, derivatives against finite differences,
stability of the normalizing reductions, and the initializers."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import nn, random
from jaxlite.core.ir import typecheck
from jaxlite.nn import initializers

_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> (jaxlite function, float64 NumPy reference)
ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, _sigmoid),
    "softplus": (nn.softplus, lambda x: np.logaddexp(x, 0)),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -np.logaddexp(-x, 0)),
    "silu": (nn.silu, lambda x: x * _sigmoid(x)),
    "swish": (nn.swish, lambda x: x * _sigmoid(x)),
    "gelu_tanh": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    "elu": (nn.elu, _elu),
    "elu_alpha": (lambda x: nn.elu(x, 0.5), lambda x: _elu(x, 0.5)),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "celu": (lambda x: nn.celu(x, 2.0), lambda x: np.maximum(x, 0) + 2.0 * np.expm1(np.minimum(x, 0) / 2.0)),
    "selu": (nn.selu, lambda x: SELU_SCALE * _elu(x, SELU_ALPHA)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hard_swish": (nn.hard_swish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    "mish": (nn.mish, lambda x: x * np.tanh(np.logaddexp(x, 0))),
    "identity": (nn.identity, lambda x: x),
}

# Points away from each function's kinks, for finite differences.
SMOOTH_POINTS = np.array([-4.1, -2.3, -0.7, -0.2, 0.3, 0.9, 1.7, 3.3, 4.4, 7.3])


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values(name):
    fn, reference = ACTIVATIONS[name]
    x = np.linspace(-8, 8, 161).astype(np.float32)
    out = fn(jnp.asarray(x))
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_allclose(np.asarray(out), reference(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.fixture
def x64():
    jaxlite.config.update("jax_enable_x64", True)
    yield
    jaxlite.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_jvp_matches_finite_differences(name, x64):
    fn, _ = ACTIVATIONS[name]
    x = jnp.asarray(SMOOTH_POINTS)
    direction = jnp.asarray(np.linspace(0.5, 1.5, SMOOTH_POINTS.size))
    _, tangent = jaxlite.jvp(fn, (x,), (direction,))
    h = 1e-6
    numeric = (np.asarray(fn(x + h * direction)) - np.asarray(fn(x - h * direction))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn, point, slope", [
    (nn.relu, 0.0, 0.0), (nn.relu6, 0.0, 0.0), (nn.relu6, 6.0, 0.0), (nn.relu6, 3.0, 1.0),
    (nn.leaky_relu, 0.0, 1.0), (nn.celu, 0.0, 1.0), (nn.elu, 0.0, 1.0),
    (nn.softplus, 0.0, 0.5), (nn.hard_tanh, 0.5, 1.0), (nn.hard_tanh, 2.0, 0.0),
])
def test_derivatives_at_kinks(fn, point, slope):
    _, tangent = jaxlite.jvp(fn, (jnp.asarray(np.float32(point)),), (jnp.asarray(np.float32(1.0)),))
    assert float(tangent) == slope


def test_relu_keeps_nan_and_integer_dtype():
    assert np.isnan(float(nn.relu(jnp.asarray(np.float32(np.nan)))))
    out = nn.relu(jnp.asarray([-2, 3]))
    assert out.dtype == np.int32 and out.tolist() == [0, 3]


@pytest.mark.parametrize("name", ["relu", "sigmoid", "gelu_tanh", "softplus", "elu"])
def test_activations_keep_low_precision_dtypes(name):
    fn, _ = ACTIVATIONS[name]
    assert fn(jnp.ones(3, jnp.bfloat16)).dtype == jnp.bfloat16
    assert fn(jnp.ones(3, jnp.float16)).dtype == jnp.float16


def test_large_inputs_do_not_overflow():
    big = jnp.asarray(np.array([-1e4, -100.0, 100.0, 1e4], np.float32))
    np.testing.assert_allclose(nn.softplus(big), [0, 0, 100, 1e4], atol=1e-30)
    np.testing.assert_allclose(nn.sigmoid(big), [0, 0, 1, 1], atol=1e-30)
    np.testing.assert_allclose(nn.log_sigmoid(big), [-1e4, -100, 0, 0], atol=1e-30)
    assert np.isfinite(np.asarray(nn.elu(big))).all()


def test_glu():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(nn.glu(jnp.asarray(x)), x[:, :2] * _sigmoid(x[:, 2:]), rtol=1e-6)
    np.testing.assert_allclose(nn.glu(jnp.asarray(x.T), axis=0), (x[:, :2] * _sigmoid(x[:, 2:])).T, rtol=1e-6)
    with pytest.raises(ValueError, match="odd"):
        nn.glu(jnp.ones((3, 3)))


# ---------------------------------------------------------------- normalizing reductions


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@settings(deadline=None, max_examples=25)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_softmax_family_matches_numpy(shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 10 ** 6)))
    x = (rng.normal(size=shape) * 5).astype(np.float32)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    expected = _np_softmax(x.astype(np.float64), axis)
    np.testing.assert_allclose(nn.softmax(jnp.asarray(x), axis), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(nn.log_softmax(jnp.asarray(x), axis), np.log(expected), rtol=1e-5, atol=1e-5)
    keepdims = data.draw(st.booleans())
    lse = np.log(np.exp(x.astype(np.float64)).sum(axis, keepdims=keepdims))
    # atol: the result can cancel to near zero, leaving float32 rounding of the terms.
    np.testing.assert_allclose(nn.logsumexp(jnp.asarray(x), axis, keepdims=keepdims), lse, rtol=1e-5,
                               atol=1e-5)


def test_softmax_and_logsumexp_are_stable_for_huge_inputs():
    x = jnp.asarray(np.array([[1000.0, 1000.0, 990.0], [-1000.0, -1001.0, -3000.0]], np.float32))
    np.testing.assert_allclose(nn.softmax(x)[0], _np_softmax(np.array([0.0, 0.0, -10.0]), 0), rtol=1e-6)
    np.testing.assert_allclose(nn.softmax(x)[1], _np_softmax(np.array([0.0, -1.0, -2000.0]), 0), rtol=1e-6)
    np.testing.assert_allclose(nn.logsumexp(x, axis=1),
                               [1000 + np.log(2 + np.exp(-10)), -1000 + np.log1p(np.exp(-1))], rtol=1e-6)
    assert np.isfinite(np.asarray(nn.log_softmax(x))).all()
    assert float(nn.logsumexp(jnp.asarray(np.array([-np.inf, -np.inf], np.float32)))) == -np.inf


def test_logsumexp_whole_array_weights_and_sign():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    np.testing.assert_allclose(nn.logsumexp(jnp.asarray(x)), np.log(np.exp(x).sum()), rtol=1e-6)
    b = np.array([[1.0, -1.0], [0.5, 0.0]], np.float32)
    total = (b * np.exp(x)).sum(axis=1)
    out, sign = nn.logsumexp(jnp.asarray(x), axis=1, b=jnp.asarray(b), return_sign=True)
    np.testing.assert_allclose(out, np.log(np.abs(total)), rtol=1e-6)
    np.testing.assert_array_equal(sign, np.sign(total))
    plain = np.asarray(nn.logsumexp(jnp.asarray(x), axis=1, b=jnp.asarray(b)))
    assert np.isnan(plain[0]) and np.isclose(plain[1], np.log(total[1]))


def test_masked_softmax_family():
    x = jnp.asarray(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    mask = jnp.asarray([True, False, True, False])
    np.testing.assert_allclose(nn.softmax(x, where=mask), [_sigmoid(-2.0), 0, _sigmoid(2.0), 0], rtol=1e-6)
    log_out = np.asarray(nn.log_softmax(x, where=mask))
    assert np.isneginf(log_out[[1, 3]]).all()
    np.testing.assert_allclose(log_out[[0, 2]], np.log([_sigmoid(-2.0), _sigmoid(2.0)]), rtol=1e-6)
    np.testing.assert_allclose(nn.logsumexp(x, where=mask), np.log(np.e + np.e ** 3), rtol=1e-6)


def test_softmax_jvp_matches_its_jacobian(x64):
    x = jnp.asarray(np.array([0.3, -1.2, 2.0, 0.5]))
    t = jnp.asarray(np.array([1.0, 0.5, -0.25, 2.0]))
    s = np.asarray(nn.softmax(x))
    _, t_out = jaxlite.jvp(nn.softmax, (x,), (t,))
    np.testing.assert_allclose(t_out, (np.diag(s) - np.outer(s, s)) @ np.asarray(t), rtol=1e-12)
    _, t_lse = jaxlite.jvp(lambda v: nn.logsumexp(v), (x,), (t,))
    np.testing.assert_allclose(float(t_lse), s @ np.asarray(t), rtol=1e-12)
    _, t_log = jaxlite.jvp(nn.log_softmax, (x,), (t,))
    np.testing.assert_allclose(t_log, np.asarray(t) - s @ np.asarray(t), rtol=1e-12)


def test_softmax_under_vmap_and_make_jaxpr():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32))
    np.testing.assert_allclose(jaxlite.vmap(nn.softmax)(x), nn.softmax(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(jaxlite.vmap(nn.logsumexp)(x), nn.logsumexp(x, axis=1), rtol=1e-6)
    closed = jaxlite.make_jaxpr(lambda v: nn.log_softmax(nn.gelu(v, approximate=False)))(x)
    typecheck(closed.jaxpr)


def test_standardize():
    x = np.random.default_rng(1).normal(3.0, 2.0, size=(4, 50)).astype(np.float32)
    out = np.asarray(nn.standardize(jnp.asarray(x)))
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    given_stats = nn.standardize(jnp.asarray(x), mean=1.0, variance=4.0, epsilon=0.0)
    np.testing.assert_allclose(given_stats, (x - 1) / 2, rtol=1e-6)
    constant = nn.standardize(jnp.full((3,), 7.0))
    np.testing.assert_array_equal(constant, [0, 0, 0])


def test_one_hot():
    labels = jnp.asarray([0, 2, -1, 3])
    out = nn.one_hot(labels, 3)
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    assert out.dtype == np.float32
    columns = nn.one_hot(labels, 3, dtype=jnp.int32, axis=0)
    assert columns.dtype == np.int32
    np.testing.assert_array_equal(columns, np.asarray(out).T)
    grid = nn.one_hot(jnp.asarray([[1, 0], [2, 1]]), 3, axis=1)
    assert grid.shape == (2, 3, 2)
    np.testing.assert_array_equal(grid[:, :, 0], [[0, 1, 0], [0, 0, 1]])


# ---------------------------------------------------------------- initializers

KEY = random.PRNGKey(11)


def test_constant_initializers():
    np.testing.assert_array_equal(initializers.zeros(KEY, (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(initializers.ones(KEY, (4,), jnp.bfloat16), np.ones(4))
    assert initializers.ones(KEY, (4,), jnp.bfloat16).dtype == jnp.bfloat16
    filled = initializers.constant(-7, jnp.int32)(KEY, (2, 2))
    assert filled.dtype == np.int32 and filled.tolist() == [[-7, -7], [-7, -7]]


def test_simple_random_initializers():
    shape = (200, 100)
    normal = np.asarray(initializers.normal(0.5)(KEY, shape), np.float64)
    assert abs(normal.std() - 0.5) < 0.01 and abs(normal.mean()) < 0.01
    uniform = np.asarray(initializers.uniform(3.0)(KEY, shape))
    assert uniform.min() >= 0 and uniform.max() < 3 and abs(uniform.mean() - 1.5) < 0.05
    truncated = np.asarray(initializers.truncated_normal(2.0)(KEY, shape))
    assert np.abs(truncated).max() < 4.0
    np.testing.assert_array_equal(initializers.normal(0.5)(KEY, (3,)), random.normal(KEY, (3,)) * 0.5)
    assert initializers.normal(dtype=jnp.float16)(KEY, (3,)).dtype == jnp.float16


@pytest.mark.parametrize("builder, scale, mode", [
    (initializers.glorot_uniform, 1.0, "fan_avg"), (initializers.glorot_normal, 1.0, "fan_avg"),
    (initializers.lecun_uniform, 1.0, "fan_in"), (initializers.lecun_normal, 1.0, "fan_in"),
    (initializers.he_uniform, 2.0, "fan_in"), (initializers.he_normal, 2.0, "fan_in"),
    (initializers.xavier_uniform, 1.0, "fan_avg"), (initializers.kaiming_normal, 2.0, "fan_in"),
])
def test_variance_scaling_presets(builder, scale, mode):
    shape = (300, 200)
    fans = {"fan_in": 300, "fan_avg": 250}
    w = builder()(KEY, shape)
    assert w.shape == shape and w.dtype == np.float32
    w = np.asarray(w, np.float64)
    np.testing.assert_allclose(w.var(), scale / fans[mode], rtol=0.05)
    assert abs(w.mean()) < 0.005


@pytest.mark.parametrize("distribution", ["normal", "uniform", "truncated_normal"])
@pytest.mark.parametrize("mode, denominator", [
    ("fan_in", 16 * 9), ("fan_out", 32 * 9), ("fan_avg", 24 * 9), ("fan_geo_avg", math.sqrt(16 * 32) * 9)])
def test_variance_scaling_counts_the_receptive_field(distribution, mode, denominator):
    w = np.asarray(initializers.variance_scaling(3.0, mode, distribution)(KEY, (3, 3, 16, 32)), np.float64)
    np.testing.assert_allclose(w.var(), 3.0 / denominator, rtol=0.1)


def test_variance_scaling_axes_and_errors():
    init = initializers.variance_scaling(1.0, "fan_in", "normal", in_axis=0, out_axis=2, batch_axis=1)
    w = np.asarray(init(KEY, (400, 8, 10)), np.float64)
    np.testing.assert_allclose(w.var(), 1 / 400, rtol=0.05)
    with pytest.raises(ValueError, match="at least 2D"):
        initializers.glorot_uniform()(KEY, (5,))
    with pytest.raises(ValueError, match="mode"):
        initializers.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(ValueError, match="distribution"):
        initializers.variance_scaling(1.0, "fan_in", "cauchy")(KEY, (2, 2))


def test_initializer_under_vmap_over_keys():
    keys = random.split(KEY, 3)
    init = initializers.glorot_normal()
    batched = jaxlite.vmap(lambda k: init(k, (4, 5)))(keys)
    for i in range(3):
        np.testing.assert_array_equal(batched[i], init(keys[i], (4, 5)))
