"""NumPy indexing on jaxlite arrays, and the functional `.at[...]` updates.

Reading `x[index]` picks the cheapest primitive that expresses the index:
  - static basic indices (ints, slices, None, Ellipsis): slice, rev and reshape;
  - the same with traced integer scalars: dynamic_slice, then the static rest;
  - integer or (concrete) boolean arrays: one gather, following NumPy's rules for
    where the broadcast advanced-index dimensions go.
Every update `.at[index].set/add/...` is one scatter, built from the same gather
description (`_GatherPlan`), so reads and writes of an index always agree.

As in JAX, out-of-bounds indices are clamped when reading and dropped when writing,
static integers too (jnp.arange(10)[11] is 9); only an empty axis raises IndexError.
"""
import operator

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import broadcast_shapes, canonicalize_axis
from jaxlite.core.errors import NonConcreteBooleanIndexError, concretization_error
from jaxlite.core.trace import Tracer
from jaxlite.lax.base import as_operand
from jaxlite.lax.slicing import GatherDimensionNumbers, ScatterDimensionNumbers
from jaxlite.lax.slicing import take_along_axis as lax_take_along_axis
from jaxlite.numpy.ufuncs import true_divide
from jaxlite.numpy.util import broadcast_to, promote_and_broadcast

# ---------------------------------------------------------------- normalizing an index


def _concrete(x):
    """The numpy value of a concrete array or tracer, else None."""
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    return np.asarray(x)


def _is_array_entry(entry):
    return isinstance(entry, (np.ndarray, list)) or (
        hasattr(entry, "shape") and hasattr(entry, "dtype") and not isinstance(entry, np.generic))


def _check_entry_dtype(entry, position):
    dtype = np.asarray(entry).dtype if isinstance(entry, list) else entry.dtype
    if not (dtypes.is_int(dtype) or dtypes.is_bool(dtype)):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{np.dtype(dtype).name} at position {position}, indexer value {entry!r}")
    return dtype


def _boolean_entries(mask, position):
    """A concrete boolean mask is the integer arrays of its nonzero positions."""
    value = _concrete(mask)
    if value is None:
        raise NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got {mask.aval.str_short()} at position "
            f"{position}. The result's shape would depend on the mask's values. Fix: use "
            "jnp.where(mask, x, fill) for a same-shape result, or jnp.nonzero(mask, size=...) "
            "with a static size= to get integer indices.")
    return [_MaskPositions(i, value.shape, k) for k, i in enumerate(np.nonzero(value))], value.ndim


class _MaskPositions(np.ndarray):
    """Integer positions from a boolean mask, remembering the mask's shape so
    expand_index can check it against the axes it lands on."""

    def __new__(cls, positions, mask_shape, mask_axis):
        out = np.asarray(positions, np.int32).view(cls)
        out.mask_shape, out.mask_axis = mask_shape, mask_axis
        return out

    def __array_finalize__(self, source):
        self.mask_shape = getattr(source, "mask_shape", None)
        self.mask_axis = getattr(source, "mask_axis", None)


def _classify(entry, position):
    """An index entry as None, a slice, a static int, or an integer array (a
    scalar array when it is a traced integer); booleans expand to integer arrays.

    Returns (entries, number of array axes consumed)."""
    if entry is None or isinstance(entry, slice):
        return [entry], int(isinstance(entry, slice))
    if isinstance(entry, (bool, np.bool_)):
        raise TypeError(f"boolean scalar indices are not supported (position {position}); "
                        "use None to add an axis")
    if isinstance(entry, (int, np.integer)):
        return [operator.index(entry)], 1
    if isinstance(entry, (float, np.floating)):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{type(entry).__name__} at position {position}, indexer value {entry!r}")
    if not _is_array_entry(entry):
        raise TypeError(f"unsupported index {entry!r} of type {type(entry).__name__} at position {position}")
    dtype = _check_entry_dtype(entry, position)
    if isinstance(entry, list):
        entry = np.asarray(entry)
    if dtypes.is_bool(dtype):
        return _boolean_entries(entry, position)
    if entry.ndim == 0 and _concrete(entry) is not None:
        return [int(_concrete(entry))], 1
    return [entry], 1


