"""The array API standard's names (concat, permute_dims, vecdot, unique_*, isdtype, ...),
built on the NumPy-style functions beside them."""
from typing import NamedTuple

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.numpy import cumulative, products, shape_ops, sorting
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast, promote_dtypes


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
    """Dot products along `axis`, broadcasting the other axes (conj(x1) once complex exists)."""
    check_arraylike("vecdot", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
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
    return bool(np.can_cast(_dtype_of_value(from_), np.dtype(to), casting=casting))


def _dtype_of_value(x):
    return x.dtype if hasattr(x, "dtype") else np.dtype(x)


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
    dtype = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return any(_is_of_kind(dtype, k) for k in kinds)


def _is_of_kind(dtype, kind):
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"Unrecognized {kind=!r}")
        return bool(_KINDS[kind](dtype))
    return dtype == np.dtype(kind)


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
