"""NumPy-style indexing with static indices, and the functional `.at[...]` updates.

A basic index (integers, slices with any step, None, Ellipsis) selects a strided
box of the array. Reading it is a slice (plus rev for negative steps); an
update pads the new values out to the array's shape and selects them in, so
updates are built from primitives every transformation already handles.
"""
import operator

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.trace import Tracer
from jaxlite.numpy.util import broadcast_to, promote_and_broadcast


class _AxisSelection:
    """Which elements of one axis an index keeps: start, count and a positive step."""

    __slots__ = ("start", "count", "step", "reversed", "squeezed")

    def __init__(self, start, count, step, reversed=False, squeezed=False):
        self.start, self.count, self.step = start, count, step
        self.reversed, self.squeezed = reversed, squeezed

    def last(self):
        return self.start + (self.count - 1) * self.step


def _static_int(i, axis, size):
    if isinstance(i, Tracer) and i.to_concrete_value() is None:
        raise IndexError("indexing with a traced integer needs lax.dynamic_slice or "
                         "jnp.take (array indices are not supported here yet)")
    i = operator.index(i)
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
    return i % size


def _slice_selection(s, size):
    start, stop, step = s.indices(size)
    count = len(range(start, stop, step))
    if step > 0 or count == 0:
        return _AxisSelection(start if count else 0, count, abs(step))
    first = start + (count - 1) * step
    return _AxisSelection(first, count, -step, reversed=True)


def _is_basic(entry):
    return entry is None or entry is Ellipsis or isinstance(entry, slice) or _is_int_like(entry)


def _is_int_like(entry):
    if isinstance(entry, (bool, np.bool_)):
        return False
    if isinstance(entry, (int, np.integer)):
        return True
    return hasattr(entry, "shape") and entry.shape == () and dtypes.is_int(entry.dtype)


def parse_index(index, shape):
    """Per-axis selections plus the result positions of new (None) axes."""
    index = index if isinstance(index, tuple) else (index,)
    for entry in index:
        if not _is_basic(entry):
            raise TypeError(f"unsupported index {entry!r}: only integers, slices, None and "
                            "Ellipsis can index arrays here")
    if sum(e is Ellipsis for e in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(e is not None and e is not Ellipsis for e in index)
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {used} were indexed")
    expanded = []
    for entry in index:
        expanded.extend([slice(None)] * (len(shape) - used) if entry is Ellipsis else [entry])
    expanded.extend([slice(None)] * (len(shape) - sum(e is not None for e in expanded)))
    selections, new_axes, axis, out_pos = [], [], 0, 0
    for entry in expanded:
        if entry is None:
            new_axes.append(out_pos)
            out_pos += 1
        elif isinstance(entry, slice):
            selections.append(_slice_selection(entry, shape[axis]))
            axis, out_pos = axis + 1, out_pos + 1
        else:
            i = _static_int(entry, axis, shape[axis])
            selections.append(_AxisSelection(i, 1, 1, squeezed=True))
            axis += 1
    return selections, new_axes


def _box(x, selections):
    """The strided box as an array with one axis per input axis, in index order."""
    starts = [s.start for s in selections]
    limits = [s.last() + 1 if s.count else s.start for s in selections]
    box = lax.slice(x, starts, limits, [s.step for s in selections])
    flipped = tuple(i for i, s in enumerate(selections) if s.reversed)
    return lax.rev(box, flipped) if flipped else box


def _result_shape(selections, new_axes):
    shape = [s.count for s in selections if not s.squeezed]
    for pos in new_axes:
        shape.insert(pos, 1)
    return tuple(shape)


def getitem(x, index):
    selections, new_axes = parse_index(index, x.shape)
    box = _box(x, selections)
    return lax.reshape(box, _result_shape(selections, new_axes))


def _embed(values, selections, shape, fill):
    """Place values (the box's shape) into an array of `shape` filled with `fill`."""
    flipped = tuple(i for i, s in enumerate(selections) if s.reversed)
    values = lax.rev(values, flipped) if flipped else values
    config = [(s.start, size - s.last() - 1, s.step - 1) for s, size in zip(selections, shape)]
    return lax.pad(values, lax.convert_element_type(fill, values.dtype), config)


def _updates_in_box(x, index, values):
    selections, new_axes = parse_index(index, x.shape)
    (values,) = promote_and_broadcast("update", values)
    values = lax.convert_element_type(values, x.dtype)
    values = broadcast_to(values, _result_shape(selections, new_axes))
    return selections, lax.reshape(values, tuple(s.count for s in selections))


def _update(x, index, values, combine, identity):
    """x with `combine(x, v)` applied inside the indexed box and x kept elsewhere."""
    selections, values = _updates_in_box(x, index, values)
    if any(s.count == 0 for s in selections):
        return x
    inside = _embed(lax.full(values.shape, True, dtypes.bool_), selections, x.shape, False)
    spread = _embed(values, selections, x.shape, identity)
    return lax.select_n(inside, x, combine(x, spread))


class _IndexedRef:
    """`x.at[index]`: methods return updated copies of x."""

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self):
        return getitem(self.array, self.index)

    def set(self, values):
        return _update(self.array, self.index, values, lambda x, v: v, 0)

    def add(self, values):
        return _update(self.array, self.index, values, lax.add, 0)

    def multiply(self, values):
        return _update(self.array, self.index, values, lax.mul, 1)

    mul = multiply

    def divide(self, values):
        return _update(self.array, self.index, values, lax.div, 1)

    def min(self, values):
        return _update(self.array, self.index, values, lax.min, 0)

    def max(self, values):
        return _update(self.array, self.index, values, lax.max, 0)


class IndexUpdateHelper:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexedRef(self.array, index)
