"""jaxlite.random: JAX's default threefry PRNG, bit for bit.

A key is a typed key (`jax.random.key`, dtype key<fry>) or a raw uint32[2] array,
as `jax.random.PRNGKey` returns. Nothing is stateful: every draw hashes counters
with the key through the threefry2x32 primitive (inside random_bits and
random_split, see _keys), and everything else is built from lax and jnp
operations, so the samplers trace (make_jaxpr, jit) and batch over keys (vmap).

Counters follow JAX's "partitionable" threefry scheme, its default: element i
(row-major) of a draw of shape S is the 64-bit index i, split into its high and
low 32-bit words and encrypted under the key. Splitting a key into keys of shape
S uses the two output words of each element as a new key; a 32-bit draw xors them.
"""
import math
from collections.abc import Sequence

import numpy as np

import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import broadcast_shapes, canonicalize_axis
from jaxlite.core.trace import EVAL_TRACE, Tracer, current_trace
from jaxlite.lax.base import scalar_like, shape_tuple
from jaxlite.lax.special import erf, erf_inv
from jaxlite.numpy.util import promote_to_inexact
from jaxlite.random import _keys
from jaxlite.random._keys import KeyTy, resolve_impl
from jaxlite.transforms.jit import library_jit

_UINT_BY_WIDTH = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_WORD = 2 ** 32

# ---------------------------------------------------------------- keys
# The public functions take typed or raw keys and give keys in the form they were
# given; inside, every sampler works on typed keys through the key primitives of
# _keys, whose physical rules are the threefry functions on words (`*_words`) below.


def PRNGKey(seed, *, impl=None):
    """A raw key from an integer seed: the words of `key(seed, impl=impl)` (uint32[2] for
    the default threefry2x32)."""
    if _is_eager_int(seed) and resolve_impl(impl) is threefry_prng_impl:
        return _int_seed_words(seed)
    return _keys.unwrap(key(seed, impl=impl))


def key(seed, *, impl=None):
    """A typed key (dtype key<fry>, shape ()) from an integer seed: its high and low 32-bit
    words. Without x64 a seed is 32 bits wide, so the high word is 0 and a Python int
    keeps only its low 32 bits, as in JAX."""
    impl = resolve_impl(impl)
    if _is_eager_int(seed) and impl is threefry_prng_impl:
        return KeyTy(impl).wrap(_int_seed_words(seed))
    return _keys.seed(_seed_operand(seed), impl)


def _is_eager_int(seed):
    """A Python int seed outside any trace: the common case, whose words are made at once."""
    return type(seed) is int and current_trace() is EVAL_TRACE


def _int_seed_words(seed):
    high = (seed >> 32) % _WORD if dtypes.x64_enabled() else 0
    return jnp.asarray(np.array([high, seed % _WORD], dtype=np.uint32))


def _seed_operand(seed):
    if isinstance(seed, (bool, np.bool_)) or not _is_integer_like(seed) or _keys.is_key(seed):
        raise TypeError(f"PRNGKey seed must be an integer; got {seed!r}")
    if np.ndim(seed):
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jaxlite.vmap for batching")
    if isinstance(seed, int):
        wide = dtypes.x64_enabled()
        unsigned, signed = (np.uint64, np.int64) if wide else (np.uint32, np.int32)
        return np.array(seed % (_WORD ** 2 if wide else _WORD), unsigned).view(signed)[()]
    return jnp.asarray(seed)


