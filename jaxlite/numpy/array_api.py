"""The array API standard's names (concat, permute_dims, vecdot, unique_*, isdtype, ...),
built on the NumPy-style functions beside them."""
from typing import NamedTuple

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.numpy import cumulative, products, shape_ops, sorting
from jaxlite.numpy.util import check_arraylike, check_device, promote_and_broadcast, promote_dtypes


def concat(arrays, /, *, axis=0):
    return shape_ops.concatenate(arrays, axis=axis)


def permute_dims(a, /, axes):
    return shape_ops.transpose(a, axes)


def matrix_transpose(x, /):
    check_arraylike("matrix_transpose", x)
    (x,) = promote_and_broadcast("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={x.ndim}")
    return shape_ops.swapaxes(x, -1, -2)


def unstack(x, /, *, axis=0):
    check_arraylike("unstack", x)
    (x,) = promote_and_broadcast("unstack", x)
    if x.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
    axis = canonicalize_axis(axis, x.ndim)
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(x.shape[axis]))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Dot products along `axis` of conj(x1) and x2, broadcasting the other axes."""
    check_arraylike("vecdot", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    x1 = products._conjugated(x1)
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"axes must match; got shapes {x1.shape} and {x2.shape} with axis={axis}")
    x1 = shape_ops.moveaxis(x1, axis, -1)[..., None, :]
    x2 = shape_ops.moveaxis(x2, axis, -1)[..., :, None]
    return products.matmul(x1, x2, preferred_element_type=preferred_element_type)[..., 0, 0]


def vecmat(x1, x2, /):
    """x1 (..., n) times the matrices x2 (..., n, m), giving (..., m)."""
    check_arraylike("vecmat", x1, x2)
    return products.matmul(shape_ops.expand_dims(x1, -2), x2)[..., 0, :]


def matvec(x1, x2, /):
    """The matrices x1 (..., m, n) times x2 (..., n), giving (..., m)."""
    check_arraylike("matvec", x1, x2)
    return products.matmul(x1, shape_ops.expand_dims(x2, -1))[..., 0]


def astype(x, dtype, /, *, copy=False, device=None):
    check_arraylike("astype", x)
    check_device(device)
    dtypes.check_user_dtype(dtype, "astype")
    (x,) = promote_and_broadcast("astype", x)
    if dtype is None:
        dtype = dtypes.default_float_dtype()
    return lax.convert_element_type(x, dtype)


def bitwise_count(x, /):
    """The number of set bits of each element's magnitude, as uint8 (as JAX)."""
    check_arraylike("bitwise_count", x)
    (x,) = promote_and_broadcast("bitwise_count", x)
    magnitude = x if dtypes.is_unsigned(x.dtype) or dtypes.is_bool(x.dtype) else lax.abs(x)
    if dtypes.is_bool(x.dtype):
        magnitude = lax.convert_element_type(magnitude, dtypes.uint8)
    return lax.convert_element_type(lax.population_count(magnitude), dtypes.uint8)


def can_cast(from_, to, casting="safe"):
    return bool(np.can_cast(_dtype_of_value(from_), dtypes.as_dtype(to), casting=casting))


def _dtype_of_value(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.as_dtype(x)


_KINDS = {
    "bool": lambda d: d == dtypes.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": dtypes.is_float,
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d != dtypes.bool_,
}


def isdtype(dtype, kind):
    """Whether `dtype` is of `kind`: a dtype, one of the array API's kind names, or a tuple."""
    dtype = dtypes.as_dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return any(_is_of_kind(dtype, k) for k in kinds)


def _is_of_kind(dtype, kind):
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"Unrecognized {kind=!r}")
        return bool(_KINDS[kind](dtype))
    return dtype == dtypes.as_dtype(kind)


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
    values, indices, inverse, counts = sorting.unique(
        x, return_index=True, return_inverse=True, return_counts=True, size=size,
        fill_value=fill_value)
    return UniqueAllResult(values, indices, lax.reshape(inverse, np.shape(x)), counts)


def unique_counts(x, /, *, size=None, fill_value=None):
    return UniqueCountsResult(*sorting.unique(x, return_counts=True, size=size,
                                              fill_value=fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
    values, inverse = sorting.unique(x, return_inverse=True, size=size, fill_value=fill_value)
    return UniqueInverseResult(values, lax.reshape(inverse, np.shape(x)))


def unique_values(x, /, *, size=None, fill_value=None):
    return sorting.unique(x, size=size, fill_value=fill_value)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return cumulative.cumulative_accumulation(
        "cumulative_prod", cumulative.cumprod, 1, x, axis, dtype, include_initial)


def isscalar(element):
    """True for Python and numpy scalars and for 0-d arrays (JAX's rule)."""
    if dtypes.is_python_scalar(element) or isinstance(element, np.generic):
        return True
    return getattr(element, "ndim", None) == 0 and hasattr(element, "dtype")


# ---------------------------------------------------------------- namespace metadata and devices

__array_api_version__ = "2024.12"


class ArrayNamespaceInfo:
    """What the array API's __array_namespace_info__() reports for jaxlite.numpy."""

    def capabilities(self):
        # Data-dependent shapes need size= here, as in JAX; boolean masks index eagerly only.
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self):
        from jaxlite._sharding import local_device
        return local_device()

    def devices(self):
        from jaxlite._sharding import local_devices
        return local_devices()

    def default_dtypes(self, *, device=None):
        check_device(device)
        integer = dtypes.default_int_dtype()
        return {"real floating": dtypes.default_float_dtype(),
                "complex floating": dtypes.complex_dtype(dtypes.default_float_dtype()),
                "integral": integer, "indexing": integer}

    def dtypes(self, *, device=None, kind=None):
        check_device(device)
        names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64", "complex64", "complex128"]
        available = {}
        for name in names:
            dtype = np.dtype(name)
            if dtypes.canonicalize_dtype(dtype) == dtype and (kind is None or isdtype(dtype, kind)):
                available[name] = dtype
        return available


def __array_namespace_info__():
    return ArrayNamespaceInfo()


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from any object with __dlpack__ (numpy, torch, ...), through numpy."""
    from jaxlite.numpy.creation import asarray
    check_device(device)
    return asarray(np.from_dlpack(x, copy=copy))


def _device(self):
    from jaxlite._sharding import local_device
    return local_device()


def _to_device(self, device, /, *, stream=None):
    check_device(device)
    return self


def _array_namespace(self, /, *, api_version=None):
    if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(f"Unrecognized array API version: {api_version!r}")
    import jaxlite.numpy
    return jaxlite.numpy


def _dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    value = np.asarray(self)
    if copy is None and (max_version is None or max_version[0] < 1):
        # The buffer is read-only, which DLPack before 1.0 cannot say: hand out a copy.
        value, copy = np.array(value), True
    return value.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                            copy=copy)


def _dlpack_device(self, /):
    return np.asarray(self).__dlpack_device__()


# Array API attributes of concrete arrays (attached by jaxlite.numpy's array_methods).
ARRAY_METHODS = {"device": property(_device), "to_device": _to_device,
                 "__array_namespace__": _array_namespace, "__dlpack__": _dlpack,
                 "__dlpack_device__": _dlpack_device}
