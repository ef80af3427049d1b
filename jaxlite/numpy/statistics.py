"""Reductions that skip NaNs, order statistics (median, quantile) and averages."""
import math

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axes
from jaxlite.core.trace import Tracer
from jaxlite.lax.base import scalar_like
from jaxlite.numpy import reductions, ufuncs
from jaxlite.numpy.util import (broadcast_to, check_arraylike, promote_and_broadcast, promote_dtypes,
                                promote_to_inexact)


def _operand(name, a):
    check_arraylike(name, a)
    return promote_and_broadcast(name, a)[0]


def _is_nan(a):
    return lax.ne(a, a) if dtypes.is_inexact(a.dtype) else lax.full_like(a, False, dtypes.bool_)


def _without_nan(a, fill):
    return lax.select_n(_is_nan(a), a, lax.full_like(a, fill))


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    reductions.check_no_out("nansum", out)
    a = _operand("nansum", a)
    return reductions.sum(_without_nan(a, 0), axis, dtype, keepdims=keepdims, initial=initial,
                          where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    reductions.check_no_out("nanprod", out)
    a = _operand("nanprod", a)
    return reductions.prod(_without_nan(a, 1), axis, dtype, keepdims=keepdims, initial=initial,
                           where=where)


def _not_nan_count(a, axis, keepdims, where, dtype):
    present = lax.bitwise_not(_is_nan(a))
    return reductions.sum(present, axis, dtype=dtype, keepdims=keepdims, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    reductions.check_no_out("nanmean", out)
    (a,) = promote_to_inexact("nanmean", _operand("nanmean", a))
    total = nansum(a, axis, dtype, keepdims=keepdims, where=where)
    return lax.div(total, _not_nan_count(a, axis, keepdims, where, total.dtype))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    reductions.check_no_out("nanvar", out)
    (a,) = promote_to_inexact("nanvar", _operand("nanvar", a))
    centered = ufuncs.subtract(a, nanmean(a, axis, dtype, keepdims=True, where=where))
    total = nansum(reductions._abs_squared(centered), axis, dtype, keepdims=keepdims, where=where)
    count = _not_nan_count(a, axis, keepdims, where, total.dtype)
    return lax.div(total, lax.sub(count, lax.convert_element_type(ddof, total.dtype)))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    reductions.check_no_out("nanstd", out)
    return lax.sqrt(nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where))


def _nan_extremum(name, reduce, fill):
    """NaNs are skipped; a slice of only NaNs gives NaN, as in NumPy."""
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        reductions.check_no_out(name, out)
        a = _operand(name, a)
        if not dtypes.is_float(a.dtype):
            return reduce(a, axis, keepdims=keepdims, initial=initial, where=where)
        result = reduce(_without_nan(a, fill), axis, keepdims=keepdims, initial=initial,
                        where=where)
        all_nan = reductions.all(_is_nan(a), axis, keepdims=keepdims, where=where)
        return lax.select_n(all_nan, result, lax.full_like(result, np.nan))
    fn.__name__ = name
    return fn


nanmax = _nan_extremum("nanmax", reductions.max, -np.inf)
nanmin = _nan_extremum("nanmin", reductions.min, np.inf)


def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak: max - min."""
    reductions.check_no_out("ptp", out)
    return lax.sub(reductions.max(a, axis, keepdims=keepdims),
                   reductions.min(a, axis, keepdims=keepdims))


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
        a, weights = (lax.convert_element_type(v, dtypes.to_inexact_dtype(a.dtype)) for v in (a, weights))
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
    low, high = at(lower), at(upper)
    return lax.add(lax.mul(low, scalar_like(low, 1 - fraction)), lax.mul(high, scalar_like(high, fraction)))


def quantile(a, q, axis=None, method="linear", keepdims=False):
    """The q-th quantiles along axis (q must be concrete); NaN in a slice gives NaN."""
    a, q, axes, flat = _quantile_operands("quantile", a, q, axis, method)
    sorted_x = _sort_last_axis(flat)
    has_nan = reductions.any(_is_nan(flat), axis=-1)
    values = [_pick(sorted_x, float(p) * (flat.shape[-1] - 1), method) for p in q.ravel()]
    values = [lax.select_n(has_nan, v, lax.full_like(v, np.nan)) for v in values]
    return _quantile_result(values, q, a.shape, axes, keepdims)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """quantile over the non-NaN entries of each slice (NaN where a slice has none)."""
    if weights is not None:
        raise NotImplementedError("nanquantile with weights= is not supported")
    a, q, axes, flat = _quantile_operands("nanquantile", a, q, axis, method)
    sorted_x = _sort_last_axis(flat)  # NaN sorts last
    count = lax.convert_element_type(
        reductions.sum(lax.bitwise_not(_is_nan(flat)), axis=-1), flat.dtype)
    last = lax.max(lax.sub(count, lax.full_like(count, 1)), lax.full_like(count, 0))
    values = [_pick_traced(sorted_x, lax.mul(last, lax.full_like(last, float(p))), method)
              for p in q.ravel()]
    empty = lax.eq(count, lax.full_like(count, 0))
    values = [lax.select_n(empty, v, lax.full_like(v, np.nan)) for v in values]
    return _quantile_result(values, q, a.shape, axes, keepdims)


def _quantile_operands(name, a, q, axis, method):
    """a made inexact, q checked, and a's `axis` entries flattened into its last axis."""
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    (a,) = promote_to_inexact(name, _operand(name, a))
    a = lax.convert_element_type(a, a.dtype)  # strong, as JAX's quantiles of Python scalars are
    q = _static_quantiles(q)
    axes = canonicalize_axes(axis, a.ndim)
    if any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"{name} of an empty array")
    kept = [i for i in range(a.ndim) if i not in axes]
    moved = lax.transpose(a, kept + list(axes))
    flat = lax.reshape(moved, tuple(a.shape[i] for i in kept) + (math.prod(a.shape[i] for i in axes),))
    return a, q, axes, flat