def key_data(keys):
    """The uint32 words of keys, shape keys.shape + the implementation's key shape (raw
    keys are their own words)."""
    typed_keys, typed = _check_key("key_data", keys, allow_batched=True)
    return _keys.unwrap(typed_keys) if typed else _raw_words(keys)


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys from their uint32 words (the inverse of key_data)."""
    if _keys.is_key(key_bits_array):
        raise TypeError("wrap_key_data takes uint32 key data, got a typed key array")
    impl = resolve_impl(impl)
    if impl is threefry_prng_impl:
        return _keys.wrap(_raw_words(key_bits_array, "wrap_key_data"), impl)
    return _keys.wrap(jnp.asarray(key_bits_array), impl)


def key_impl(keys):
    """The name of the keys' PRNG implementation (raw uint32 keys are threefry2x32's)."""
    keys, _ = _check_key("key_impl", keys, allow_batched=True)
    return _keys.impl_name(keys.dtype.impl)


def key_dtype(impl=None):
    """The dtype of typed keys of an implementation (the default: key<fry>)."""
    return KeyTy(resolve_impl(impl))


def clone(key):
    """A copy of the keys (JAX offers clone for its experimental keys that may be used only
    once; jaxlite's arrays are immutable, so it changes nothing but the jaxpr)."""
    keys, typed = _check_key("clone", key, allow_batched=True)
    return _keys_like(typed, _keys.random_clone_p.bind(keys))


def _is_integer_like(x):
    return isinstance(x, (int, np.integer)) or (hasattr(x, "dtype") and dtypes.is_int(x.dtype))


def _seed_words(seed):
    """One seed's key words: its high 32 bits (0 for a 32-bit seed) and its low 32 bits."""
    if seed.dtype.itemsize == 8:
        wide = lax.bitcast_convert_type(seed, dtypes.uint64)
        high = lax.convert_element_type(lax.div(wide, scalar_like(wide, _WORD)), dtypes.uint32)
    else:
        high = lax.full((), 0, dtypes.uint32)
    low = lax.convert_element_type(seed, dtypes.uint32)
    return _make_key(high, low)


def _make_key(word1, word2):
    return jnp.stack([word1, word2], axis=-1)


def _raw_words(key, name="key_data"):
    words = jnp.asarray(key)
    if words.dtype != dtypes.uint32 or words.shape[-1:] != (2,):
        raise TypeError(f"{name} expects a PRNG key, a typed key or a uint32 array of shape "
                        f"(..., 2), got {words.dtype.name}{list(words.shape)}")
    return words


def _check_key(name, key, allow_batched=False):
    """(the keys as typed keys, whether they were given typed), or JAX's error for
    something that is not a single key."""
    typed = _keys.is_key(key)
    keys = key if typed else _keys.wrap(_raw_words(key, name), "threefry2x32")
    if keys.ndim and not allow_batched:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{keys.shape} != (). Use jaxlite.vmap for batching.")
    return keys, typed


def _sampler_key(name, key):
    """The single typed key a sampler draws from."""
    return _check_key(name, key)[0]


def _keys_like(typed, keys):
    """New keys in the form the caller gave: typed or raw."""
    return keys if typed else _keys.unwrap(keys)


def _encrypt(key, high, low):
    word1, word2 = (lax.index_in_dim(key, i, keepdims=False) for i in (0, 1))
    return lax.threefry2x32(word1, word2, high, low)


def _counters(shape):
    """The high and low words of each element's row-major index."""
    size = math.prod(shape)
    if size > _WORD:
        raise ValueError(f"random draws are limited to 2**32 elements, got shape {shape}")
    low = lax.reshape(lax.iota(dtypes.uint32, size), shape)
    return lax.full(shape, 0, dtypes.uint32), low


def split(key, num=2):
    """`num` new keys (or keys of shape `num` for a tuple), stacked along a new leading axis."""
    key, typed = _check_key("split", key)
    return _keys_like(typed, _split(key, tuple(num) if isinstance(num, Sequence) else (num,)))


def _split(keys, shape):
    return _keys.random_split_p.bind(keys, shape=shape_tuple(shape, "num"))


def _split_words(key, shape):
    return _make_key(*_encrypt(key, *_counters(shape)))


def fold_in(key, data):
    """A new key that depends on the key and a 32-bit integer."""
    key, typed = _check_key("fold_in", key)
    if np.ndim(data):
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data)} != (). Use jaxlite.vmap for batching.")
    if isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
        data = np.uint32(int(data) % _WORD)
    else:
        data = lax.convert_element_type(data, dtypes.uint32)
    return _keys_like(typed, _keys.random_fold_in_p.bind(key, data))


