"""Reductions that skip NaNs, order statistics (median, quantile) and averages."""
import math

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axes
from jaxlite.core.trace import Tracer
from jaxlite.numpy import reductions, ufuncs
from jaxlite.numpy.util import (broadcast_to, check_arraylike, promote_and_broadcast, promote_dtypes,
                                promote_to_inexact)


def _operand(name, a):
    check_arraylike(name, a)
    return promote_and_broadcast(name, a)[0]


def _is_nan(a):
    return lax.ne(a, a) if dtypes.is_float(a.dtype) else lax.full_like(a, False, dtypes.bool_)


def _without_nan(a, fill):
    return lax.select_n(_is_nan(a), a, lax.full_like(a, fill))


def nansum(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
    a = _operand("nansum", a)
    return reductions.sum(_without_nan(a, 0), axis, dtype, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
    a = _operand("nanprod", a)
    return reductions.prod(_without_nan(a, 1), axis, dtype, keepdims, initial, where)


def _not_nan_count(a, axis, keepdims, where, dtype):
    present = lax.bitwise_not(_is_nan(a))
    return reductions.sum(present, axis, dtype=dtype, keepdims=keepdims, where=where)


def nanmean(a, axis=None, dtype=None, keepdims=False, where=None):
    (a,) = promote_to_inexact("nanmean", _operand("nanmean", a))
    total = nansum(a, axis, dtype, keepdims, where=where)
    return lax.div(total, _not_nan_count(a, axis, keepdims, where, total.dtype))


def nanvar(a, axis=None, dtype=None, ddof=0, keepdims=False, where=None):
    (a,) = promote_to_inexact("nanvar", _operand("nanvar", a))
    centered = ufuncs.subtract(a, nanmean(a, axis, dtype, keepdims=True, where=where))
    total = nansum(lax.square(centered), axis, dtype, keepdims, where=where)
    count = _not_nan_count(a, axis, keepdims, where, total.dtype)
    return lax.div(total, lax.sub(count, lax.convert_element_type(ddof, total.dtype)))


def nanstd(a, axis=None, dtype=None, ddof=0, keepdims=False, where=None):
    return lax.sqrt(nanvar(a, axis, dtype, ddof, keepdims, where))


def _nan_extremum(name, reduce, fill):
    """NaNs are skipped; a slice of only NaNs gives NaN, as in NumPy."""
    def fn(a, axis=None, keepdims=False, initial=None, where=None):
        a = _operand(name, a)
        if not dtypes.is_float(a.dtype):
            return reduce(a, axis, keepdims, initial, where)
        result = reduce(_without_nan(a, fill), axis, keepdims, initial, where)
        all_nan = reductions.all(_is_nan(a), axis, keepdims, where)
        return lax.select_n(all_nan, result, lax.full_like(result, np.nan))
    fn.__name__ = name
    return fn


nanmax = _nan_extremum("nanmax", reductions.max, -np.inf)
nanmin = _nan_extremum("nanmin", reductions.min, np.inf)


def ptp(a, axis=None, keepdims=False):
    """Peak to peak: max - min."""
    return lax.sub(reductions.max(a, axis, keepdims), reductions.min(a, axis, keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    a = _operand("count_nonzero", a)
    nonzero = a if dtypes.is_bool(a.dtype) else lax.ne(a, lax.full_like(a, 0))
    return reductions.sum(nonzero, axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The mean weighted along axis; with returned=True also the sum of the weights."""
    a = _operand("average", a)
    if weights is None:
        avg = reductions.mean(a, axis, keepdims=keepdims)
        total = lax.full_like(avg, math.prod(a.shape[i] for i in canonicalize_axes(axis, a.ndim)))
        return (avg, total) if returned else avg
    check_arraylike("average", weights)
    a, weights = promote_dtypes(a, weights)   # without broadcasting: shapes are checked below
    if not dtypes.is_float(a.dtype):
        a, weights = (lax.convert_element_type(v, dtypes.default_float_dtype()) for v in (a, weights))
    weights = _weights_for(weights, a, axis)
    total = reductions.sum(weights, axis, keepdims=keepdims)
    avg = lax.div(reductions.sum(lax.mul(a, weights), axis, keepdims=keepdims), total)
    return (avg, broadcast_to(total, avg.shape)) if returned else avg


def _weights_for(weights, a, axis):
    """NumPy allows 1-D weights along a single axis; otherwise shapes must match."""
    if weights.shape == a.shape:
        return weights
    if axis is None or weights.ndim != 1 or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"average: weights of shape {weights.shape} differ from the array's "
                         f"shape {a.shape}; 1-D weights need a single axis")
    axis = canonicalize_axes(axis, a.ndim)[0]
    if weights.shape[0] != a.shape[axis]:
        raise ValueError(f"average: length of weights {weights.shape[0]} differs from the "
                         f"size {a.shape[axis]} of axis {axis}")
    return lax.broadcast_in_dim(weights, a.shape, (axis,))


# ---------------------------------------------------------------- order statistics

def _sort_last_axis(x):
    """Sort along the last axis: with jnp.sort when it exists, else by ranks in O(n^2).

    The rank of x[i] is the number of elements before it in a stable ascending
    order; a one-hot match of ranks to positions then places each element.
    """
    from jaxlite import numpy as jnp
    if hasattr(jnp, "sort"):
        return jnp.sort(x, axis=-1)
    n = x.shape[-1]
    mine, others = lax.expand_dims(x, (x.ndim,)), lax.expand_dims(x, (x.ndim - 1,))
    shape = x.shape + (n,)
    mine, others = broadcast_to(mine, shape), broadcast_to(others, shape)
    j_before_i = lax.lt(lax.broadcasted_iota(dtypes.int32, shape, x.ndim),
                        lax.broadcasted_iota(dtypes.int32, shape, x.ndim - 1))
    before = lax.bitwise_or(lax.lt(others, mine), lax.bitwise_and(lax.eq(others, mine), j_before_i))
    ranks = lax.reduce_sum(lax.convert_element_type(before, dtypes.int32), (x.ndim,))
    placed = lax.eq(broadcast_to(lax.expand_dims(ranks, (x.ndim,)), shape),
                    lax.broadcasted_iota(dtypes.int32, shape, x.ndim))
    return lax.reduce_sum(lax.select_n(placed, lax.full_like(mine, 0), mine), (x.ndim - 1,))


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _static_quantiles(q):
    if isinstance(q, Tracer):
        raise TypeError("quantile needs concrete q values (traced q would need gather); "
                        "pass q as a Python float or numpy array")
    q = np.asarray(q, np.float64)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("quantiles must be in the range [0, 1]")
    return q


def _pick(sorted_x, position, method):
    """The value at a fractional position of the sorted last axis."""
    n = sorted_x.shape[-1]
    lower, upper = math.floor(position), min(math.ceil(position), n - 1)
    at = lambda i: lax.index_in_dim(sorted_x, i, sorted_x.ndim - 1, keepdims=False)
    if method == "lower" or lower == upper:
        return at(lower)
    if method == "higher":
        return at(upper)
    if method == "nearest":
        return at(int(np.round(position)))
    fraction = 0.5 if method == "midpoint" else position - lower
    return lax.add(lax.mul(at(lower), 1 - fraction), lax.mul(at(upper), fraction))


def quantile(a, q, axis=None, method="linear", keepdims=False):
    """The q-th quantiles along axis (q must be concrete); NaN in a slice gives NaN."""
    if method not in _METHODS:
        raise ValueError(f"quantile: method must be one of {_METHODS}, got {method!r}")
    (a,) = promote_to_inexact("quantile", _operand("quantile", a))
    q = _static_quantiles(q)
    axes = canonicalize_axes(axis, a.ndim)
    if any(a.shape[i] == 0 for i in axes):
        raise ValueError("quantile of an empty array")
    kept = [i for i in range(a.ndim) if i not in axes]
    moved = lax.transpose(a, kept + list(axes))
    flat = lax.reshape(moved, tuple(a.shape[i] for i in kept) + (math.prod(a.shape[i] for i in axes),))
    sorted_x = _sort_last_axis(flat)
    has_nan = reductions.any(_is_nan(flat), axis=-1)
    values = [_pick(sorted_x, float(p) * (flat.shape[-1] - 1), method) for p in q.ravel()]
    values = [lax.select_n(has_nan, v, lax.full_like(v, np.nan)) for v in values]
    if keepdims:
        out_shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
        values = [lax.reshape(v, out_shape) for v in values]
    if q.ndim == 0:
        return values[0]
    from jaxlite.numpy.shape_ops import stack
    return lax.reshape(stack(values), q.shape + values[0].shape)


def percentile(a, q, axis=None, method="linear", keepdims=False):
    return quantile(a, _static_quantiles(np.asarray(q, np.float64) / 100), axis, method, keepdims)


def median(a, axis=None, keepdims=False):
    return quantile(a, 0.5, axis, "linear", keepdims)
