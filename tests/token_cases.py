"""Functions of ordering tokens, dce_sink and composite, written once for JAX and jaxlite (as
typed_key_cases.py): tests/data/record_jax_typed_keys.py records JAX's printed jaxprs and
values to tests/data/jax_tokens.json, test_tokens.py compares jaxlite with them."""
import numpy as np

# Printed differently for reasons unrelated to tokens: JAX names a jit body's result after the
# caller's variable.
PRINTED_DIFFERENTLY = ("jit_after_all", "jit_composite")


def cases(jax, jnp, lax):
    def token():
        return (lax.create_token(),)

    tangent = lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tangent")
    scaled = lax.composite(lambda x, *, n, unused: (x * n, x + n), name="my.scaled", version=2)
    return {
        "create_token": (lambda: lax.create_token(), lambda: ()),
        "create_token_ignores": (lambda x: lax.create_token(x), lambda: (1.0,)),
        "after_all": (lambda t: lax.after_all(t, t), token),
        "after_all_none": (lambda: lax.after_all(), lambda: ()),
        "jit_after_all": (jax.jit(lambda t: lax.after_all(t, lax.create_token())), token),
        "token_and_value": (jax.jit(lambda t, x: (lax.after_all(t), x + 1)), lambda: (lax.create_token(), 1.0)),
        "dce_sink": (lambda x: lax.dce_sink(x), lambda: (1.0,)),
        "dce_sink_tree": (lambda x: lax.dce_sink({"a": x, "b": (x, 2 * x)}), lambda: (jnp.ones(2),)),
        "jit_dce_sink": (jax.jit(lambda x: (lax.dce_sink(x), x * 2)[1]), lambda: (1.0,)),
        "composite": (lambda x: tangent(x), lambda: (jnp.array([0.0, 0.5, 1.0]),)),
        "composite_attributes": (lambda x: scaled(x, n=3.0, unused=None), lambda: (jnp.ones(2),)),
        "jit_composite": (jax.jit(lambda x: tangent(x) * 2), lambda: (jnp.array([0.25, 0.5]),)),
    }


def plain(jax, value):
    """A result as JSON data: a token as "token", arrays as lists."""
    if isinstance(value, (tuple, list)):
        return [plain(jax, v) for v in value]
    if value is None:
        return None
    if type(value).__name__ == "Token":
        return "token"
    return np.asarray(value).tolist()