def _fold_in_words(key, data):
    return _make_key(*_encrypt(key, lax.full((), 0, dtypes.uint32), data))


def _random_bits(key, width, shape):
    return _keys.random_bits_p.bind(key, bit_width=width, shape=shape)


def _bits_words(key, width, shape):
    word1, word2 = _encrypt(key, *_counters(shape))
    if width == 64:
        high, low = (lax.convert_element_type(w, dtypes.uint64) for w in (word1, word2))
        return lax.bitwise_or(lax.mul(high, scalar_like(high, _WORD)), low)
    return lax.convert_element_type(lax.bitwise_xor(word1, word2), _UINT_BY_WIDTH[width])


threefry_prng_impl = _keys.PRNGImpl(key_shape=(2,), seed=_seed_words, split=_split_words,
                                    random_bits=_bits_words, fold_in=_fold_in_words,
                                    name="threefry2x32", tag="fry")
_keys.register_prng(threefry_prng_impl)


def bits(key, shape=(), dtype=None, *, out_sharding=None):
    """Uniformly random unsigned integers (uint32 by default, uint64 with x64)."""
    key = _sampler_key("bits", key)
    dtype = dtypes.canonicalize_dtype(dtypes.uint64 if dtype is None else dtype)
    if not dtypes.is_unsigned(dtype):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return _random_bits(key, dtype.itemsize * 8, shape_tuple(shape))


# ---------------------------------------------------------------- helpers


def _float_dtype(name, dtype):
    dtype = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtype


def _check_shape(name, shape, *param_shapes):
    """JAX's rule: parameters broadcast to exactly the requested shape."""
    combined = broadcast_shapes(shape, *param_shapes)
    if combined != shape:
        raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                         f"argument, and the result of broadcasting the shapes must equal the "
                         f"shape argument, but got result {combined} for shape argument {shape}.")


def _param_shape(shape, *params):
    """The draw's shape: as given, or else that of the broadcast parameters."""
    if shape is None:
        return broadcast_shapes(*(np.shape(p) for p in params))
    return shape_tuple(shape)


def _as_param(name, x, dtype, shape):
    """A distribution parameter converted to dtype and broadcast to the draw's shape."""
    return jnp.broadcast_to(_unbroadcast_param(name, x, dtype, shape), shape)


def _unbroadcast_param(name, x, dtype, shape):
    """A distribution parameter converted to dtype, checked to broadcast to the draw's shape."""
    x = lax.convert_element_type(jnp.asarray(x), dtype)
    _check_shape(name, shape, x.shape)
    return x


def _scalar(value, dtype):
    return lax.full((), value, dtype)


# ---------------------------------------------------------------- continuous samplers


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0, *, out_sharding=None):
    """Uniform floats in [minval, maxval)."""
    key = _sampler_key("uniform", key)
    return _uniform(key, shape_tuple(shape), _float_dtype("uniform", dtype), minval, maxval)


def _uniform(key, shape, dtype, minval, maxval):
    minval, maxval = (_as_param("uniform", v, dtype, shape) for v in (minval, maxval))
    unit, span = _unit_floats(key, shape, dtype), lax.sub(maxval, minval)
    # XLA fuses the float32 multiply-add and rounds 16-bit types after each operation.
    if dtype.itemsize >= 4:
        scaled = lax.fma(unit, span, minval)
    else:
        scaled = lax.add(lax.mul(unit, span), minval)
    return lax.max(minval, scaled)


def _unit_floats(key, shape, dtype):
    """Floats in [0, 1): random mantissa bits under the exponent of 1.0, minus 1.

    Formats with under 8 mantissa bits (bfloat16) draw 8 random bits.
    """
    width, mantissa_bits = dtype.itemsize * 8, dtypes.finfo(dtype).nmant
    uint = _UINT_BY_WIDTH[width]
    draw_width = 8 if mantissa_bits < 8 else width
    random = lax.convert_element_type(_random_bits(key, draw_width, shape), uint)
    mantissa = lax.div(random, scalar_like(random, 2 ** (draw_width - mantissa_bits)))  # a logical right shift
    one_bits = int(np.array(1.0, dtype).view(uint))
    floats = lax.bitcast_convert_type(lax.bitwise_or(mantissa, scalar_like(mantissa, one_bits)), dtype)
    return lax.sub(floats, _scalar(1.0, dtype))


