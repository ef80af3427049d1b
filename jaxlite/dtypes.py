"""jaxlite.dtypes: JAX's public dtype helpers (the module `jax.dtypes`)."""
import numpy as _np

from jaxlite.core import dtypes as _dtypes
from jaxlite.core.dtypes import extended, float0, prng_key, result_type
from jaxlite.numpy.scalar_types import finfo, iinfo, issubdtype


class TypePromotionError(ValueError):
    """Raised where JAX's strict promotion or a safe cast rejects a pair of dtypes."""


def canonicalize_dtype(dtype, allow_extended_dtype=False):
    """The dtype jaxlite really uses for `dtype` (64-bit types narrow unless x64 is on)."""
    if isinstance(dtype, _dtypes.ExtendedDType):
        if not allow_extended_dtype:
            raise ValueError(f"canonicalize_dtype called on extended dtype {dtype} with "
                             "allow_extended_dtype=False")
        return dtype
    return _dtypes.canonicalize_dtype(dtype)


def scalar_type_of(x):
    """The Python scalar type of a value's dtype: bool, int, float or complex."""
    dtype = _dtypes.dtype_of(x)
    if _dtypes.is_float(dtype):
        return float
    scalar_type = {"b": bool, "i": int, "u": int, "c": complex}.get(_np.dtype(dtype).kind)
    if scalar_type is None:
        raise TypeError(f"Invalid scalar value {x!r}")
    return scalar_type


def itemsize_bits(dtype):
    """The width of one element in bits."""
    if isinstance(dtype, _dtypes.ExtendedDType):
        return 8 * dtype.itemsize
    return 8 * _np.dtype(dtype).itemsize


def __getattr__(name):
    # bfloat16 appears on first use, which imports ml_dtypes (see core.dtypes).
    if name == "bfloat16":
        return _dtypes.bfloat16
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"bfloat16"})
