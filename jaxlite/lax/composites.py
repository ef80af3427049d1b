"""lax functions that are compositions of primitives (no rules of their own: jit, vmap and
grad see the primitives they are made of)."""
import builtins
import enum
import math

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapeDtypeStruct, broadcast_shapes, canonicalize_axis
from jaxlite.core.staging import eval_shape, make_jaxpr
from jaxlite.core.tree_util import tree_flatten, tree_map, tree_unflatten
from jaxlite.lax.base import as_operand
from jaxlite.lax.dot import Precision  # noqa: F401 -- listed in __all__ with the other composites
from jaxlite.lax.control_flow import scan
from jaxlite.lax.convolution import ConvDimensionNumbers, conv_dimension_permutations, conv_general_dilated
from jaxlite.lax.elementwise import eq, integer_pow, neg, rem, select_n
from jaxlite.lax.reductions import (
    reduce_and, reduce_max, reduce_min, reduce_or, reduce_prod, reduce_sum, reduce_xor)
from jaxlite.lax.shapes import (
    broadcast_in_dim, broadcasted_iota, concatenate, expand_dims, pad, reshape, rev, slice_in_dim,
    squeeze, transpose)
from jaxlite.lax.slicing import scatter_add
from jaxlite.lax.sorting import top_k

__all__ = ["ConvDimensionNumbers", "Precision", "RoundingMethod", "approx_max_k", "approx_min_k",
           "associative_scan", "broadcast_like", "broadcast_shapes", "broadcast_to_rank",
           "collapse", "conv", "conv_dimension_numbers", "conv_general_dilated_patches",
           "conv_general_permutations", "conv_general_shape_tuple", "conv_shape_tuple",
           "conv_transpose", "conv_transpose_shape_tuple", "conv_with_general_padding", "dtype",
           "empty", "optimization_barrier", "padtype_to_pads", "reciprocal", "reduce",
           "reduce_window_shape_tuple", "scatter_sub", "select", "split",
           "stack", "tile", "unstack"]


