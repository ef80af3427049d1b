"""Array manipulation beyond joining and reshaping: append/insert/delete/resize, diagonals,
partition, bit packing, select/piecewise/choose, and the apply_* helpers. Each is built
from the NumPy-style functions beside it, so jit, grad and vmap come with them."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.numpy import (creation, cumulative, indexing, joining, reductions, shape_ops, sorting,
                           ufuncs)
from jaxlite.numpy.util import (broadcast_arrays, broadcast_to, check_arraylike,
                                promote_and_broadcast, promote_dtypes)


def _operand(name, a):
    check_arraylike(name, a)
    return promote_and_broadcast(name, a)[0]


def _flattened_or_axis(a, axis):
    if axis is None:
        return shape_ops.ravel(a), 0
    return a, canonicalize_axis(axis, a.ndim)


def append(arr, values, axis=None):
    arr, values = promote_dtypes(_operand("append", arr), _operand("append", values))
    if axis is None:
        return shape_ops.concatenate([shape_ops.ravel(arr), shape_ops.ravel(values)])
    return shape_ops.concatenate([arr, values], axis=axis)


def _static_positions(name, obj, size):
    """Integer positions from a slice, int or sequence; they fix the result's shape."""
    if isinstance(obj, slice):
        return np.arange(size)[obj]
    check_arraylike(name, obj)
    positions = indexing._concrete(obj)
    if positions is None or positions.dtype == object:
        raise TypeError(f"{name}: the positions must be static (a slice, int or sequence), "
                        "because they determine the shape of the result")
    if positions.dtype == bool:
        raise ValueError(f"{name}: boolean positions are not supported; pass integers")
    return positions.astype(np.int64)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    arr, axis = _flattened_or_axis(_operand("delete", arr), axis)
    size = arr.shape[axis]
    positions = _static_positions("delete", obj, size)
    if np.any((positions < -size) | (positions >= size)):
        raise IndexError(f"delete: index out of bounds for axis {axis} with size {size}")
    keep = np.setdiff1d(np.arange(size), positions % size if size else positions)
    return indexing.take(arr, creation.asarray(keep, dtypes.int32), axis=axis)


def insert(arr, obj, values, axis=None):
    """Insert `values` before the given positions (numpy's rules for scalars and sequences)."""
    arr, axis = _flattened_or_axis(_operand("insert", arr), axis)
    values = lax.convert_element_type(_operand("insert", values), arr.dtype)
    size = arr.shape[axis]
    scalar_position = not isinstance(obj, slice) and np.ndim(obj) == 0
    positions = _static_positions("insert", obj, size)
    if np.any((positions < -size) | (positions > size)):
        raise IndexError(f"insert: index out of bounds for axis {axis} with size {size}")
    positions = np.where(positions < 0, positions + size, positions).ravel()
    if scalar_position:
        values = shape_ops.moveaxis(values, 0, axis) if values.ndim == arr.ndim else values
        count = values.shape[axis] if values.ndim == arr.ndim else 1
        positions = np.repeat(positions, count)
        if values.ndim != arr.ndim:
            values = shape_ops.expand_dims(values, axis) if values.ndim else values
    target = arr.shape[:axis] + (len(positions),) + arr.shape[axis + 1:]
    values = broadcast_to(values if values.ndim == 0 else _fit_rank(values, arr.ndim, axis), target)
    # Stable-sort the new entries in among the old ones by position.
    order = np.argsort(np.concatenate([np.arange(size), positions - 0.5]), kind="stable")
    joined = shape_ops.concatenate([arr, values], axis=axis)
    return indexing.take(joined, creation.asarray(order, dtypes.int32), axis=axis)


def _fit_rank(values, ndim, axis):
    if values.ndim == ndim:
        return values
    if values.ndim == 1:
        return shape_ops.moveaxis(lax.reshape(values, values.shape + (1,) * (ndim - 1)), 0, axis)
    return lax.reshape(values, (1,) * (ndim - values.ndim) + values.shape)


