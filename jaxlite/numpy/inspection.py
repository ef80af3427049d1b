"""Questions about arrays rather than computations on them: shape/ndim/size, array_equal,
the real/complex tests."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import broadcast_shapes as _broadcast_shapes
from jaxlite.numpy import reductions
from jaxlite.numpy.util import broadcast_to, check_arraylike, promote_and_broadcast

iterable = np.iterable


def shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def ndim(a):
    return a.ndim if hasattr(a, "ndim") else np.ndim(a)


def size(a, axis=None):
    a_shape = shape(a)
    if axis is None:
        return int(np.prod(a_shape, dtype=np.int64))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return int(np.prod([a_shape[i] for i in axes], dtype=np.int64))


def broadcast_shapes(*shapes):
    if not shapes:
        return ()
    return _broadcast_shapes(*(tuple(s) if not isinstance(s, int) else (s,) for s in shapes))


def array_equal(a1, a2, equal_nan=False):
    """A bool array: same shape and equal entries (NaN equal to NaN if equal_nan)."""
    check_arraylike("array_equal", a1, a2)
    if np.shape(a1) != np.shape(a2):
        return lax.full((), False, dtypes.bool_)
    a1, a2 = promote_and_broadcast("array_equal", a1, a2)
    equal = lax.eq(a1, a2)
    if equal_nan and dtypes.is_float(a1.dtype):
        both_nan = lax.bitwise_and(lax.ne(a1, a1), lax.ne(a2, a2))
        equal = lax.bitwise_or(equal, both_nan)
    return reductions.all(equal)


def array_equiv(a1, a2):
    """A bool array: broadcastable to one shape with equal entries."""
    check_arraylike("array_equiv", a1, a2)
    try:
        common = _broadcast_shapes(np.shape(a1), np.shape(a2))
    except ValueError:
        return lax.full((), False, dtypes.bool_)
    a1, a2 = promote_and_broadcast("array_equiv", a1, a2)
    return reductions.all(lax.eq(broadcast_to(a1, common), broadcast_to(a2, common)))


def iscomplexobj(x):
    if x is None:
        return False
    dtype = getattr(x, "dtype", None)
    return np.iscomplexobj(x) if dtype is None else np.dtype(dtype).kind == "c"


def isrealobj(x):
    return not iscomplexobj(x)


def iscomplex(x):
    """Elementwise: a complex entry with a nonzero imaginary part."""
    (x,) = promote_and_broadcast("iscomplex", x)
    # A real x's imaginary part is zero: compared as such, the result is weakly typed when x is.
    imag = lax.imag(x) if dtypes.is_complex(x.dtype) else lax.full_like(x, 0)
    return lax.ne(imag, lax.full_like(imag, 0))


def isreal(x):
    """Elementwise: an entry whose imaginary part is zero (every entry of a real array)."""
    return lax.bitwise_not(iscomplex(x))