def expand_index(index, shape, check_bounds=True):
    """One entry per result-relevant position: Ellipsis expanded, trailing axes filled.

    Also returns where an Ellipsis that expanded to nothing stood (else None):
    NumPy still counts it as separating advanced indices. check_bounds=False leaves
    static integers out of range to the gather/scatter `mode` (x.at[i].set drops them).
    """
    index = index if isinstance(index, tuple) else (index,)
    if sum(e is Ellipsis for e in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    head, tail, used = [], [], 0
    for position, entry in enumerate(index):
        if entry is Ellipsis:
            head, tail = tail, head
            continue
        classified, consumed = _classify(entry, position)
        tail.extend(classified)
        used += consumed
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {used} were indexed")
    fill = [slice(None)] * (len(shape) - used)
    has_ellipsis = any(e is Ellipsis for e in index)
    entries = head + fill + tail if has_ellipsis else tail + fill
    entries = _check_static_entries(entries, shape, check_bounds)
    return entries, (len(head) if has_ellipsis and not fill else None)


def _check_static_entries(entries, shape, check_bounds):
    """Static integers clamped into their axis (when reading) and JAX's IndexErrors for an
    integer into an empty axis and for boolean masks that do not fit."""
    axis, checked = 0, []
    for entry in entries:
        checked.append(entry)
        if entry is None:
            continue
        if check_bounds and isinstance(entry, int) and not -shape[axis] <= entry < shape[axis]:
            if shape[axis] == 0:
                raise IndexError(f"index {entry} is out of bounds for axis {axis} with size 0")
            checked[-1] = min(max(entry, -shape[axis]), shape[axis] - 1)
        if isinstance(entry, _MaskPositions) and entry.mask_axis == 0:
            covered = shape[axis:axis + len(entry.mask_shape)]
            if covered != entry.mask_shape:
                raise IndexError(f"boolean index of shape {entry.mask_shape} does not match the "
                                 f"indexed array's axes {axis}.. of sizes {covered}")
        axis += 1
    return checked


def _is_static_basic(entry):
    return entry is None or isinstance(entry, (slice, int))


def _is_scalar_array(entry):
    return _is_array_entry(entry) and entry.ndim == 0


# ---------------------------------------------------------------- static basic indices

class _AxisSelection:
    """Which elements of one axis a slice keeps: start, count and a positive step."""

    __slots__ = ("start", "count", "step", "reversed")

    def __init__(self, start, count, step, reversed=False):
        self.start, self.count, self.step, self.reversed = start, count, step, reversed

    def kind(self):
        """Unit-step slices are gather windows; others are point indices."""
        return "window" if self.step == 1 and not self.reversed else "strided"

    def last(self):
        return self.start + (self.count - 1) * self.step


def _slice_selection(s, size):
    start, stop, step = s.indices(size)
    count = len(range(start, stop, step))
    if count == 0:
        return _AxisSelection(0, 0, 1)  # an empty window: no points to index
    if step > 0:
        return _AxisSelection(start, count, step)
    first = start + (count - 1) * step
    return _AxisSelection(first, count, -step, reversed=True)


def _static_basic_getitem(x, entries):
    """A strided box (slice + rev), its integer axes squeezed and new ones added (as JAX does)."""
    selections, axis = [], 0
    for entry in entries:
        if entry is None:
            continue
        size = x.shape[axis]
        selections.append(_slice_selection(entry, size) if isinstance(entry, slice)
                          else _AxisSelection(entry % size, 1, 1))
        axis += 1
    starts = [s.start for s in selections]
    limits = [s.last() + 1 if s.count else s.start for s in selections]
    box = lax.slice(x, starts, limits, [s.step for s in selections])
    flipped = tuple(i for i, s in enumerate(selections) if s.reversed)
    box = lax.rev(box, flipped) if flipped else box
    indexed = [e for e in entries if e is not None]
    integer_axes = tuple(i for i, e in enumerate(indexed) if not isinstance(e, slice))
    box = lax.squeeze(box, integer_axes) if integer_axes else box
    new_axes = tuple(i for i, e in enumerate(e for e in entries if e is None or isinstance(e, slice)) if e is None)
    return lax.expand_dims(box, new_axes) if new_axes else box


def _normalized(i, size):
    """A (possibly traced) integer index with negative values counted from the end."""
    i = lax.convert_element_type(i, dtypes.int32)
    return lax.select_n(lax.lt(i, lax.full_like(i, 0)), i, lax.add(i, lax.full_like(i, size)))


def _dynamic_scalar_getitem(x, entries):
    """Traced integer scalars: a dynamic_slice of size 1 on their axes, squeezed away."""
    axes = [e for e in entries if e is not None]
    dynamic = [i for i, e in enumerate(axes) if _is_scalar_array(e)]
    starts = [_normalized(as_operand(e), n) if i in dynamic else 0
              for i, (e, n) in enumerate(zip(axes, x.shape))]
    sizes = [1 if i in dynamic else n for i, n in enumerate(x.shape)]
    picked = lax.squeeze(lax.dynamic_slice(x, starts, sizes), tuple(dynamic))
    rest = [e for e in entries if not _is_scalar_array(e)]
    return _static_basic_getitem(picked, rest)


# ---------------------------------------------------------------- the gather description

def _place(values, shape, dims):
    """numpy's broadcast_in_dim: values' axes become axes `dims` of `shape`."""
    view = [1] * len(shape)
    for d, n in zip(dims, values.shape):
        view[d] = n
    return np.broadcast_to(values.reshape(view), shape)


_ADVANCED = "advanced"


class _GatherPlan:
    """x[entries] as gather(reshape(x, expanded_shape), indices, dnums, slice_sizes).

    New axes (None) become size-1 axes of the reshaped operand indexed by a full
    slice, so they separate advanced indices exactly as NumPy says. Unit-step
    slices are gather windows; strided slices and advanced indices are point
    indices (collapsed axes) whose index arrays are batch dimensions of the gather.
    """

    def __init__(self, shape, entries, empty_ellipsis_at=None):
        self.axis_entries, self.expanded_shape = self._expand_new_axes(shape, entries)
        self.empty_ellipsis_at = empty_ellipsis_at
        self.advanced = [i for i, e in enumerate(self.axis_entries) if not isinstance(e, slice)]
        self.advanced_shape = broadcast_shapes(*(np.shape(self.axis_entries[i]) for i in self.advanced))
        self.result = self._result_dims()
        self.batch_shape = tuple(size for kind, size, _ in self.result if kind != "window")
        window_positions = [p for p, (kind, _, _) in enumerate(self.result) if kind == "window"]
        point_axes = tuple(i for i, e in enumerate(self.axis_entries)
                           if not isinstance(e, slice) or self._selection(i).kind() != "window")
        self.slice_sizes = tuple(1 if i in point_axes else self._selection(i).count
                                 for i in range(len(self.axis_entries)))
        self.gather_dnums = GatherDimensionNumbers(
            offset_dims=tuple(window_positions), collapsed_slice_dims=point_axes,
            start_index_map=tuple(range(len(self.axis_entries))))
        self.result_shape = tuple(size for _, size, _ in self.result)

    @staticmethod
    def _expand_new_axes(shape, entries):
        axis_entries, expanded, axis = [], [], 0
        for entry in entries:
            if entry is None:
                axis_entries.append(slice(None))
                expanded.append(1)
            else:
                axis_entries.append(entry)
                expanded.append(shape[axis])
                axis += 1
        return axis_entries, tuple(expanded)

    def _selection(self, axis):
        return _slice_selection(self.axis_entries[axis], self.expanded_shape[axis])

    def _result_dims(self):
        """(kind, size, axis) per result dimension, in NumPy's order."""
        adjacent = not self.advanced or (
            self.advanced == list(range(self.advanced[0], self.advanced[-1] + 1))
            and not self.advanced[0] < (self.empty_ellipsis_at or 0) <= self.advanced[-1])
        advanced_dims = [(_ADVANCED, n, None) for n in self.advanced_shape]
        dims = [] if adjacent else list(advanced_dims)
        for axis, entry in enumerate(self.axis_entries):
            if isinstance(entry, slice):
                selection = self._selection(axis)
                dims.append((selection.kind(), selection.count, axis))
            elif adjacent and axis == self.advanced[0]:
                dims.extend(advanced_dims)
        return dims

    def indices(self):
        """The start index of every axis, broadcast over the gather's batch shape.

        Static parts are computed with numpy, so a static index is one constant
        and only traced index arrays add operations to a traced program.
        """
        batch_positions = [p for p, (kind, _, _) in enumerate(self.result) if kind != "window"]
        columns = [self._column(axis, batch_positions) for axis in range(len(self.axis_entries))]
        if all(isinstance(c, np.ndarray) for c in columns):
            return np.stack(columns, -1) if columns else np.zeros(self.batch_shape + (0,), np.int32)
        columns = [lax.reshape(as_operand(c), self.batch_shape + (1,)) for c in columns]
        return lax.concatenate(columns, len(self.batch_shape))

    def _column(self, axis, batch_positions):
        entry, size = self.axis_entries[axis], self.expanded_shape[axis]
        if isinstance(entry, slice):
            return self._slice_column(axis, batch_positions)
        advanced_dims = tuple(batch_positions.index(p) for p, (kind, _, _) in enumerate(self.result)
                              if kind == _ADVANCED)
        value = entry if isinstance(entry, int) else _concrete(entry)
        if value is not None:
            value = np.asarray(value, np.int32)
            value = np.broadcast_to(np.where(value < 0, value + size, value), self.advanced_shape)
            return _place(value, self.batch_shape, advanced_dims)
        column = broadcast_to(_normalized(entry, size), self.advanced_shape)
        return lax.broadcast_in_dim(column, self.batch_shape, advanced_dims)

    def _slice_column(self, axis, batch_positions):
        selection = self._selection(axis)
        if selection.kind() == "window":
            return np.full(self.batch_shape, selection.start, np.int32)
        position = next(p for p, (kind, _, a) in enumerate(self.result) if a == axis)
        step = -selection.step if selection.reversed else selection.step
        first = selection.last() if selection.reversed else selection.start
        points = (first + step * np.arange(selection.count)).astype(np.int32)
        return _place(points, self.batch_shape, (batch_positions.index(position),))

    def scatter_dnums(self):
        d = self.gather_dnums
        return ScatterDimensionNumbers(d.offset_dims, d.collapsed_slice_dims, d.start_index_map)


def gather_index(x, index, mode="clip", fill_value=None):
    return _gather(x, *expand_index(index, x.shape, check_bounds=False), mode=mode, fill_value=fill_value)


def _gather(x, entries, empty_ellipsis_at, mode="clip", fill_value=None):
    plan = _GatherPlan(x.shape, entries, empty_ellipsis_at)
    operand = lax.reshape(x, plan.expanded_shape)
    return lax.gather(operand, plan.indices(), plan.gather_dnums, plan.slice_sizes, mode=mode,
                      fill_value=fill_value)


def getitem(x, index):
    scalar_mask = _scalar_boolean_mask(index)
    if scalar_mask is not None:
        # numpy's x[True] is x[None] and x[False] is x[None][:0].
        return lax.slice_in_dim(lax.expand_dims(x, (0,)), 0, int(scalar_mask), axis=0)
    entries, empty_ellipsis_at = expand_index(index, x.shape)
    if all(_is_static_basic(e) for e in entries):
        return _static_basic_getitem(x, entries)
    if all(_is_static_basic(e) or _is_scalar_array(e) for e in entries):
        return _dynamic_scalar_getitem(x, entries)
    return _gather(x, entries, empty_ellipsis_at)


def _scalar_boolean_mask(index):
    """The value of a lone concrete 0-d boolean index (x[True], x[mask0d]), else None."""
    entry = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if isinstance(entry, bool) or (hasattr(entry, "dtype") and dtypes.is_bool(entry.dtype)
                                   and np.ndim(entry) == 0):
        value = _concrete(entry)
        return None if value is None else bool(value)
    return None


# ---------------------------------------------------------------- .at[...] updates

def _scatter_update(x, index, values, scatter_fn, mode=None):
    plan = _GatherPlan(x.shape, *expand_index(index, x.shape, check_bounds=False))
    (values,) = promote_and_broadcast("update", values)
    values = broadcast_to(lax.convert_element_type(values, x.dtype), plan.result_shape)
    operand = lax.reshape(x, plan.expanded_shape)
    out = scatter_fn(operand, plan.indices(), values, plan.scatter_dnums(), mode=mode)
    return lax.reshape(out, x.shape)


class _IndexedRef:
    """`x.at[index]`: methods return updated copies of x (out-of-bounds updates are dropped)."""

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, mode=None, fill_value=None):
        if mode is None and fill_value is None:
            return getitem(self.array, self.index)
        return gather_index(self.array, self.index, mode, fill_value)

    def set(self, values, mode=None):
        return _scatter_update(self.array, self.index, values, lax.scatter, mode)

    def add(self, values, mode=None):
        return _scatter_update(self.array, self.index, values, lax.scatter_add, mode)

    def multiply(self, values, mode=None):
        return _scatter_update(self.array, self.index, values, lax.scatter_mul, mode)

    mul = multiply

    def divide(self, values, mode=None):
        ones = lax.full_like(self.array, 1)
        return true_divide(self.array, _scatter_update(ones, self.index, values, lax.scatter_mul, mode))

    def min(self, values, mode=None):
        return _scatter_update(self.array, self.index, values, lax.scatter_min, mode)

    def max(self, values, mode=None):
        return _scatter_update(self.array, self.index, values, lax.scatter_max, mode)