class RoundingMethod(enum.IntEnum):
    """How lax.round breaks ties."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def empty(shape, dtype, *, out_sharding=None):
    """An array of the shape and dtype whose values are unspecified (zeros here)."""
    return broadcast_in_dim(np.zeros((), dtypes.canonicalize_dtype(dtype)), tuple(shape), ())


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    """operand with updates subtracted at the scattered positions (scatter_add of -updates)."""
    return scatter_add(operand, scatter_indices, neg(as_operand(updates)), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


def select(pred, on_true, on_false):
    """on_true where pred, else on_false (select_n with its cases in the other order)."""
    return select_n(pred, on_false, on_true)


def reciprocal(x):
    return integer_pow(x, -1)


def dtype(x):
    """The canonical dtype jaxlite gives x (Python scalars take the default types)."""
    return dtypes.dtype_of(x)


def collapse(operand, start_dimension, stop_dimension=None):
    """operand with the axes start_dimension:stop_dimension merged into one."""
    operand = as_operand(operand)
    start = canonicalize_axis(start_dimension, operand.ndim)
    stop = operand.ndim if stop_dimension is None else canonicalize_axis(stop_dimension, operand.ndim + 1)
    shape = operand.shape
    return reshape(operand, shape[:start] + (math.prod(shape[start:stop]),) + shape[stop:])


def broadcast_to_rank(x, rank):
    """x with leading unit axes up to `rank` dimensions."""
    x = as_operand(x)
    if x.ndim >= rank:
        return x
    return expand_dims(x, tuple(range(rank - x.ndim)))


def broadcast_like(arr, like_arr):
    arr, like = as_operand(arr), as_operand(like_arr)
    return broadcast_in_dim(arr, like.shape, tuple(range(like.ndim - arr.ndim, like.ndim)))


def tile(operand, reps):
    """operand repeated reps[i] times along each axis (leading axes added as needed)."""
    operand = broadcast_to_rank(as_operand(operand), len(reps))
    reps = (1,) * (operand.ndim - len(reps)) + tuple(reps)
    interleaved = tuple(d for r, n in zip(reps, operand.shape) for d in (r, n))
    expanded = broadcast_in_dim(operand, interleaved, tuple(range(1, 2 * operand.ndim, 2)))
    return reshape(expanded, tuple(r * n for r, n in zip(reps, operand.shape)))


def split(operand, sizes, axis=0):
    """The consecutive pieces of operand along axis with the given sizes."""
    operand = as_operand(operand)
    axis = canonicalize_axis(axis, operand.ndim)
    if sum(sizes) != operand.shape[axis] or any(s < 0 for s in sizes):
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {operand.shape[axis]} "
                         f"of the operand shape {operand.shape} (sizes {tuple(sizes)})")
    starts = np.cumsum((0,) + tuple(sizes))
    return [slice_in_dim(operand, int(lo), int(hi), axis=axis) for lo, hi in zip(starts[:-1], starts[1:])]


def stack(operands, axis=0):
    operands = [as_operand(x) for x in operands]
    axis = canonicalize_axis(axis, operands[0].ndim + 1)
    return concatenate([expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x, axis=0):
    x = as_operand(x)
    axis = canonicalize_axis(axis, x.ndim)
    return tuple(squeeze(slice_in_dim(x, i, i + 1, axis=axis), (axis,)) for i in range(x.shape[axis]))


def optimization_barrier(operand, /):
    """Its operand unchanged: jaxlite's compiler does not move work across a Python call."""
    return tree_map(as_operand, operand)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """Explicit (low, high) pads for 'VALID', 'SAME' or 'SAME_LOWER' windowing."""
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding == "VALID":
        return [(0, 0)] * len(in_shape)
    if padding not in ("SAME", "SAME_LOWER"):
        raise TypeError(f"Unknown padding type: {padding}.")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        total = builtins.max(0, (-(-n // s) - 1) * s + w - n)
        low = total // 2 if padding == "SAME" else total - total // 2
        pads.append((low, total - low))
    return pads


# ---------------------------------------------------------------- reduce and associative_scan

_MONOIDS = {"add": (reduce_sum, 0), "mul": (reduce_prod, 1), "max": (reduce_max, -np.inf),
            "min": (reduce_min, np.inf), "and": (reduce_and, True), "or": (reduce_or, False),
            "xor": (reduce_xor, False)}


def reduce(operands, init_values, computation, dimensions):
    """Reduce the operands (a pytree) over `dimensions` with a binary computation.

    A computation that is one of lax's monoids started at its identity runs as that
    reduction; any other folds along the reduced axes with a scan, in index order.
    """
    flat_ops, tree = tree_flatten(operands)
    flat_inits, init_tree = tree_flatten(init_values)
    if init_tree != tree:
        raise ValueError("reduce: operands and init_values must have the same tree structure")
    flat_ops = [as_operand(x) for x in flat_ops]
    dims = tuple(sorted(canonicalize_axis(d, flat_ops[0].ndim) for d in dimensions))
    monoid = _monoid_of(computation, flat_ops, flat_inits, tree)
    if monoid is not None:
        return tree_unflatten(tree, [monoid(flat_ops[0], dims)])
    return tree_unflatten(tree, _fold(computation, flat_ops, flat_inits, dims, tree))


def _monoid_of(computation, flat_ops, flat_inits, tree):
    if len(flat_ops) != 1:
        return None
    scalar = np.zeros((), flat_ops[0].dtype)
    try:
        jaxpr = make_jaxpr(computation)(scalar, scalar).jaxpr
    except Exception:
        return None
    if len(jaxpr.eqns) != 1 or jaxpr.eqns[0].primitive.name not in _MONOIDS:
        return None
    reduction, identity = _MONOIDS[jaxpr.eqns[0].primitive.name]
    init = np.asarray(flat_inits[0]) if not hasattr(flat_inits[0], "aval") else None
    if init is None or init.shape != () or init != np.array(identity).astype(flat_ops[0].dtype):
        return None
    return reduction


def _fold(computation, flat_ops, flat_inits, dims, tree):
    kept = tuple(d for d in range(flat_ops[0].ndim) if d not in dims)
    moved = [transpose(x, dims + kept) for x in flat_ops]
    count = math.prod(flat_ops[0].shape[d] for d in dims)
    rows = [reshape(x, (count,) + tuple(x.shape[len(dims):])) for x in moved]
    out_shape = tuple(flat_ops[0].shape[d] for d in kept)
    inits = [broadcast_in_dim(as_operand(i, x.dtype), out_shape, ()) for i, x in zip(flat_inits, flat_ops)]

    def step(carry, row):
        out = computation(tree_unflatten(tree, carry), tree_unflatten(tree, row))
        return tree_flatten(out)[0], None

    return scan(step, inits, rows)[0]


def associative_scan(fn, elems, reverse=False, axis=0):
    """All prefix combinations of elems along axis under an associative fn, in
    O(log n) rounds of elementwise work (Blelloch's scan, as JAX does it)."""
    flat, tree = tree_flatten(elems)
    flat = [as_operand(x) for x in flat]
    axis = canonicalize_axis(axis, flat[0].ndim)
    if reverse:
        flat = [_reverse(x, axis) for x in flat]

    def combine(a, b):
        return tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))[0]

    out = _scan_pairs(combine, flat, axis)
    if reverse:
        out = [_reverse(x, axis) for x in out]
    return tree_unflatten(tree, out)


def _reverse(x, axis):
    return rev(x, (axis,))


def _scan_pairs(combine, elems, axis):
    n = elems[0].shape[axis]
    if n < 2:
        return elems
    # Combine neighbours, scan the half-length sequence, then fill in the even positions.
    odd_sums = combine([_strided(x, 0, n - 1, axis) for x in elems], [_strided(x, 1, n, axis) for x in elems])
    odd = _scan_pairs(combine, odd_sums, axis)
    if n % 2 == 0:
        even = combine([_strided(x, 0, n // 2 - 1, axis, 1) for x in odd], [_strided(x, 2, n, axis) for x in elems])
    else:
        even = combine(odd, [_strided(x, 2, n, axis) for x in elems])
    even = [concatenate([slice_in_dim(e, 0, 1, axis=axis), x], axis) for e, x in zip(elems, even)]
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]


def _strided(x, start, stop, axis, stride=2):
    return slice_in_dim(x, start, stop, stride, axis)


def _interleave(even, odd, axis):
    """even[0], odd[0], even[1], odd[1], ... along axis (even is as long as odd or one longer)."""
    zero = np.zeros((), even.dtype)
    same_length = even.shape[axis] == odd.shape[axis]
    even_gaps, odd_gaps = [(0, 0, 0)] * even.ndim, [(0, 0, 0)] * odd.ndim
    even_gaps[axis] = (0, 1 if same_length else 0, 1)
    odd_gaps[axis] = (1, 0 if same_length else 1, 1)
    spread_even, spread_odd = pad(even, zero, even_gaps), pad(odd, zero, odd_gaps)
    position = broadcasted_iota(np.int32, spread_even.shape, axis)
    return select_n(eq(rem(position, np.int32(2)), np.int32(1)), spread_even, spread_odd)


# ---------------------------------------------------------------- convolutions


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """dimension_numbers (None, three layout strings, or ConvDimensionNumbers) as ConvDimensionNumbers."""
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} "
                        f"and {len(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_dimension_permutations(dimension_numbers, len(lhs_shape)))


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """conv_general_dilated in the default NC.../OI... layouts, without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                      5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """The transposed ("fractionally strided") convolution: lhs dilated by the strides,
    convolved with stride 1; transpose_kernel flips the kernel and swaps its in/out axes,
    giving the gradient of conv_general_dilated with respect to its input."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    if dimension_numbers is None:
        if lhs.ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[lhs.ndim]
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    kernel_spatial = [rhs.shape[a] for a in dn.rhs_spec[2:]]
    rhs_dilation = tuple(rhs_dilation or (1,) * len(kernel_spatial))
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_axis = [padding] * len(strides) if isinstance(padding, str) else padding
        extents = [(k - 1) * d + 1 for k, d in zip(kernel_spatial, rhs_dilation)]
        padding = tuple(_transpose_padding(k, s, p) for k, s, p in zip(extents, strides, per_axis))
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        swapped = list(range(rhs.ndim))
        swapped[dn.rhs_spec[0]], swapped[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose(rhs, tuple(swapped))
    return conv_general_dilated(lhs, rhs, (1,) * len(strides), padding, lhs_dilation=tuple(strides),
                                rhs_dilation=rhs_dilation, dimension_numbers=dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(extent, stride, padding):
    """(low, high) padding of the dilated input for one axis of conv_transpose."""
    if padding == "SAME":
        total = extent + stride - 2
        low = extent - 1 if stride > extent - 1 else int(np.ceil(total / 2))
    elif padding == "VALID":
        total = extent + stride - 2 + builtins.max(extent - stride, 0)
        low = extent - 1
    elif isinstance(padding, tuple):
        low, total = extent - padding[0] - 1, 2 * extent - 2 - padding[0] - padding[1]
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return low, total - low


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """Every window of lhs as features: out feature c * prod(filter_shape) + w holds input
    channel c at window offset w (row-major), laid out as the convolution's output."""
    lhs = as_operand(lhs)
    filter_shape = tuple(filter_shape)
    dn = conv_dimension_numbers(lhs.shape, (1, 1) + filter_shape, dimension_numbers)
    taps, channels = math.prod(filter_shape), lhs.shape[dn.lhs_spec[1]]
    one_hot = np.broadcast_to(np.eye(taps, dtype=lhs.dtype), (channels, taps, taps))
    kernel = one_hot.reshape((channels * taps, 1) + filter_shape)
    kernel = np.moveaxis(kernel, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, dimension_numbers=dn,
                                feature_group_count=channels, preferred_element_type=preferred_element_type)


# ---------------------------------------------------------------- approximate top-k


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """The k largest entries along reduction_dimension and their indices. On a CPU, as in JAX,
    the answer is exact: recall is 1 whatever recall_target asks."""
    return _top_k_along(as_operand(operand), k, reduction_dimension, largest=True)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """The k smallest entries along reduction_dimension and their indices (exact on a CPU)."""
    return _top_k_along(as_operand(operand), k, reduction_dimension, largest=False)


def _top_k_along(x, k, axis, largest):
    axis = canonicalize_axis(axis, x.ndim)
    moved = transpose(x, tuple(d for d in range(x.ndim) if d != axis) + (axis,))
    values, indices = top_k(moved if largest else neg(moved), k)
    back = tuple(range(axis)) + (x.ndim - 1,) + tuple(range(axis, x.ndim - 1))
    values = values if largest else neg(values)
    return transpose(values, back), transpose(indices, back)


# ---------------------------------------------------------------- output shapes


def _shape_of(fun, *shapes):
    specs = [ShapeDtypeStruct(tuple(s), np.float32) for s in shapes]
    return tuple(eval_shape(fun, *specs).shape)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The shape conv_general_dilated gives, in the output layout of dimension_numbers."""
    return _shape_of(lambda lhs, rhs: conv_general_dilated(lhs, rhs, window_strides, padding,
                                                           dimension_numbers=dimension_numbers),
                     lhs_shape, rhs_shape)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The shape conv_transpose gives."""
    return _shape_of(lambda lhs, rhs: conv_transpose(lhs, rhs, window_strides, padding,
                                                     dimension_numbers=dimension_numbers),
                     lhs_shape, rhs_shape)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The NC... output shape of a convolution with explicit (low, high) pads."""
    return _shape_of(lambda lhs, rhs: conv_general_dilated(lhs, rhs, strides, pads,
                                                           batch_group_count=batch_group_count),
                     lhs_shape, rhs_shape)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The shape reduce_window gives for explicit (low, high) pads."""
    ones = (1,) * len(operand_shape)
    base_dilation, window_dilation = base_dilation or ones, window_dilation or ones
    shape = []
    for n, w, s, (low, high), b, d in zip(operand_shape, window_dimensions, window_strides, padding,
                                         base_dilation, window_dilation):
        padded, extent = (n - 1) * b + 1 + low + high, (w - 1) * d + 1
        shape.append(0 if padded < extent else (padded - extent) // s + 1)
    return tuple(shape)


def conv_general_permutations(dimension_numbers):
    """The (lhs, rhs, out) permutations to the N,C,spatial / O,I,spatial layouts."""
    return conv_dimension_permutations(dimension_numbers, len(dimension_numbers[0]))

