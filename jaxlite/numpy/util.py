"""Shared helpers for the NumPy-style API: argument checks, promotion and broadcasting."""
import warnings

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.config import config
from jaxlite.core.errors import user_stacklevel
from jaxlite.core.abstract import broadcast_shapes
from jaxlite.core.array import Array
from jaxlite.core.trace import Tracer


def is_array_like(x):
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or dtypes.is_python_scalar(x)


def check_arraylike(name, *args):
    for position, x in enumerate(args):
        if not is_array_like(x):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x).__name__} "
                            f"at position {position}")


def check_device(device):
    """A `device=` argument: None, this process's Device, or a sharding onto it."""
    if device is None:
        return
    from jaxlite._sharding import Device, Sharding, _check_target
    if not isinstance(device, (Device, Sharding)):
        raise TypeError(f"device= must be a Device (jaxlite.devices()), a Sharding or None, got "
                        f"{type(device).__name__}")
    _check_target(device)


def promote_dtypes(*args):
    """Convert arguments to their common dtype, weakly typed where the lattice's join is weak
    (Python scalars among themselves, or a scalar of a higher kind: int32 array + 1.0)."""
    if config.jax_numpy_dtype_promotion == "strict":
        _check_strict_promotion(args)
    dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if isinstance(dtype, dtypes.ExtendedDType):    # typed keys of one implementation
        return list(args)
    return [lax.convert_element_type(x, dtype, weak_type=weak) for x in args]


def _check_strict_promotion(args):
    """jax_numpy_dtype_promotion="strict": one strong dtype; weak values only of a kind it holds
    (a weak int fits any number, a weak float any inexact dtype)."""
    strong = {np.dtype(x.dtype) for x in args if not _is_weak(x) and hasattr(x, "dtype")}
    weak = [x for x in args if _is_weak(x)]
    target = next(iter(strong)) if len(strong) == 1 else None
    fits = target is not None and all(_weak_fits(x, target) for x in weak)
    if len(strong) > 1 or (weak and strong and not fits):
        shown = tuple(sorted(str(type(x)) if dtypes.is_python_scalar(x) else np.dtype(x.dtype).name for x in args))
        raise dtypes.TypePromotionError(
            f"Input dtypes {shown} have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output type, "
            "or set jax_numpy_dtype_promotion=standard.")


def _weak_fits(x, dtype):
    kind = dtypes.dtype_of(x).kind if not hasattr(x, "dtype") else np.dtype(x.dtype).kind
    return kind == np.dtype(dtype).kind or (kind in "iu" and np.dtype(dtype).kind in "iufc") or \
        (kind == "b" and np.dtype(dtype).kind == "b")


def _check_rank_promotion(name, args):
    """jax_numpy_rank_promotion: "warn" or "raise" when operands of different ranks (rank 0
    aside) are broadcast together."""
    mode = config.jax_numpy_rank_promotion
    ranks = {np.ndim(x) for x in args if np.ndim(x) != 0}
    if mode == "allow" or len(ranks) < 2:
        return
    shapes = " ".join(str(np.shape(x)) for x in args)
    if mode == "raise":
        raise ValueError(f"Operands could not be broadcast together for {name} on shapes {shapes} and "
                         "with the config option jax_numpy_rank_promotion='raise'.")
    warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes {shapes}. Set the "
                  "jax_numpy_rank_promotion config option to 'allow' to disable this warning.",
                  stacklevel=user_stacklevel())


def _is_weak(x):
    return dtypes.is_python_scalar(x) or getattr(x, "weak_type", False)


def broadcast_arrays(*args):
    """The arguments broadcast to their common shape (as arrays, rank-0 ones too)."""
    shape = broadcast_shapes(*(np.shape(x) for x in args))
    return [broadcast_to(x, shape) for x in args]


def _broadcast_operands(*args):
    """Broadcast to a common shape; rank-0 operands are left for the primitive to broadcast."""
    shape = broadcast_shapes(*(np.shape(x) for x in args))
    return [x if np.ndim(x) == 0 or np.shape(x) == shape else broadcast_to(x, shape) for x in args]


