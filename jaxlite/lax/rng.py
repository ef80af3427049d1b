"""XLA's stateful-style bit generator (lax.rng_bit_generator), lax.rng_uniform and lax.mulhi.

rng_bit_generator(key, shape) returns (new_key, bits) from a uint32[4] state, with the
bits XLA's RngBitGenerator gives on CPU, so the same key yields JAX's numbers: the state
is two 64-bit words, a cipher key and a counter. THREE_FRY encrypts counter + i with
Threefry-2x32 (the cipher jaxlite.random uses, lax.threefry2x32); PHILOX (also
RNG_DEFAULT on CPU) runs Philox-4x32-10 on the 128-bit counter + i, four words per block.
Both advance the counter by the blocks used. The generator is a composition of uint32
lax operations (64-bit sums carried by hand, so it needs no x64), so one definition is
the eager implementation, what jit compiles and what vmap batches.
"""
import enum
import math
import warnings

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array
from jaxlite.core.primitive import Primitive, compiler_rewrites
from jaxlite.lax.base import INTEGER, as_operands, naryop_primitive, shape_tuple
from jaxlite.lax.elementwise import (add, bitwise_and, bitwise_or, bitwise_xor, convert_element_type, full_like,
                                     lt, mul, select_n, shift_left, shift_right_logical, sub)
from jaxlite.lax.random_bits import threefry2x32
from jaxlite.lax.shapes import broadcast_in_dim, broadcasted_iota, concatenate, iota, reshape, slice as slice_
from jaxlite.transforms import ad, batching

U32 = np.dtype(np.uint32)


# ---------------------------------------------------------------- mulhi

def _mulhi(x, y):
    """The high half of the double-width product, as the operands' (un)signed type."""
    dtype = x.dtype
    bits = dtype.itemsize * 8
    if bits < 64:
        wide = np.int64 if dtype.kind == "i" else np.uint64
        return ((x.astype(wide) * y.astype(wide)) >> bits).astype(dtype)
    product = (x.astype(object) * y.astype(object)) >> 64
    return np.asarray([int(v) & (2 ** 64 - 1) for v in np.ravel(product)], np.uint64).reshape(
        np.shape(product)).view(dtype)


def _mulhi_lax(x, y):
    """mulhi from half-width limbs (no double-width type needed): the compiled form."""
    dtype = np.dtype(x.dtype)
    half = dtype.itemsize * 4
    unsigned = np.dtype(f"uint{dtype.itemsize * 8}")
    ux, uy = convert_element_type(x, unsigned), convert_element_type(y, unsigned)
    mask = np.asarray((1 << half) - 1, unsigned)
    x0, x1 = bitwise_and(ux, mask), shift_right_logical(ux, np.asarray(half, unsigned))
    y0, y1 = bitwise_and(uy, mask), shift_right_logical(uy, np.asarray(half, unsigned))
    shift = np.asarray(half, unsigned)
    low_high = mul(x1, y0)
    cross = add(add(shift_right_logical(mul(x0, y0), shift), bitwise_and(low_high, mask)), mul(x0, y1))
    high = add(add(mul(x1, y1), shift_right_logical(low_high, shift)), shift_right_logical(cross, shift))
    if dtype.kind == "u":
        return high
    # The signed high half: subtract y where x < 0 and x where y < 0 (two's complement).
    zero = full_like(ux, 0)
    high = sub(high, select_n(lt(x, full_like(x, 0)), zero, uy))
    high = sub(high, select_n(lt(y, full_like(y, 0)), zero, ux))
    return convert_element_type(high, dtype)


mulhi_p = naryop_primitive("mulhi", _mulhi, INTEGER)
ad.defjvp_zero(mulhi_p)
compiler_rewrites[mulhi_p] = lambda x, y, memory_orders: _mulhi_lax(x, y)


def mulhi(x, y, /):
    """The high half of the full product x * y of two integers of the same type."""
    return mulhi_p.bind(*as_operands(x, y))


# ---------------------------------------------------------------- 64-bit words as uint32 pairs

def _u32(value):
    return np.asarray(value, U32)


def _add_with_carry(low, high, addend_low):
    """(low, high) + addend_low as a 64-bit sum of uint32 halves."""
    total = add(low, addend_low)
    return total, add(high, convert_element_type(lt(total, low), U32))


def _linear_index(shape):
    """Row-major position of each element of `shape`, as uint32 (draws stay below 2^32)."""
    index = broadcast_in_dim(_u32(0), shape, ())
    stride = 1
    for axis in reversed(range(len(shape))):
        if shape[axis] >= 2:
            index = add(index, mul(broadcasted_iota(U32, shape, axis), _u32(stride)))
            stride *= shape[axis]
    return index


