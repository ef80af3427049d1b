"""Joining, splitting, tiling, padding and reordering arrays: all static-shape
rearrangements built from lax slices, concatenations, pads and reversals."""
import operator

import numpy as np

from jaxlite import lax
from jaxlite.core.abstract import canonicalize_axes, canonicalize_axis
from jaxlite.numpy.shape_ops import concatenate, ravel, reshape, transpose
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast


def _operand(name, a):
    check_arraylike(name, a)
    return promote_and_broadcast(name, a)[0]


# ---------------------------------------------------------------- at least n dimensions

def _at_least(name, new_shape):
    def fn(*arys):
        outs = [_reshaped_up(_operand(name, a), new_shape) for a in arys]
        return outs[0] if len(outs) == 1 else outs
    fn.__name__ = name
    return fn


def _reshaped_up(a, new_shape):
    shape = new_shape(a.shape)
    return a if shape == a.shape else lax.reshape(a, shape)


# NumPy puts the new axes of a 1-D array around it: (n,) -> (1, n) -> (1, n, 1).
atleast_1d = _at_least("atleast_1d", lambda s: s if len(s) >= 1 else (1,))
atleast_2d = _at_least("atleast_2d", lambda s: s if len(s) >= 2 else (1,) * (2 - len(s)) + s)
atleast_3d = _at_least("atleast_3d", lambda s: s if len(s) >= 3 else
                       {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


def _as_list(name, tup):
    if hasattr(tup, "shape"):
        return [tup[i] for i in range(tup.shape[0])]
    if not isinstance(tup, (list, tuple)):
        raise TypeError(f"{name} expects a sequence of arrays, got {type(tup).__name__}")
    return list(tup)


def hstack(tup, dtype=None):
    arrays = atleast_1d(*_as_list("hstack", tup))
    arrays = arrays if isinstance(arrays, list) else [arrays]
    return concatenate(arrays, axis=0 if arrays[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    arrays = atleast_2d(*_as_list("vstack", tup))
    return concatenate(arrays if isinstance(arrays, list) else [arrays], axis=0, dtype=dtype)


def dstack(tup, dtype=None):
    arrays = atleast_3d(*_as_list("dstack", tup))
    return concatenate(arrays if isinstance(arrays, list) else [arrays], axis=2, dtype=dtype)


def column_stack(tup):
    arrays = [_operand("column_stack", a) for a in _as_list("column_stack", tup)]
    arrays = [lax.reshape(a, (a.size, 1)) if a.ndim < 2 else a for a in arrays]
    return concatenate(arrays, axis=1)



# ---------------------------------------------------------------- splitting


def _split_points(name, size, indices_or_sections, even):
    """The boundaries of the pieces along an axis of `size`."""
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {sections}")
        if even and size % sections:
            raise ValueError(f"array split does not result in an equal division: "
                             f"{size} elements into {sections} sections")
        small, extra = divmod(size, sections)
        sizes = [small + 1] * extra + [small] * (sections - extra)
        return [0] + list(np.cumsum(sizes))
    indices = [min(max(operator.index(i) if i >= 0 else size + operator.index(i), 0), size)
               for i in indices_or_sections]
    return [0] + indices + [size]


def _split(name, ary, indices_or_sections, axis, even):
    a = _operand(name, ary)
    axis = canonicalize_axis(axis, a.ndim)
    points = _split_points(name, a.shape[axis], indices_or_sections, even)
    return [lax.slice_in_dim(a, int(lo), max(int(lo), int(hi)), axis=axis)
            for lo, hi in zip(points[:-1], points[1:])]


def split(ary, indices_or_sections, axis=0):
    return _split("split", ary, indices_or_sections, axis, even=True)


def array_split(ary, indices_or_sections, axis=0):
    return _split("array_split", ary, indices_or_sections, axis, even=False)


def hsplit(ary, indices_or_sections):
    a = _operand("hsplit", ary)
    return split(a, indices_or_sections, axis=0 if a.ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=0)


# ---------------------------------------------------------------- tiling and repeating

def tile(A, reps):
    """Repeat the whole array reps times along each axis (by broadcasting, then reshaping)."""
    a = _operand("tile", A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(operator.index(r) for r in reps)
    ndim = max(a.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    a = lax.reshape(a, (1,) * (ndim - a.ndim) + a.shape)
    # Interleave a new axis of size r before each axis, broadcast into it, then merge.
    interleaved = tuple(d for pair in zip(reps, a.shape) for d in pair)
    expanded = lax.broadcast_in_dim(a, interleaved, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(expanded, tuple(r * d for r, d in zip(reps, a.shape)))


def repeat(a, repeats, axis=None, total_repeat_length=None):
    """Repeat each element; repeats must be static (an int or a sequence of ints)."""
    a = _operand("repeat", a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, a.ndim)
    if hasattr(repeats, "shape") and not isinstance(repeats, np.ndarray) and repeats.ndim:
        repeats = np.asarray(repeats)
    if np.ndim(repeats) == 0:
        count = operator.index(repeats)
        shape = a.shape[:axis + 1] + (count,) + a.shape[axis + 1:]
        kept = tuple(i for i in range(a.ndim + 1) if i != axis + 1)
        out = lax.broadcast_in_dim(a, shape, kept)
        out = lax.reshape(out, a.shape[:axis] + (a.shape[axis] * count,) + a.shape[axis + 1:])
    else:
        counts = [operator.index(r) for r in np.asarray(repeats).ravel()]
        if len(counts) != a.shape[axis]:
            raise ValueError(f"repeat: {len(counts)} repeats for axis {axis} of size {a.shape[axis]}")
        pieces = [repeat(lax.slice_in_dim(a, i, i + 1, axis=axis), c, axis) for i, c in enumerate(counts) if c]
        out = concatenate(pieces, axis) if pieces else lax.slice_in_dim(a, 0, 0, axis=axis)
    if total_repeat_length is not None and total_repeat_length != out.shape[axis]:
        raise ValueError(f"repeat: total_repeat_length={total_repeat_length} does not match "
                         f"the result length {out.shape[axis]}")
    return out


# ---------------------------------------------------------------- reordering

def flip(m, axis=None):
    a = _operand("flip", m)
    return lax.rev(a, canonicalize_axes(axis, a.ndim))


def fliplr(m):
    a = _operand("fliplr", m)
    if a.ndim < 2:
        raise ValueError(f"fliplr needs an array of at least 2 dimensions, got {a.ndim}")
    return flip(a, 1)


def flipud(m):
    a = _operand("flipud", m)
    if a.ndim < 1:
        raise ValueError("flipud needs an array of at least 1 dimension")
    return flip(a, 0)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees k times in the plane of `axes`, from the first toward the second."""
    a = _operand("rot90", m)
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got {axes}")
    first, second = canonicalize_axes(axes, a.ndim, "axes")
    k = operator.index(k) % 4
    if k == 0:
        return a
    if k == 2:
        return lax.rev(a, (first, second))
    perm = list(range(a.ndim))
    perm[first], perm[second] = perm[second], perm[first]
    if k == 1:
        return transpose(lax.rev(a, (second,)), perm)
    return lax.rev(transpose(a, perm), (second,))


def roll(a, shift, axis=None):
    """Shift elements cyclically; shifts must be static."""
    a = _operand("roll", a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = (shift,) * len(axes) if np.ndim(shift) == 0 else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
    for ax, s in zip(axes, shifts):
        ax = canonicalize_axis(ax, a.ndim)
        size = a.shape[ax]
        if size == 0:
            continue
        s = operator.index(s) % size
        if s:
            a = lax.concatenate([lax.slice_in_dim(a, size - s, size, axis=ax),
                                 lax.slice_in_dim(a, 0, size - s, axis=ax)], ax)
    return a


# ---------------------------------------------------------------- padding

def _pad_widths(pad_width, ndim):
    """NumPy's pad_width forms (n, (n,), (lo, hi), ((lo, hi), ...)) as one pair per axis."""
    widths = np.asarray(pad_width)
    if not np.issubdtype(widths.dtype, np.integer):
        raise TypeError(f"pad_width must be of integral type, got {pad_width!r}")
    widths = np.broadcast_to(widths, (ndim, 2)) if widths.size <= 2 or widths.shape == (ndim, 2) \
        else widths
    if widths.shape != (ndim, 2) or np.any(widths < 0):
        raise ValueError(f"pad_width {pad_width!r} must give non-negative (before, after) "
                         f"widths for each of the {ndim} axes")
    return [(int(lo), int(hi)) for lo, hi in widths]


def _edge_cycles(a, axis, mode):
    """What repeats outward from each end of `a`: (leftward from a[0], rightward from a[-1]).

    For a = [a0 .. an]: reflect continues a1, a2, ... to the left and a(n-1), ...
    to the right, bouncing off each end without repeating it; symmetric repeats
    the end element; wrap continues with the other end; edge repeats the end.
    """
    size = a.shape[axis]
    take = lambda x, start, stop: lax.slice_in_dim(x, start, stop, axis=axis)
    reverse = lax.rev(a, (axis,))
    if mode == "edge" or (mode == "reflect" and size == 1):
        return take(a, 0, 1), take(a, size - 1, size)
    if mode == "wrap":
        return reverse, a
    if mode == "symmetric":
        return concatenate([a, reverse], axis), concatenate([reverse, a], axis)
    inner, inner_reversed = take(a, 1, size), take(reverse, 1, size)
    return concatenate([inner, inner_reversed], axis), concatenate([inner_reversed, inner], axis)


def _cyclic(cycle, axis, length):
    """The first `length` elements of `cycle` repeated along axis."""
    copies = max(-(-length // cycle.shape[axis]), 1)
    return lax.slice_in_dim(concatenate([cycle] * copies, axis), 0, length, axis=axis)


_MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


def pad(array, pad_width, mode="constant", constant_values=0):
    """NumPy's pad for the constant, edge, wrap, reflect and symmetric modes (static widths)."""
    a = _operand("pad", array)
    if mode not in _MODES:
        raise NotImplementedError(f"pad mode {mode!r} is not supported; use one of {_MODES}")
    widths = _pad_widths(pad_width, a.ndim)
    if mode == "constant":
        return _pad_constant(a, widths, constant_values)
    for axis, (lo, hi) in enumerate(widths):
        if not lo and not hi:
            continue
        if a.shape[axis] == 0:
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant'")
        leftward, rightward = _edge_cycles(a, axis, mode)
        before = lax.rev(_cyclic(leftward, axis, lo), (axis,))
        a = concatenate([before, a, _cyclic(rightward, axis, hi)], axis)
    return a


def _pad_constant(a, widths, constant_values):
    values = np.asarray(constant_values) if not hasattr(constant_values, "aval") else constant_values
    if np.ndim(values) == 0:
        fill = lax.convert_element_type(values if hasattr(values, "aval") else values.item(), a.dtype)
        return lax.pad(a, fill, [(lo, hi, 0) for lo, hi in widths])
    pairs = np.broadcast_to(np.asarray(values), (a.ndim, 2))
    for axis, ((lo, hi), (lo_value, hi_value)) in enumerate(zip(widths, pairs)):
        config = [(0, 0, 0)] * a.ndim
        config[axis] = (lo, 0, 0)
        a = lax.pad(a, lax.convert_element_type(lo_value.item(), a.dtype), config)
        config[axis] = (0, hi, 0)
        a = lax.pad(a, lax.convert_element_type(hi_value.item(), a.dtype), config)
    return a

