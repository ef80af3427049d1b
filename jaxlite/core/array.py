"""The concrete array type: an immutable wrapper around a numpy buffer.

Operators and array methods are attached by jaxlite.numpy (shared with Tracer), so
this module stays independent of the API built on top of it.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray


class Array:
    __slots__ = ("_value", "weak_type", "__weakref__")
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
        if copy:
            return np.array(self._value, dtype=dtype)
        return self._value if dtype is None else self._value.astype(dtype)

    def block_until_ready(self):
        return self

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


def wrap_numpy(value, aval):
    """An Array holding a numpy result, with the dtype and weak type of `aval`."""
    value = np.asarray(value)
    if value.dtype != aval.dtype:
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
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid jaxlite type: "
                    "arguments must be arrays, numpy arrays or Python scalars (or pytrees of them)")
