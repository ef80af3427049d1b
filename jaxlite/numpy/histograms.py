"""Counting and binning: bincount, digitize, histogram(_bin_edges/2d/dd), and interp.

Counts are scatter-adds into a static number of bins, so they run under jit; only
bincount's default length (1 + max(x)) depends on the data, and needs length= there.
"""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.numpy import creation, joining, reductions, shape_ops, sorting
from jaxlite.numpy.util import (broadcast_to, check_arraylike, promote_and_broadcast,
                                promote_dtypes, promote_to_inexact)


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    """How often each value 0, 1, ... occurs in x (weighted); negative values count as 0,
    values past `length` are dropped."""
    check_arraylike("bincount", x)
    (x,) = promote_and_broadcast("bincount", x)
    if not (dtypes.is_int(x.dtype) or dtypes.is_bool(x.dtype)):
        raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
    if x.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    if minlength < 0:
        raise ValueError(f"minlength must be non-negative, got {minlength}")
    if length is None:
        largest = sorting.concrete_or_error(x, "bincount (as length=)")
        length = max(int(minlength), int(largest.max()) + 1 if largest.size else 0)
    if weights is None:
        weights = lax.full(x.shape, 1, dtypes.default_int_dtype())
    else:
        (weights,) = promote_and_broadcast("bincount", weights)
        weights = broadcast_to(weights, x.shape)
    positions = lax.max(lax.convert_element_type(x, dtypes.int32), lax.full(x.shape, 0, dtypes.int32))
    return creation.zeros((length,), weights.dtype).at[positions].add(weights, mode="drop")


def digitize(x, bins, right=False, *, method=None):
    """Which bin each x falls in, for increasing or decreasing bins (numpy's convention)."""
    check_arraylike("digitize", x, bins)
    (bins,) = promote_and_broadcast("digitize", bins)
    if bins.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got {bins=}")
    if bins.shape[0] == 0:
        return lax.full(np.shape(x), 0, dtypes.int32)
    side = "left" if right else "right"
    increasing = lax.le(bins[0], bins[-1])
    rising = sorting.searchsorted(bins, x, side=side)
    falling = lax.sub(lax.full_like(rising, bins.shape[0]),
                      sorting.searchsorted(joining.flip(bins), x, side="right" if right else "left"))
    return lax.select_n(broadcast_to(increasing, rising.shape), falling, rising)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    check_arraylike("histogram_bin_edges", a)
    (a,) = promote_to_inexact("histogram_bin_edges", a)
    if np.ndim(bins) == 1:
        (edges,) = promote_to_inexact("histogram_bin_edges", bins)
        return lax.convert_element_type(edges, a.dtype)
    bins = int(bins)
    if bins < 1:
        raise ValueError(f"`bins` must be positive, when an integer; got {bins}")
    if range is None:
        low, high = reductions.min(a), reductions.max(a)
    else:
        low, high = (lax.convert_element_type(v, a.dtype) for v in range)
    # A constant sample gets the unit interval around it, as in numpy.
    same = lax.eq(low, high)
    half = lax.full((), 0.5, a.dtype)
    low = lax.select_n(same, low, lax.sub(low, half))
    high = lax.select_n(same, high, lax.add(high, half))
    return creation.linspace(low, high, bins + 1, dtype=a.dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):
    edges = histogram_bin_edges(a, bins, range)
    a = shape_ops.ravel(promote_to_inexact("histogram", a)[0])
    counts = _bin_counts(a, edges, weights)
    if density:
        widths = lax.sub(edges[1:], edges[:-1])
        counts = lax.div(lax.div(counts, widths), reductions.sum(counts))
    return counts, edges


def _bin_positions(a, edges):
    """Each sample's bin (the last bin is closed on the right); outside: -1 or n_bins."""
    n_bins = edges.shape[0] - 1
    positions = lax.sub(sorting.searchsorted(edges, a, side="right"), lax.full(a.shape, 1, dtypes.int32))
    on_last_edge = lax.eq(a, broadcast_to(edges[-1], a.shape))
    positions = lax.select_n(on_last_edge, positions, lax.full_like(positions, n_bins - 1))
    outside = lax.bitwise_or(lax.lt(positions, lax.full_like(positions, 0)),
                             lax.ge(positions, lax.full_like(positions, n_bins)))
    return positions, outside