def normal(key, shape=(), dtype=None, *, out_sharding=None):
    """Standard normal floats, by inverting the normal CDF at uniform points of (-1, 1). For a
    complex dtype, as JAX: (x + 1j y) / sqrt(2) with x and y from the key's two halves (split),
    so E|z|^2 = 1."""
    key = _sampler_key("normal", key)
    shape = shape_tuple(shape)
    if dtype is not None and dtypes.is_complex(dtypes.canonicalize_dtype(dtype)):
        dtype = dtypes.canonicalize_dtype(dtype)
        part = dtypes.real_dtype(dtype)
        re, im = (_normal(k, shape, part) for k in _split_pair(key))
        return lax.div(lax.complex(re, im), _scalar(np.sqrt(2), dtype))
    return _normal(key, shape, _float_dtype("normal", dtype))


def _normal(key, shape, dtype):
    if current_trace() is EVAL_TRACE and math.prod(shape) >= _COMPILED_DRAWS:
        return _compiled_normal(key, shape, dtype)
    return _normal_by_inverse_cdf(key, shape, dtype)


def _normal_by_inverse_cdf(key, shape, dtype):
    lowest = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(key, shape, dtype, lowest, 1.0)
    return lax.mul(_scalar(np.sqrt(2), dtype), erf_inv(u))


# Eager draws this large run compiled: numpy's erf_inv costs ~1.5 us a value (a 5000 x 5000
# draw took minutes), the compiled one a few ns, and a compile costs about a second.
_COMPILED_DRAWS = 1 << 20
_compiled_normal = library_jit(_normal_by_inverse_cdf, static_argnums=(1, 2))


def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
    """Standard normal floats conditioned on lower < x < upper."""
    key = _sampler_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    shape = _param_shape(shape, lower, upper)
    # The bounds' erf and nextafter are taken before they broadcast: once per bound, not per draw.
    lower, upper = (_unbroadcast_param("truncated_normal", b, dtype, shape) for b in (lower, upper))
    sqrt2 = _scalar(np.sqrt(2), dtype)
    u = _uniform(key, shape, dtype, erf(lax.div(lower, sqrt2)), erf(lax.div(upper, sqrt2)))
    out = lax.mul(sqrt2, erf_inv(u))
    # Rounding (or u landing exactly on a bound) must not leave the open interval.
    above_lower = jnp.broadcast_to(lax.nextafter(lower, _scalar(np.inf, dtype)), shape)
    below_upper = jnp.broadcast_to(lax.nextafter(upper, _scalar(-np.inf, dtype)), shape)
    return lax.clamp(above_lower, out, below_upper)


def exponential(key, shape=(), dtype=None, *, out_sharding=None):
    """Floats with density exp(-x) on x >= 0."""
    key = _sampler_key("exponential", key)
    return _exponential(key, shape_tuple(shape), _float_dtype("exponential", dtype))


def _exponential(key, shape, dtype):
    u = _unit_floats(key, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))  # 1 - u lies in (0, 1]: log never sees 0


def gumbel(key, shape=(), dtype=None, mode="low", *, out_sharding=None):
    """Floats with density exp(-(x + exp(-x))).

    mode "high" spends a second draw on the low bits of small uniforms, which
    extends the largest reachable sample from about 16 to about 32 in float32.
    """
    key = _sampler_key("gumbel", key)
    return _gumbel(key, shape_tuple(shape), _float_dtype("gumbel", dtype), mode)


def _gumbel(key, shape, dtype, mode):
    info = dtypes.finfo(dtype)
    if mode == "low":
        u = _uniform(key, shape, dtype, float(info.tiny), 1.0)
        return lax.neg(lax.log(lax.neg(lax.log(u))))
    if mode != "high":
        raise ValueError(f"gumbel mode must be 'low' or 'high', got {mode!r}")
    high, low = _unit_pair(key, shape, dtype)
    refined = lax.add(lax.add(high, lax.mul(low, 2.0 ** -info.nmant)), float(info.tiny))
    x = lax.select_n(lax.ge(high, 0.5), refined, high)
    return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))


