"""Typed PRNG keys: arrays whose elements are whole keys (dtype key<fry>), as
`jax.random.key` makes them.

A key array of shape S is an array of the extended dtype key<fry> (core/extended.py):
jaxprs show it as `key<fry>[S]`, and its physical form is the uint32 array of shape
S + (2,) of its keys' words, which is all that compiled code sees. The primitives
below make, consume and take apart keys (random_seed, random_wrap, random_unwrap,
random_split, random_fold_in, random_bits, random_clone); each works on key arrays of
any shape, so vmap needs no more than moving the batch axis to the front. Their
physical rules are the threefry computations of _core on one key's words, vmapped over
the key axes. Shape operations, indexing, select_n and control flow carry keys through
their shared physical rules. Keys are not differentiable: their tangents are float0.

Only JAX's default implementation, threefry2x32, exists here.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.extended import ExtendedArray, physical_rules
from jaxlite.core.primitive import Primitive
from jaxlite.core.trace import Tracer
from jaxlite.transforms import ad, batching

_IMPLS = {"threefry2x32": "fry"}
_UNSIGNED = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}
_JAX_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


class PRNGImpl:
    """A PRNG implementation as a primitive's `impl` param: printed by its short tag
    (`random_seed[impl=fry]`), as JAX prints it."""

    def __init__(self, name):
        self.name, self.tag = name, _IMPLS[name]

    def __eq__(self, other):
        return isinstance(other, PRNGImpl) and other.name == self.name

    def __hash__(self):
        return hash(("PRNGImpl", self.name))

    def __repr__(self):
        return self.tag


class KeyTy(dtypes.ExtendedDType):
    """The dtype of typed keys of one PRNG implementation."""
    type = dtypes.prng_key
    itemsize = 8   # two uint32 words
    physical_shape = (2,)
    physical_dtype = np.dtype(np.uint32)

    def __init__(self, impl):
        self.impl = impl
        self.name = f"key<{_IMPLS[impl]}>"

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
    """The implementation's name: JAX's names are accepted, only threefry2x32 is built."""
    if impl is None or impl == "threefry2x32" or getattr(impl, "impl", None) == "threefry2x32" \
            or getattr(impl, "name", None) == "threefry2x32":
        return "threefry2x32"
    if impl in _JAX_IMPLS:
        raise ValueError(f"the PRNG implementation {impl!r} is not available in jaxlite; "
                         "only the default 'threefry2x32' is")
    names = ", ".join(f'"{n}"' for n in _JAX_IMPLS)
    raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: {names}?')


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
        # A trailing full slice keeps the words' axis whatever the index does before it.
        return self._like(self._physical[index + (slice(None),)])

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
        axes = tuple(reversed(range(self.ndim))) + (self.ndim,)
        return self._like(self._physical.transpose(axes))

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return (self._physical == other._physical).all(axis=-1)

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
    return ShapedArray(shape, KeyTy(impl.name))


def _check_keys(name, aval):
    if not isinstance(aval.dtype, KeyTy):
        raise TypeError(f"{name} takes a typed key array, got {aval.str_short()}")


def _key_primitive(name, abstract_eval, physical_rule, multiple_results=False):
    """A key primitive: its types, its physical rule (which eager evaluation runs too when an
    operand is a key), batching by the leading key axes, and no derivative."""
    primitive = Primitive(name, multiple_results)
    primitive.def_abstract_eval(abstract_eval)
    physical_rules[primitive] = lambda in_avals, *args, **params: physical_rule(*args, **params)
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
    if data.dtype != np.uint32 or data.shape[-1:] != (2,):
        raise TypeError(f"wrap_key_data expects a uint32 array of shape (..., 2) for impl "
                        f"{impl.name}, got {data.str_short()}")
    return _key_aval(data.shape[:-1], impl)


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


def _identity(x, **params):
    return x


def _clone_aval(keys):
    _check_keys("random_clone", keys)
    return keys


# The physical rules call _core's threefry functions, which are built on the primitives
# here: import them late.

def _physical_split(words, shape):
    from jaxlite.random._core import _split_words
    return per_key(lambda w: _split_words(w, shape), words.ndim - 1)(words)


def _physical_fold_in(words, msgs):
    from jaxlite.random._core import _fold_in_words
    if msgs.ndim:
        return per_key(_fold_in_words, words.ndim - 1)(words, msgs)
    return per_key(lambda w: _fold_in_words(w, msgs), words.ndim - 1)(words)


def _physical_bits(words, bit_width, shape):
    from jaxlite.random._core import _bits_words
    return per_key(lambda w: _bits_words(w, bit_width, shape), words.ndim - 1)(words)


def _physical_seed(seeds, impl):
    from jaxlite.random._core import _seed_words
    return per_key(_seed_words, seeds.ndim)(seeds)


def _seed_impl(seeds, impl):
    """_seed_words in numpy (keys are made often, eagerly)."""
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
    return random_seed_p.bind(seeds, impl=PRNGImpl(impl))


def wrap(data, impl):
    return random_wrap_p.bind(data, impl=PRNGImpl(impl))


def unwrap(keys):
    return random_unwrap_p.bind(keys)
