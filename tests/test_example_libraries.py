"""jaxlite.example_libraries: stax networks trained by every optimizer give JAX's losses
(recorded by tests/data/record_jax_example_libraries.py)."""
import json
import pathlib
import sys
import types

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.example_libraries import optimizers, stax

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from record_jax_example_libraries import runs  # noqa: E402

EXPECTED = json.loads((DATA / "jax_example_libraries.json").read_text())


@pytest.fixture(scope="module")
def eager_runs():
    # Eager steps keep the test quick; test_training_under_jit covers jit.
    eager = types.SimpleNamespace(jit=lambda f: f, grad=jaxlite.grad, random=jaxlite.random)
    return runs(eager, stax, optimizers)


@pytest.mark.parametrize("name", sorted(k for k in EXPECTED if k != "source"))
def test_losses_match_jax(eager_runs, name):
    np.testing.assert_allclose(eager_runs[name], EXPECTED[name], rtol=2e-6, atol=1e-6)


def test_training_under_jit():
    got = runs(jaxlite, stax, optimizers, only={"mlp adam"})
    np.testing.assert_allclose(got["mlp adam"], EXPECTED["mlp adam"], rtol=2e-6, atol=1e-6)


def test_optimizer_state_round_trip_and_utilities():
    opt_init, update, get_params = optimizers.momentum(0.1, 0.9)
    params = {"w": jnp.ones((2, 2)), "b": [jnp.zeros(2)]}
    state = update(0, params, opt_init(params))
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    np.testing.assert_array_equal(get_params(packed)["w"], get_params(state)["w"])
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        update(1, {"w": jnp.ones((2, 2))}, state)
    clipped = optimizers.clip_grads({"a": jnp.array([3.0, 4.0])}, 1.0)
    np.testing.assert_allclose(optimizers.l2_norm(clipped), 1.0, rtol=1e-6)
    assert float(optimizers.polynomial_decay(1.0, 10, 0.0)(5)) == 0.5
    assert float(optimizers.inverse_time_decay(1.0, 2, 1.0, staircase=True)(3)) == 0.5


def test_layer_shapes_and_dropout():
    init, apply = stax.serial(stax.Conv(3, (2, 2), strides=(2, 2)), stax.Relu, stax.Flatten,
                              stax.Dropout(0.5), stax.Dense(4))
    out_shape, params = init(jaxlite.random.PRNGKey(1), (2, 8, 8, 1))
    assert out_shape == (2, 4)
    x = jnp.ones((2, 8, 8, 1))
    assert apply(params, x, rng=jaxlite.random.PRNGKey(2)).shape == (2, 4)
    with pytest.raises(ValueError, match="PRNG key"):
        apply(params, x)