def _bin_counts(a, edges, weights):
    positions, outside = _bin_positions(a, edges)
    weights = lax.full(a.shape, 1, a.dtype) if weights is None else lax.convert_element_type(
        shape_ops.ravel(promote_and_broadcast("histogram", weights)[0]), a.dtype)
    weights = lax.select_n(outside, weights, lax.full_like(weights, 0))
    positions = lax.select_n(outside, positions, lax.full_like(positions, 0))
    return creation.zeros((edges.shape[0] - 1,), a.dtype).at[positions].add(weights)


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """Counts over a grid of bins for N samples of D coordinates (sample: (N, D))."""
    check_arraylike("histogramdd", sample)
    (sample,) = promote_to_inexact("histogramdd", sample)
    if sample.ndim == 1:
        sample = sample[:, None]
    n, d = sample.shape
    bins_per_axis = bins if isinstance(bins, (list, tuple)) else [bins] * d
    ranges = range if range is not None else [None] * d
    if len(bins_per_axis) != d or len(ranges) != d:
        raise ValueError(f"histogramdd: bins and range need one entry per dimension ({d})")
    edges = [histogram_bin_edges(sample[:, i], b, r) for i, (b, r) in
             enumerate(zip(bins_per_axis, ranges))]
    flat, outside = lax.full((n,), 0, dtypes.int32), lax.full((n,), False, dtypes.bool_)
    for i, e in enumerate(edges):
        positions, out_i = _bin_positions(sample[:, i], e)
        flat = lax.add(lax.mul(flat, lax.full_like(flat, e.shape[0] - 1)), positions)
        outside = lax.bitwise_or(outside, out_i)
    grid = tuple(e.shape[0] - 1 for e in edges)
    # As JAX: plain counts are integers (of the default integer dtype), weighted ones and
    # densities of the sample's dtype.
    count_dtype = dtypes.default_int_dtype() if weights is None and not density else sample.dtype
    w = lax.full((n,), 1, count_dtype) if weights is None else lax.convert_element_type(
        promote_and_broadcast("histogramdd", weights)[0], sample.dtype)
    w = lax.select_n(outside, w, lax.full_like(w, 0))
    flat = lax.select_n(outside, flat, lax.full_like(flat, 0))
    counts = creation.zeros((int(np.prod(grid)),), count_dtype).at[flat].add(w)
    counts = lax.reshape(counts, grid)
    if density:
        volume = edges[0][1:] - edges[0][:-1]
        for e in edges[1:]:
            volume = volume[..., None] * (e[1:] - e[:-1])
        counts = counts / volume / reductions.sum(counts)
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    check_arraylike("histogram2d", x, y)
    x, y = promote_dtypes(x, y)
    if np.ndim(bins) == 1 and len(bins) != 2 or np.ndim(bins) == 0:
        bins = [bins, bins]
    counts, (x_edges, y_edges) = histogramdd(shape_ops.stack([x, y], axis=1), bins, range,
                                             weights, density)
    return counts, x_edges, y_edges


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x (xp increasing); outside xp: left/right
    values, or 'extrapolate' along the end segments."""
    check_arraylike("interp", x, xp, fp)
    x, xp, fp = _interp_operands(x, xp, fp)
    if dtypes.is_complex(fp.dtype):      # each part interpolated, as numpy and JAX
        parts = [interp(x, xp, part(fp), _part_of(left, part), _part_of(right, part), period)
                 for part in (lax.real, lax.imag)]
        return lax.complex(*parts)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    for name, value in (("left", left), ("right", right)):
        if isinstance(value, str) and value != "extrapolate":
            raise ValueError(f"interp: {name} must be a value or 'extrapolate', got {value!r}")
    if period is not None:
        period = lax.abs(lax.convert_element_type(period, x.dtype))
        x = _mod(x, period)
        xp = _mod(xp, period)
        order = sorting.argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = shape_ops.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = shape_ops.concatenate([fp[-1:], fp, fp[:1]])
    i = lax.clamp(lax.full((), 1, dtypes.int32), sorting.searchsorted(xp, x, side="right"),
                  lax.full((), xp.shape[0] - 1, dtypes.int32))
    x0, x1, f0, f1 = xp[i - 1], xp[i], fp[i - 1], fp[i]
    dx = lax.sub(x1, x0)
    slope_part = lax.div(lax.mul(lax.sub(f1, f0), lax.sub(x, x0)), dx)
    out = lax.select_n(lax.eq(dx, lax.full_like(dx, 0)), lax.add(f0, slope_part), f0)
    # Clamped to the end segments, the formula above already extrapolates linearly.
    if period is None and not isinstance(left, str):
        out = _outside(out, lax.lt(x, xp[0]), fp[0] if left is None else left)
    if period is None and not isinstance(right, str):
        out = _outside(out, lax.gt(x, xp[-1]), fp[-1] if right is None else right)
    return out


def _part_of(value, part):
    """A left/right value's part (None and 'extrapolate' apply to both parts)."""
    if value is None or isinstance(value, str):
        return value
    return part(lax.convert_element_type(value, dtypes.complex_dtype(np.result_type(value))))


def _interp_operands(x, xp, fp):
    x, xp = promote_dtypes(x, xp)
    if not dtypes.is_float(x.dtype):
        dtype = dtypes.default_float_dtype()
        x, xp = (lax.convert_element_type(v, dtype) for v in (x, xp))
    # fp may be complex (interpolated part by part, as numpy and JAX): it only promotes with x.
    fp = promote_dtypes(fp, x)[0]
    return x, xp, fp


def _mod(x, period):
    return lax.sub(x, lax.mul(lax.floor(lax.div(x, period)), period))


def _outside(out, mask, value):
    value = broadcast_to(lax.convert_element_type(value, out.dtype), out.shape)
    return lax.select_n(mask, out, value)