def _unit_pair(key, shape, dtype):
    both = _unit_floats(key, (2,) + shape, dtype)
    return [lax.index_in_dim(both, i, keepdims=False) for i in (0, 1)]


def laplace(key, shape=(), dtype=None, *, out_sharding=None):
    """Floats with density exp(-|x|) / 2."""
    key = _sampler_key("laplace", key)
    dtype = _float_dtype("laplace", dtype)
    u = _uniform(key, shape_tuple(shape), dtype, -1.0 + float(dtypes.finfo(dtype).epsneg), 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None, *, out_sharding=None):
    """Floats with density exp(-x) / (1 + exp(-x))**2: the logit of a uniform."""
    key = _sampler_key("logistic", key)
    dtype = _float_dtype("logistic", dtype)
    u = _uniform(key, shape_tuple(shape), dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def cauchy(key, shape=(), dtype=None, *, out_sharding=None):
    """Floats with density 1 / (pi (1 + x**2)): the tangent of a uniform angle."""
    key = _sampler_key("cauchy", key)
    dtype = _float_dtype("cauchy", dtype)
    u = _uniform(key, shape_tuple(shape), dtype, float(dtypes.finfo(dtype).eps), 1.0)
    angle = lax.mul(_scalar(np.pi, dtype), lax.sub(u, 0.5))
    return lax.div(lax.sin(angle), lax.cos(angle))


def lognormal(key, sigma=1.0, shape=None, dtype=None, *, out_sharding=None):
    """exp(sigma * z) for standard normal z."""
    key = _sampler_key("lognormal", key)
    dtype, shape = _float_dtype("lognormal", dtype), _param_shape(shape, sigma)
    return lax.exp(lax.mul(_normal(key, shape, dtype), _as_param("lognormal", sigma, dtype, shape)))


def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
    """Floats >= 1 with density b / x**(b + 1): exp(e / b) for exponential e."""
    key = _sampler_key("pareto", key)
    dtype, shape = _float_dtype("pareto", dtype), _param_shape(shape, b)
    e = _exponential(key, shape, dtype)
    return lax.exp(lax.div(e, _as_param("pareto", b, dtype, shape)))


def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
    """scale * sqrt(-2 log u): the length of a 2-d normal vector of that scale."""
    key = _sampler_key("rayleigh", key)
    dtype, shape = _float_dtype("rayleigh", dtype), _param_shape(shape, scale)
    u = _unit_floats(key, shape, dtype)
    return lax.mul(_as_param("rayleigh", scale, dtype, shape), lax.sqrt(lax.mul(lax.log(u), -2.0)))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """scale * (-log(1 - u)) ** (1 / concentration): the inverse Weibull CDF."""
    key = _sampler_key("weibull_min", key)
    dtype, shape = _float_dtype("weibull_min", dtype), shape_tuple(shape)
    u = _unit_floats(key, shape, dtype)
    exponent = lax.div(1.0, _as_param("weibull_min", concentration, dtype, shape))
    return lax.mul(lax.pow(lax.neg(lax.log1p(lax.neg(u))), exponent),
                   _as_param("weibull_min", scale, dtype, shape))


# ---------------------------------------------------------------- discrete samplers


def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
    """Booleans that are True with probability p."""
    key = _sampler_key("bernoulli", key)
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}.")
    shape = _param_shape(shape, p)
    p = _as_param("bernoulli", p, p.dtype, shape)
    if mode == "low":
        return lax.lt(_unit_floats(key, shape, p.dtype), p)
    if mode != "high":
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    coarse, fine = _unit_pair(key, shape, p.dtype)
    fine = lax.mul(fine, 2.0 ** -dtypes.finfo(p.dtype).nmant)
    return lax.lt(fine, lax.sub(p, coarse))