def _quantile_result(values, q, shape, axes, keepdims):
    if keepdims:
        out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
        values = [lax.reshape(v, out_shape) for v in values]
    if q.ndim == 0:
        return values[0]
    from jaxlite.numpy.shape_ops import stack
    return lax.reshape(stack(values), q.shape + values[0].shape)


def _pick_traced(sorted_x, position, method):
    """_pick with a per-slice (traced) fractional position along the sorted last axis."""
    from jaxlite.numpy.indexing import take_along_axis
    lower, upper = lax.floor(position), lax.ceil(position)
    at = lambda i: take_along_axis(
        sorted_x, lax.convert_element_type(i, dtypes.int32)[..., None], axis=-1)[..., 0]
    if method == "lower":
        return at(lower)
    if method == "higher":
        return at(upper)
    if method == "nearest":
        return at(lax.round(position, rounding_method=1))
    fraction = lax.full_like(position, 0.5) if method == "midpoint" else lax.sub(position, lower)
    low_value, high_value = at(lower), at(upper)
    return lax.add(low_value, lax.mul(lax.sub(high_value, low_value), fraction))


def percentile(a, q, axis=None, method="linear", keepdims=False):
    return quantile(a, _static_quantiles(np.asarray(q, np.float64) / 100), axis, method, keepdims)


def median(a, axis=None, keepdims=False):
    return quantile(a, 0.5, axis, "linear", keepdims)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    q = _static_quantiles(np.asarray(q, np.float64) / 100)
    return nanquantile(a, q, axis, method=method, keepdims=keepdims, weights=weights)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile(a, 0.5, axis, keepdims=keepdims)