def broadcast_to(x, shape):
    x = lax.base.as_operand(x)
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if len(shape) < x.ndim or broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"Incompatible shapes for broadcasting: {x.shape} to {shape}")
    lead = len(shape) - x.ndim
    return lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def promote_and_broadcast(name, *args):
    if _already_uniform(args):
        return args
    try:
        if len(args) == 2:
            fast = _array_and_scalar(*args)
            if fast is not None:
                return fast
        check_arraylike(name, *args)
        _check_rank_promotion(name, args)
        promoted = promote_dtypes(*args)
    except TypeError:
        _check_no_keys(name, args)
        raise
    try:
        return _broadcast_operands(*promoted)
    except ValueError:
        raise broadcast_mismatch(name, [np.shape(x) for x in args]) from None


def broadcast_mismatch(name, shapes):
    """JAX's error for operands of `name` that do not broadcast: operands of several ranks
    fail to broadcast (ValueError), operands of one rank fail the elementwise primitive's
    shape check (TypeError)."""
    if len({len(s) for s in shapes}) > 1:
        return ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
    shown = ", ".join(map(str, shapes))
    return TypeError(f"{name} got incompatible shapes for broadcasting: {shown}.")


def _check_no_keys(name, args):
    """JAX's error for typed keys mixed with numbers (`key + 1`)."""
    found = [getattr(x, "dtype", None) for x in args]
    if any(isinstance(d, dtypes.ExtendedDType) for d in found):
        shown = ", ".join(str(d) if isinstance(d, dtypes.ExtendedDType) else dtypes.dtype_of(x).name
                          for d, x in zip(found, args))
        raise TypeError(f"{name} does not accept dtypes {shown}.") from None


_ARRAY_TYPES = (Array, Tracer)


def _scalar_fits(scalar, dtype):
    """Whether a Python scalar leaves `dtype` unchanged under promotion (a weak type)."""
    if isinstance(scalar, bool):
        return dtype == dtypes.bool_
    if isinstance(scalar, int):
        return dtypes.is_int(dtype) or dtypes.is_inexact(dtype)
    if isinstance(scalar, float):
        return dtypes.is_inexact(dtype)
    return dtypes.is_complex(dtype)


def _array_and_scalar(a, b):
    """The other common case: an array with a Python scalar of a kind it absorbs."""
    if isinstance(a, _ARRAY_TYPES) and type(b) in (int, float, bool, complex) and _scalar_fits(b, a.dtype):
        return a, lax.base.as_operand(b, a.dtype)
    if isinstance(b, _ARRAY_TYPES) and type(a) in (int, float, bool, complex) and _scalar_fits(a, b.dtype):
        return lax.base.as_operand(a, b.dtype), b
    return None


def _already_uniform(args):
    """The common eager case: arrays of one dtype, shape and weak type need no work."""
    first = args[0]
    if not isinstance(first, _ARRAY_TYPES):
        return False
    for other in args[1:]:
        if (not isinstance(other, _ARRAY_TYPES) or other.dtype != first.dtype
                or other.shape != first.shape or other.weak_type != first.weak_type):
            return False
    return True


def promote_to_numeric(name, *args):
    """Like promote_and_broadcast, but bools become the default integer (as JAX's square and
    power of booleans are int32)."""
    args = promote_and_broadcast(name, *args)
    if not dtypes.is_bool(args[0].dtype):
        return args
    return [lax.convert_element_type(x, dtypes.default_int_dtype()) for x in args]


def promote_to_inexact(name, *args):
    """Like promote_and_broadcast, but integers and bools become the default float."""
    return promote_dtypes_inexact(*promote_and_broadcast(name, *args))


def promote_dtypes_inexact(*args):
    """Like promote_dtypes, but integers and bools become floats (float64 for 64-bit
    integers, else float32, as JAX's)."""
    args = promote_dtypes(*args)
    if dtypes.is_inexact(args[0].dtype):
        return args
    dtype = dtypes.to_inexact_dtype(args[0].dtype)
    return [lax.convert_element_type(x, dtype, weak_type=getattr(x, "weak_type", False)) for x in args]
