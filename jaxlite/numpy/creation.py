"""Array creation: from Python data and numpy arrays, and filled arrays."""
import builtins
import math
import operator

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import broadcast_shapes
from jaxlite.core.array import Array
from jaxlite.core.trace import Tracer
from jaxlite.lax.base import scalar_like, shape_tuple
from jaxlite.numpy.util import broadcast_to, check_device


def asarray(a, dtype=None, copy=None, *, device=None):
    """An Array for `a`; a writable numpy array is copied (unless copy=False), as in JAX."""
    check_device(device)
    dtypes.check_user_dtype(dtype, "asarray")
    if isinstance(a, (Array, Tracer)):
        return a if dtype is None else lax.convert_element_type(a, dtype)
    if isinstance(a, (list, tuple)) and any(isinstance(x, (Array, Tracer)) for x in _flat(a)):
        from jaxlite.numpy.shape_ops import stack
        return stack([asarray(x, dtype) for x in a])
    if dtypes.is_python_scalar(a):     # weakly typed unless a dtype is given, as in JAX
        return lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype or dtypes.dtype_of(a)),
                                        weak_type=dtype is None and not isinstance(a, bool))
    value = np.asarray(a)
    if value.dtype == object or value.dtype.kind in "US":
        raise TypeError(f"jaxlite arrays cannot hold {value.dtype} data ({type(a).__name__} given)")
    target = dtypes.canonicalize_dtype(dtype if dtype is not None else value.dtype)
    if value.dtype != target:
        return Array(value.astype(target))
    # A numpy array the caller can still write to is copied, as JAX copies it to the device:
    # jaxlite arrays are immutable. copy=False shares it, as asked.
    if copy or (copy is None and value is a and value.flags.writeable):
        value = value.copy()
    return Array(value)


def _flat(items):
    for x in items:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def array(object, dtype=None, copy=True, ndmin=0, *, device=None):
    check_device(device)
    out = asarray(object, dtype, copy=copy and not isinstance(object, (Array, Tracer)))
    if out.ndim < ndmin:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def zeros(shape, dtype=None, *, device=None):
    check_device(device)
    dtypes.check_user_dtype(dtype, "zeros")
    return lax.full(shape, 0, dtype or dtypes.default_float_dtype())


def ones(shape, dtype=None, *, device=None):
    check_device(device)
    dtypes.check_user_dtype(dtype, "ones")
    return lax.full(shape, 1, dtype or dtypes.default_float_dtype())


def full(shape, fill_value, dtype=None, *, device=None):
    check_device(device)
    if np.ndim(fill_value) == 0:
        dtypes.check_user_dtype(dtype, "full")
        return lax.full(shape, fill_value, dtype)
    from jaxlite.numpy.util import broadcast_to
    return broadcast_to(asarray(fill_value, dtype), shape_tuple(shape))


def empty(shape, dtype=None, *, device=None):
    check_device(device)
    return zeros(shape, dtype)


