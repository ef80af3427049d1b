"""Cumulative sums and products, and differences along an axis."""
import numpy as np

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
    if not dtypes.is_inexact(a.dtype):
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
    """Unlike cumsum, this accumulates in sum's dtype (int8 sums to the default integer)."""
    from jaxlite.numpy.reductions import sum_dtype
    check_arraylike("cumulative_sum", x)
    (x,) = promote_and_broadcast("cumulative_sum", x)
    return cumulative_accumulation("cumulative_sum", cumsum, 0, x, axis, sum_dtype(x, dtype),
                                   include_initial)


def cumulative_accumulation(name, accumulate, identity, x, axis, dtype, include_initial):
    """The array API's cumsum/cumprod: axis may be omitted only for 1-D input, and
    include_initial puts the identity first."""
    check_arraylike(name, x)
    (x,) = promote_and_broadcast(name, x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{name} needs an axis for a {x.ndim}-D array")
        axis = 0
    out = accumulate(x, axis, dtype)
    if not include_initial:
        return out
    axis = canonicalize_axis(axis, out.ndim)
    config = [(0, 0, 0)] * out.ndim
    config[axis] = (1, 0, 0)
    return lax.pad(out, lax.convert_element_type(identity, out.dtype), config)


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


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with optional values before and after."""
    from jaxlite.numpy.shape_ops import concatenate
    check_arraylike("ediff1d", ary)
    (ary,) = promote_and_broadcast("ediff1d", ary)
    flat = lax.reshape(ary, (ary.size,))
    parts = [diff(flat)]
    if to_begin is not None:
        parts.insert(0, _flat_as(to_begin, flat.dtype))
    if to_end is not None:
        parts.append(_flat_as(to_end, flat.dtype))
    return concatenate(parts) if len(parts) > 1 else parts[0]


def _flat_as(values, dtype):
    (values,) = promote_and_broadcast("ediff1d", values)
    return lax.convert_element_type(lax.reshape(values, (values.size,)), dtype)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The trapezoidal rule along axis, with sample points x or a uniform spacing dx."""
    from jaxlite.numpy.reductions import sum
    from jaxlite.numpy.shape_ops import moveaxis
    from jaxlite.numpy.util import promote_to_inexact
    check_arraylike("trapezoid", y)
    (y,) = promote_to_inexact("trapezoid", y)
    y = moveaxis(y, axis, -1)
    if x is None:
        (spacing,) = promote_to_inexact("trapezoid", dx)
        spacing = lax.convert_element_type(spacing, y.dtype)
    else:
        (x,) = promote_to_inexact("trapezoid", x)
        spacing = diff(moveaxis(x, axis, -1) if x.ndim > 1 else x, axis=-1)
    from jaxlite.numpy.ufuncs import multiply
    pair_sums = lax.add(y[..., 1:], y[..., :-1])
    return lax.div(sum(multiply(pair_sums, spacing), axis=-1), lax.full((), 2, y.dtype))


def gradient(f, *varargs, axis=None, edge_order=None):
    """Central differences inside, one-sided at the edges (numpy's edge_order=1)."""
    from jaxlite.numpy.shape_ops import moveaxis
    from jaxlite.numpy.util import promote_to_inexact
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    check_arraylike("gradient", f)
    (f,) = promote_to_inexact("gradient", f)
    axes = tuple(range(f.ndim)) if axis is None else (
        (axis,) if isinstance(axis, int) else tuple(axis))
    axes = tuple(canonicalize_axis(a, f.ndim) for a in axes)
    spacings = _gradient_spacings(varargs, len(axes))
    results = [moveaxis(_gradient_along_last(moveaxis(f, a, -1), h), -1, a)
               for a, h in zip(axes, spacings)]
    return results[0] if len(results) == 1 else results


def _gradient_spacings(varargs, count):
    if not varargs:
        return [1.0] * count
    if len(varargs) == 1 and count > 1:
        return list(varargs) * count
    if len(varargs) != count:
        raise TypeError("Invalid number of spacing arguments to gradient")
    return list(varargs)


def _gradient_along_last(f, h):
    from jaxlite.numpy.shape_ops import concatenate
    from jaxlite.numpy.util import promote_to_inexact
    if f.shape[-1] < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, "
                         "at least 2 elements are required.")
    (h,) = promote_to_inexact("gradient", h)
    h = lax.convert_element_type(h, f.dtype)
    if h.ndim == 0:
        inner = lax.div(lax.sub(f[..., 2:], f[..., :-2]), lax.mul(h, lax.full((), 2, f.dtype)))
        first = lax.div(lax.sub(f[..., 1:2], f[..., :1]), h)
        last = lax.div(lax.sub(f[..., -1:], f[..., -2:-1]), h)
        return concatenate([first, inner, last], axis=-1)
    # Coordinates: the second-order formula for uneven spacing.
    dx = diff(h)
    left, right = dx[:-1], dx[1:]
    a = lax.neg(lax.div(right, lax.mul(left, lax.add(left, right))))
    b = lax.div(lax.sub(right, left), lax.mul(left, right))
    c = lax.div(left, lax.mul(right, lax.add(left, right)))
    from jaxlite.numpy.ufuncs import multiply, true_divide
    inner = multiply(a, f[..., :-2]) + multiply(b, f[..., 1:-1]) + multiply(c, f[..., 2:])
    first = true_divide(f[..., 1:2] - f[..., :1], dx[:1])
    last = true_divide(f[..., -1:] - f[..., -2:-1], dx[-1:])
    return concatenate([first, inner, last], axis=-1)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """Remove jumps larger than discont (default period/2) by adding multiples of period."""
    from jaxlite.numpy.math_functions import where
    from jaxlite.numpy.shape_ops import concatenate
    from jaxlite.numpy.ufuncs import remainder
    from jaxlite.numpy.util import promote_dtypes, promote_to_inexact
    check_arraylike("unwrap", p)
    if dtypes.is_complex(dtypes.result_type(p)):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    # As JAX: p takes its promotion with the (Python float) period, so integers become the
    # default float.
    (p,) = promote_to_inexact("unwrap", promote_dtypes(p, period)[0])
    axis = canonicalize_axis(axis, p.ndim)
    half = lax.div(lax.full((), period, p.dtype), lax.full((), 2, p.dtype))
    discont = half if discont is None else lax.convert_element_type(discont, p.dtype)
    steps = diff(p, axis=axis)
    wrapped = lax.sub(remainder(lax.add(steps, half), lax.full((), period, p.dtype)), half)
    # numpy keeps +period/2 jumps positive, where the modulo would turn them into -period/2.
    boundary = lax.bitwise_and(lax.eq(wrapped, lax.neg(half)), lax.gt(steps, lax.full_like(steps, 0)))
    wrapped = where(boundary, half, wrapped)
    correction = where(lax.lt(lax.abs(steps), discont), lax.full_like(steps, 0), lax.sub(wrapped, steps))
    first = lax.slice_in_dim(p, 0, 1, axis=axis)
    return concatenate([first, lax.add(lax.slice_in_dim(p, 1, p.shape[axis], axis=axis),
                                       cumsum(correction, axis=axis))], axis=axis)
