"""Printed jaxprs against the text JAX 0.10.2 prints for the same programs (tests/jaxpr_cases.py,
recorded in tests/data/jax_jaxprs.json): names, params and their order, variable names, `_` for
unread outputs, literals, layout."""
import json
from pathlib import Path

import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax

import jaxpr_cases

RECORDED = json.loads((Path(__file__).parent / "data" / "jax_jaxprs.json").read_text())["jaxprs"]

# Where jaxlite's program differs from JAX's, not only its printing.
KNOWN_DIFFERENCES = {
    **dict.fromkeys(["argsort", "clip", "cumprod", "cumsum", "flip", "floor_div", "linspace", "mod", "one_hot",
                     "pad", "roll", "round", "sort", "where", "var", "norm", "outer", "softmax", "inv", "fft",
                     "uniform", "rng"],
                    "JAX's jnp function is itself jitted (a nested jit[name=...] equation); jaxlite's is inlined"),
    **dict.fromkeys(["relu", "custom_jvp_relu", "logsumexp"],
                    "JAX's jax.nn function is a custom_jvp (and jitted); jaxlite's is plain lax"),
    **dict.fromkeys(["stack", "split", "tile"], "JAX 0.10 has stack/split/tile primitives; jaxlite builds them"),
    "gather": "JAX normalizes negative indices with scalar literals and PROMISE_IN_BOUNDS; jaxlite broadcasts, CLIPs",
    "scatter": "JAX keeps a scalar index as a literal and prints indices_are_sorted/unique_indices/update_jaxpr",
    "dot_general": "lax.dot_general without preferred_element_type: JAX prints none, jaxlite the result dtype",
    "scan": "JAX converts a weakly typed init inside the body, jaxlite before the scan",
    **dict.fromkeys(["checkpoint", "remat_grad"], "JAX prints checkpoint as remat2[differentiated=False ...]"),
}


@pytest.mark.parametrize("name", sorted(jaxpr_cases.cases(jaxlite, jnp, lax)))
def test_printed_jaxpr_is_jaxs(name):
    fun, args = jaxpr_cases.cases(jaxlite, jnp, lax)[name]
    text = str(jaxlite.make_jaxpr(fun)(*args))
    if name in KNOWN_DIFFERENCES:
        assert text != RECORDED[name], f"{name} now prints as JAX: drop it from KNOWN_DIFFERENCES"
        pytest.skip(KNOWN_DIFFERENCES[name])
    assert text == RECORDED[name]
