"""Typed PRNG keys: arrays whose elements are whole keys (dtype key<fry>), as
`jax.random.key` makes them.

A key array of shape S is an array of the extended dtype key<fry> (core/extended.py):
jaxprs show it as `key<fry>[S]`, and its physical form is the uint32 array of shape
S + (2,) of its keys' words, which is all that compiled code sees. The primitives
below make, consume and take apart keys (random_seed, random_wrap, random_unwrap,
random_split, random_fold_in, random_bits, random_clone); each works on key arrays of
any shape, so vmap needs no more than moving the batch axis to the front. Their
physical rules are the keys' implementation's functions on one key's words, vmapped
over the key axes. Shape operations, indexing, select_n and control flow carry keys through
their shared physical rules. Keys are not differentiable: their tangents are float0.

The implementations are PRNGImpl values (jax.extend.random's): threefry2x32 (the
default, _core), rbg and unsafe_rbg (_rbg), and any that define_prng_impl makes.
"""
import math
from typing import Callable, NamedTuple

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.extended import ExtendedArray, physical_rules
from jaxlite.core.primitive import Primitive
from jaxlite.core.trace import Tracer
from jaxlite.transforms import ad, batching

_UNSIGNED = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}
_JAX_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


class PRNGImpl(NamedTuple):
    """A PRNG implementation (as jax.extend.random's): the shape of one key's uint32 words
    and the functions on one key's words,

        seed(int[]) -> K,  split(K, shape) -> K[*shape],  fold_in(K, uint32[]) -> K,
        random_bits(K, bit_width, shape) -> uint<bit_width>[*shape].

    The key primitives map them over key arrays of any shape. As a primitive's `impl`
    param it prints as its tag (`random_seed[impl=fry]`), as JAX prints it."""
    key_shape: tuple
    seed: Callable
    split: Callable
    random_bits: Callable
    fold_in: Callable
    name: str = "<unnamed>"
    tag: str = "?"

    def __hash__(self):
        return hash(self.tag)

    def __str__(self):
        return self.tag

    __repr__ = __str__


class PRNGSpec:
    """What define_prng_impl gives: an implementation to pass as `impl=` (jax.random.key,
    wrap_key_data, key_dtype)."""
    __slots__ = ("_impl",)

    def __init__(self, impl):
        self._impl = impl

    def __repr__(self):
        return f"PRNGSpec({self._impl.name!r})"

    def __str__(self):
        return str(self._impl)

    def __hash__(self):
        return hash(self._impl)

    def __eq__(self, other):
        return isinstance(other, PRNGSpec) and self._impl == other._impl


_REGISTERED = {}


def register_prng(impl):
    """Make an implementation available by its name (jaxlite.random registers threefry2x32,
    rbg and unsafe_rbg)."""
    if impl.name in _REGISTERED:
        raise ValueError(f"PRNG with name {impl.name} already registered: {impl}")
    _REGISTERED[impl.name] = impl


class KeyTy(dtypes.ExtendedDType):
    """The dtype of typed keys of one PRNG implementation: key<tag>, whose elements are
    the implementation's uint32 words."""
    type = dtypes.prng_key
    physical_dtype = np.dtype(np.uint32)

    def __init__(self, impl):
        self.impl = impl
        self.name = f"key<{impl.tag}>"
        self.physical_shape = tuple(impl.key_shape)
        self.itemsize = 4 * math.prod(self.physical_shape)

    def __eq__(self, other):
        return isinstance(other, KeyTy) and other.impl == self.impl

    def __hash__(self):
        return hash(("KeyTy", self.impl))

    def wrap(self, data):
        return PRNGKeyArray(self, data)

    def from_physical(self, data):
        """Keys whose words are `data`, concrete or traced (as jnp.zeros_like makes them)."""
        return wrap(data, self.impl)


