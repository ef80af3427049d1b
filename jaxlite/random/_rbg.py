"""The rbg and unsafe_rbg PRNG implementations (as JAX's): a key is four uint32 words,
XLA's RngBitGenerator state, from which random_bits draws. rbg seeds, splits and folds
in with threefry2x32 on each half of the words; unsafe_rbg splits and folds in with
the generator itself (every tenth draw a new key), which is cheaper and not a proven
hash."""
import math

import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.random import _core, _keys
from jaxlite.transforms.batching import vmap

_UINT_BY_WIDTH = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_DRAWS_PER_KEY = 10


def _seed(seed):
    half = _core._seed_words(seed)
    return jnp.concatenate([half, half])


def _halves(key):
    return lax.reshape(key, (2, 2))


def _split(key, shape):
    halves = vmap(lambda half: _core._split_words(half, shape), out_axes=len(shape))(_halves(key))
    return lax.reshape(halves, tuple(shape) + (4,))


def _fold_in(key, data):
    return lax.reshape(vmap(lambda half: _core._fold_in_words(half, data))(_halves(key)), (4,))


def _random_bits(key, bit_width, shape):
    return lax.rng_bit_generator(key, tuple(shape), dtype=_UINT_BY_WIDTH[bit_width])[1]


def _unsafe_split(key, shape):
    count = math.prod(shape)
    _, draws = lax.rng_bit_generator(key, (_DRAWS_PER_KEY * count, 4), dtype=dtypes.uint32)
    return lax.reshape(lax.slice_in_dim(draws, 0, draws.shape[0], _DRAWS_PER_KEY), tuple(shape) + (4,))


def _unsafe_fold_in(key, data):
    _, draws = lax.rng_bit_generator(_seed(data), (_DRAWS_PER_KEY, 4), dtype=dtypes.uint32)
    return lax.bitwise_xor(key, draws[-1])


rbg_prng_impl = _keys.PRNGImpl(key_shape=(4,), seed=_seed, split=_split, random_bits=_random_bits,
                               fold_in=_fold_in, name="rbg", tag="rbg")
unsafe_rbg_prng_impl = _keys.PRNGImpl(key_shape=(4,), seed=_seed, split=_unsafe_split,
                                      random_bits=_random_bits, fold_in=_unsafe_fold_in,
                                      name="unsafe_rbg", tag="urbg")
_keys.register_prng(rbg_prng_impl)
_keys.register_prng(unsafe_rbg_prng_impl)
