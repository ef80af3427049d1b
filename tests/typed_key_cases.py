"""Functions of typed PRNG keys, written once for JAX and jaxlite: `cases(jax, jnp, lax)` gives
name -> (function, arguments). tests/data/record_jax_typed_keys.py (run with JAX's Python)
writes JAX's printed jaxprs and values to tests/data/jax_typed_keys.json; test_typed_keys.py
compares jaxlite with them."""
import json
from pathlib import Path

import numpy as np

# Cases whose printed jaxprs differ from JAX's for reasons unrelated to keys: jaxlite prints no
# `sharding=None` on reshape, keeps a bool cond predicate's convert, folds an iota and a constant
# index's normalization to constants, fits a short jaxpr on one line where JAX does not, inlines
# jnp.where's jit and samples uniforms with other (bit-identical) primitives.
PRINTED_DIFFERENTLY = ("reshape", "vmap_fold_in", "cond", "while", "gather", "where", "uniform")


def cases(jax, jnp, lax):
    random = jax.random

    def key():
        return (random.key(0),)

    def keys():
        return (random.split(random.key(0), 4),)

    def raw():
        return (random.PRNGKey(0),)

    return {
        "split": (lambda k: random.split(k), key),
        "split_shape": (lambda k: random.split(k, (2, 3)), key),
        "fold_in": (lambda k: random.fold_in(k, 3), key),
        "bits": (lambda k: random.bits(k, (3,)), key),
        "bits8": (lambda k: random.bits(k, (2, 2), jnp.uint8), key),
        "seed": (lambda s: random.key(s), lambda: (1,)),
        "prngkey": (lambda s: random.PRNGKey(s), lambda: (1,)),
        "key_data": (lambda k: random.key_data(k), keys),
        "wrap_key_data": (lambda w: random.wrap_key_data(w), raw),
        "split_raw": (lambda k: random.split(k), raw),
        "clone": (lambda k: random.clone(k), key),
        "eq": (lambda k: k == k[0], keys),
        "reshape": (lambda k: k.reshape(2, 2), keys),
        "slice": (lambda k: k[1:3], keys),
        "concatenate": (lambda k: jnp.concatenate([k, k]), keys),
        "vmap_split": (jax.vmap(lambda k: random.split(k)), keys),
        "vmap_fold_in": (lambda k: jax.vmap(random.fold_in)(k, jnp.arange(4)), keys),
        "vmap_bits": (jax.vmap(lambda k: random.bits(k, (2,))), keys),
        "jit_split": (jax.jit(lambda k: random.split(k)), key),
        "cond": (lambda k: lax.cond(True, lambda k: random.fold_in(k, 1), lambda k: k, k), key),
        "while": (lambda k: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, random.fold_in(c[1], 2)),
                                           (0, k)), key),
        "select_n": (lambda k: lax.select_n(True, k, k), key),
        "broadcast_in_dim": (lambda k: lax.broadcast_in_dim(k, (3,), ()), key),
        "transpose": (lambda k: lax.transpose(k, (1, 0)), lambda: (random.split(random.key(0), (2, 3)),)),
        "scan": (lambda k: lax.scan(lambda c, _: (random.split(c)[0], random.bits(c)), k, None, length=3), key),
        "gather": (lambda k: k[jnp.array([3, 0, 1])], keys),
        "where": (lambda k: jnp.where(jnp.arange(4) < 2, k, k[::-1]), keys),
        "dynamic_slice": (lambda k: lax.dynamic_slice_in_dim(k, 1, 2), keys),
        "uniform": (lambda k: random.uniform(k, (3,)), key),
    }


def plain(jax, value):
    """A result as JSON data: typed keys as their words, arrays as lists."""
    if isinstance(value, (tuple, list)):
        return [plain(jax, v) for v in value]
    if jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
        return {"key_data": np.asarray(jax.random.key_data(value)).tolist()}
    return np.asarray(value).tolist()


def recorded(filename):
    """JAX's recorded cases, tests/data/<filename>: name -> {"jaxpr": text, "value": data}."""
    return json.loads((Path(__file__).parent / "data" / filename).read_text())["cases"]


def eager_and_jit(jax, plain, fun, args):
    """fun(*args) run eagerly and under jit, each result as JSON data (`plain`)."""
    return [plain(jax, run(*args)) for run in (fun, jax.jit(fun))]
