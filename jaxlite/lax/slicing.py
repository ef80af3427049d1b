"""Indexing primitives: dynamic_slice, dynamic_update_slice, gather and the scatter family.

gather and scatter take JAX's dimension numbers (offset/collapsed/start_index_map
and their batching dims) with one simplification: the index vector is always the
last axis of `indices`. Both primitives share one numpy helper that turns the
start indices into one integer array per operand axis ("point indices" over
batch dims + window dims), so that gather is `operand[points]` and a scatter is
an unbuffered `np.<op>.at(operand, points, updates)`.

Out-of-bounds handling follows XLA/JAX (`GatherScatterMode`):
  CLIP               start indices are clamped so the whole window is in bounds;
  FILL_OR_DROP       a window that is not fully in bounds reads `fill_value`
                     (gather) or is skipped (scatter);
  PROMISE_IN_BOUNDS  the caller guarantees bounds; we clamp, as XLA may.

dynamic_slice and dynamic_update_slice are separate primitives (a scalar start
per axis, clamped) because they are common and cheap; under vmap, where their
starts may differ per batch element, they become a gather or scatter.
"""
import enum
from typing import NamedTuple

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray, canonicalize_axis
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import INTEGER, as_operand, check_dtype, shape_tuple
from jaxlite.lax.elementwise import (add, clamp, convert_element_type, div, eq, full_like, lt, mul,
                                     ne, select_n)
from jaxlite.lax.shapes import concatenate, full, iota, pad, reshape, rev, slice_in_dim
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching
from jaxlite.transforms import physical
from jaxlite.transforms.batching import bdim_at_front, move_dim


class GatherScatterMode(enum.Enum):
    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @staticmethod
    def from_any(mode):
        """None and "drop" mean FILL_OR_DROP, as in JAX."""
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode is None or mode == "drop":
            return GatherScatterMode.FILL_OR_DROP
        try:
            return GatherScatterMode(mode)
        except ValueError:
            raise ValueError(f"unknown gather/scatter mode {mode!r}; expected 'clip', 'fill', "
                             "'drop' or 'promise_in_bounds'") from None


