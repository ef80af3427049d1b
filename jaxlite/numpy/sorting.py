"""Sorting and searching: sort, argsort, lexsort, searchsorted, nonzero and friends.

Functions whose result size depends on the data (nonzero, argwhere, the
one-argument where) need a static `size=` under tracing, as in JAX; they are
built on a stable sort, which moves the selected positions to the front in order.
"""
from typing import Any, NamedTuple

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes, errors
from jaxlite.core.abstract import broadcast_shapes, canonicalize_axis
from jaxlite.core.trace import Tracer
from jaxlite.lax.base import as_operand
from jaxlite.numpy.indexing import take
from jaxlite.numpy.util import broadcast_to, check_arraylike, promote_and_broadcast, promote_dtypes


def _operand_and_axis(name, a, axis):
    check_arraylike(name, a)
    (a,) = promote_and_broadcast(name, a)
    if axis is None:
        return lax.reshape(a, (a.size,)), 0
    return a, canonicalize_axis(axis, a.ndim)


def _sorted_with_positions(a, axis, descending):
    """(sorted a, the original positions), stable; descending keeps ties in index order.

    A descending stable sort is an ascending stable sort of the reversed input,
    reversed back: reversing twice restores the ties' original order.
    """
    positions = lax.broadcasted_iota(dtypes.default_int_dtype(), a.shape, axis)
    if not descending:
        return lax.sort((a, positions), axis, num_keys=1)
    keys, indices = lax.sort((lax.rev(a, (axis,)), lax.rev(positions, (axis,))), axis, num_keys=1)
    return lax.rev(keys, (axis,)), lax.rev(indices, (axis,))


def sort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    if order is not None:
        raise TypeError("sort: the order= argument (for structured arrays) is not supported")
    a, axis = _operand_and_axis("sort", a, axis)
    if descending:
        return _sorted_with_positions(a, axis, True)[0]
    return lax.sort(a, axis)



def sort_complex(a):
    """a sorted along its last axis, as complex numbers (real parts first, then imaginary)."""
    out = sort(a)
    return lax.convert_element_type(out, dtypes.complex_dtype(out.dtype) if not dtypes.is_complex(out.dtype)
                                    else out.dtype)

