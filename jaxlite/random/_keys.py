"""Typed PRNG keys: arrays whose elements are whole keys (dtype key<fry>), as
`jax.random.key` makes them.

A typed key array of shape S holds its keys' uint32 words as an array of shape
S + (2,). It is a pytree with that array as its one leaf and the implementation
as static data, so jit, vmap, grad and tree functions carry it through unchanged:
vmapping over a key array's axis 0 maps over the words' axis 0. Indexing and
reshaping act on the key axes only. The samplers accept typed and raw keys alike.

Only JAX's default implementation, threefry2x32, exists here.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import AbstractValue
from jaxlite.core.array import Array
from jaxlite.core.trace import Tracer
from jaxlite.core.tree_util import register_pytree_node

_IMPLS = {"threefry2x32": "fry"}
_JAX_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


class KeyTy(dtypes.ExtendedDType):
    """The dtype of typed keys of one PRNG implementation."""
    type = dtypes.prng_key
    itemsize = 8   # two uint32 words

    def __init__(self, impl):
        self.impl = impl
        self.name = f"key<{_IMPLS[impl]}>"

    def __eq__(self, other):
        return isinstance(other, KeyTy) and other.impl == self.impl

    def __hash__(self):
        return hash(("KeyTy", self.impl))


def resolve_impl(impl):
    """The implementation's name: JAX's names are accepted, only threefry2x32 is built."""
    if impl is None or impl == "threefry2x32" or getattr(impl, "impl", None) == "threefry2x32":
        return "threefry2x32"
    if impl in _JAX_IMPLS:
        raise ValueError(f"the PRNG implementation {impl!r} is not available in jaxlite; "
                         "only the default 'threefry2x32' is")
    names = ", ".join(f'"{n}"' for n in _JAX_IMPLS)
    raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: {names}?')


class KeyAval(AbstractValue):
    """The type of a typed key array, as jax.typeof gives it: key<fry>[3]."""

    __slots__ = ("shape", "dtype")
    weak_type = False

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    ndim = property(lambda self: len(self.shape))

    def __eq__(self, other):
        return isinstance(other, KeyAval) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def str_short(self):
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    __str__ = __repr__ = str_short


class PRNGKeyArray:
    """An array of typed PRNG keys (see the module docstring)."""
    __array_priority__ = 100

    def __init__(self, impl, key_data):
        self.dtype = KeyTy(impl)
        self._data = key_data

    shape = property(lambda self: tuple(self._data.shape[:-1]))
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    itemsize = property(lambda self: self.dtype.itemsize)
    aval = property(lambda self: KeyAval(self.shape, self.dtype))

    def _like(self, key_data):
        return PRNGKeyArray(self.dtype.impl, key_data)

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        # A trailing full slice keeps the words' axis whatever the index does before it.
        return self._like(self._data[index + (slice(None),)])

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self._like(self._data.reshape(tuple(shape) + (self._data.shape[-1],)))

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    @property
    def T(self):
        axes = tuple(reversed(range(self.ndim))) + (self.ndim,)
        return self._like(self._data.transpose(axes))

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return (self._data == other._data).all(axis=-1)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else ~equal

    def __repr__(self):
        words = self._data if isinstance(self._data, Tracer) else np.asarray(self._data)
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{words}"

    __str__ = __repr__

    def block_until_ready(self):
        return self


register_pytree_node(PRNGKeyArray, lambda k: ((k._data,), k.dtype.impl),
                     lambda impl, children: PRNGKeyArray(impl, children[0]))


# Typed key arrays are jax.Array instances, as in JAX (flax checks rngs that way).
Array.virtual_instance_types += (PRNGKeyArray,)