def resize(a, new_shape):
    """numpy's resize: the flattened data repeated cyclically to fill new_shape."""
    a = shape_ops.ravel(_operand("resize", a))
    new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = int(np.prod(new_shape))
    if a.size == 0 or total == 0:
        return creation.zeros(new_shape, a.dtype)
    repeats = -(-total // a.size)
    return lax.reshape(lax.slice(joining.tile(a, repeats), (0,), (total,)), new_shape)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The offset diagonal of the axis1/axis2 planes, as the last axis of the result."""
    a = _operand("diagonal", a)
    axis1, axis2 = canonicalize_axis(axis1, a.ndim), canonicalize_axis(axis2, a.ndim)
    if axis1 == axis2:
        raise ValueError("diagonal requires distinct values for axis1 and axis2")
    a = shape_ops.moveaxis(a, (axis1, axis2), (-2, -1))
    rows, cols = a.shape[-2:]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = np.arange(length) - min(offset, 0)
    j = np.arange(length) + max(offset, 0)
    return a[..., creation.asarray(i, dtypes.int32), creation.asarray(j, dtypes.int32)]


def diag(v, k=0):
    v = _operand("diag", v)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        rows = creation.asarray(np.arange(v.shape[0]) - min(k, 0), dtypes.int32)
        cols = creation.asarray(np.arange(v.shape[0]) + max(k, 0), dtypes.int32)
        return creation.zeros((n, n), v.dtype).at[rows, cols].set(v)
    if v.ndim == 2:
        return diagonal(v, k)
    raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k=0):
    return diag(shape_ops.ravel(_operand("diagflat", v)), k)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    a = _operand("fill_diagonal", a)
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = min(a.shape)
    if a.ndim == 2 and wrap and a.shape[0] > a.shape[1]:
        # numpy's wrap: the diagonal restarts every cols + 1 rows.
        rows = np.arange(0, a.shape[0])
        rows = rows[rows % (a.shape[1] + 1) != a.shape[1]]
        positions = (rows, np.arange(len(rows)) % a.shape[1])
    else:
        positions = (np.arange(n),) * a.ndim
    count = len(positions[0])
    values = shape_ops.ravel(lax.convert_element_type(_operand("fill_diagonal", val), a.dtype))
    values = joining.tile(values, -(-count // max(values.size, 1)))[:count] if values.size else values
    index = tuple(creation.asarray(p, dtypes.int32) for p in positions)
    return a.at[index].set(values)


def trim_zeros(filt, trim="fb", axis=None):
    """Drop leading ('f') and/or trailing ('b') zeros; the result size depends on the data."""
    filt = _operand("trim_zeros", filt)
    if filt.ndim != 1:
        raise ValueError(f"trim_zeros requires a 1-D array, got shape {filt.shape}")
    nonzero = np.flatnonzero(sorting.concrete_or_error(filt, "trim_zeros"))
    start = nonzero[0] if "f" in trim.lower() and nonzero.size else 0
    stop = nonzero[-1] + 1 if "b" in trim.lower() and nonzero.size else filt.shape[0]
    if not nonzero.size:
        start = stop = 0
    return filt[int(start):int(stop)]


def rollaxis(a, axis, start=0):
    a = _operand("rollaxis", a)
    axis = canonicalize_axis(axis, a.ndim)
    start = canonicalize_axis(start, a.ndim + 1)
    if start > axis:
        start -= 1
    return shape_ops.moveaxis(a, axis, start)


def dsplit(ary, indices_or_sections):
    ary = _operand("dsplit", ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return joining.split(ary, indices_or_sections, axis=2)


def partition(a, kth, axis=-1):
    """The kth entry in its sorted place, smaller ones before it and larger ones after
    (here: sorted along the axis, which satisfies that contract)."""
    a = _operand("partition", a)
    axis = canonicalize_axis(axis, a.ndim)
    _check_kth(kth, a.shape[axis])
    return sorting.sort(a, axis=axis)


def argpartition(a, kth, axis=-1):
    a = _operand("argpartition", a)
    axis = canonicalize_axis(axis, a.ndim)
    _check_kth(kth, a.shape[axis])
    # int32 whatever jax_enable_x64 says, as JAX's (top_k's indices).
    return lax.convert_element_type(sorting.argsort(a, axis=axis), dtypes.int32)


def _check_kth(kth, size):
    if not -size <= int(kth) < size:
        raise ValueError(f"kth(={kth}) out of bounds {size}")


def packbits(a, axis=None, bitorder="big"):
    """Pack the truth of each entry into the bits of uint8s (8 per byte, zero-padded)."""
    a = _operand("packbits", a)
    if not (dtypes.is_int(a.dtype) or dtypes.is_bool(a.dtype)):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a, axis = _flattened_or_axis(a, axis)
    bits = lax.convert_element_type(lax.ne(a, lax.full_like(a, 0)), dtypes.uint8)
    remainder = (-bits.shape[axis]) % 8
    if remainder:
        widths = [(0, 0)] * bits.ndim
        widths[axis] = (0, remainder)
        bits = joining.pad(bits, widths)
    bits = shape_ops.moveaxis(bits, axis, -1)
    bits = lax.reshape(bits, bits.shape[:-1] + (bits.shape[-1] // 8, 8))
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1], np.uint8)
    weights = creation.asarray(weights if bitorder == "big" else weights[::-1])
    packed = reductions.sum(lax.mul(bits, broadcast_to(weights, bits.shape)), axis=-1,
                            dtype=dtypes.uint8)
    return shape_ops.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    a = _operand("unpackbits", a)
    if a.dtype != dtypes.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = np.arange(7, -1, -1, dtype=np.uint8) if bitorder == "big" else np.arange(8, dtype=np.uint8)
    a, axis = _flattened_or_axis(a, axis)
    moved = shape_ops.moveaxis(a, axis, -1)[..., None]
    bits = lax.bitwise_and(lax.shift_right_logical(broadcast_to(moved, moved.shape[:-1] + (8,)),
                                                   broadcast_to(creation.asarray(shifts), moved.shape[:-1] + (8,))),
                           lax.full(moved.shape[:-1] + (8,), 1, dtypes.uint8))
    bits = lax.reshape(bits, moved.shape[:-2] + (moved.shape[-2] * 8,))
    if count is not None:
        bits = bits[..., :count] if count <= bits.shape[-1] else joining.pad(
            bits, [(0, 0)] * (bits.ndim - 1) + [(0, count - bits.shape[-1])])
    return shape_ops.moveaxis(bits, -1, axis)


def vander(x, N=None, increasing=False):
    x = _operand("vander", x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = x.shape[0] if N is None else int(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    powers = creation.arange(N) if increasing else creation.arange(N - 1, -1, -1)
    if not dtypes.is_float(x.dtype):
        return _integer_powers(x, N, increasing)
    return ufuncs.power(x[:, None], lax.convert_element_type(powers, x.dtype)[None, :])


def _integer_powers(x, N, increasing):
    columns = [lax.full_like(x, 1)]
    for _ in range(1, N):
        columns.append(lax.mul(columns[-1], x))
    out = shape_ops.stack(columns, axis=1) if N else creation.zeros((x.shape[0], 0), x.dtype)
    return out if increasing else joining.flip(out, axis=1)


def select(condlist, choicelist, default=0):
    """The choice of the first true condition, entry by entry; `default` where none holds."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    conditions = [_operand("select", c) for c in condlist]
    for c in conditions:
        if c.dtype != dtypes.bool_:
            raise TypeError(f"condlist must be boolean arrays, got dtype {c.dtype}")
    *choices, default = promote_dtypes(*choicelist, default)
    *conditions, choices, default = _broadcast_all(conditions, choices, default)
    out = default
    for condition, choice in reversed(list(zip(conditions, choices))):
        out = lax.select_n(condition, out, choice)
    return out


def _broadcast_all(conditions, choices, default):
    arrays = broadcast_arrays(*conditions, *choices, default)
    n = len(conditions)
    return (*arrays[:n], arrays[n:2 * n], arrays[-1])


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[i] (a function of x, or a constant) where condlist[i]; an extra last entry
    of funclist is the value where no condition holds (else 0). Every function is
    evaluated on all of x, as in JAX."""
    x = _operand("piecewise", x)
    if isinstance(condlist, (list, tuple)):
        conditions = [_operand("piecewise", c) for c in condlist]
    else:
        condlist = _operand("piecewise", condlist)
        conditions = [condlist] if condlist.ndim == x.ndim else list(condlist)
    if len(funclist) not in (len(conditions), len(conditions) + 1):
        raise ValueError(f"with {len(conditions)} condition(s), either {len(conditions)} or "
                         f"{len(conditions) + 1} functions are expected")
    if len(funclist) == len(conditions):
        otherwise = lax.full_like(x, 0)
    else:
        otherwise = _evaluate_piece(funclist[-1], x, args, kw)
    out = otherwise
    for condition, func in zip(conditions, funclist):
        value = _evaluate_piece(func, x, args, kw)
        out = lax.select_n(broadcast_to(condition, x.shape), out, value)
    return out


def _evaluate_piece(func, x, args, kw):
    value = func(x, *args, **kw) if callable(func) else func
    return broadcast_to(lax.convert_element_type(_operand("piecewise", value), x.dtype), x.shape)


def choose(a, choices, out=None, mode="raise"):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = _operand("choose", a)
    if not dtypes.is_int(a.dtype):
        raise TypeError(f"choose: `a` must be an integer array, got dtype {a.dtype}")
    choices = promote_dtypes(*choices)
    n = len(choices)
    if mode == "raise":
        value = sorting.concrete_or_error(a, "choose with mode='raise' (pass mode='wrap' or 'clip')")
        if np.any((value < 0) | (value >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = lax.rem(lax.add(lax.rem(a, lax.full_like(a, n)), lax.full_like(a, n)), lax.full_like(a, n))
    elif mode == "clip":
        a = lax.clamp(lax.full_like(a, 0), a, lax.full_like(a, n - 1))
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    *arrays, a = broadcast_arrays(*choices, a)
    stacked = shape_ops.stack(arrays)
    return indexing.take_along_axis(stacked, a[None], axis=0)[0]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d on each 1-D slice along `axis`, by vmapping it over the other axes."""
    from jaxlite.transforms.batching import vmap
    arr = _operand("apply_along_axis", arr)
    axis = canonicalize_axis(axis, arr.ndim)
    func = lambda x: func1d(x, *args, **kwargs)
    for i in range(1, arr.ndim - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    a = _operand("apply_over_axes", a)
    for axis in axes:
        result = func(a, axis)
        a = result if result.ndim == a.ndim else shape_ops.expand_dims(result, axis)
    return a


def block(arrays):
    """Assemble an array from nested lists of blocks (the innermost list joins the last axis)."""
    depth = _nesting_depth(arrays)
    rank = max(depth, _max_rank(arrays))
    return _block(arrays, depth, rank)


def _nesting_depth(arrays):
    if isinstance(arrays, tuple):
        raise TypeError("jnp.block does not allow tuples; use lists")
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError("jnp.block does not allow empty lists")
        depths = {_nesting_depth(x) for x in arrays}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched in jnp.block")
        return 1 + depths.pop()
    return 0


def _max_rank(arrays):
    if isinstance(arrays, list):
        return max(_max_rank(x) for x in arrays)
    return np.ndim(arrays)


def _block(arrays, depth, rank):
    if depth == 0:
        x = _operand("block", arrays)
        return lax.reshape(x, (1,) * (rank - x.ndim) + x.shape)
    parts = [_block(x, depth - 1, rank) for x in arrays]
    return shape_ops.concatenate(parts, axis=-depth)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """function applied to the index grids of `shape` (each grid of `dtype`)."""
    from jaxlite.numpy.index_tricks import indices
    grids = indices(shape, dtype=dtypes.canonicalize_dtype(dtype))
    return function(*grids, **kwargs)


def copy(a, order=None):
    return creation.array(a, copy=True)


def put(a, ind, v, mode=None, *, inplace=True):
    if inplace:
        raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    a = _operand("put", a)
    flat = shape_ops.ravel(a)
    ind = shape_ops.ravel(creation.asarray(ind))
    v = shape_ops.ravel(lax.convert_element_type(_operand("put", v), a.dtype))
    if v.size and v.size != ind.size:
        v = joining.tile(v, -(-ind.size // v.size))[:ind.size]
    if mode in (None, "fill", "drop"):
        ind = lax.select_n(lax.lt(ind, lax.full_like(ind, 0)), ind, lax.add(ind, lax.full_like(ind, a.size)))
    elif mode == "wrap":
        ind = lax.rem(lax.add(lax.rem(ind, lax.full_like(ind, a.size)), lax.full_like(ind, a.size)),
                      lax.full_like(ind, a.size))
    elif mode == "clip":
        ind = lax.clamp(lax.full_like(ind, 0), ind, lax.full_like(ind, a.size - 1))
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    return lax.reshape(flat.at[ind].set(v), a.shape)


def place(arr, mask, vals, *, inplace=True):
    """vals, cycled, into the entries where mask is true (in order)."""
    if inplace:
        raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    arr = _operand("place", arr)
    mask = broadcast_to(_operand("place", mask), arr.shape)
    vals = shape_ops.ravel(lax.convert_element_type(_operand("place", vals), arr.dtype))
    flat_mask = shape_ops.ravel(mask)
    # The k-th true entry takes vals[k % len(vals)].
    rank = lax.sub(cumulative.cumsum(lax.convert_element_type(flat_mask, dtypes.int32)),
                   lax.full(flat_mask.shape, 1, dtypes.int32))
    picks = indexing.take(vals, lax.rem(lax.max(rank, lax.full_like(rank, 0)),
                                        lax.full_like(rank, max(vals.size, 1))), mode="clip")
    return lax.reshape(lax.select_n(flat_mask, shape_ops.ravel(arr), picks), arr.shape)
