"""jaxlite.extend.random: PRNG implementations for libraries (as jax.extend.random)."""
import numpy as _np

import jaxlite.numpy as _jnp
from jaxlite import lax as _lax
from jaxlite.lax.random_bits import threefry2x32_p
from jaxlite.random import _keys
from jaxlite.random._core import _seed_operand, threefry_prng_impl
from jaxlite.random._rbg import rbg_prng_impl, unsafe_rbg_prng_impl

__all__ = ["define_prng_impl", "random_seed", "rbg_prng_impl", "seed_with_impl", "threefry2x32_p",
           "threefry_2x32", "threefry_prng_impl", "unsafe_rbg_prng_impl"]


def define_prng_impl(*, key_shape, seed, split, random_bits, fold_in, name="<unnamed>", tag="?"):
    """A PRNG implementation from functions on one key's uint32 words of shape key_shape,
    to pass as `impl=` to jaxlite.random.key, wrap_key_data and key_dtype."""
    return _keys.PRNGSpec(_keys.PRNGImpl(tuple(key_shape), seed, split, random_bits, fold_in,
                                         name=name, tag=tag))


def random_seed(seeds, impl):
    """Typed keys of `impl` from integer seeds of any shape."""
    seeds = _seed_operand(seeds) if isinstance(seeds, int) else _jnp.asarray(seeds)
    return _keys.seed(seeds, impl)


def seed_with_impl(impl, seed):
    return random_seed(seed, impl=impl)


def threefry_2x32(keypair, count):
    """threefry2x32 of the uint32 counts (any shape) under the key (two uint32 words): the
    counts' first half and second half are the two words encrypted together (an odd count
    padded with a zero)."""
    key1, key2 = keypair
    count = _jnp.asarray(count)
    if count.dtype != _np.uint32 or _jnp.asarray(key1).dtype != _np.uint32:
        raise TypeError(f"threefry_2x32 requires uint32 arguments, got "
                        f"{_jnp.asarray(key1).dtype} and {count.dtype}")
    flat = _jnp.ravel(count)
    odd = flat.shape[0] % 2
    if odd:
        flat = _jnp.concatenate([flat, _jnp.zeros(1, _np.uint32)])
    half = flat.shape[0] // 2
    out = _jnp.concatenate(_lax.threefry2x32(key1, key2, flat[:half], flat[half:]))
    return _jnp.reshape(out[:out.shape[0] - odd], count.shape)