def resolve_impl(impl):
    """The PRNGImpl that `impl` names: None (the default, threefry2x32), a registered
    name, a PRNGImpl, what define_prng_impl gives, or a key dtype."""
    if impl is None:
        return _REGISTERED["threefry2x32"]
    if isinstance(impl, PRNGImpl):
        return impl
    if isinstance(impl, PRNGSpec):
        return impl._impl
    if isinstance(impl, KeyTy):
        return impl.impl
    if isinstance(impl, str) and impl in _REGISTERED:
        return _REGISTERED[impl]
    if impl in _JAX_IMPLS:
        raise ValueError(f"the PRNG implementation {impl!r} is not available in jaxlite; "
                         f"the available ones are {', '.join(sorted(_REGISTERED))}")
    names = ", ".join(f'"{n}"' for n in _JAX_IMPLS)
    raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: {names}?')


def impl_name(impl):
    """What jax.random.key_impl gives: a registered implementation's name, else its spec."""
    return impl.name if _REGISTERED.get(impl.name) == impl else PRNGSpec(impl)


class PRNGKeyArray(ExtendedArray):
    """A concrete array of typed PRNG keys. Indexing, reshaping and transposing act on the
    key axes of the words directly (a traced key array does them with lax primitives)."""

    __slots__ = ()
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    itemsize = property(lambda self: self.dtype.itemsize)

    def _like(self, key_data):
        return PRNGKeyArray(self.dtype, key_data)

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, Tracer) for i in index):     # a traced gather of keys
            from jaxlite.numpy.indexing import getitem
            return getitem(self, index)
        # Trailing full slices keep the words' axes whatever the index does before them.
        return self._like(self._physical[index + (slice(None),) * len(self.dtype.physical_shape)])

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self._like(self._physical.reshape(tuple(shape) + self.dtype.physical_shape))

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    @property
    def T(self):
        words = range(self.ndim, self.ndim + len(self.dtype.physical_shape))
        axes = tuple(reversed(range(self.ndim))) + tuple(words)
        return self._like(self._physical.transpose(axes))

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        words = tuple(range(self.ndim, self.ndim + len(self.dtype.physical_shape)))
        return (self._physical == other._physical).all(axis=words)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else ~equal

    __hash__ = None

    def __repr__(self):
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._physical)}"

    __str__ = __repr__

    def __reduce__(self):
        return (PRNGKeyArray, (self.dtype, self._physical))


def is_key(x):
    dtype = getattr(x, "dtype", None)
    return isinstance(dtype, KeyTy)


# ---------------------------------------------------------------- primitives

def _key_aval(shape, impl):
    return ShapedArray(shape, KeyTy(impl))


def _check_keys(name, aval):
    if not isinstance(aval.dtype, KeyTy):
        raise TypeError(f"{name} takes a typed key array, got {aval.str_short()}")


def _key_primitive(name, abstract_eval, physical_rule, multiple_results=False):
    """A key primitive: its types, its physical rule (which eager evaluation runs too when an
    operand is a key), batching by the leading key axes, and no derivative.
    physical_rule(in_avals, *physical_operands, **params) sees the logical types, whose
    key dtype names the implementation."""
    primitive = Primitive(name, multiple_results)
    primitive.def_abstract_eval(abstract_eval)
    physical_rules[primitive] = physical_rule
    batching.batch_rules[primitive] = _leading_batch_rule(primitive)
    ad.defjvp_zero(primitive)
    return primitive


def _leading_batch_rule(primitive):
    """Key primitives map over leading key axes: put every batch axis in front."""
    def rule(args, dims, **params):
        size = batching.batch_size(args, dims)
        moved = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
        return primitive.bind(*moved, **params), 0
    return rule


def per_key(fun, key_ndim):
    """`fun` on one key's words (and its other per-key operands), mapped over `key_ndim`
    leading key axes."""
    for _ in range(key_ndim):
        fun = batching.vmap(fun)
    return fun


def _seed_aval(seeds, impl):
    if not dtypes.is_int(seeds.dtype):
        raise TypeError(f"random_seed expects integer seeds, got {seeds.str_short()}")
    return _key_aval(seeds.shape, impl)


def _wrap_aval(data, impl):
    words = len(impl.key_shape)
    if data.dtype != np.uint32 or data.shape[data.ndim - words:] != tuple(impl.key_shape):
        shape = ", ".join(["..."] + [str(n) for n in impl.key_shape])
        raise TypeError(f"wrap_key_data expects a uint32 array of shape ({shape}) for impl "
                        f"{impl.name}, got {data.str_short()}")
    return _key_aval(data.shape[:data.ndim - words], impl)


