"""Array.view(dtype), as JAX's: the same bytes read as another dtype (numpy's .view is the
reference for the bits), eager and under jit."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "float16", "bfloat16", "uint32", "int32",
          "float32", "complex64"]


def _np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _random_bytes(rng, shape, dtype):
    """Finite, non-NaN values of `dtype` (NaN payloads need not survive a float round trip)."""
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    values = rng.standard_normal(shape) * 100
    return (values + 1j * rng.standard_normal(shape) if dtype.kind == "c" else values).astype(dtype)


@settings(deadline=None, max_examples=30)
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_view_reads_the_same_bytes_as_numpy(source, target, rows, seed):
    source, target = _np_dtype(source), _np_dtype(target)
    assume(target != np.bool_ or source == np.bool_)  # only 0 and 1 bytes are bools
    width = 8  # bytes in each row: a multiple of every itemsize here
    x = _random_bytes(np.random.default_rng(seed), (rows, width // source.itemsize), source)
    expected = x.view(target)
    eager = x if source == target else jnp.asarray(x).view(target)
    jitted = jaxlite.jit(lambda a: a.view(target))(jnp.asarray(x))
    for result in (eager, jitted):
        assert result.dtype == expected.dtype and result.shape == expected.shape
        np.testing.assert_array_equal(np.asarray(result).view(np.uint8), expected.view(np.uint8))


def test_view_of_bytes_to_bool_is_nonzero_test():
    np.testing.assert_array_equal(jnp.array([0, 2, 1], jnp.uint8).view(bool), [False, True, True])


def test_same_dtype_or_none_is_the_array_itself():
    x = jnp.arange(3.0)
    assert x.view() is x and x.view(None) is x and x.view(jnp.float32) is x


def test_zero_dimensional_view_keeps_itemsize():
    assert int(jnp.float32(2.5).view(jnp.int32)) == 1075838976
    assert jnp.asarray(2.5).view(jnp.int32).weak_type is False
    with pytest.raises(ValueError, match="0d array"):
        jnp.float32(1).view(jnp.uint8)


def test_wider_dtype_needs_whole_last_axis_groups():
    with pytest.raises(ValueError, match="divisor of the total size in bytes of the last axis"):
        jnp.zeros((2, 3), jnp.uint8).view(jnp.float32)
    assert jnp.zeros((2, 0), jnp.uint8).view(jnp.float32).shape == (2, 0)


def test_bad_arguments():
    with pytest.raises(TypeError, match="not understood"):
        jnp.zeros(2).view("foo")
    with pytest.raises(NotImplementedError, match="`type` argument"):
        jnp.zeros(2).view(jnp.int32, type=np.ndarray)


def test_view_under_vmap_matches_a_loop():
    x = jnp.arange(12.0).reshape(3, 4)
    batched = jaxlite.vmap(lambda row: row.view(jnp.uint16))(x)
    np.testing.assert_array_equal(batched, np.stack([np.asarray(r).view(np.uint16) for r in np.asarray(x)]))