class GatherDimensionNumbers(NamedTuple):
    """How a gather maps indices to operand windows (as JAX, index vector last).

    offset_dims: output axes holding the window axes that are kept;
    collapsed_slice_dims: operand axes of window size 1 dropped from the output;
    start_index_map: the operand axis each entry of an index vector starts;
    operand_batching_dims / start_indices_batching_dims: paired axes indexed in lockstep.
    """
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """The scatter counterpart of GatherDimensionNumbers, in JAX's names."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def _as_tuples(dnums):
    return type(dnums)(*(tuple(int(d) for d in field) for field in dnums))


def _gather_to_scatter_dnums(d):
    return ScatterDimensionNumbers(d.offset_dims, d.collapsed_slice_dims, d.start_index_map,
                                   d.operand_batching_dims, d.start_indices_batching_dims)


def _scatter_to_gather_dnums(d):
    return GatherDimensionNumbers(d.update_window_dims, d.inserted_window_dims,
                                  d.scatter_dims_to_operand_dims, d.operand_batching_dims,
                                  d.scatter_indices_batching_dims)


def default_fill_value(dtype):
    """What an out-of-bounds gather reads by default: NaN, the most negative int, ...
    (a typed key: that of its words)."""
    if isinstance(dtype, dtypes.ExtendedDType):
        dtype = dtype.physical_dtype
    if dtypes.is_inexact(dtype):
        return float("nan")
    if dtypes.is_complex(dtype):
        return complex(float("nan"), 0.0)     # as JAX: a NaN real part
    if dtypes.is_bool(dtype):
        return True
    info = dtypes.iinfo(dtype)
    return int(info.max if dtypes.is_unsigned(dtype) else info.min)


# ---------------------------------------------------------------- shared numpy core

def _window_axes(ndim, dropped):
    return [d for d in range(ndim) if d not in dropped]


def _point_indices(operand_shape, indices, slice_sizes, dnums):
    """One index array per operand axis, each of shape batch_shape + window_shape.

    Also returns, per batch element, whether its window was fully in bounds
    before the starts were clamped into range.
    """
    batch_shape = indices.shape[:-1]
    dropped = set(dnums.collapsed_slice_dims) | set(dnums.operand_batching_dims)
    windows = _window_axes(len(operand_shape), dropped)
    starts = [np.zeros(batch_shape, np.int64) for _ in operand_shape]
    for k, axis in enumerate(dnums.start_index_map):
        starts[axis] = indices[..., k].astype(np.int64)
    for axis, index_axis in zip(dnums.operand_batching_dims, dnums.start_indices_batching_dims):
        starts[axis] = _iota_along(batch_shape, index_axis)
    window_shape = _window_shape_of(windows, slice_sizes)
    offsets_shape = (1,) * len(batch_shape) + window_shape
    in_bounds = np.ones(batch_shape, bool)
    points = []
    for axis, (start, size, window) in enumerate(zip(starts, operand_shape, slice_sizes)):
        in_bounds &= (start >= 0) & (start <= size - window)
        start = np.clip(start, 0, size - window).reshape(batch_shape + (1,) * len(windows))
        if axis in windows:
            start = start + _iota_along(offsets_shape, len(batch_shape) + windows.index(axis))
        points.append(start)
    return tuple(np.broadcast_to(p, batch_shape + window_shape) for p in points), in_bounds


def _window_shape_of(windows, slice_sizes):
    return tuple(slice_sizes[d] for d in windows)


def _iota_along(shape, axis):
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.broadcast_to(np.arange(shape[axis]).reshape(view), shape)


def _final_layout(rank, window_positions):
    """The permutation from (batch dims, window dims) to an output that puts the
    window dims at `window_positions` and the batch dims, in order, elsewhere."""
    batch_positions = [p for p in range(rank) if p not in window_positions]
    canonical_of = {}
    for i, p in enumerate(batch_positions):
        canonical_of[p] = i
    for i, p in enumerate(window_positions):
        canonical_of[p] = len(batch_positions) + i
    return [canonical_of[p] for p in range(rank)]


def _mask_shape(in_bounds, n_windows):
    return in_bounds.reshape(in_bounds.shape + (1,) * n_windows)


# ---------------------------------------------------------------- gather

def _gather_impl(operand, indices, dimension_numbers, slice_sizes, mode, fill_value):
    points, in_bounds = _point_indices(operand.shape, indices, slice_sizes, dimension_numbers)
    n_windows = len(dimension_numbers.offset_dims)
    if operand.size == 0:
        out = np.zeros(points[0].shape if points else (), operand.dtype)
    else:
        out = operand[points] if points else np.broadcast_to(operand, in_bounds.shape)
    if mode is GatherScatterMode.FILL_OR_DROP:
        out = np.where(_mask_shape(in_bounds, n_windows), out, np.asarray(fill_value, operand.dtype))
    return np.transpose(out, _final_layout(out.ndim, dimension_numbers.offset_dims))


def _check_index_dims(name, operand, indices, index_map, operand_batching, indices_batching, dropped):
    check_dtype(name, indices, INTEGER, "indices")
    if indices.ndim < 1 or indices.shape[-1] != len(index_map):
        raise TypeError(f"{name}: indices of shape {indices.shape} must end in an index-vector "
                        f"axis of size {len(index_map)} (len of start_index_map {index_map})")
    axes = list(index_map) + list(operand_batching) + list(dropped)
    if any(not 0 <= a < operand.ndim for a in axes):
        raise TypeError(f"{name}: dimension numbers name axes outside an operand of rank {operand.ndim}")
    if len(set(index_map)) != len(index_map) or set(operand_batching) & set(dropped):
        raise TypeError(f"{name}: start_index_map {index_map} repeats an axis, or batching "
                        f"dims {operand_batching} overlap the collapsed dims {dropped}")
    if len(operand_batching) != len(indices_batching) or any(
            operand.shape[o] != indices.shape[i] for o, i in zip(operand_batching, indices_batching)):
        raise TypeError(f"{name}: operand batching dims {operand_batching} and indices batching "
                        f"dims {indices_batching} must pair up axes of equal size")


def _gather_aval(operand, indices, dimension_numbers, slice_sizes, mode, fill_value):
    d = dimension_numbers
    _check_index_dims("gather", operand, indices, d.start_index_map, d.operand_batching_dims,
                      d.start_indices_batching_dims, d.collapsed_slice_dims)
    if len(slice_sizes) != operand.ndim or any(
            not 0 <= s <= n for s, n in zip(slice_sizes, operand.shape)):
        raise TypeError(f"gather: slice_sizes {slice_sizes} must give a size between 0 and the "
                        f"axis size for each axis of the operand shape {operand.shape}")
    dropped = set(d.collapsed_slice_dims) | set(d.operand_batching_dims)
    if any(slice_sizes[a] > 1 for a in dropped):
        raise TypeError(f"gather: collapsed and batching axes {sorted(dropped)} need slice size "
                        f"at most 1, got slice_sizes {slice_sizes}")
    window_shape = _window_shape_of(_window_axes(operand.ndim, dropped), slice_sizes)
    batch_shape = indices.shape[:-1]
    rank = len(batch_shape) + len(window_shape)
    if len(d.offset_dims) != len(window_shape) or list(d.offset_dims) != sorted(set(d.offset_dims)) \
            or any(not 0 <= p < rank for p in d.offset_dims):
        raise TypeError(f"gather: offset_dims {d.offset_dims} must be {len(window_shape)} sorted "
                        f"axes of the rank-{rank} output")
    shape = np.array(batch_shape + window_shape, int)[_final_layout(rank, d.offset_dims)]
    return ShapedArray(tuple(shape.tolist()), operand.dtype, operand.weak_type)


gather_p = Primitive("gather")
fusion_rules.fused(gather_p, fusion_rules.gather_rule)
gather_p.def_impl(_gather_impl)
gather_p.def_abstract_eval(_gather_aval)
physical.structural(gather_p)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, mode=None, fill_value=None,
           indices_are_sorted=False, unique_indices=False):
    """Windows of `operand` starting at `start_indices` (see GatherDimensionNumbers).

    indices_are_sorted and unique_indices are accepted for JAX compatibility; the
    numpy implementation gains nothing from them, so they are not recorded.
    """
    operand, start_indices = as_operand(operand), as_operand(start_indices)
    mode = GatherScatterMode.from_any(mode)
    if mode is GatherScatterMode.FILL_OR_DROP and fill_value is None:
        fill_value = default_fill_value(operand.dtype)
    elif mode is not GatherScatterMode.FILL_OR_DROP:
        fill_value = None
    return gather_p.bind(operand, start_indices, dimension_numbers=_as_tuples(dimension_numbers),
                         slice_sizes=shape_tuple(slice_sizes, "slice_sizes"), mode=mode,
                         fill_value=fill_value)


def _gather_jvp(primals, tangents, dimension_numbers, slice_sizes, mode, fill_value):
    (operand, indices), (t, _) = primals, tangents
    params = dict(dimension_numbers=dimension_numbers, slice_sizes=slice_sizes, mode=mode)
    out = gather_p.bind(operand, indices, fill_value=fill_value, **params)
    if ad.is_zero(t):
        return out, ad.Zero(ad.tangent_aval(out.aval))
    tangent_fill = 0 if mode is GatherScatterMode.FILL_OR_DROP else None
    return out, gather_p.bind(t, indices, fill_value=tangent_fill, **params)


def _gather_transpose(ct, operand, indices, dimension_numbers, slice_sizes, mode, fill_value):
    if ad.is_zero(ct):
        return [None, None]
    zeros = full_like(ct, 0, shape=operand.aval.shape)
    return [scatter_add(zeros, indices, ct, _gather_to_scatter_dnums(dimension_numbers), mode=mode),
            None]


def _shift(axes, by=1):
    return tuple(a + by for a in axes)


def _gather_batch(args, dims, dimension_numbers, slice_sizes, mode, fill_value):
    """The batch axis becomes a window axis, a batch axis of the indices, or both
    in lockstep as a pair of batching dims; it lands in front of the output."""
    (operand, indices), (d_operand, d_indices) = args, dims
    d = dimension_numbers
    params = dict(mode=mode, fill_value=fill_value)
    if d_indices is None:
        operand = move_dim(operand, d_operand, 0)
        dnums = GatherDimensionNumbers((0,) + _shift(d.offset_dims), _shift(d.collapsed_slice_dims),
                                       _shift(d.start_index_map), _shift(d.operand_batching_dims),
                                       d.start_indices_batching_dims)
        sizes = (operand.shape[0],) + slice_sizes
        return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=sizes, **params), 0
    indices = move_dim(indices, d_indices, 0)
    if d_operand is None:
        dnums = GatherDimensionNumbers(_shift(d.offset_dims), d.collapsed_slice_dims,
                                       d.start_index_map, d.operand_batching_dims,
                                       _shift(d.start_indices_batching_dims))
        return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                             **params), 0
    operand = move_dim(operand, d_operand, 0)
    dnums = GatherDimensionNumbers(_shift(d.offset_dims), _shift(d.collapsed_slice_dims),
                                   _shift(d.start_index_map), (0,) + _shift(d.operand_batching_dims),
                                   (0,) + _shift(d.start_indices_batching_dims))
    return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=(1,) + slice_sizes,
                         **params), 0


ad.jvp_rules[gather_p] = _gather_jvp
ad.transpose_rules[gather_p] = _gather_transpose
batching.batch_rules[gather_p] = _gather_batch


# ---------------------------------------------------------------- scatter family

def scatter_slice_sizes(operand_shape, updates_shape, dnums):
    """The window size of a scatter in each operand axis (1 for inserted/batching axes)."""
    dropped = set(dnums.inserted_window_dims) | set(dnums.operand_batching_dims)
    window_sizes = iter(updates_shape[p] for p in dnums.update_window_dims)
    return tuple(1 if axis in dropped else next(window_sizes, 0) for axis in range(len(operand_shape)))


def _scatter_impl(combine, operand, indices, updates, dimension_numbers, mode):
    gather_dnums = _scatter_to_gather_dnums(dimension_numbers)
    sizes = scatter_slice_sizes(operand.shape, updates.shape, dimension_numbers)
    points, in_bounds = _point_indices(operand.shape, indices, sizes, gather_dnums)
    windows = dimension_numbers.update_window_dims
    batch_positions = [p for p in range(updates.ndim) if p not in windows]
    updates = np.transpose(updates, batch_positions + list(windows))
    out = np.array(operand)
    if operand.ndim == 0:
        # A scalar is written through a unit axis, so that masks and repeats work as for arrays.
        out, points = out.reshape(1), (np.zeros(updates.shape, np.intp),)
    if mode is GatherScatterMode.FILL_OR_DROP:
        keep = np.broadcast_to(_mask_shape(in_bounds, len(windows)), updates.shape)
        points, updates = tuple(p[keep] for p in points), updates[keep]
    combine(out, points, updates)
    return out.reshape(operand.shape)


def _scatter_aval(operand, indices, updates, dimension_numbers, mode):
    d = dimension_numbers
    _check_index_dims("scatter", operand, indices, d.scatter_dims_to_operand_dims,
                      d.operand_batching_dims, d.scatter_indices_batching_dims, d.inserted_window_dims)
    if updates.dtype != operand.dtype:
        raise TypeError(f"scatter: updates dtype {updates.dtype} must equal the operand dtype "
                        f"{operand.dtype}")
    windows = d.update_window_dims
    batch_shape = tuple(n for p, n in enumerate(updates.shape) if p not in windows)
    n_windows = operand.ndim - len(set(d.inserted_window_dims) | set(d.operand_batching_dims))
    sizes = scatter_slice_sizes(operand.shape, updates.shape, d)
    if batch_shape != indices.shape[:-1] or len(windows) != n_windows or any(
            s > n for s, n in zip(sizes, operand.shape)):
        raise TypeError(f"scatter: updates of shape {updates.shape} with update_window_dims "
                        f"{windows} do not fit indices of shape {indices.shape} and an operand "
                        f"of shape {operand.shape}")
    return operand


def _scatter_primitive(name, combine):
    primitive = Primitive(name)
    primitive.def_impl(lambda operand, indices, updates, **params:
                       _scatter_impl(combine, operand, indices, updates, **params))
    primitive.def_abstract_eval(_scatter_aval)
    batching.batch_rules[primitive] = _scatter_batch_rule(primitive)

    def bind(operand, scatter_indices, updates, dimension_numbers, *, mode=None,
             indices_are_sorted=False, unique_indices=False):
        operand, scatter_indices, updates = map(as_operand, (operand, scatter_indices, updates))
        updates = convert_element_type(updates, operand.dtype)
        return primitive.bind(operand, scatter_indices, updates,
                              dimension_numbers=_as_tuples(dimension_numbers),
                              mode=GatherScatterMode.from_any(mode))
    bind.__name__ = name
    return primitive, bind


def _scatter_batch_rule(primitive):
    """Give all three operands a leading batch axis and index it in lockstep."""
    def rule(args, dims, dimension_numbers, mode):
        size = batching.batch_size(args, dims)
        operand, indices, updates = (bdim_at_front(x, d, size) for x, d in zip(args, dims))
        d = dimension_numbers
        dnums = ScatterDimensionNumbers(
            _shift(d.update_window_dims), _shift(d.inserted_window_dims),
            _shift(d.scatter_dims_to_operand_dims), (0,) + _shift(d.operand_batching_dims),
            (0,) + _shift(d.scatter_indices_batching_dims))
        return primitive.bind(operand, indices, updates, dimension_numbers=dnums, mode=mode), 0
    return rule


def _set_at(out, points, updates):
    out[points] = updates


scatter_p, scatter = _scatter_primitive("scatter", _set_at)
fusion_rules.scatter(scatter_p, None)
physical.structural(scatter_p)   # keys.at[i].set(other_keys)
scatter_add_p, scatter_add = _scatter_primitive("scatter-add", np.add.at)
fusion_rules.scatter(scatter_add_p, "add")
scatter_mul_p, scatter_mul = _scatter_primitive("scatter-mul", np.multiply.at)
fusion_rules.scatter(scatter_mul_p, "mul")
scatter_min_p, scatter_min = _scatter_primitive("scatter-min", np.minimum.at)
fusion_rules.scatter(scatter_min_p, "min")
scatter_max_p, scatter_max = _scatter_primitive("scatter-max", np.maximum.at)
fusion_rules.scatter(scatter_max_p, "max")


def _gather_updates(ct, indices, updates_aval, dimension_numbers, mode):
    """The part of ct (operand-shaped) each update window lands on; dropped windows read 0."""
    sizes = scatter_slice_sizes(ct.shape, updates_aval.shape, dimension_numbers)
    fill = 0 if mode is GatherScatterMode.FILL_OR_DROP else None
    return gather(ct, indices, _scatter_to_gather_dnums(dimension_numbers), sizes, mode=mode,
                  fill_value=fill)


def _scatter_add_jvp(primals, tangents, dimension_numbers, mode):
    """scatter-add is linear in (operand, updates) together."""
    (operand, indices, updates), (t_operand, _, t_updates) = primals, tangents
    params = dict(dimension_numbers=dimension_numbers, mode=mode)
    out = scatter_add_p.bind(operand, indices, updates, **params)
    return out, scatter_add_p.bind(ad.instantiate(t_operand), indices, ad.instantiate(t_updates),
                                   **params)


def _scatter_add_transpose(ct, operand, indices, updates, dimension_numbers, mode):
    if ad.is_zero(ct):
        return [None, None, None]
    operand_ct = ct if ad.is_undefined(operand) else None
    updates_ct = None
    if ad.is_undefined(updates):
        updates_ct = _gather_updates(ct, indices, updates.aval, dimension_numbers, mode)
    return [operand_ct, None, updates_ct]


ad.jvp_rules[scatter_add_p] = _scatter_add_jvp
ad.transpose_rules[scatter_add_p] = _scatter_add_transpose


def _numbered(shape):
    """1, 2, ... over `shape` in row-major order, so that 0 is free to mean "none"."""
    size = int(np.prod(shape))
    return reshape(add(iota(dtypes.int32, size), full((size,), 1, dtypes.int32)), shape)


def _scatter_winners(operand_shape, indices, updates_aval, dimension_numbers, mode):
    """Which operand entries a scatter overwrites, and which update entries survive.

    With repeated indices only one write survives (XLA leaves which unspecified):
    scattering a distinct id per update entry the same way, then reading the ids
    back, tells the survivors apart, so derivatives follow the primal exactly.
    """
    ids = _numbered(updates_aval.shape)
    landed = scatter(full(operand_shape, 0, dtypes.int32), indices, ids, dimension_numbers, mode=mode)
    read_back = _gather_updates(landed, indices, updates_aval, dimension_numbers, mode)
    return ne(landed, full(operand_shape, 0, dtypes.int32)), eq(read_back, ids)


def _scatter_jvp(primals, tangents, dimension_numbers, mode):
    (operand, indices, updates), (t_operand, _, t_updates) = primals, tangents
    params = dict(dimension_numbers=dimension_numbers, mode=mode)
    out = scatter_p.bind(operand, indices, updates, **params)
    overwritten, survived = _scatter_winners(operand.shape, indices, updates.aval, **params)
    kept = select_n(overwritten, ad.instantiate(t_operand), full_like(operand, 0))
    written = select_n(survived, full_like(updates, 0), ad.instantiate(t_updates))
    return out, scatter_add_p.bind(kept, indices, written, **params)


def _scatter_transpose(ct, operand, indices, updates, dimension_numbers, mode):
    """Overwritten operand entries get no cotangent; only surviving updates get one."""
    if ad.is_zero(ct):
        return [None, None, None]
    params = dict(dimension_numbers=dimension_numbers, mode=mode)
    overwritten, survived = _scatter_winners(ct.shape, indices, updates.aval, **params)
    operand_ct = updates_ct = None
    if ad.is_undefined(operand):
        operand_ct = select_n(overwritten, ct, full_like(ct, 0))
    if ad.is_undefined(updates):
        gathered = _gather_updates(ct, indices, updates.aval, **params)
        updates_ct = select_n(survived, full_like(gathered, 0), gathered)
    return [operand_ct, None, updates_ct]


ad.jvp_rules[scatter_p] = _scatter_jvp
ad.transpose_rules[scatter_p] = _scatter_transpose


def _scatter_mul_jvp(primals, tangents, dimension_numbers, mode):
    """out = operand * (product of the updates landing on each entry), so an update's
    tangent is scaled by the operand and the product of the other updates there."""
    (operand, indices, updates), (t_operand, _, t_updates) = primals, tangents
    params = dict(dimension_numbers=dimension_numbers, mode=mode)
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    t_out = ad.Zero(ad.tangent_aval(out.aval))
    if not ad.is_zero(t_operand):
        t_out = scatter_mul_p.bind(t_operand, indices, updates, **params)
    if not ad.is_zero(t_updates):
        others = _product_of_other_updates(operand.shape, indices, updates, **params)
        spread = scatter_add_p.bind(full_like(operand, 0), indices, mul(t_updates, others), **params)
        t_out = ad.add_tangents(t_out, mul(operand, spread))
    return out, t_out


def _product_of_other_updates(operand_shape, indices, updates, dimension_numbers, mode):
    """Per update entry, the product of the other updates that land where it does.

    The entries are sorted by where they land; within each run of one landing
    place, the products of the entries before and after each one multiply to the
    product of the others. Only multiplications touch the updates (the runs
    depend on the indices alone), so derivatives are right to every order, zeros
    included, where dividing the whole product by each entry is not.
    """
    from jaxlite.lax.sorting import sort_key_val   # sorting builds on this module
    size = updates.aval.size
    if size == 0:
        return updates
    places = _numbered(operand_shape)   # a dropped entry lands on 0: nowhere
    landing = reshape(_gather_updates(places, indices, updates.aval, dimension_numbers, mode), (size,))
    positions = iota(dtypes.int32, size)
    sorted_landing, order = sort_key_val(landing, positions)
    in_order = take_along_axis(reshape(updates, (size,)), order, 0, mode="clip")
    others = mul(_run_products_before(in_order, sorted_landing, reverse=False),
                 _run_products_before(in_order, sorted_landing, reverse=True))
    _, back = sort_key_val(order, positions)
    return reshape(take_along_axis(others, back, 0, mode="clip"), updates.shape)


def _run_products_before(x, runs, reverse):
    """For each entry of x, the product of the earlier entries (later ones if reverse)
    in its run of equal `runs`: a segmented Hillis-Steele scan of the values shifted
    by one."""
    if reverse:
        x, runs = rev(x, (0,)), rev(runs, (0,))
    x = select_n(_same_run(runs, 1), full_like(x, 1), _shifted(x, 1, 1))
    shift = 1
    while shift < x.shape[0]:
        x = select_n(_same_run(runs, shift), x, mul(x, _shifted(x, shift, 1)))
        shift *= 2
    return rev(x, (0,)) if reverse else x


def _shifted(x, shift, fill):
    """x moved `shift` places later along its only axis, `fill` coming in."""
    kept = slice_in_dim(x, 0, max(x.shape[0] - shift, 0), axis=0)
    return pad(kept, convert_element_type(fill, x.dtype), [(min(shift, x.shape[0]), 0, 0)])


def _same_run(runs, shift):
    """Whether the entry `shift` places earlier is in the same run (runs sorted, so contiguous)."""
    return eq(_shifted(runs, shift, -1), runs)


def _scatter_mul_transpose(ct, operand, indices, updates, dimension_numbers, mode):
    if ad.is_undefined(updates):
        raise NotImplementedError("scatter_mul is linear only in its operand; "
                                  "its transpose with respect to updates does not exist")
    if ad.is_zero(ct):
        return [None, None, None]
    return [scatter_mul(ct, indices, updates, dimension_numbers, mode=mode), None, None]


ad.jvp_rules[scatter_mul_p] = _scatter_mul_jvp
ad.transpose_rules[scatter_mul_p] = _scatter_mul_transpose


def _scatter_extremum_jvp(primitive):
    """The tangent of whichever values won, shared equally between ties."""
    def rule(primals, tangents, dimension_numbers, mode):
        (operand, indices, updates), (t_operand, _, t_updates) = primals, tangents
        out = primitive.bind(operand, indices, updates, dimension_numbers=dimension_numbers, mode=mode)
        from_operand = eq(out, operand)
        from_updates = eq(_gather_updates(out, indices, updates.aval, dimension_numbers, mode), updates)

        def landed(weights):
            """Scatter-add update-shaped weights onto an operand of zeros."""
            return scatter_add(full_like(operand, 0), indices, weights, dimension_numbers, mode=mode)

        as_float = lambda mask: convert_element_type(mask, operand.dtype)
        count = add(as_float(from_operand), landed(as_float(from_updates)))
        zero = full_like(operand, 0)
        t_sum = add(select_n(from_operand, zero, ad.instantiate(t_operand)),
                    landed(select_n(from_updates, full_like(updates, 0), ad.instantiate(t_updates))))
        return out, div(t_sum, count)
    ad.jvp_rules[primitive] = rule


_scatter_extremum_jvp(scatter_min_p)
_scatter_extremum_jvp(scatter_max_p)


# ---------------------------------------------------------------- dynamic_slice

def _clamped_starts(shape, starts, sizes):
    return [int(np.clip(s, 0, n - k)) for s, n, k in zip(starts, shape, sizes)]


def _check_starts(name, operand, starts):
    if len(starts) != operand.ndim:
        raise TypeError(f"{name}: got {len(starts)} start indices for an operand of rank {operand.ndim}")
    for position, s in enumerate(starts):
        check_dtype(name, s, INTEGER, f"start index {position}")
        if s.ndim != 0:
            raise TypeError(f"{name}: start indices must be scalars, got shape {s.shape} "
                            f"at position {position}")


def _dynamic_slice_impl(operand, *starts, slice_sizes):
    starts = _clamped_starts(operand.shape, starts, slice_sizes)
    return operand[tuple(slice(s, s + k) for s, k in zip(starts, slice_sizes))]


def _dynamic_slice_aval(operand, *starts, slice_sizes):
    _check_starts("dynamic_slice", operand, starts)
    if len(slice_sizes) != operand.ndim or any(not 0 <= k <= n for k, n in zip(slice_sizes, operand.shape)):
        raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must fit in the operand "
                        f"shape {operand.shape}")
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


dynamic_slice_p = Primitive("dynamic_slice")
fusion_rules.fused(dynamic_slice_p, fusion_rules.dynamic_slice_rule)
dynamic_slice_p.def_impl(_dynamic_slice_impl)
dynamic_slice_p.def_abstract_eval(_dynamic_slice_aval)
physical.structural(dynamic_slice_p)


def _start_operands(starts, operand_shape, window_shape):
    """Start indices as JAX takes them: a negative start counts from the end of its axis; then
    clamped so the window fits (what the primitive does anyway; clamping here as well makes this
    idempotent, so rules that pass starts on through these functions do not shift them twice)."""
    starts = list(starts)
    if len(starts) != len(operand_shape):
        raise TypeError(f"dynamic slicing needs one start index per operand axis ({len(operand_shape)}), "
                        f"got {len(starts)}")
    return [_start_operand(s, n, w) for s, n, w in zip(starts, operand_shape, window_shape)]


def _start_operand(start, size, window):
    if dtypes.is_python_scalar(start):
        start = int(start) + size if start < 0 else int(start)
        return convert_element_type(np.clip(start, 0, max(size - window, 0)), dtypes.int32)
    start = as_operand(start)
    if dtypes.is_unsigned(start.dtype):
        return start
    from_end = add(start, full_like(start, size))
    start = select_n(lt(start, full_like(start, 0)), start, from_end)
    return clamp(full_like(start, 0), start, full_like(start, max(size - window, 0)))


def dynamic_slice(operand, start_indices, slice_sizes):
    """operand[start:start+size] per axis; starts are clamped so the slice is in bounds."""
    operand = as_operand(operand)
    slice_sizes = shape_tuple(slice_sizes, "slice_sizes")
    return dynamic_slice_p.bind(operand, *_start_operands(start_indices, operand.shape, slice_sizes),
                                slice_sizes=slice_sizes)


def _dynamic_slice_jvp(primals, tangents, slice_sizes):
    operand, *starts = primals
    out = dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
    if ad.is_zero(tangents[0]):
        return out, ad.Zero(ad.tangent_aval(out.aval))
    return out, dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
    if ad.is_zero(ct):
        return [None] * (1 + len(starts))
    zeros = full_like(ct, 0, shape=operand.aval.shape)
    return [dynamic_update_slice(zeros, ct, starts)] + [None] * len(starts)


def _stacked_starts(starts, dims, size):
    """The scalar starts as one index vector (batched: one row per batch element)."""
    if all(d is None for d in dims):
        return concatenate([reshape(convert_element_type(s, dtypes.int32), (1,)) for s in starts], 0), None
    columns = [reshape(convert_element_type(bdim_at_front(s, d, size), dtypes.int32), (size, 1))
               for s, d in zip(starts, dims)]
    return concatenate(columns, 1), 0


def _whole_window_dnums(ndim):
    return GatherDimensionNumbers(tuple(range(ndim)), (), tuple(range(ndim)))


def _dynamic_slice_batch(args, dims, slice_sizes):
    """A per-element start is a gather of one window per batch element."""
    operand, *starts = args
    size = batching.batch_size(args, dims)
    indices, d_indices = _stacked_starts(starts, dims[1:], size)
    params = dict(dimension_numbers=_whole_window_dnums(operand.ndim - (dims[0] is not None)),
                  slice_sizes=slice_sizes, mode=GatherScatterMode.CLIP, fill_value=None)
    return _gather_batch([operand, indices], [dims[0], d_indices], **params)


ad.jvp_rules[dynamic_slice_p] = _dynamic_slice_jvp
ad.transpose_rules[dynamic_slice_p] = _dynamic_slice_transpose
batching.batch_rules[dynamic_slice_p] = _dynamic_slice_batch


# ---------------------------------------------------------------- dynamic_update_slice

def _dynamic_update_slice_impl(operand, update, *starts):
    starts = _clamped_starts(operand.shape, starts, update.shape)
    out = np.array(operand)
    out[tuple(slice(s, s + k) for s, k in zip(starts, update.shape))] = update
    return out


def _dynamic_update_slice_aval(operand, update, *starts):
    _check_starts("dynamic_update_slice", operand, starts)
    if update.dtype != operand.dtype or update.ndim != operand.ndim or any(
            k > n for k, n in zip(update.shape, operand.shape)):
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} must have the dtype "
                        f"and rank of the operand {operand.str_short()} and fit inside it")
    return operand


dynamic_update_slice_p = Primitive("dynamic_update_slice")
fusion_rules.fused(dynamic_update_slice_p, fusion_rules.dynamic_update_slice_rule)
dynamic_update_slice_p.def_impl(_dynamic_update_slice_impl)
dynamic_update_slice_p.def_abstract_eval(_dynamic_update_slice_aval)
physical.structural(dynamic_update_slice_p)


def dynamic_update_slice(operand, update, start_indices):
    """operand with `update` written at the (clamped) start indices."""
    operand, update = as_operand(operand), as_operand(update)
    update = convert_element_type(update, operand.dtype)
    starts = _start_operands(start_indices, operand.shape, update.shape)
    return dynamic_update_slice_p.bind(operand, update, *starts)


def _dynamic_update_slice_jvp(primals, tangents):
    (operand, update, *starts), (t_operand, t_update) = primals, tangents[:2]
    out = dynamic_update_slice_p.bind(operand, update, *starts)
    if ad.is_zero(t_operand) and ad.is_zero(t_update):
        return out, ad.Zero(ad.tangent_aval(out.aval))
    return out, dynamic_update_slice_p.bind(ad.instantiate(t_operand), ad.instantiate(t_update),
                                            *starts)


def _dynamic_update_slice_transpose(ct, operand, update, *starts):
    if ad.is_zero(ct):
        return [None] * (2 + len(starts))
    update_shape = update.aval.shape
    operand_ct = update_ct = None
    if ad.is_undefined(operand):
        operand_ct = dynamic_update_slice(ct, full_like(ct, 0, shape=update_shape), starts)
    if ad.is_undefined(update):
        update_ct = dynamic_slice(ct, starts, update_shape)
    return [operand_ct, update_ct] + [None] * len(starts)


def _dynamic_update_slice_batch(args, dims):
    """Per-element starts make it a scatter of one whole-update window per element."""
    operand, update, *starts = args
    size = batching.batch_size(args, dims)
    indices, d_indices = _stacked_starts(starts, dims[2:], size)
    ndim = operand.ndim - (dims[0] is not None)
    dnums = _gather_to_scatter_dnums(_whole_window_dnums(ndim))
    rule = batching.batch_rules[scatter_p]
    return rule([operand, indices, update], [dims[0], d_indices, dims[1]],
                dimension_numbers=dnums, mode=GatherScatterMode.CLIP)


ad.jvp_rules[dynamic_update_slice_p] = _dynamic_update_slice_jvp
ad.transpose_rules[dynamic_update_slice_p] = _dynamic_update_slice_transpose
batching.batch_rules[dynamic_update_slice_p] = _dynamic_update_slice_batch


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    operand = as_operand(operand)
    axis = canonicalize_axis(axis, operand.ndim)
    starts = [0] * operand.ndim
    starts[axis] = start_index
    sizes = list(operand.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    operand = as_operand(operand)
    axis = canonicalize_axis(axis, operand.ndim)
    starts = [0] * operand.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """operand's entry `index` (clamped) along `axis`, keeping that axis if keepdims."""
    operand = as_operand(operand)
    axis = canonicalize_axis(axis, operand.ndim)
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else reshape(out, out.shape[:axis] + out.shape[axis + 1:])


def dynamic_update_index_in_dim(operand, update, index, axis):
    """operand with entry `index` along `axis` replaced by update (with or without that axis)."""
    operand, update = as_operand(operand), as_operand(update)
    axis = canonicalize_axis(axis, operand.ndim)
    if update.ndim == operand.ndim - 1:
        update = reshape(update, update.shape[:axis] + (1,) + update.shape[axis:])
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def take_along_axis(x, indices, axis, mode=None, fill_value=None):
    """x[..., indices, ...] pairing every other axis of x and indices elementwise.

    Lowered to one gather whose other axes are batching dims: the use JAX's
    batching dims were made for.
    """
    x, indices = as_operand(x), as_operand(indices)
    if x.size == 0:        # no entry to take (a gather cannot collapse an empty axis): zeros, as JAX
        return full(indices.shape, 0, x.dtype)
    others = tuple(d for d in range(x.ndim) if d != axis)
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                   start_index_map=(axis,), operand_batching_dims=others,
                                   start_indices_batching_dims=others)
    return gather(x, reshape(indices, indices.shape + (1,)), dnums, (1,) * x.ndim, mode=mode,
                  fill_value=fill_value)