def _unwrap_aval(keys):
    _check_keys("random_unwrap", keys)
    return ShapedArray(keys.shape + keys.dtype.physical_shape, keys.dtype.physical_dtype)


def _split_aval(keys, shape):
    _check_keys("random_split", keys)
    return keys.update(shape=keys.shape + tuple(shape))


def _fold_in_aval(keys, msgs):
    _check_keys("random_fold_in", keys)
    if msgs.dtype != np.uint32 or msgs.shape not in ((), keys.shape):
        raise TypeError(f"random_fold_in takes uint32 data of the keys' shape, got {msgs.str_short()}")
    return keys


def _bits_aval(keys, bit_width, shape):
    _check_keys("random_bits", keys)
    return ShapedArray(keys.shape + tuple(shape), _UNSIGNED[bit_width])


def _identity(in_avals, x, **params):
    return x


def _clone_aval(keys):
    _check_keys("random_clone", keys)
    return keys


def _physical_split(in_avals, words, shape):
    (keys,) = in_avals
    return per_key(lambda w: keys.dtype.impl.split(w, shape), keys.ndim)(words)


def _physical_fold_in(in_avals, words, msgs):
    keys = in_avals[0]
    fold_in = keys.dtype.impl.fold_in
    if msgs.ndim:
        return per_key(fold_in, keys.ndim)(words, msgs)
    return per_key(lambda w: fold_in(w, msgs), keys.ndim)(words)


def _physical_bits(in_avals, words, bit_width, shape):
    (keys,) = in_avals
    return per_key(lambda w: keys.dtype.impl.random_bits(w, bit_width, shape), keys.ndim)(words)


def _physical_seed(in_avals, seeds, impl):
    return per_key(impl.seed, seeds.ndim)(seeds)


def _seed_impl(seeds, impl):
    """threefry2x32's seed in numpy (keys are made often, eagerly): the high and low words."""
    if impl.name != "threefry2x32":
        return np.asarray(_physical_seed(None, seeds, impl))
    words = np.zeros(seeds.shape + (2,), np.uint32)
    if seeds.dtype.itemsize == 8:
        words[..., 0] = seeds.view(np.uint64) >> 32
    words[..., 1] = seeds.astype(np.uint32)
    return words


random_seed_p = _key_primitive("random_seed", _seed_aval, _physical_seed)
random_seed_p.def_impl(_seed_impl)      # (the two without key operands evaluate eagerly on numpy)
random_wrap_p = _key_primitive("random_wrap", _wrap_aval, _identity)
random_wrap_p.def_impl(lambda data, impl: data)
random_unwrap_p = _key_primitive("random_unwrap", _unwrap_aval, _identity)
random_split_p = _key_primitive("random_split", _split_aval, _physical_split)
random_fold_in_p = _key_primitive("random_fold_in", _fold_in_aval, _physical_fold_in)
random_bits_p = _key_primitive("random_bits", _bits_aval, _physical_bits)
random_clone_p = _key_primitive("random_clone", _clone_aval, _identity)


def _fold_in_batch(args, dims):
    """Keys and data batched alike (data of shape () stands for the keys' shape)."""
    keys, msgs = args
    size = batching.batch_size(args, dims)
    keys = batching.bdim_at_front(keys, dims[0], size)
    msgs = batching.bdim_at_front(msgs, dims[1], size)
    if msgs.shape != keys.shape:
        from jaxlite import lax
        msgs = lax.broadcast_in_dim(msgs, keys.shape, tuple(range(msgs.ndim)))
    return random_fold_in_p.bind(keys, msgs), 0


batching.batch_rules[random_fold_in_p] = _fold_in_batch


def seed(seeds, impl):
    return random_seed_p.bind(seeds, impl=resolve_impl(impl))


def wrap(data, impl):
    return random_wrap_p.bind(data, impl=resolve_impl(impl))


def unwrap(keys):
    return random_unwrap_p.bind(keys)
