"""Array creation: from Python data and numpy arrays, and filled arrays."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.array import Array
from jaxlite.core.trace import Tracer
from jaxlite.lax.base import shape_tuple


def asarray(a, dtype=None, copy=None):
    """An Array for `a`; numpy inputs of a supported dtype are wrapped without a copy."""
    if isinstance(a, (Array, Tracer)):
        return a if dtype is None else lax.convert_element_type(a, dtype)
    if isinstance(a, (list, tuple)) and any(isinstance(x, (Array, Tracer)) for x in _flat(a)):
        from jaxlite.numpy.shape_ops import stack
        return stack([asarray(x, dtype) for x in a])
    if dtypes.is_python_scalar(a):
        return lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype or dtypes.dtype_of(a)))
    value = np.asarray(a)
    if value.dtype == object or value.dtype.kind in "USc":
        raise TypeError(f"jaxlite arrays cannot hold {value.dtype} data ({type(a).__name__} given)")
    target = dtypes.canonicalize_dtype(dtype if dtype is not None else value.dtype)
    if copy:
        value = value.copy()
    return Array(value if value.dtype == target else value.astype(target))


def _flat(items):
    for x in items:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def array(object, dtype=None, copy=True, ndmin=0):
    out = asarray(object, dtype, copy=copy and not isinstance(object, (Array, Tracer)))
    if out.ndim < ndmin:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def zeros(shape, dtype=None):
    return lax.full(shape, 0, dtype or dtypes.default_float_dtype())


def ones(shape, dtype=None):
    return lax.full(shape, 1, dtype or dtypes.default_float_dtype())


def full(shape, fill_value, dtype=None):
    if np.ndim(fill_value) == 0:
        return lax.full(shape, fill_value, dtype)
    from jaxlite.numpy.util import broadcast_to
    return broadcast_to(asarray(fill_value, dtype), shape_tuple(shape))


def empty(shape, dtype=None):
    return zeros(shape, dtype)


def zeros_like(a, dtype=None, shape=None):
    return lax.full(np.shape(a) if shape is None else shape, 0, dtype or _dtype(a))


def ones_like(a, dtype=None, shape=None):
    return lax.full(np.shape(a) if shape is None else shape, 1, dtype or _dtype(a))


def full_like(a, fill_value, dtype=None, shape=None):
    return full(np.shape(a) if shape is None else shape, fill_value, dtype or _dtype(a))


def empty_like(a, dtype=None, shape=None):
    return zeros_like(a, dtype, shape)


def _dtype(a):
    return a.dtype if hasattr(a, "dtype") else dtypes.dtype_of(a)


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values; the bounds must be concrete (the length is static)."""
    for name, bound in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(bound, Tracer) and bound.to_concrete_value() is None:
            raise _arange_error(name, bound)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    values = [v for v in (start, stop, step) if v is not None]
    if dtype is None:
        dtype = dtypes.result_type(*[_python_value(v) for v in values])
    dtype = dtypes.canonicalize_dtype(dtype)
    result = np.arange(_python_value(start), _python_value(stop), _python_value(step))
    return Array(result.astype(dtype))


def _python_value(v):
    return v.item() if hasattr(v, "item") else v


def _arange_error(name, tracer):
    from jaxlite.core.errors import concretization_error
    return concretization_error(tracer, f"a concrete value for the {name} argument of arange")


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    num = int(num)
    dtype = dtypes.canonicalize_dtype(dtype or dtypes.default_float_dtype())
    divisor = (num - 1) if endpoint else num
    steps = lax.convert_element_type(lax.iota(dtype, num), dtype)
    start, stop = asarray(start, dtype), asarray(stop, dtype)
    delta = lax.div(lax.sub(stop, start), lax.convert_element_type(max(divisor, 1), dtype))
    out = lax.add(lax.mul(steps, delta), start)
    if endpoint and num > 1:
        from jaxlite.numpy.shape_ops import concatenate
        out = concatenate([lax.slice(out, (0,), (num - 1,)), lax.reshape(stop, (1,))])
    return out


def eye(N, M=None, k=0, dtype=None):
    M = N if M is None else M
    dtype = dtype or dtypes.default_float_dtype()
    rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
    return lax.convert_element_type(lax.eq(lax.add(rows, k), cols), dtype)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)
