"""jnp scalar types are callable constructors and valid dtypes; finfo, iinfo, issubdtype."""
import ml_dtypes
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp

TYPES = ["bool_", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32", "bfloat16"]


@pytest.mark.parametrize("name", TYPES)
def test_scalar_type_constructs_arrays(name):
    scalar_type = getattr(jnp, name)
    out = scalar_type(1)
    assert isinstance(out, jaxlite.Array)
    assert out.dtype == np.dtype(scalar_type) == scalar_type.dtype
    assert out.shape == () and not out.weak_type
    assert scalar_type([1, 0]).shape == (2,)


@pytest.mark.parametrize("name", TYPES)
def test_scalar_type_works_as_dtype(name):
    scalar_type = getattr(jnp, name)
    assert jnp.zeros(2, scalar_type).dtype == scalar_type
    assert jnp.ones(2).astype(scalar_type).dtype == scalar_type.dtype
    assert np.zeros(2, dtype=scalar_type).dtype == scalar_type.dtype
    assert scalar_type == np.dtype(scalar_type) and np.dtype(scalar_type) == scalar_type
    assert {scalar_type: 1}[scalar_type] == 1


def test_64_bit_types_follow_x64_flag():
    with pytest.warns(UserWarning, match="float64 requested in asarray .* truncated to dtype float32"):
        assert jnp.float64(1.5).dtype == np.float32
    with pytest.warns(UserWarning, match="int64 requested in asarray .* truncated to dtype int32"):
        assert jnp.int64(3).dtype == np.int32
    jaxlite.config.update("jax_enable_x64", True)
    try:
        assert jnp.float64(1.5).dtype == np.float64
    finally:
        jaxlite.config.update("jax_enable_x64", False)


def test_conversion_values():
    assert int(jnp.int32(3.7)) == 3
    assert bool(jnp.bool_(2))
    assert float(jnp.bfloat16(1 / 3)) == float(ml_dtypes.bfloat16(1 / 3))
    assert jnp.float32 != jnp.int32 and jnp.float32 == np.float32
    assert isinstance(np.float32(1), jnp.float32)
    assert repr(jnp.float32) == "jaxlite.numpy.float32"


def test_finfo_iinfo():
    assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    assert jnp.finfo(jnp.bfloat16).eps == 2.0 ** -7
    assert jnp.finfo(np.ones(2, np.float16)).max == np.finfo(np.float16).max
    assert jnp.iinfo(jnp.int8).min == -128 and jnp.iinfo(np.uint16).max == 65535
    with pytest.raises(ValueError, match="floating-point"):
        jnp.finfo(jnp.int32)
    with pytest.raises(ValueError, match="integer"):
        jnp.iinfo(jnp.float32)


@pytest.mark.parametrize("first, second, expected", [
    (jnp.float32, jnp.floating, True), (jnp.bfloat16, jnp.floating, True),
    (jnp.bfloat16, jnp.inexact, True), (jnp.bfloat16, jnp.integer, False),
    (jnp.bfloat16, jnp.bfloat16, True), (jnp.bfloat16, jnp.float32, False),
    (jnp.int8, jnp.signedinteger, True), (jnp.uint8, jnp.signedinteger, False),
    (np.dtype("int32"), jnp.integer, True), ("float16", jnp.number, True),
    (jnp.bool_, jnp.number, False), (jnp.float32, jnp.float32, True),
])
def test_issubdtype(first, second, expected):
    assert jnp.issubdtype(first, second) is expected