class IndexUpdateHelper:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexedRef(self.array, index)


# ---------------------------------------------------------------- take

def _index_operand(name, indices):
    indices = as_operand(np.asarray(indices) if isinstance(indices, list) else indices)
    if not dtypes.is_int(indices.dtype):
        raise TypeError(f"{name}: indices must be integers, got dtype {indices.dtype}")
    return indices


def _wrapped(indices, size, mode):
    """mode="wrap" counts indices modulo the axis size; other modes pass them on."""
    if mode != "wrap":
        return indices, mode
    size = lax.full_like(indices, size)
    return lax.rem(lax.add(lax.rem(indices, size), size), size), "clip"


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None):
    """Entries of `a` at integer `indices` along `axis` (out-of-bounds: fill_value, as JAX).
    unique_indices and indices_are_sorted are promises JAX's compiler may use; they change
    nothing here."""
    from jaxlite.numpy.reductions import check_no_out
    check_no_out("take", out)
    (a,) = promote_and_broadcast("take", a)
    indices = _index_operand("take", indices)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    axis = canonicalize_axis(axis, a.ndim)
    if mode == "promise_in_bounds":
        raise ValueError("Invalid mode 'promise_in_bounds' for np.take")
    if mode == "clip":      # clamped as they are: a negative index takes entry 0, as in JAX
        indices = lax.max(indices, lax.full_like(indices, 0))
    indices, mode = _wrapped(indices, a.shape[axis], mode)
    return gather_index(a, (slice(None),) * axis + (indices,), mode, fill_value)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """arr's entries at `indices` along `axis`, pairing all other axes (broadcast)."""
    (arr,) = promote_and_broadcast("take_along_axis", arr)
    indices = _index_operand("take_along_axis", indices)
    if axis is None:
        arr, indices, axis = lax.reshape(arr, (arr.size,)), lax.reshape(indices, (indices.size,)), 0
    if indices.ndim != arr.ndim:
        raise ValueError(f"take_along_axis: indices of rank {indices.ndim} must match the rank "
                         f"of arr {arr.ndim}")
    axis = canonicalize_axis(axis, arr.ndim)
    shape = broadcast_shapes(_except(arr.shape, axis), _except(indices.shape, axis))
    arr = broadcast_to(arr, shape[:axis] + (arr.shape[axis],) + shape[axis:])
    indices = broadcast_to(indices, shape[:axis] + (indices.shape[axis],) + shape[axis:])
    if mode == "wrap":      # take's mode; JAX's take_along_axis passes it to gather, which refuses it
        raise ValueError('Unknown gather mode "wrap"')
    return lax_take_along_axis(arr, _normalized(indices, arr.shape[axis]), axis, mode=mode, fill_value=fill_value)