def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
    """-1 or 1 with equal probability (integers by default)."""
    key = _sampler_key("rademacher", key)
    dtype = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype)
    coin = lax.convert_element_type(bernoulli(key, 0.5, shape), dtype)
    return lax.sub(lax.mul(coin, scalar_like(coin, 2)), scalar_like(coin, 1))


def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
    """Integers in [minval, maxval).

    Each value joins two draws of the dtype's width into one twice as wide and
    reduces it modulo the span: the bias towards small offsets that a modulo
    has when the span does not divide the range of the draw shrinks by a factor
    of 2**32 for 32-bit types. Narrower types are sampled as int32.
    """
    key = _sampler_key("randint", key)
    dtype = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype)
    if not dtypes.is_int(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = shape_tuple(shape)
    info = dtypes.iinfo(dtype)
    if info.bits >= 32:
        return _randint(key, shape, minval, maxval, dtype)
    minval = lax.clamp(int(info.min), _as_int(minval, dtypes.int32), int(info.max))
    maxval = lax.clamp(int(info.min), _as_int(maxval, dtypes.int32), int(info.max) + 1)
    return lax.convert_element_type(_randint(key, shape, minval, maxval, dtypes.int32), dtype)


def _as_int(x, dtype=None):
    x = jnp.asarray(x)
    if dtype is None:
        dtype = x.dtype if dtypes.is_int(x.dtype) else dtypes.default_int_dtype()
    return lax.convert_element_type(x, dtype)


def _randint(key, shape, minval, maxval, dtype):
    minval, maxval = _as_int(minval), _as_int(maxval)
    _check_shape("randint", shape, minval.shape, maxval.shape)
    # A maxval above the dtype's range (randint(k, s, 0, 256, uint8)) makes the span one larger.
    dtype_max = _clip_to_int(jnp.asarray(np.array(dtypes.iinfo(dtype).max, dtype)), maxval.dtype)
    beyond_range = jnp.broadcast_to(lax.gt(maxval, dtype_max), shape)
    minval, maxval = (jnp.broadcast_to(_clip_to_int(v, dtype), shape) for v in (minval, maxval))
    nbits = dtypes.iinfo(dtype).bits
    unsigned = _UINT_BY_WIDTH[nbits]
    high_bits, low_bits = (_random_bits(k, nbits, shape) for k in _split_pair(key))

    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    empty = lax.le(maxval, minval)
    span = lax.select_n(empty, span, lax.full_like(span, 1))
    span = lax.select_n(lax.bitwise_and(beyond_range, lax.bitwise_not(empty)),
                        span, lax.add(span, scalar_like(span, 1)))
    # (high * 2**nbits + low) mod span, with 2**nbits mod span formed without overflow.
    multiplier = lax.rem(lax.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(high_bits, span), multiplier), lax.rem(low_bits, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def _split_pair(key):
    keys = _split(key, (2,))
    return [keys[0], keys[1]]     # concrete keys index their words directly


def _clip_to_int(x, dtype):
    """Convert between integer types, saturating instead of wrapping."""
    to, source = dtypes.iinfo(dtype), dtypes.iinfo(x.dtype)
    low, high = max(to.min, source.min), min(to.max, source.max)
    return lax.convert_element_type(lax.clamp(scalar_like(x, int(low)), x, scalar_like(x, int(high))), dtype)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode="low", *, out_sharding=None):
    """Indices drawn with probabilities softmax(logits) along `axis` (Gumbel-max trick).

    shape defaults to the logits' shape without `axis`; extra leading entries draw
    several samples per distribution. replace=False draws distinct indices
    (Gumbel top-k), one per leading entry.
    """
    key = _sampler_key("categorical", key)
    logits = jnp.asarray(logits)
    axis = canonicalize_axis(axis, logits.ndim)
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch_shape if shape is None else shape_tuple(shape)
    _check_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    if not replace:
        return _categorical_without_replacement(key, logits, axis, shape, prefix, mode)
    # One noise value per category of each distribution (broadcast batch axes included).
    sampled_batch = shape[len(prefix):]
    noise_shape = prefix + sampled_batch[:axis] + logits.shape[axis:axis + 1] + sampled_batch[axis:]
    noise = _gumbel(key, noise_shape, logits.dtype, mode)
    return jnp.argmax(jnp.add(noise, logits), axis=len(prefix) + axis)


def _categorical_without_replacement(key, logits, axis, shape, prefix, mode):
    count = math.prod(prefix)
    if count > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({count}) cannot exceed "
                         f"number of categories ({logits.shape[axis]}).")
    perturbed = jnp.add(logits, _gumbel(key, logits.shape, logits.dtype, mode))
    _, indices = lax.top_k(jnp.moveaxis(perturbed, axis, -1), count)
    last = indices.ndim - 1
    return lax.reshape(indices, shape, (last,) + tuple(range(last)))


