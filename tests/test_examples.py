import numpy as np

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.examples import mlp


def test_numpy_baseline_gradient_matches_directional_derivative():
    params = mlp.init_params([2, 8, 3], seed=1)
    x, labels = mlp.two_spirals(20)
    y = mlp.one_hot(labels % 3, 3)
    _, grads = mlp.numpy_loss_and_grads(params, x, y)
    direction = [(np.ones_like(w), np.ones_like(b)) for w, b in params]
    _, derivative = jaxlite.jvp(lambda p: mlp.loss(jnp, p, x, y), (params,), (direction,))
    expected = sum(float(gw.sum() + gb.sum()) for gw, gb in grads)
    np.testing.assert_allclose(float(derivative), expected, rtol=1e-4)


def test_numpy_loss_matches_jaxlite_loss():
    params = mlp.init_params([2, 16, 2])
    x, labels = mlp.two_spirals(30)
    y = mlp.one_hot(labels, 2)
    value, _ = mlp.numpy_loss_and_grads(params, x, y)
    np.testing.assert_allclose(float(mlp.loss(jnp, params, x, y)), value, rtol=1e-5)
