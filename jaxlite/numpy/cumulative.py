"""Cumulative sums and products, and differences along an axis."""
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast


def _operand(name, a, axis, dtype):
    """The operand in its accumulation dtype; axis None flattens it first."""
    check_arraylike(name, a)
    (a,) = promote_and_broadcast(name, a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    if dtype is None:
        # Booleans accumulate as integers; other dtypes keep their type, as in JAX.
        dtype = dtypes.default_int_dtype() if dtypes.is_bool(a.dtype) else a.dtype
    return lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype)), canonicalize_axis(axis, a.ndim)


def _replace_nan(a, value):
    if not dtypes.is_float(a.dtype):
        return a
    return lax.select_n(lax.ne(a, a), a, lax.full_like(a, value))


def cumsum(a, axis=None, dtype=None):
    a, axis = _operand("cumsum", a, axis, dtype)
    return lax.cumsum(a, axis)


def cumprod(a, axis=None, dtype=None):
    a, axis = _operand("cumprod", a, axis, dtype)
    return lax.cumprod(a, axis)


def nancumsum(a, axis=None, dtype=None):
    a, axis = _operand("nancumsum", a, axis, dtype)
    return lax.cumsum(_replace_nan(a, 0), axis)


def nancumprod(a, axis=None, dtype=None):
    a, axis = _operand("nancumprod", a, axis, dtype)
    return lax.cumprod(_replace_nan(a, 1), axis)


def cumulative_sum(x, axis=None, dtype=None, include_initial=False):
    """The array API's cumsum: axis may be omitted only for 1-D input."""
    check_arraylike("cumulative_sum", x)
    (x,) = promote_and_broadcast("cumulative_sum", x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"cumulative_sum needs an axis for a {x.ndim}-D array")
        axis = 0
    out = cumsum(x, axis, dtype)
    if not include_initial:
        return out
    axis = canonicalize_axis(axis, out.ndim)
    config = [(0, 0, 0)] * out.ndim
    config[axis] = (1, 0, 0)
    return lax.pad(out, lax.convert_element_type(0, out.dtype), config)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference a[i + 1] - a[i] along axis."""
    from jaxlite.numpy.shape_ops import concatenate
    check_arraylike("diff", a)
    (a,) = promote_and_broadcast("diff", a)
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    axis = canonicalize_axis(axis, a.ndim)
    if n == 0:
        return a   # NumPy ignores prepend and append then
    parts = [_edge(prepend, a, axis), a, _edge(append, a, axis)]
    a = concatenate([p for p in parts if p is not None], axis)
    subtract = lax.bitwise_xor if dtypes.is_bool(a.dtype) else lax.sub
    for _ in range(n):
        size = a.shape[axis]
        later = lax.slice_in_dim(a, min(1, size), size, axis=axis)
        a = subtract(later, lax.slice_in_dim(a, 0, later.shape[axis], axis=axis))
    return a


def _edge(values, a, axis):
    """prepend/append values as a slab along axis (scalars are broadcast)."""
    from jaxlite.numpy.util import broadcast_to
    if values is None:
        return None
    (values,) = promote_and_broadcast("diff", values)
    if values.ndim == 0:
        shape = a.shape[:axis] + (1,) + a.shape[axis + 1:]
        return broadcast_to(values, shape)
    return values