# ---------------------------------------------------------------- permutations and choice


def permutation(key, x, axis=0, independent=False, *, out_sharding=None):
    """A random permutation of range(x) for an int x, else x shuffled along `axis`.

    independent=True shuffles each slice along `axis` separately.
    """
    key = _sampler_key("permutation", key)
    if np.ndim(x) == 0:
        return _shuffle(key, _arange_of(x, "permutation"), 0)
    x = jnp.asarray(x)
    axis = canonicalize_axis(axis, x.ndim)
    key_shape = x.shape if independent else x.shape[axis:axis + 1]
    return _shuffle(key, x, axis, key_shape)


def _arange_of(n, name):
    if isinstance(n, Tracer) and n.to_concrete_value() is None or not _is_integer_like(n):
        raise TypeError(f"{name}: x must be a concrete integer or an array of at least one "
                        "dimension")
    return jnp.arange(int(n))


def _shuffle(key, x, axis, key_shape=None):
    """Sort by fresh random 32-bit keys, in as many rounds as make key collisions negligible.

    Several stable sorts by random keys are a uniform shuffle once every pair of
    elements has been told apart in some round; three times log(n) / log(2**32)
    rounds make an untold pair unlikely (the heuristic JAX inherits from TensorFlow).
    """
    key_shape = x.shape if key_shape is None else key_shape
    size = math.prod(key_shape)
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    key_axes = tuple(range(x.ndim)) if len(key_shape) == x.ndim else (axis,)
    for _ in range(rounds):
        key, subkey = _split_pair(key)
        sort_keys = lax.broadcast_in_dim(_random_bits(subkey, 32, key_shape), x.shape, key_axes)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Samples from the entries of `a` along `axis` (or from range(a) for an int a).

    p gives each entry's probability; replace=False draws distinct entries.
    """
    key = _sampler_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jaxlite.random.choice must be a sequence, got {shape}")
    shape = shape_tuple(shape)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        arr, axis, scalar_input = _arange_of(a, "choice"), 0, True
    else:
        axis, scalar_input = canonicalize_axis(axis, arr.ndim), False
    n_inputs, n_draws = arr.shape[axis], math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None and not replace:
        result = lax.slice_in_dim(permutation(key, arr, axis), 0, n_draws, axis=axis)
    else:
        indices = _choice_indices(key, shape, n_inputs, replace, p)
        result = indices if scalar_input else jnp.take(arr, indices, axis)
    out_shape = shape if scalar_input else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return lax.reshape(result, out_shape)


def _choice_indices(key, shape, n_inputs, replace, p):
    if p is None:
        return randint(key, shape, 0, n_inputs)
    (p,) = promote_to_inexact("choice", p)
    if p.shape != (n_inputs,):
        raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. "
                         f"p has shape {p.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
        cumulative = jnp.cumsum(p)
        total = lax.index_in_dim(cumulative, n_inputs - 1, keepdims=False)
        r = lax.mul(total, lax.sub(1.0, uniform(key, shape, p.dtype)))
        return jnp.searchsorted(cumulative, r)
    noisy = jnp.add(_gumbel(key, (n_inputs,), p.dtype, "low"), jnp.log(p))
    _, indices = lax.top_k(noisy, math.prod(shape))
    return lax.reshape(indices, shape)
