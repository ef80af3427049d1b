"""Promotion against the table recorded from JAX itself (tests/data/jax_promotion.json)."""
import json
import pathlib

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core import dtypes

REFERENCE = json.loads((pathlib.Path(__file__).parent / "data" / "jax_promotion.json").read_text())


def _dtype(name):
    return dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


PAIRS = [(a, b) for a in REFERENCE["promote_types"] for b in REFERENCE["promote_types"][a]]


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_matches_jax(a, b):
    expected = REFERENCE["promote_types"][a][b]
    assert str(dtypes.promote_types(_dtype(a), _dtype(b))) == expected


@pytest.mark.parametrize("a", list(REFERENCE["with_python_scalar"]))
@pytest.mark.parametrize("scalar", ["python int", "python float"])
def test_weak_python_scalars_match_jax(a, scalar):
    expected = REFERENCE["with_python_scalar"][a][scalar]
    x = jnp.zeros(2, _dtype(a))
    value = 1 if scalar == "python int" else 1.0
    assert str((x + value).dtype) == expected
    assert str(dtypes.result_type(x, value)) == expected


def test_weak_scalars_keep_float32():
    x = jnp.ones(3, jnp.float32)
    assert (x * 2.0).dtype == np.float32
    assert not (x * 2.0).weak_type


def test_two_weak_values_stay_weak():
    dtype, weak = dtypes.result_type(1, 2.0, return_weak_type_flag=True)
    assert dtype == np.float32 and weak


def test_64_bit_inputs_narrow_by_default():
    assert jnp.asarray(np.ones(2, np.float64)).dtype == np.float32
    assert jnp.asarray(np.ones(2, np.int64)).dtype == np.int32


def test_enable_x64_keeps_64_bit():
    jaxlite.config.update("jax_enable_x64", True)
    try:
        assert jnp.asarray(np.ones(2, np.float64)).dtype == np.float64
        assert (jnp.ones(2, jnp.float64) + 1.0).dtype == np.float64
    finally:
        jaxlite.config.update("jax_enable_x64", False)


def test_bfloat16_is_ml_dtypes():
    import ml_dtypes
    assert jnp.bfloat16 == np.dtype(ml_dtypes.bfloat16)


def test_python_int_overflow_is_an_error():
    with pytest.raises(OverflowError, match="too large"):
        jnp.zeros(2, jnp.int8) + 2**40


def test_unknown_config_option_is_named():
    with pytest.raises(AttributeError, match="jax_enable_x65"):
        jaxlite.config.update("jax_enable_x65", True)


def test_explicit_64_bit_dtypes_warn_at_the_users_line_when_narrowed():
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jnp.zeros(2, dtype=jnp.float64)  # the line the warnings must name
        jnp.arange(3, dtype="int64")
        jaxlite.jit(lambda x: x.astype(np.float64))(1.0)
        jnp.zeros(2, dtype=float), jnp.asarray(np.ones(2)), jnp.ones(2, dtype=int)  # no warning
    messages = [str(w.message) for w in caught]
    assert len(messages) == 3, messages
    assert "dtype float64 requested in zeros" in messages[0] and "truncated to dtype float32" in messages[0]
    assert "int64 requested in arange" in messages[1] and "float64 requested in astype" in messages[2]
    assert all(w.filename == __file__ for w in caught)