def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort `a` along `axis` (always stable), of `dtype` when given."""
    if order is not None:
        raise TypeError("argsort: the order= argument (for structured arrays) is not supported")
    a, axis = _operand_and_axis("argsort", a, axis)
    indices = _sorted_with_positions(a, axis, descending)[1]
    return indices if dtype is None else lax.convert_element_type(indices, dtypes.canonicalize_dtype(dtype))


def lexsort(keys, axis=-1):
    """Indices sorting by the last key first, then the one before, ... (stable)."""
    keys = promote_and_broadcast("lexsort", *keys)
    axis = canonicalize_axis(axis, keys[0].ndim)
    positions = lax.broadcasted_iota(dtypes.default_int_dtype(), keys[0].shape, axis)
    return lax.sort(tuple(reversed(keys)) + (positions,), axis, num_keys=len(keys))[-1]


_SEARCH_METHODS = ("compare_all", "scan", "scan_unrolled", "sort")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Insertion points of v into the sorted 1-d a, by comparing with every entry.

    O(len(a) * v.size) but a single fused comparison and sum: fine for the sizes
    this is used at, and free of data-dependent control flow. JAX's `method` chooses its
    algorithm; every one gives these results, so it is only checked here.
    """
    if method not in _SEARCH_METHODS:
        raise ValueError(f"invalid argument method={method!r}, expected one of {list(_SEARCH_METHODS)}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    check_arraylike("searchsorted", a, v)
    a, v = (as_operand(x) for x in promote_dtypes(a, v))
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be one-dimensional, got shape {a.shape}")
    if sorter is not None:
        a = take(a, sorter, mode="clip")
    a_grid = lax.broadcast_in_dim(a, v.shape + a.shape, (v.ndim,))
    v_grid = lax.broadcast_in_dim(v, v.shape + a.shape, tuple(range(v.ndim)))
    before = _ordered_before(a_grid, v_grid, strictly=side == "left")
    return lax.reduce_sum(lax.convert_element_type(before, dtypes.int32), (v.ndim,))


def _ordered_before(x, y, strictly):
    """x < y (x <= y unless strictly) in sort's order: complex values by real part, then imaginary."""
    compare = lax.lt if strictly else lax.le
    if not dtypes.is_complex(x.dtype):
        return compare(x, y)
    first = lax.lt(lax.real(x), lax.real(y))
    tie = lax.bitwise_and(lax.eq(lax.real(x), lax.real(y)), compare(lax.imag(x), lax.imag(y)))
    return lax.bitwise_or(first, tie)


# ---------------------------------------------------------------- nonzero and friends

def concrete_or_error(a, name):
    value = a.to_concrete_value() if isinstance(a, Tracer) else np.asarray(a)
    if value is None:
        raise errors.ConcretizationTypeError(
            f"Abstract tracer value encountered where a concrete value is expected: the size of "
            f"the result of {name} depends on the values of a traced array "
            f"{a.aval.str_short()}. Fix: pass a static size= (and fill_value=) to {name}.")
    return value


def nonzero(a, *, size=None, fill_value=None):
    """The indices of nonzero entries, one array per axis (padded to `size` if given)."""
    check_arraylike("nonzero", a)
    (a,) = promote_and_broadcast("nonzero", a)
    if a.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not supported; use atleast_1d first")
    if size is None:
        return tuple(lax.convert_element_type(np.asarray(i), dtypes.default_int_dtype())
                     for i in np.nonzero(concrete_or_error(a, "nonzero")))
    flat_positions = _first_nonzero_positions(lax.reshape(a, (a.size,)), int(size))
    return _unravel(flat_positions, a.shape, size, fill_value)


def _first_nonzero_positions(flat, size):
    """The flat positions of the first `size` nonzero entries, and which are real."""
    index = dtypes.default_int_dtype()
    is_zero = lax.eq(flat, lax.full_like(flat, 0))
    positions = lax.iota(index, flat.size)
    _, order = lax.sort((is_zero, positions), 0, num_keys=1)
    count = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(is_zero), index), (0,))
    if size > flat.size:
        order = lax.pad(order, lax.full((), 0, index), [(0, size - flat.size, 0)])
    order = lax.slice(order, (0,), (size,))
    valid = lax.lt(lax.iota(index, size), lax.broadcast(count, (size,)))
    return order, valid


