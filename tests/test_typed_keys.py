"""Typed PRNG keys (jax.random.key, dtype key<fry>) and the jax.dtypes module."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import dtypes, random, tree_util

RAW = random.PRNGKey(3)
TYPED = random.key(3)


def test_a_typed_key_is_a_scalar_of_the_key_dtype():
    assert TYPED.shape == () and TYPED.ndim == 0 and TYPED.size == 1 and TYPED.itemsize == 8
    assert str(TYPED.dtype) == "key<fry>" and TYPED.dtype == random.key_dtype()
    assert repr(random.key(0)) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    assert jnp.issubdtype(TYPED.dtype, dtypes.prng_key) and jnp.issubdtype(TYPED.dtype, dtypes.extended)
    assert not jnp.issubdtype(TYPED.dtype, jnp.floating) and not jnp.issubdtype(jnp.uint32, dtypes.prng_key)
    assert random.key_impl(TYPED) == random.key_impl(RAW) == "threefry2x32"


@pytest.mark.parametrize("sample", [
    lambda k: random.uniform(k, (3,)), lambda k: random.normal(k, (2,)), lambda k: random.randint(k, (4,), 0, 9),
    lambda k: random.gamma(k, 2.0, (2,)), lambda k: random.permutation(k, 5), lambda k: random.bits(k, (2,)),
])
def test_samplers_take_typed_and_raw_keys_alike(sample):
    np.testing.assert_array_equal(sample(TYPED), sample(RAW))


def test_split_and_fold_in_keep_the_key_form():
    keys = random.split(TYPED, (2, 3))
    assert isinstance(keys, type(TYPED)) and keys.shape == (2, 3)
    np.testing.assert_array_equal(random.key_data(keys), random.split(RAW, (2, 3)))
    np.testing.assert_array_equal(random.key_data(random.fold_in(TYPED, 5)), random.fold_in(RAW, 5))
    np.testing.assert_array_equal(random.key_data(keys[1, 2]), random.split(RAW, (2, 3))[1, 2])
    assert keys[0].shape == (3,) and keys[..., 1].shape == (2,) and keys.reshape(6).shape == (6,)
    assert len(keys) == 2 and [k.shape for k in keys] == [(3,), (3,)] and keys.T.shape == (3, 2)
    assert bool((keys[0] == keys[0]).all()) and not bool((keys[0] != keys[0]).any())


def test_key_data_round_trip():
    words = random.key_data(random.split(TYPED, 4))
    assert words.shape == (4, 2) and words.dtype == np.uint32
    np.testing.assert_array_equal(random.key_data(random.wrap_key_data(words)), words)
    assert bool(random.clone(TYPED) == TYPED) and random.clone(TYPED).dtype == TYPED.dtype


def test_typed_keys_through_jit_vmap_and_tree_functions():
    keys = random.split(TYPED, 3)
    split_jit = jaxlite.jit(lambda k: random.split(k))(TYPED)
    np.testing.assert_array_equal(random.key_data(split_jit), random.key_data(random.split(TYPED)))
    draws = jaxlite.vmap(lambda k: random.normal(k, (2,)))(keys)
    np.testing.assert_array_equal(draws, np.stack([random.normal(k, (2,)) for k in keys]))
    new_keys = jaxlite.vmap(lambda k: random.fold_in(k, 1))(keys)
    assert new_keys.shape == (3,) and new_keys.dtype == TYPED.dtype
    mapped = tree_util.tree_map(lambda x: x, {"rng": TYPED})
    np.testing.assert_array_equal(random.key_data(mapped["rng"]), random.key_data(TYPED))
    jaxpr = jaxlite.make_jaxpr(lambda k: random.uniform(k))(TYPED)
    assert str(jaxpr.jaxpr.invars[0].aval.str_short()) == "key<fry>[]"


def test_key_errors():
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        random.key(0, impl="bogus")
    with pytest.raises(ValueError, match="not available"):
        random.key(0, impl="rbg")
    with pytest.raises(ValueError, match="vmap"):
        random.uniform(random.split(TYPED))
    with pytest.raises(TypeError, match="PRNG key"):
        random.wrap_key_data(jnp.zeros(3, jnp.uint32))
    with pytest.raises(TypeError, match="len"):
        len(TYPED)


def test_dtypes_module():
    assert dtypes.canonicalize_dtype(np.float64) == np.float32
    assert dtypes.canonicalize_dtype(TYPED.dtype, allow_extended_dtype=True) == TYPED.dtype
    with pytest.raises(ValueError, match="extended dtype"):
        dtypes.canonicalize_dtype(TYPED.dtype)
    assert [dtypes.scalar_type_of(x) for x in (True, 3, 2.0, jnp.ones(2, jnp.bfloat16), jnp.ones(2, jnp.uint8))] \
        == [bool, int, float, float, int]
    assert dtypes.itemsize_bits(jnp.bfloat16) == 16 and dtypes.itemsize_bits(TYPED.dtype) == 64
    assert dtypes.result_type(1, 2.0) == np.float32 and dtypes.result_type(jnp.int8(1), jnp.uint8(1)) == np.int16
    assert dtypes.issubdtype(dtypes.bfloat16, jnp.floating) and dtypes.finfo(dtypes.bfloat16).bits == 16
    assert dtypes.iinfo(np.int8).max == 127 and dtypes.float0.itemsize == 0
    assert issubclass(dtypes.TypePromotionError, ValueError)
    assert sorted(n for n in dir(dtypes) if not n.startswith("_")) == sorted(
        ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo", "float0", "iinfo",
         "issubdtype", "itemsize_bits", "prng_key", "result_type", "scalar_type_of"])