def _word(key, i):
    return reshape(slice_(key, (i,), (i + 1,)), ())


def _with_counter(key, low, high):
    return concatenate([slice_(key, (0,), (2,)), reshape(low, (1,)), reshape(high, (1,))], 0)


# ---------------------------------------------------------------- Threefry

def _split_in_halves(shape):
    """XLA's split of a shape for a two-word cipher: the axis split (the first even one, else
    the longest) becomes (ceil(n/2), 1), so the two output words interleave along it."""
    if not shape:
        return (1,), 0
    even = [i for i, d in enumerate(shape) if d % 2 == 0]
    axis = even[0] if even else max(range(len(shape)), key=lambda i: (shape[i], -i))
    return shape[:axis] + (-(-shape[axis] // 2), 1) + shape[axis + 1:], axis


def _threefry_words(key, shape):
    """Both cipher words for counter + i over `shape`, and the advanced counter."""
    count = _linear_index(shape)
    low, high = _add_with_carry(broadcast_in_dim(_word(key, 2), shape, ()),
                                broadcast_in_dim(_word(key, 3), shape, ()), count)
    words = threefry2x32(_word(key, 0), _word(key, 1), low, high)
    new_low, new_high = _add_with_carry(_word(key, 2), _word(key, 3), _u32(math.prod(shape)))
    return words, _with_counter(key, new_low, new_high)


def _threefry_bits32(key, shape):
    half, axis = _split_in_halves(shape)
    (first, second), new_key = _threefry_words(key, half)
    if not shape:
        return new_key, reshape(first, ())
    paired = concatenate([first, second], axis + 1)
    padded = shape[:axis] + (2 * half[axis],) + shape[axis + 1:]
    return new_key, slice_(reshape(paired, padded), (0,) * len(shape), shape)


def _threefry_bits64(key, shape):
    (first, second), new_key = _threefry_words(key, shape)
    return new_key, _join64(first, second)


def _join64(low, high):
    u64 = np.dtype(np.uint64)
    return bitwise_or(convert_element_type(low, u64),
                      shift_left(convert_element_type(high, u64), np.asarray(32, u64)))


# ---------------------------------------------------------------- Philox

# Philox-4x32's multipliers and Weyl key increments (Salmon et al. 2011).
PHILOX_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
PHILOX_WEYL = (0x9E3779B9, 0xBB67AE85)


def _philox_rounds(words, key0, key1):
    x0, x1, x2, x3 = words
    for _ in range(10):
        a, b = _u32(PHILOX_MULTIPLIERS[0]), _u32(PHILOX_MULTIPLIERS[1])
        x0, x1, x2, x3 = (bitwise_xor(bitwise_xor(mulhi(x2, b), x1), key0), mul(x2, b),
                          bitwise_xor(bitwise_xor(mulhi(x0, a), x3), key1), mul(x0, a))
        key0, key1 = add(key0, _u32(PHILOX_WEYL[0])), add(key1, _u32(PHILOX_WEYL[1]))
    return [x0, x1, x2, x3]


def _philox_blocks(key, blocks):
    """Philox of the 128-bit counters (counter + i for i < blocks), and the advanced counter
(its low 64 bits: the state keeps no more)."""
    count = iota(U32, blocks)
    low, high = _add_with_carry(broadcast_in_dim(_word(key, 2), (blocks,), ()),
                                broadcast_in_dim(_word(key, 3), (blocks,), ()), count)
    # With a two-word state, XLA's 128-bit counter has the cipher key as its high half.
    carried = convert_element_type(lt(high, _word(key, 3)), U32)
    top_low, top_high = _add_with_carry(broadcast_in_dim(_word(key, 0), (blocks,), ()),
                                        broadcast_in_dim(_word(key, 1), (blocks,), ()), carried)
    words = _philox_rounds([low, high, top_low, top_high], _word(key, 0), _word(key, 1))
    new_low, new_high = _add_with_carry(_word(key, 2), _word(key, 3), _u32(blocks))
    return words, _with_counter(key, new_low, new_high)


def _interleaved(parts, count, shape):
    """Element j*len(parts) + i is parts[i][j]: the blocks' words in order, cut to count."""
    stacked = concatenate([reshape(p, (p.shape[0], 1)) for p in parts], 1)
    return reshape(slice_(reshape(stacked, (stacked.size,)), (0,), (count,)), shape)


def _philox_bits32(key, shape):
    count = math.prod(shape)
    words, new_key = _philox_blocks(key, -(-count // 4))
    return new_key, _interleaved(words, count, shape)


def _philox_bits64(key, shape):
    count = math.prod(shape)
    words, new_key = _philox_blocks(key, -(-count // 2))
    return new_key, _interleaved([_join64(words[0], words[1]), _join64(words[2], words[3])], count, shape)


# ---------------------------------------------------------------- rng_bit_generator

class RandomAlgorithm(enum.IntEnum):
    """The bit generators of rng_bit_generator (RNG_DEFAULT is Philox on CPU, as XLA's)."""
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __repr__(self):      # as jaxprs show it
        return self.name

    __str__ = __repr__


_GENERATORS = {RandomAlgorithm.RNG_THREE_FRY: (_threefry_bits32, _threefry_bits64),
               RandomAlgorithm.RNG_PHILOX: (_philox_bits32, _philox_bits64),
               RandomAlgorithm.RNG_DEFAULT: (_philox_bits32, _philox_bits64)}


def _generate(key, shape, dtype, algorithm, out_sharding=None):
    bits32, bits64 = _GENERATORS[algorithm]
    if dtype.itemsize == 8:
        return bits64(key, shape)
    new_key, bits = bits32(key, shape)
    return new_key, bits if dtype == U32 else convert_element_type(bits, dtype)


def _rng_bit_generator_impl(key, **params):
    return [np.asarray(out) for out in _generate(Array(key), **params)]


def _rng_bit_generator_aval(key, shape, dtype, algorithm, out_sharding=None):
    if key.shape != (4,) or key.dtype != U32:
        raise TypeError(f"rng_bit_generator takes a uint32[4] key, got {key.str_short()}")
    return [ShapedArray((4,), U32), ShapedArray(shape, dtype)]


def _rng_bit_generator_batch(args, dims, **params):
    """Each key of a batch runs its own generator: the composition, vmapped."""
    from jaxlite.transforms.batching import vmap
    new_keys, bits = vmap(lambda k: _generate(k, **params), in_axes=dims[0])(args[0])
    return [new_keys, bits], [0, 0]


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)
rng_bit_generator_p.def_impl(_rng_bit_generator_impl)
rng_bit_generator_p.def_abstract_eval(_rng_bit_generator_aval)
batching.batch_rules[rng_bit_generator_p] = _rng_bit_generator_batch
ad.defjvp_zero(rng_bit_generator_p)
compiler_rewrites[rng_bit_generator_p] = lambda key, memory_orders, **params: list(_generate(key, **params))


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """(new_key, random bits of `shape`): XLA's RngBitGenerator on a uint32[4] state."""
    requested = np.dtype(dtype)
    if requested.kind != "u":
        raise TypeError(f"rng_bit_generator: dtype must be an unsigned integer type, got {requested.name}")
    dtype = dtypes.canonicalize_dtype(requested)
    if dtype != requested:
        warnings.warn(f"Explicitly requested dtype {requested.name} requested in rng_bit_generator "
                      f"is not available, and will be truncated to dtype {dtype.name}. To enable "
                      "more dtypes, set the jax_enable_x64 configuration option or the "
                      "JAX_ENABLE_X64 shell environment variable.", stacklevel=2)
    key = as_operands(key)[0]
    new_key, bits = rng_bit_generator_p.bind(key, shape=shape_tuple(shape), dtype=dtype,
                                             algorithm=RandomAlgorithm(algorithm), out_sharding=out_sharding)
    return new_key, bits


# ---------------------------------------------------------------- rng_uniform

def _rng_uniform_impl(a, b, shape):
    """Uniform in [a, b) from numpy's global generator: XLA defines the values of RngUniform
    as implementation-specific and stateful, so no key reproduces JAX's draws."""
    draws = np.random.random_sample(shape) if dtypes.is_float(a.dtype) else np.random.randint(
        int(a), int(b), size=shape)
    return (a + draws * (b - a)).astype(a.dtype) if dtypes.is_float(a.dtype) else draws.astype(a.dtype)


def _rng_uniform_aval(a, b, shape):
    if a.shape != () or b.shape != () or a.dtype != b.dtype:
        raise TypeError(f"rng_uniform takes two scalars of one dtype, got {a.str_short()} and {b.str_short()}")
    return ShapedArray(shape, a.dtype)


rng_uniform_p = Primitive("rng_uniform")
rng_uniform_p.def_impl(_rng_uniform_impl)
rng_uniform_p.def_abstract_eval(_rng_uniform_aval)


def rng_uniform(a, b, shape):
    """Stateful pseudo-random numbers uniform in [a, b) (a, b scalars of one dtype)."""
    return rng_uniform_p.bind(*as_operands(a, b), shape=shape_tuple(shape))