def _except(shape, axis):
    return shape[:axis] + shape[axis + 1:]


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """arr with `values` written at `indices` along `axis` (the inverse of take_along_axis).

    jaxlite arrays are immutable: pass inplace=False, as in JAX.
    """
    if inplace:
        raise ValueError("jaxlite arrays are immutable: call put_along_axis with inplace=False")
    (arr,) = promote_and_broadcast("put_along_axis", arr)
    indices = _index_operand("put_along_axis", indices)
    if axis is None:
        return lax.reshape(put_along_axis(lax.reshape(arr, (arr.size,)), lax.reshape(indices, (indices.size,)),
                                          values, 0, inplace=False, mode=mode), arr.shape)
    axis = canonicalize_axis(axis, arr.ndim)
    grid = tuple(indices if d == axis else
                 np.arange(arr.shape[d]).reshape((-1,) + (1,) * (arr.ndim - 1 - d))
                 for d in range(arr.ndim))
    return arr.at[grid].set(values, mode=mode)


def ix_(*args):
    """Open-mesh index arrays: the i-th 1-d argument shaped to vary along axis i."""
    out = []
    for i, a in enumerate(args):
        (a,) = promote_and_broadcast("ix_", a)
        if a.ndim != 1:
            raise ValueError(f"ix_: arguments must be 1-dimensional, got shape {a.shape} at position {i}")
        out.append(lax.reshape(a, (1,) * i + (a.size,) + (1,) * (len(args) - i - 1)))
    return tuple(out)


