"""Ordering tokens (lax.create_token, lax.after_all), lax.dce_sink and lax.composite, against
JAX's printed jaxprs and values (tests/token_cases.py, tests/data/jax_tokens.json)."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
import token_cases
from jaxlite import dtypes, lax
from typed_key_cases import eager_and_jit, recorded

_RECORDED = recorded("jax_tokens.json")
_CASES = token_cases.cases(jaxlite, jnp, lax)


@pytest.mark.parametrize("name", sorted(_CASES))
def test_values_as_jax_eagerly_and_under_jit(name):
    fun, make_args = _CASES[name]
    expected = _RECORDED[name]["value"]
    for got in eager_and_jit(jaxlite, token_cases.plain, fun, make_args()):
        if "composite" in name:     # sin / cos: within float32 rounding of XLA's
            np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float), rtol=1e-6)
        else:
            assert got == expected


@pytest.mark.parametrize("name", sorted(set(_CASES) - set(token_cases.PRINTED_DIFFERENTLY)))
def test_jaxprs_print_as_jax_prints_them(name):
    fun, make_args = _CASES[name]
    assert str(jaxlite.make_jaxpr(fun)(*make_args())) == _RECORDED[name]["jaxpr"]


def test_tokens_through_jit_control_flow_and_vmap():
    token = lax.create_token()
    assert str(jaxlite.typeof(token)) == "AbstractToken()"
    threaded = jaxlite.jit(lambda t, xs: lax.scan(lambda t, x: (lax.after_all(t), x * 2), t, xs))(token, jnp.arange(3.0))
    assert isinstance(threaded[0], type(token))
    np.testing.assert_array_equal(threaded[1], [0.0, 2.0, 4.0])
    batched = jaxlite.vmap(lambda x, t: (lax.after_all(t), x + 1), in_axes=(0, None))(jnp.arange(3.0), token)
    assert isinstance(batched[0], type(token))
    np.testing.assert_array_equal(batched[1], [1.0, 2.0, 3.0])
    grads = jaxlite.grad(lambda x, t: x * 3.0, argnums=(0, 1), allow_int=True)(1.0, token)
    assert grads[0] == 3.0 and grads[1].dtype == dtypes.float0
    with pytest.raises(TypeError, match="token"):
        lax.after_all(jnp.ones(2))


def test_dce_sink_keeps_nothing_in_compiled_code_and_returns_none():
    assert lax.dce_sink(jnp.ones(3)) is None
    assert jaxlite.jit(lambda x: lax.dce_sink(x))(1.0) is None
    np.testing.assert_array_equal(jaxlite.vmap(lambda x: (lax.dce_sink(x), x * 2)[1])(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    assert jaxlite.grad(lambda x: (lax.dce_sink(x), x * 2)[1])(1.0) == 2.0


def test_composite_has_no_derivative_or_batching_rule_as_in_jax():
    tangent = lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tangent")
    with pytest.raises(NotImplementedError, match="composite"):
        jaxlite.grad(tangent)(0.5)
    with pytest.raises(NotImplementedError, match="composite"):
        jaxlite.vmap(tangent)(jnp.ones(2))
