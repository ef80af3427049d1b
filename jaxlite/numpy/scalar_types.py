"""Scalar types (jnp.float32, ...) and dtype queries (finfo, iinfo, issubdtype).

As in JAX, `jnp.float32` is a class: calling it makes an Array of that dtype
(`jnp.float32(2)`), and it also serves wherever a dtype is accepted, because
numpy turns any object with a `dtype` attribute into that dtype
(`np.dtype(jnp.float32)`). Comparing it with a numpy dtype or scalar type
compares the dtypes.
"""
import numpy as np

from jaxlite.core import dtypes

# The abstract numpy type hierarchy, for issubdtype.
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
complexfloating = np.complexfloating


class _ScalarMeta(type):
    def __call__(cls, x):
        from jaxlite.numpy.creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __eq__(cls, other):
        if isinstance(other, _ScalarMeta):
            return cls.dtype == other.dtype
        # Anything that names no dtype (a string, a tuple, ...) is simply unequal, as in JAX.
        try:
            return cls.dtype == np.dtype(other)
        except (TypeError, ValueError):
            return False

    def __ne__(cls, other):
        return not cls == other

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __repr__(cls):
        return f"jaxlite.numpy.{cls.__name__}"

    def __instancecheck__(cls, instance):
        # numpy scalars of this type count as instances, as with JAX's scalar types.
        return isinstance(instance, cls.dtype.type)


def _scalar_type(name, dtype):
    return _ScalarMeta(name, (), {"dtype": np.dtype(dtype)})


bool_ = _scalar_type("bool_", dtypes.bool_)
int8, int16, int32, int64 = (_scalar_type(f"int{8 * d.itemsize}", d)
                             for d in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(f"uint{8 * d.itemsize}", d)
                                 for d in (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64))
float16, float32, float64 = (_scalar_type(f"float{8 * d.itemsize}", d)
                             for d in (dtypes.float16, dtypes.float32, dtypes.float64))
complex64, complex128 = _scalar_type("complex64", dtypes.complex64), _scalar_type("complex128", dtypes.complex128)


def __getattr__(name):
    # ml_dtypes' types (bfloat16, float8_e4m3fn, int4, ...) are made when first named: that imports
    # ml_dtypes (see core.dtypes). setdefault: a racing thread's class is dropped, one stays.
    if name in dtypes.ML_DTYPE_NAMES:
        return globals().setdefault(name, _scalar_type(name, dtypes.as_dtype(name)))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ABSTRACT = (generic, number, inexact, floating, integer, signedinteger, unsignedinteger,
             complexfloating)


def _as_dtype(x):
    """A dtype for anything naming or having one; numpy's abstract types are kept as they are."""
    if any(x is t for t in _ABSTRACT) or isinstance(x, dtypes.ExtendedDType):
        return x
    if isinstance(x, type) and issubclass(x, dtypes.extended):
        return x
    if isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType):
        return x.dtype
    is_array = not isinstance(x, (type, np.dtype)) and hasattr(x, "shape")
    return dtypes.as_dtype(x.dtype if is_array else x)


def _ml_dtypes_kind(dtype):
    """numpy sees ml_dtypes' types as kind 'V' (or 'f'): their place in numpy's abstract
    hierarchy; None for numpy's own types."""
    if not (dtypes.is_bfloat16(dtype) or dtypes.is_narrow(dtype)):
        return None
    if dtypes.is_float(dtype):
        return np.floating
    return np.unsignedinteger if dtypes.is_unsigned(dtype) else np.signedinteger


def issubdtype(arg1, arg2):
    """np.issubdtype, with bfloat16 counted as a floating type (numpy does not know it)."""
    first, second = _as_dtype(arg1), _as_dtype(arg2)
    if isinstance(first, dtypes.ExtendedDType) or isinstance(second, dtypes.ExtendedDType):
        return first == second if isinstance(second, dtypes.ExtendedDType) else issubclass(first.type, second)
    if isinstance(first, type) and issubclass(first, dtypes.extended):
        return isinstance(second, type) and issubclass(first, second)
    kind = _ml_dtypes_kind(first) if isinstance(first, np.dtype) else None
    if kind is not None:
        if isinstance(second, np.dtype):
            return first == second
        return issubclass(kind, second)
    return bool(np.issubdtype(first, second))


def finfo(dtype):
    dtype = _as_dtype(dtype)
    if not dtypes.is_inexact(dtype):
        raise ValueError(f"finfo needs a floating-point dtype, got {dtype}")
    return dtypes.finfo(dtype)


def iinfo(int_type):
    dtype = _as_dtype(int_type)
    if not dtypes.is_int(dtype):
        raise ValueError(f"iinfo needs an integer dtype, got {dtype}")
    return dtypes.iinfo(dtype)
