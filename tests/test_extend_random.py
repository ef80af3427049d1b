"""jaxlite.extend.random: PRNG implementations as values (threefry2x32, rbg, unsafe_rbg,
and ones define_prng_impl makes), against outputs recorded from JAX 0.10.2."""
import json
import pathlib

import numpy as np
import pytest

import jaxlite
import jaxlite.extend.random as xr
import jaxlite.numpy as jnp
from jaxlite import random

RECORDED = json.loads((pathlib.Path(__file__).parent / "data" / "jax_extend_random.json").read_text())


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_rbg_implementations_match_jax(impl):
    want, key = RECORDED[impl], random.key(3, impl=impl)
    assert key.dtype == random.key_dtype(impl) and random.key_impl(key) == impl
    np.testing.assert_array_equal(random.key_data(key), want["seed_3"])
    np.testing.assert_array_equal(random.key_data(random.split(key, 3)), want["split_3"])
    np.testing.assert_array_equal(random.key_data(random.fold_in(key, 5)), want["fold_in_5"])
    np.testing.assert_array_equal(random.bits(key, (2, 3)), want["bits_2x3"])
    np.testing.assert_array_equal(np.asarray(random.uniform(key, (4,))).view(np.uint32), want["uniform_4"])
    impl_value = getattr(xr, f"{impl}_prng_impl")
    np.testing.assert_array_equal(random.key_data(xr.random_seed(jnp.arange(3), impl_value)), want["seeds_0_1_2"])
    draw = lambda k: random.randint(random.split(k)[1], (5,), 0, 100)
    np.testing.assert_array_equal(draw(key), want["randint_5"])
    np.testing.assert_array_equal(jaxlite.jit(draw)(key), want["randint_5"])


def test_threefry_functions_match_jax():
    want = RECORDED["threefry_2x32"]
    counts = np.array(want["counts"], np.uint32)
    np.testing.assert_array_equal(xr.threefry_2x32(np.array(want["key"], np.uint32), counts), want["out"])
    np.testing.assert_array_equal(xr.threefry_prng_impl.seed(jnp.int32(3)), RECORDED["threefry_seed_3"])
    assert xr.threefry_prng_impl.key_shape == (2,) and str(xr.threefry_prng_impl) == "fry"
    assert xr.threefry2x32_p.name == "threefry2x32"
    np.testing.assert_array_equal(random.key_data(xr.seed_with_impl(xr.threefry_prng_impl, 7)),
                                  random.key_data(random.key(7)))
    with pytest.raises(TypeError, match="uint32"):
        xr.threefry_2x32(np.array([1, 2], np.uint32), np.arange(3, dtype=np.int32))


def _toy_impl():
    """Keys of three words: the seed and two constants; splitting adds 1, 2, ... to every word."""
    def seed(s):
        return jnp.stack([jnp.asarray(s, jnp.uint32), jnp.uint32(7), jnp.uint32(9)])

    def split(k, shape):
        offsets = jnp.arange(1, int(np.prod(shape)) + 1, dtype=jnp.uint32)[:, None]
        return jnp.reshape(k[None, :] + offsets, tuple(shape) + (3,))

    def random_bits(k, width, shape):
        return jnp.broadcast_to(k[0] * jnp.uint32(1000) + k[1], shape).astype(f"uint{width}")

    def fold_in(k, data):
        return k.at[0].add(data)
    return xr.define_prng_impl(key_shape=(3,), seed=seed, split=split, random_bits=random_bits,
                               fold_in=fold_in, name="toy", tag="toy")


def test_defined_implementation_through_random_jit_and_vmap():
    spec = _toy_impl()
    assert repr(spec) == "PRNGSpec('toy')"
    key = random.key(4, impl=spec)
    assert str(key.dtype) == "key<toy>" and key.shape == ()
    np.testing.assert_array_equal(random.key_data(key), [4, 7, 9])
    np.testing.assert_array_equal(random.key_data(random.split(key, 2)), [[5, 8, 10], [6, 9, 11]])
    np.testing.assert_array_equal(random.key_data(random.fold_in(key, 3)), [7, 7, 9])
    np.testing.assert_array_equal(random.bits(key, (2,)), [4007, 4007])
    split = jaxlite.jit(lambda k: random.key_data(random.split(k, (2, 2))))(key)
    np.testing.assert_array_equal(split, random.key_data(random.split(key, (2, 2))))
    batched = jaxlite.vmap(lambda s: random.key(s, impl=spec))(jnp.arange(2))
    np.testing.assert_array_equal(random.key_data(batched), [[0, 7, 9], [1, 7, 9]])
    assert "random_seed[impl=toy]" in str(jaxlite.make_jaxpr(lambda: random.key(1, impl=spec))())
    wrapped = random.wrap_key_data(np.arange(6, dtype=np.uint32).reshape(2, 3), impl=spec)
    np.testing.assert_array_equal(random.key_data(wrapped[1]), [3, 4, 5])
    with pytest.raises(TypeError, match=r"shape \(\.\.\., 3\)"):
        random.wrap_key_data(np.zeros((2, 2), np.uint32), impl=spec)


def test_raw_keys_of_other_implementations():
    np.testing.assert_array_equal(random.PRNGKey(3, impl="rbg"), RECORDED["rbg"]["seed_3"])
    np.testing.assert_array_equal(random.PRNGKey(3), random.key_data(random.key(3)))