def zeros_like(a, dtype=None, shape=None, *, device=None):
    check_device(device)
    return _filled_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None, *, device=None):
    check_device(device)
    return _filled_like(a, 1, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    check_device(device)
    if np.ndim(fill_value) == 0:
        return _filled_like(a, fill_value, dtype, shape)
    return full(np.shape(a) if shape is None else shape, fill_value, dtype or _dtype(a))


def empty_like(a, dtype=None, shape=None, *, device=None):
    check_device(device)
    return zeros_like(a, dtype, shape)


def _filled_like(a, fill_value, dtype, shape):
    if not isinstance(dtype or _dtype(a), dtypes.ExtendedDType):
        return lax.full_like(a, fill_value, dtype, shape)
    dtype, shape = dtype or _dtype(a), np.shape(a) if shape is None else shape
    if not hasattr(dtype, "from_physical"):
        raise TypeError(f"cannot make an array of {dtype} from a fill value")
    # Typed keys, as JAX makes them: keys whose words all hold the fill value.
    words = lax.full(tuple(shape_tuple(shape)) + dtype.physical_shape, fill_value, dtype.physical_dtype)
    return dtype.from_physical(words)


def _dtype(a):
    return a.dtype if hasattr(a, "dtype") else dtypes.dtype_of(a)


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values; the bounds must be concrete (the length is static)."""
    check_device(device)
    for name, bound in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(bound, Tracer) and bound.to_concrete_value() is None:
            raise _arange_error(name, bound)
    if stop is None and step is None:
        return _iota_arange(start, dtype)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    values = [v for v in (start, stop, step) if v is not None]
    if dtype is None:
        dtype = dtypes.result_type(*[_python_value(v) for v in values])
    else:
        dtypes.check_user_dtype(dtype, "arange")
    dtype = dtypes.canonicalize_dtype(dtype)
    result = np.arange(_python_value(start), _python_value(stop), _python_value(step))
    return Array(result.astype(dtype))


def _iota_arange(stop, dtype):
    """arange(stop): an iota of ceil(stop) values (staged under a transformation, as JAX's)."""
    stop = _python_value(stop)
    if dtype is None:
        dtype = dtypes.result_type(0, stop, 1)
    else:
        dtypes.check_user_dtype(dtype, "arange")
    return lax.iota(dtypes.canonicalize_dtype(dtype), builtins.max(0, math.ceil(stop)))


def _python_value(v):
    return v.item() if hasattr(v, "item") else v


def _arange_error(name, tracer):
    from jaxlite.core.errors import concretization_error
    return concretization_error(tracer, f"a concrete value for the {name} argument of arange")


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """num evenly spaced values from start to stop; array end points broadcast, and the
    values run along `axis` of the result (as JAX's and numpy's)."""
    from jaxlite.numpy.shape_ops import concatenate, moveaxis
    check_device(device)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    dtype = dtypes.canonicalize_dtype(dtype or dtypes.result_type(start, stop, dtypes.default_float_dtype()))
    start, stop = asarray(start, dtype), asarray(stop, dtype)
    shape = broadcast_shapes(start.shape, stop.shape)
    start, stop = broadcast_to(start, shape), broadcast_to(stop, shape)
    divisor = (num - 1) if endpoint else num
    if divisor > 0:
        delta = lax.div(lax.sub(stop, start), lax.full(shape, divisor, dtype))
    else:
        delta = lax.full(shape, np.nan, dtype)      # no step between fewer than two values
    grid = (num,) + shape
    steps = lax.convert_element_type(lax.broadcasted_iota(dtypes.real_dtype(dtype), grid, 0), dtype)
    spread = lambda x: lax.broadcast_in_dim(x, grid, tuple(range(1, len(grid))))
    out = lax.add(lax.mul(steps, spread(lax.select_n(lax.ne(delta, delta), delta, lax.full_like(delta, 0)))),
                  spread(start))
    if endpoint and num > 1:
        out = concatenate([lax.slice_in_dim(out, 0, num - 1), lax.reshape(stop, (1,) + shape)])
    out = moveaxis(out, 0, axis)
    return (out, delta) if retstep else out


def eye(N, M=None, k=0, dtype=None, *, device=None):
    check_device(device)
    M = N if M is None else M
    dtype = dtype or dtypes.default_float_dtype()
    k = builtins.max(-N, builtins.min(operator.index(k), M))     # past the corners: no ones at all
    rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
    return lax.convert_element_type(lax.eq(lax.add(rows, scalar_like(rows, k)), cols), dtype)


def identity(n, dtype=None, *, device=None):
    check_device(device)
    return eye(n, dtype=dtype)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop)."""
    exponents = linspace(start, stop, num, endpoint, dtype=_inexact(dtype), axis=axis)
    out = lax.pow(lax.full_like(exponents, base), exponents)
    return out if dtype is None else lax.convert_element_type(out, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers evenly spaced on a log scale from start to stop (same sign, nonzero)."""
    from jaxlite.numpy.shape_ops import moveaxis
    float_dtype = _inexact(dtype)
    start, stop = asarray(start, float_dtype), asarray(stop, float_dtype)
    if np.any(np.asarray(start) == 0) or np.any(np.asarray(stop) == 0):
        raise ValueError("Geometric sequence cannot include zero")
    shape = broadcast_shapes(start.shape, stop.shape)
    start, stop = broadcast_to(start, shape), broadcast_to(stop, shape)
    logs = linspace(lax.log(lax.abs(start)), lax.log(lax.abs(stop)), num, endpoint, dtype=float_dtype)
    out = lax.mul(lax.exp(logs), lax.broadcast(lax.sign(start), (num,)))
    # Pin the end points, which exp(log(x)) may round.
    if num > 0:
        out = _pin(out, 0, start)
    if endpoint and num > 1:
        out = _pin(out, num - 1, stop)
    out = moveaxis(out, 0, axis)
    return out if dtype is None else lax.convert_element_type(out, dtype)


def _pin(out, index, value):
    """out with its entry `index` along axis 0 replaced by value."""
    at_index = lax.eq(lax.broadcasted_iota(dtypes.int32, out.shape, 0), lax.full(out.shape, index, dtypes.int32))
    return lax.select_n(at_index, out, lax.broadcast(value, out.shape[:1]))


def _inexact(dtype):
    if dtype is None or not dtypes.is_float(dtypes.canonicalize_dtype(dtype)):
        return dtypes.default_float_dtype()
    return dtypes.canonicalize_dtype(dtype)


def _lower_triangle_mask(shape, k):
    """True where column <= row + k in the last two axes of `shape`."""
    rows = lax.broadcasted_iota(dtypes.int32, shape, len(shape) - 2)
    cols = lax.broadcasted_iota(dtypes.int32, shape, len(shape) - 1)
    return lax.le(cols, lax.add(rows, scalar_like(rows, k)))


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the k-th diagonal."""
    M = N if M is None else M
    # float32 by default whatever jax_enable_x64 says, as JAX's tri.
    return lax.convert_element_type(_lower_triangle_mask((N, M), k), dtype or dtypes.float32)


def _triangle(name, m, k, keep_lower):
    from jaxlite.numpy.util import promote_and_broadcast
    (m,) = promote_and_broadcast(name, m)
    if m.ndim < 2:
        raise ValueError(f"{name}: argument to {name} must be at least 2D, got shape {m.shape}")
    mask = _lower_triangle_mask(m.shape, k if keep_lower else k - 1)
    zeros = lax.full_like(m, 0)
    return lax.select_n(mask, m, zeros) if not keep_lower else lax.select_n(mask, zeros, m)


def tril(m, k=0):
    return _triangle("tril", m, k, keep_lower=True)


def triu(m, k=0):
    return _triangle("triu", m, k, keep_lower=False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors ('xy': Cartesian, 'ij': matrix indexing)."""
    from jaxlite.numpy.util import broadcast_to, promote_and_broadcast
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing!r}")
    xi = [promote_and_broadcast("meshgrid", x)[0] for x in xi]
    for x in xi:
        if x.ndim != 1:
            raise ValueError(f"meshgrid: arguments must be 1-D, got shape {x.shape}")
    shape = [x.shape[0] for x in xi]
    if indexing == "xy" and len(xi) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    outs = []
    for i, x in enumerate(xi):
        axis = {0: 1, 1: 0}.get(i, i) if indexing == "xy" and len(xi) > 1 else i
        view = [1] * len(xi)
        view[axis] = x.shape[0]
        y = lax.reshape(x, tuple(view))
        outs.append(y if sparse else broadcast_to(y, tuple(shape)))
    return outs
