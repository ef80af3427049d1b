"""Shape manipulation: reshape, transpose, joining and splitting."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axes, canonicalize_axis
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast, promote_dtypes


def _operand(name, a):
    check_arraylike(name, a)
    return promote_and_broadcast(name, a)[0]


def reshape(a, shape=None, order="C", *, copy=None):
    a = _operand("reshape", a)
    if shape is None:
        raise TypeError("reshape() missing required argument 'shape'")
    if order != "C":
        raise ValueError(f"reshape only supports order='C', got {order!r}")
    return lax.reshape(a, _resolve_shape(shape, a.shape))


def _resolve_shape(newshape, shape):
    """Fill in a single -1 entry; JAX's TypeError, naming both shapes, when sizes cannot match."""
    if isinstance(newshape, (int, np.integer)):
        newshape = (newshape,)
    newshape = [int(d) for d in newshape]
    size = int(np.prod(shape))
    if newshape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension (-1) in reshape")
    if -1 in newshape:
        known = int(np.prod([d for d in newshape if d != -1]))
        if known == 0 or size % known:
            raise _reshape_error(shape, newshape, f" because the product of the given sizes ({known}) "
                                                  f"does not evenly divide {size}")
        newshape[newshape.index(-1)] = size // known
    if int(np.prod(newshape)) != size:
        raise _reshape_error(shape, newshape, f" (size {int(np.prod(newshape))})")
    return tuple(newshape)


def _reshape_error(shape, newshape, why):
    return TypeError(f"cannot reshape array of shape {tuple(shape)} (size {int(np.prod(shape))}) "
                     f"into shape {tuple(newshape)}{why}")


def ravel(a):
    a = _operand("ravel", a)
    return lax.reshape(a, (a.size,))


def transpose(a, axes=None):
    a = _operand("transpose", a)
    axes = tuple(reversed(range(a.ndim))) if axes is None else canonicalize_axes(axes, a.ndim)
    if len(axes) != a.ndim:
        raise ValueError(f"axes {axes} don't match array of dimension {a.ndim}")
    return lax.transpose(a, axes)


def swapaxes(a, axis1, axis2):
    a = _operand("swapaxes", a)
    perm = list(range(a.ndim))
    i, j = canonicalize_axis(axis1, a.ndim), canonicalize_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a, source, destination):
    a = _operand("moveaxis", a)
    source = canonicalize_axes(source, a.ndim, "source")
    destination = canonicalize_axes(destination, a.ndim, "destination")
    if len(source) != len(destination):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    perm = [i for i in range(a.ndim) if i not in source]
    for dst, src in sorted(zip(destination, source)):
        perm.insert(dst, src)
    return lax.transpose(a, perm)


def expand_dims(a, axis):
    a = _operand("expand_dims", a)
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return lax.expand_dims(a, axis)


def squeeze(a, axis=None):
    a = _operand("squeeze", a)
    if axis is None:
        axis = tuple(i for i, d in enumerate(a.shape) if d == 1)
    return lax.squeeze(a, axis)


def concatenate(arrays, axis=0, dtype=None):
    if not len(arrays):
        raise ValueError("need at least one array to concatenate")
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [lax.convert_element_type(a, dtype) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    if any(a.ndim == 0 for a in arrays):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    return lax.concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, dtype=None):
    from jaxlite.numpy.reductions import check_no_out
    check_no_out("stack", out)
    if not len(arrays):
        raise ValueError("need at least one array to stack")
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype)) for a in arrays]
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    axis = canonicalize_axis(axis, arrays[0].ndim + 1)
    return lax.concatenate([lax.expand_dims(a, (axis,)) for a in arrays], axis)