def unravel_index(indices, shape):
    """Flat indices as a tuple of coordinate arrays; out-of-range indices are clamped, as in JAX."""
    indices = _index_operand("unravel_index", indices)
    shape = tuple(int(n) for n in shape)
    total = int(np.prod(shape))
    clipped = lax.clamp(lax.full_like(indices, -total), indices, lax.full_like(indices, total - 1))
    flat = _normalized(clipped, total)
    coordinates, stride = [], total
    for n in shape:
        stride //= n
        coordinates.append(lax.rem(lax.div(flat, lax.full_like(flat, stride)), lax.full_like(flat, n)))
    return tuple(coordinates)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Coordinate arrays to flat indices; mode "clip" or "wrap" handles out-of-range ones."""
    if order != "C":
        raise NotImplementedError("ravel_multi_index supports order='C' only")
    dims = tuple(int(n) for n in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} coordinate arrays for {len(dims)} dims")
    coordinates = [_index_operand("ravel_multi_index", i) for i in multi_index]
    coordinates = promote_and_broadcast("ravel_multi_index", *coordinates)
    # As JAX: the flat indices are of the coordinates' (promoted) integer dtype.
    flat, stride = lax.full(np.shape(coordinates[0]), 0, coordinates[0].dtype), int(np.prod(dims))
    for i, n in zip(coordinates, dims):
        stride //= n
        in_range = lax.convert_element_type(_coordinate_in_range(i, n, mode), flat.dtype)
        flat = lax.add(flat, lax.mul(in_range, lax.full_like(flat, stride)))
    return flat


def _coordinate_in_range(i, n, mode):
    i = lax.convert_element_type(i, dtypes.int32)
    if mode == "clip":
        return lax.clamp(lax.full_like(i, 0), i, lax.full_like(i, n - 1))
    if mode == "wrap":
        size = lax.full_like(i, n)
        return lax.rem(lax.add(lax.rem(i, size), size), size)
    if mode != "raise":
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
    value = _concrete(i)
    if value is None:
        raise concretization_error(i, "concrete coordinates (mode='raise' checks them; "
                                      "use mode='clip' or mode='wrap' under a transformation)")
    if np.any((value < 0) | (value >= n)):
        raise ValueError("invalid entry in coordinates array")
    return i
