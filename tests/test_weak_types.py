"""Weak types of jnp results from Python scalars, against JAX's (tests/data/jax_weak_types.json,
recorded by tests/data/record_jax_weak_types.py)."""
import json
import pathlib

import pytest

import jaxlite.numpy as jnp

_DATA = json.loads((pathlib.Path(__file__).parent / "data" / "jax_weak_types.json").read_text())


@pytest.mark.parametrize("case,kind,expected", [
    pytest.param(*key.split(" @ "), expected, id=key) for key, expected in sorted(_DATA["results"].items())])
def test_dtype_and_weak_type_as_jax(case, kind, expected):
    result = eval(case, {"jnp": jnp, "x": eval(_DATA["scalars"][kind])})
    result = result[0] if isinstance(result, tuple) else result
    assert [str(result.dtype), bool(result.weak_type)] == expected


def test_weak_bool_promotes_as_bool():
    both_weak = jnp.equal(1.0, 2.0)
    assert both_weak.weak_type and (both_weak + 1).dtype == jnp.int32
    assert (both_weak + jnp.int8(1)).dtype == jnp.int8
