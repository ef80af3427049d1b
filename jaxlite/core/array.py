"""The concrete array type: an immutable wrapper around a numpy buffer.

Operators and array methods are attached by jaxlite.numpy (shared with Tracer), so
this module stays independent of the API built on top of it.
"""
import weakref

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray, hitype_typeof, is_hi


class _ArrayType(type):
    """Makes `isinstance(x, Array)` true for tracers and typed PRNG key arrays too, as JAX's
    jax.Array is for them: code written for JAX checks for arrays that way, inside transformed
    functions too. jaxlite's own code tells a concrete Array apart with `type(x) is Array`."""

    # Registered by core.trace (Tracer) and random (PRNGKeyArray), which this module cannot import.
    virtual_instance_types = ()

    def __instancecheck__(cls, instance):
        return type.__instancecheck__(cls, instance) or (
            cls is Array and isinstance(instance, cls.virtual_instance_types))


class Array(metaclass=_ArrayType):
    # `_signature` is set on first use by jit's dispatch (see signature_of), never in __init__.
    __slots__ = ("_value", "weak_type", "_signature", "__weakref__")
    # Make numpy defer to our reflected operators: np_array + Array -> Array.
    __array_priority__ = 100

    def __init__(self, value, weak_type=False):
        value = np.asarray(value)
        if value.flags.writeable:
            value = value.view()
            value.flags.writeable = False
        self._value = value
        self.weak_type = weak_type

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)
    nbytes = property(lambda self: self._value.nbytes)

    @property
    def aval(self):
        return ShapedArray(self._value.shape, self._value.dtype, self.weak_type)

    def __array__(self, dtype=None, copy=None):
        if type(self._value) is _DeletedBuffer:
            self._value.__array__()
        if copy:
            return np.array(self._value, dtype=dtype)
        return self._value if dtype is None else self._value.astype(dtype)

    def block_until_ready(self):
        return self

    def devices(self):
        """The devices holding this array: this process's one (jaxlite.devices())."""
        return self.sharding.device_set

    @property
    def sharding(self):
        from jaxlite._sharding import SingleDeviceSharding, local_device
        return SingleDeviceSharding(local_device())

    def delete(self):
        """Release the buffer (as after donation): any later use raises RuntimeError."""
        if not self.is_deleted():
            self._value = _DeletedBuffer(self._value.shape, self._value.dtype)
        try:
            del self._signature
        except AttributeError:
            pass

    def is_deleted(self):
        return type(self._value) is _DeletedBuffer

    def unsafe_buffer_pointer(self):
        """The address of the array's buffer (valid while the array lives)."""
        if self.is_deleted():
            raise RuntimeError("Array has been deleted.")
        return self._value.ctypes.data

    def item(self, *index):
        return self._value.item(*index)

    def tolist(self):
        return self._value.tolist()

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if not dtypes.is_int(self.dtype):
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return self._value.__index__()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (Array(row) for row in self._value)

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'; arrays cannot be dict keys or static arguments")

    def __format__(self, spec):
        return format(self._value.item(), spec) if self.ndim == 0 else format(str(self), spec)

    def __reduce__(self):
        return (Array, (np.array(self._value), self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        dtype = f", dtype={self.dtype.name}"
        if self.size == 0:
            return f"Array([], shape={self.shape}{dtype}{weak})"
        body = np.array2string(self._value, separator=", ", prefix="Array(")
        return f"Array({body}{dtype}{weak})"

    def __str__(self):
        return str(self._value)

    def copy(self):
        return Array(self._value.copy(), self.weak_type)


class _DeletedBuffer:
    """Stands in for the buffer of a deleted Array: shape and dtype stay readable (as in
    JAX); anything that needs the data, including numpy's conversion, raises."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    def _error(self):
        shape = ",".join(map(str, self.shape))
        return RuntimeError(f"Array has been deleted with shape={self.dtype.name}[{shape}].")

    def __getattr__(self, name):
        raise self._error()

    def _raise(self, *args, **kwargs):
        raise self._error()

    # Python looks special methods up on the type, past __getattr__.
    __array__ = __len__ = __iter__ = __getitem__ = __bool__ = __int__ = __float__ = _raise
    __complex__ = __index__ = __copy__ = __deepcopy__ = _raise


class ArraySignature:
    """What a compiled function's machine code assumes of one Array argument: shape, dtype,
    weak type, and whether the buffer is C-contiguous. Interned, so equal signatures are
    the same object and a tuple of them hashes by identity, fast."""

    __slots__ = ("shape", "dtype", "weak_type", "contiguous", "__weakref__")

    def __init__(self, shape, dtype, weak_type, contiguous):
        self.shape, self.dtype, self.weak_type, self.contiguous = shape, dtype, weak_type, contiguous


_signatures = weakref.WeakValueDictionary()


def intern_signature(shape, dtype, weak_type, contiguous=True):
    key = (shape, dtype, bool(weak_type), bool(contiguous))
    found = _signatures.get(key)
    if found is None:
        found = _signatures.setdefault(key, ArraySignature(*key))
    return found


def signature_of(array):
    """`array`'s interned ArraySignature, remembered on the Array (it never changes)."""
    try:
        return array._signature
    except AttributeError:
        value = array._value
        if type(value) is _DeletedBuffer:
            raise value._error() from None
        array._signature = intern_signature(value.shape, value.dtype, array.weak_type, value.flags.c_contiguous)
        return array._signature


def wrap_numpy(value, aval):
    """An Array holding a numpy result, with the dtype and weak type of `aval` (a value of a
    hijax type stays the object it is)."""
    if is_hi(aval):
        return value
    value = np.asarray(value)
    if value.dtype != aval.dtype:
        if isinstance(aval.dtype, dtypes.ExtendedDType):   # a primitive made physical data
            return aval.dtype.wrap(Array(value))
        value = value.astype(aval.dtype)
    return Array(value, aval.weak_type)


def wrap_numpy_outputs(outputs, avals, multiple_results):
    if multiple_results:
        return [wrap_numpy(o, a) for o, a in zip(outputs, avals)]
    return wrap_numpy(outputs, avals[0])


def as_array_argument(x):
    """A transformation's argument as an Array (Python scalars stay weakly typed)."""
    from jaxlite.core.trace import Tracer
    if isinstance(x, (Array, Tracer)):
        return x
    if dtypes.is_python_scalar(x):
        dtype, weak = dtypes.result_type(x, return_weak_type_flag=True)
        return Array(dtypes.scalar_to_numpy(x, dtype), weak)
    if isinstance(x, (np.ndarray, np.generic)):
        value = np.asarray(x)
        return Array(value.astype(dtypes.canonicalize_dtype(value.dtype), copy=False))
    if type(x) in hitype_typeof:
        return x
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid jaxlite type: "
                    "arguments must be arrays, numpy arrays or Python scalars (or pytrees of them)")
