"""Index helpers: r_, c_, mgrid, ogrid, s_, index_exp, indices and the triangle/diagonal
index functions. Their sizes depend only on static arguments, so the index sets are
computed with numpy and become constant arrays of the default integer dtype (as JAX's)."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.numpy import creation, joining, shape_ops
from jaxlite.numpy.sorting import nonzero

s_ = np.s_
index_exp = np.index_exp


def _int_indices(*index_arrays):
    return tuple(creation.asarray(i, dtypes.default_int_dtype()) for i in index_arrays)


def _static_int(name, value):
    try:
        return int(value)
    except TypeError:
        raise TypeError(f"{name} requires a static integer, got {type(value).__name__}") from None


def tril_indices(n, k=0, m=None):
    return _int_indices(*np.tril_indices(_static_int("tril_indices", n), k, m))


def triu_indices(n, k=0, m=None):
    return _int_indices(*np.triu_indices(_static_int("triu_indices", n), k, m))


def _matrix_shape(name, arr):
    shape = np.shape(arr) if not hasattr(arr, "shape") else arr.shape
    if len(shape) != 2:
        raise ValueError(f"{name} requires a 2-D array, got shape {tuple(shape)}")
    return shape


def tril_indices_from(arr, k=0):
    rows, cols = _matrix_shape("tril_indices_from", arr)
    return tril_indices(rows, k, cols)


def triu_indices_from(arr, k=0):
    rows, cols = _matrix_shape("triu_indices_from", arr)
    return triu_indices(rows, k, cols)


def diag_indices(n, ndim=2):
    n, ndim = _static_int("diag_indices", n), _static_int("diag_indices", ndim)
    if n < 0 or ndim < 0:
        raise ValueError(f"n and ndim argument to diag_indices must be nonnegative, got n={n} "
                         f"and ndim={ndim}")
    return (lax.iota(dtypes.default_int_dtype(), n),) * ndim


def diag_indices_from(arr):
    shape = np.shape(arr) if not hasattr(arr, "shape") else arr.shape
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def mask_indices(n, mask_func, k=0, *, size=None):
    """Indices where mask_func(ones((n, n)), k) is nonzero (size= as for nonzero)."""
    return nonzero(mask_func(creation.ones((n, n)), k), size=size)


def indices(dimensions, dtype=None, sparse=False):
    dtypes.check_user_dtype(dtype, "indices")
    dtype = dtype or dtypes.default_int_dtype()
    dimensions = tuple(_static_int("indices", d) for d in dimensions)
    grids = [lax.broadcasted_iota(dtype, _along(len(dimensions), i, d), i)
             for i, d in enumerate(dimensions)]
    if sparse:
        return tuple(grids)
    full = [lax.broadcast_in_dim(g, dimensions, tuple(range(len(dimensions)))) for g in grids]
    if not full:
        return creation.zeros((0,), dtype)
    return shape_ops.stack(full)


def _along(ndim, axis, size):
    shape = [1] * ndim
    shape[axis] = size
    return tuple(shape)


def _slice_values(s):
    """A slice's points as in numpy's index tricks: an imaginary step means a point count."""
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
        return creation.linspace(start, s.stop, int(abs(step)), endpoint=True)
    return creation.arange(start, s.stop, step)


class _Grid:
    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _slice_values(key)
        axes = [_slice_values(k) for k in key]
        dtype = dtypes.result_type(*axes)
        axes = [lax.convert_element_type(a, dtype) for a in axes]
        grids = creation.meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return grids if self.sparse else shape_ops.stack(grids)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)


class _Concatenator:
    """r_ and c_: concatenate slices (as ranges), scalars and arrays along an axis. A leading
    string sets 'axis[,ndmin[,trans1d]]', or is 'r'/'c' for a row/column matrix result."""

    def __init__(self, axis, ndmin, trans1d):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, None
        if key and isinstance(key[0], str):
            axis, ndmin, trans1d, matrix = _directive(key[0], axis, ndmin, trans1d)
            key = key[1:]
        pieces = [_piece(item, ndmin, trans1d) for item in key]
        if not pieces:
            return creation.array([])
        out = shape_ops.concatenate(pieces, axis=axis) if len(pieces) > 1 else pieces[0]
        if matrix == "r":
            return joining.atleast_2d(out)
        if matrix == "c":
            return shape_ops.transpose(joining.atleast_2d(out))
        return out

    def __len__(self):
        return 0


def _directive(text, axis, ndmin, trans1d):
    if text in ("r", "c"):
        return axis, ndmin, trans1d, text
    try:
        numbers = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"could not understand directive {text!r}") from None
    if len(numbers) > 3:
        raise ValueError(f"directive {text!r} has more than three numbers")
    axis, ndmin, trans1d = numbers + [axis, ndmin, trans1d][len(numbers):]
    return axis, ndmin, trans1d, None


def _piece(item, ndmin, trans1d):
    if isinstance(item, slice):
        values = _slice_values(item)
    else:
        values = creation.asarray(item)
    if values.ndim >= ndmin:
        return values if values.ndim else lax.reshape(values, (1,))
    if values.ndim == 0:
        return lax.reshape(values, (1,) * ndmin)
    # numpy's trans1d: where the original axes go among the ndmin axes.
    shape = (1,) * (ndmin - values.ndim) + values.shape
    out = lax.reshape(values, shape)
    if trans1d == -1:
        return out
    order = list(range(ndmin - values.ndim, ndmin))
    rest = [i for i in range(ndmin) if i not in order]
    at = trans1d % ndmin
    perm = rest[:at] + order + rest[at:]
    return lax.transpose(out, tuple(np.argsort(perm)))


r_ = _Concatenator(axis=0, ndmin=1, trans1d=-1)
c_ = _Concatenator(axis=-1, ndmin=2, trans1d=0)