def _nan_arg_extremum(name, arg_reduce, fill):
    """argmax/argmin ignoring NaN; an all-NaN slice gives -1 (as JAX)."""
    def fn(a, axis=None, out=None, keepdims=None):
        reductions.check_no_out(name, out)
        a = _operand(name, a)
        if not dtypes.is_float(a.dtype):
            return arg_reduce(a, axis=axis, keepdims=keepdims)
        index = arg_reduce(_without_nan(a, fill), axis=axis, keepdims=keepdims)
        all_nan = reductions.all(_is_nan(a), axis=axis, keepdims=bool(keepdims))
        return lax.select_n(all_nan, index, lax.full_like(index, -1))
    fn.__name__ = name
    return fn


nanargmax = _nan_arg_extremum("nanargmax", reductions.argmax, -np.inf)
nanargmin = _nan_arg_extremum("nanargmin", reductions.argmin, np.inf)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """The covariance matrix of the variables (rows if rowvar) of m, and y's if given."""
    from jaxlite.numpy.products import matmul
    from jaxlite.numpy.shape_ops import concatenate, transpose
    check_arraylike("cov", m)
    if dtype is not None:
        dtypes.check_user_dtype(dtype, "cov")
    x = _variables("cov", m, rowvar, dtype)
    if y is not None:
        x = concatenate([x, _variables("cov", y, rowvar, dtype)], axis=0)
    x = promote_to_inexact("cov", x)[0]
    n = x.shape[1]
    weights = _observation_weights(fweights, aweights, n, x.dtype)
    total = reductions.sum(weights)
    mean = lax.div(reductions.sum(ufuncs.multiply(x, weights[None, :]), axis=1), total)
    if ddof is None:
        ddof = 0 if bias else 1
    if aweights is None:
        norm = lax.sub(total, lax.full_like(total, ddof))
    else:
        aw = lax.convert_element_type(_operand("cov", aweights), x.dtype)
        norm = lax.sub(total, lax.div(lax.mul(lax.full_like(total, ddof),
                                              reductions.sum(lax.mul(weights, aw))), total))
    centered = ufuncs.subtract(x, mean[:, None])
    from jaxlite.numpy.math_functions import conjugate
    product = matmul(ufuncs.multiply(centered, weights[None, :]), conjugate(transpose(centered)))
    return _squeezed(lax.div(product, norm))


def _variables(name, m, rowvar, dtype):
    from jaxlite.numpy.joining import atleast_2d
    m = atleast_2d(_operand(name, m))
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None:
        m = lax.convert_element_type(m, dtype)
    return m if rowvar or m.shape[0] == 1 and m.ndim == 1 else lax.transpose(m, (1, 0))


def _observation_weights(fweights, aweights, n, dtype):
    weights = lax.full((n,), 1, dtype)
    for w in (fweights, aweights):
        if w is not None:
            w = lax.convert_element_type(_operand("cov", w), dtype)
            if w.shape != (n,):
                raise RuntimeError(f"cov: weights must be 1-D with {n} entries, got {w.shape}")
            weights = lax.mul(weights, w)
    return weights


def _squeezed(c):
    return lax.reshape(c, ()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return lax.div(c, c)
    d = lax.sqrt(_diagonal_of(c))
    c = ufuncs.true_divide(ufuncs.true_divide(c, d[:, None]), d[None, :])
    if dtypes.is_complex(c.dtype):     # each part clipped to [-1, 1], as numpy and JAX
        return lax.complex(_unit_clipped(lax.real(c)), _unit_clipped(lax.imag(c)))
    return _unit_clipped(c)


def _unit_clipped(c):
    return lax.clamp(lax.full((), -1, c.dtype), c, lax.full((), 1, c.dtype))


def _diagonal_of(c):
    n = c.shape[0]
    eye = lax.eq(lax.broadcasted_iota(dtypes.int32, c.shape, 0),
                 lax.broadcasted_iota(dtypes.int32, c.shape, 1))
    return reductions.sum(lax.select_n(eye, lax.full_like(c, 0), c), axis=1)
