"""jax.nn's attention and the smaller functions added with it, against JAX and numpy."""
import pathlib
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import nn
from jaxlite.test_util import check_grads

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from record_jax_attention import cases, inputs  # noqa: E402

EXPECTED = np.load(DATA / "jax_attention.npz")


@pytest.mark.parametrize("name", sorted(EXPECTED.files))
def test_attention_matches_jax(name):
    np.testing.assert_allclose(cases(nn, jnp)[name](), EXPECTED[name], rtol=1e-5, atol=2e-6)


def test_attention_under_jit_and_grad():
    x = inputs()
    q, k, v = (jnp.asarray(x[n][:1, :3, :2, :4]) for n in "qkv")
    attend = lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(jaxlite.jit(attend)(q, k, v), attend(q, k, v), rtol=1e-6, atol=1e-7)
    check_grads(attend, [q, k, v], order=1, rtol=2e-2, atol=2e-2)


def test_attention_errors():
    q = jnp.zeros((1, 2, 3, 4))
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        nn.dot_product_attention(q, jnp.zeros((1, 2, 2, 4)), jnp.zeros((1, 2, 2, 4)))
    with pytest.raises(ValueError, match="mask dtype"):
        nn.dot_product_attention(q, q, q, mask=jnp.ones((1, 1, 2, 2)))
    with pytest.raises(ValueError, match="implementation"):
        nn.dot_product_attention(q, q, q, implementation="cudnn")


def test_small_functions():
    x = np.array([-2.0, -0.5, 0.3, 1.0, 4.0], np.float32)
    np.testing.assert_allclose(nn.sparse_plus(x), np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)))
    np.testing.assert_allclose(nn.sparse_sigmoid(x), np.clip((x + 1) / 2, 0, 1))
    positive = np.array([1e-6, 0.1, 0.69, 0.7, 5.0, 30.0])
    accurate = np.where(positive < 1, np.log(-np.expm1(-positive)), np.log1p(-np.exp(-positive)))  # float64
    np.testing.assert_allclose(nn.log1mexp(positive.astype(np.float32)), accurate, rtol=1e-5)
    np.testing.assert_allclose(nn.logmeanexp(x), np.log(np.mean(np.exp(x))), rtol=1e-6)
    where = np.array([True, False, True, True, False])
    np.testing.assert_allclose(nn.logmeanexp(x, where=where), np.log(np.mean(np.exp(x[where]))), rtol=1e-6)
    np.testing.assert_allclose(nn.tanh(x), np.tanh(x), rtol=1e-6)
    check_grads(nn.sparse_plus, [jnp.array([-0.5, 0.3, 2.0])], order=2)
    check_grads(nn.log1mexp, [jnp.array([0.2, 3.0])], order=1)


def test_orthogonal_initializers():
    from jaxlite.nn import initializers
    key = jaxlite.random.PRNGKey(3)
    w = np.asarray(initializers.orthogonal(2.0, column_axis=0)(key, (3, 2, 5)), dtype=np.float64)
    rows = np.moveaxis(w, 0, -1).reshape(10, 3)   # columns along axis 0, the rest as rows
    np.testing.assert_allclose(rows.T @ rows, 4 * np.eye(3), atol=1e-5)
    kernel = np.asarray(initializers.delta_orthogonal()(key, (3, 3, 2, 4)))
    assert np.count_nonzero(np.abs(kernel).sum((-2, -1))) == 1 and np.abs(kernel[1, 1]).sum() > 0
    np.testing.assert_allclose(kernel[1, 1] @ kernel[1, 1].T, np.eye(2), atol=1e-5)
    with pytest.raises(ValueError, match="2D"):
        initializers.orthogonal()(key, (3,))