def _unravel(flat_positions, shape, size, fill_value):
    order, valid = flat_positions
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length {len(shape)}, "
                         f"got {fill_value!r}")
    out, stride = [], int(np.prod(shape))
    for n, fill in zip(shape, fills):
        stride //= n
        index = lax.rem(lax.div(order, lax.full_like(order, stride)), lax.full_like(order, n))
        out.append(lax.select_n(valid, lax.full_like(index, 0 if fill is None else fill), index))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    check_arraylike("flatnonzero", a)
    (a,) = promote_and_broadcast("flatnonzero", a)
    return nonzero(lax.reshape(a, (a.size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The indices of nonzero entries as rows of a (count, ndim) array."""
    columns = nonzero(a, size=size, fill_value=fill_value)
    count = columns[0].shape[0]
    return lax.concatenate([lax.reshape(c, (count, 1)) for c in columns], 1)


# ---------------------------------------------------------------- unique

def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           size=None, fill_value=None):
    """The sorted unique values of the flattened `ar` (and optionally first indices,
    inverse and counts). Under tracing a static `size=` is required; missing entries
    take fill_value (default: the smallest value), index 0 and count 0."""
    check_arraylike("unique", ar)
    if axis is not None:
        raise NotImplementedError("unique with axis= is not supported; it works on the flattened array")
    (ar,) = promote_and_broadcast("unique", ar)
    flat = lax.reshape(ar, (ar.size,))
    if size is None:
        return _concrete_unique(concrete_or_error(ar, "unique"), ar, return_index,
                                return_inverse, return_counts)
    values, perm = _sorted_with_positions(flat, 0, False)
    runs = _runs_of_equal_values(values, int(size))
    fill = lax.reduce_min(flat, (0,)) if fill_value is None else lax.convert_element_type(fill_value, flat.dtype)
    uniques = lax.select_n(runs.valid, lax.broadcast(fill, (size,)), take(values, runs.starts, mode="clip"))
    results = [uniques]
    zero = lax.full((size,), 0, dtypes.default_int_dtype())
    if return_index:
        results.append(lax.select_n(runs.valid, zero, take(perm, runs.starts, mode="clip")))
    if return_inverse:
        results.append(_count_below(uniques, runs.valid, ar))
    if return_counts:
        results.append(lax.select_n(runs.valid, zero, lax.sub(runs.ends, runs.starts)))
    return results[0] if len(results) == 1 else tuple(results)


class _Runs(NamedTuple):
    """The first `size` runs of equal values in a sorted 1-d array: where each
    starts and ends, and which of the `size` slots hold a real run."""
    starts: Any
    ends: Any
    valid: Any


def _runs_of_equal_values(values, size):
    n = values.shape[0]
    changes = lax.ne(lax.slice(values, (1,), (n,)), lax.slice(values, (0,), (n - 1,)))
    is_first = lax.concatenate([lax.full((1,), True, dtypes.bool_), changes], 0)
    # One run beyond `size` tells where the last kept run ends.
    starts, valid = _first_nonzero_positions(is_first, size + 1)
    following = lax.slice(starts, (1,), (size + 1,))
    ends = lax.select_n(lax.slice(valid, (1,), (size + 1,)), lax.full((size,), n, starts.dtype), following)
    return _Runs(lax.slice(starts, (0,), (size,)), ends, lax.slice(valid, (0,), (size,)))


def _count_below(uniques, valid, ar):
    """For each entry of ar, how many (valid) unique values are smaller: its unique index."""
    grid = lax.broadcast_in_dim(uniques, ar.shape + uniques.shape, (ar.ndim,))
    below = lax.bitwise_and(lax.lt(grid, lax.broadcast_in_dim(ar, grid.shape, tuple(range(ar.ndim)))),
                            lax.broadcast_in_dim(valid, grid.shape, (ar.ndim,)))
    return lax.reduce_sum(lax.convert_element_type(below, dtypes.default_int_dtype()), (ar.ndim,))


def _concrete_unique(value, ar, return_index, return_inverse, return_counts):
    """np.unique's results, the values of ar's dtype and weak type (as JAX's, whose complex
    uniques, sorted by parts, are strong)."""
    outs = np.unique(value, return_index=return_index, return_inverse=return_inverse,
                     return_counts=return_counts)
    weak = ar.weak_type and not dtypes.is_complex(ar.dtype)
    if not isinstance(outs, tuple):
        return lax.convert_element_type(outs, ar.dtype, weak_type=weak)
    return (lax.convert_element_type(outs[0], ar.dtype, weak_type=weak),) + tuple(
        lax.convert_element_type(o, dtypes.default_int_dtype()) for o in outs[1:])


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """The slices of `a` along `axis` where the 1-d condition holds (padded to `size`)."""
    check_arraylike("compress", condition, a)
    (a,) = promote_and_broadcast("compress", a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    axis = canonicalize_axis(axis, a.ndim)
    (condition,) = promote_and_broadcast("compress", condition)
    if condition.ndim != 1 or condition.size > a.shape[axis]:
        raise ValueError(f"compress: condition must be 1-d and no longer than axis {axis} of "
                         f"shape {a.shape}, got shape {condition.shape}")
    if size is None:
        (positions,) = nonzero(condition)
        return take(a, positions, axis=axis)
    # Padding positions point past the end, so the filling gather writes fill_value there.
    (positions,) = nonzero(condition, size=size, fill_value=a.shape[axis])
    return take(a, positions, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    check_arraylike("extract", condition, arr)
    flat = lambda x: lax.reshape(promote_and_broadcast("extract", x)[0], (np.size(x),))
    return compress(flat(condition), flat(arr), size=size, fill_value=fill_value)
