"""conv_general_dilated: N-d convolution with strides, padding, dilations and groups.

The primitive works in one canonical layout (lhs N,C,spatial...; rhs O,I,spatial...;
output N,O,spatial...); the public function transposes to and from the layouts
named by `dimension_numbers` (("NHWC", "HWIO", "NHWC") and the like), so the
rules below never deal with layouts. Spatial axes are paired by their letters,
in the order they appear in the rhs spec, as in JAX.

The numpy implementation is im2col: dilate and pad the input, take every window
as a patch, and multiply the patches by the kernel matrix per group. The
transposes with respect to lhs and rhs are themselves convolutions (the
gradient of a strided convolution is a convolution of the lhs-dilated cotangent).

Under jit the compiler rewrites each convolution into the same im2col with lax
primitives (`_conv_as_gemm`, registered in core.primitive.compiler_rewrites): the
`conv_patches` primitive gathers the windows, which fusion turns into one kernel
writing the patch matrix, and a dot_general that runs on the generated GEMM.
"""
import collections
import itertools

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.ir import pp_params_rules
from jaxlite.core.primitive import Primitive, compiler_rewrites
from jaxlite.core.staging import trace_to_jaxpr
from jaxlite.lax.base import NUMBER, as_operand, check_dtype
from jaxlite.lax.dot import dot_general
from jaxlite.lax.elementwise import add
from jaxlite.lax import shapes
from jaxlite.lax.shapes import pad, reshape, rev, squeeze, transpose
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import move_dim


def dilate_shape(shape, dilation):
    return tuple(0 if n == 0 else (n - 1) * d + 1 for n, d in zip(shape, dilation))


def padding_pairs(padding, in_shape, window_shape, window_strides):
    """Explicit (low, high) pairs for "SAME", "VALID" or given pairs."""
    if not isinstance(padding, str):
        pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
        if len(pairs) != len(in_shape):
            raise ValueError(f"padding needs one (low, high) pair per spatial axis, got {padding}")
        return pairs
    if padding.upper() == "VALID":
        return ((0, 0),) * len(in_shape)
    if padding.upper() != "SAME":
        raise ValueError(f"padding must be 'SAME', 'VALID' or a sequence of pairs, got {padding!r}")
    pairs = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        pairs.append((total // 2, total - total // 2))
    return tuple(pairs)


def windows(x, window_shape, window_strides, window_dilation):
    """Every window of x's trailing axes: shape x.shape[:lead] + out_spatial + window_shape."""
    n_spatial = len(window_shape)
    lead = x.ndim - n_spatial
    extent = dilate_shape(window_shape, window_dilation)
    if any(e > n for e, n in zip(extent, x.shape[lead:])):
        # No window fits: an empty result (numpy's window view would refuse).
        out = tuple(max(0, (n - e) // s + 1) for n, e, s in zip(x.shape[lead:], extent, window_strides))
        return np.zeros(x.shape[:lead] + out + tuple(window_shape), x.dtype)
    view = np.lib.stride_tricks.sliding_window_view(x, extent, axis=tuple(range(lead, x.ndim)))
    picks = (slice(None),) * lead + tuple(slice(None, None, s) for s in window_strides) \
        + tuple(slice(None, None, d) for d in window_dilation)
    return view[picks]


def pad_and_dilate(x, padding, dilation, fill):
    """x's trailing axes dilated by inserting fill, then padded (negative pads crop)."""
    n_spatial = len(padding)
    lead = x.ndim - n_spatial
    shape = x.shape[:lead] + tuple(
        max(lo, 0) + max(hi, 0) + d for (lo, hi), d in zip(padding, dilate_shape(x.shape[lead:], dilation)))
    out = np.full(shape, fill, x.dtype)
    place = (slice(None),) * lead + tuple(slice(max(lo, 0), max(lo, 0) + d, step) for (lo, _), d, step in
                                          zip(padding, dilate_shape(x.shape[lead:], dilation), dilation))
    out[place] = x
    crop = (slice(None),) * lead + tuple(slice(max(-lo, 0), n - max(-hi, 0))
                                         for (lo, hi), n in zip(padding, shape[lead:]))
    return out[crop]


# ---------------------------------------------------------------- the primitive

def _conv_impl(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
               feature_group_count, batch_group_count):
    n_spatial = lhs.ndim - 2
    compute = np.promote_types(lhs.dtype, np.float32) if dtypes.is_float(lhs.dtype) else lhs.dtype
    x = pad_and_dilate(lhs.astype(compute), padding, lhs_dilation, 0)
    patches = windows(x, rhs.shape[2:], window_strides, rhs_dilation)  # N, C, out..., k...
    out_spatial = patches.shape[2:2 + n_spatial]
    (n, c), (o, i) = lhs.shape[:2], rhs.shape[:2]
    groups, b = feature_group_count * batch_group_count, batch_group_count
    g, nb = feature_group_count, n // b
    p, k = int(np.prod(out_spatial)), int(np.prod(rhs.shape[2:]))
    # patches -> (group, batch rows, features): group = (batch group, feature group).
    patches = patches.reshape((b, nb, g, i) + out_spatial + rhs.shape[2:])
    spatial = tuple(range(4, 4 + n_spatial))
    window = tuple(range(4 + n_spatial, 4 + 2 * n_spatial))
    patches = patches.transpose((0, 2, 1) + spatial + (3,) + window).reshape(groups, nb * p, i * k)
    kernel = rhs.astype(compute).reshape(groups, o // groups, i * k).transpose(0, 2, 1)
    out = np.matmul(patches, kernel)  # groups, nb * p, o // groups
    out = out.reshape((b, g, nb) + out_spatial + (o // groups,))
    out = out.transpose((2, 0, 1, 3 + n_spatial) + tuple(range(3, 3 + n_spatial)))
    return out.reshape((nb, o) + out_spatial).astype(lhs.dtype)


def _conv_aval(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
               feature_group_count, batch_group_count):
    for name, aval in (("lhs", lhs), ("rhs", rhs)):
        check_dtype("conv_general_dilated", aval, NUMBER, name)
    if lhs.dtype != rhs.dtype or lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise TypeError(f"conv_general_dilated needs lhs and rhs of one dtype and rank >= 2, got "
                        f"{lhs.str_short()} and {rhs.str_short()}")
    (n, c), (o, i) = lhs.shape[:2], rhs.shape[:2]
    g, b = feature_group_count, batch_group_count
    if c != i * g or o % g or n % b or o % b or (g > 1 and b > 1):
        raise TypeError(f"conv_general_dilated: lhs features {c} must equal rhs input features {i} "
                        f"times feature_group_count {g}, which must divide the output features {o}; "
                        f"batch_group_count {b} must divide the batch {n} and {o} (only one group "
                        "count may exceed 1)")
    in_shape = dilate_shape(lhs.shape[2:], lhs_dilation)
    extent = dilate_shape(rhs.shape[2:], rhs_dilation)
    out = tuple(max(0, (n_in + lo + hi - e) // s + 1) if n_in + lo + hi >= e else 0
                for n_in, (lo, hi), e, s in zip(in_shape, padding, extent, window_strides))
    return ShapedArray((n // b, o) + out, lhs.dtype, lhs.weak_type and rhs.weak_type)


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.def_impl(_conv_impl)
conv_general_dilated_p.def_abstract_eval(_conv_aval)


def _conv_pp_params(eqn):
    """As JAX prints them: jaxlite's operands are always laid out (N, C, spatial...), so its
    dimension numbers are the identity; no sharding, precision or accumulator type chosen."""
    rank = tuple(range(eqn.inputs[0].aval.ndim))
    shown = dict(dimension_numbers=ConvDimensionNumbers(rank, rank, rank), out_sharding=None, precision=None,
                 preferred_element_type=None)
    return sorted({**shown, **eqn.params}.items())


pp_params_rules[conv_general_dilated_p] = _conv_pp_params


def _canonical_conv(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                    feature_group_count=1, batch_group_count=1):
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=tuple(window_strides), padding=tuple(padding),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(rhs_dilation),
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count))


def _transpose_lhs(ct, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                   feature_group_count, batch_group_count):
    """A convolution of the (stride-dilated) cotangent with the flipped kernel,
    input and output features swapped within each group.

    With batch groups, the cotangent's feature groups are the batch groups: the
    result comes out with the groups in its features and is moved to the batch.
    """
    lhs_shape = lhs.aval.shape
    extent = dilate_shape(rhs.shape[2:], rhs_dilation)
    in_shape = dilate_shape(lhs_shape[2:], lhs_dilation)
    out_shape = dilate_shape(ct.shape[2:], window_strides)
    before = [e - lo - 1 for e, (lo, _) in zip(extent, padding)]
    after = [n + e - 1 - o - b for n, e, o, b in zip(in_shape, extent, out_shape, before)]
    g = feature_group_count * batch_group_count
    o, i = rhs.shape[:2]
    kernel = reshape(rhs, (g, o // g, i) + rhs.shape[2:])
    kernel = transpose(kernel, (0, 2, 1) + tuple(range(3, kernel.ndim)))
    kernel = rev(reshape(kernel, (g * i, o // g) + rhs.shape[2:]), tuple(range(2, rhs.ndim)))
    out = _canonical_conv(ct, kernel, lhs_dilation, tuple(zip(before, after)), window_strides,
                          rhs_dilation, g)
    if batch_group_count == 1:
        return out
    nb, c = out.shape[0], lhs_shape[1]
    out = reshape(out, (nb, batch_group_count, c) + out.shape[2:])
    out = transpose(out, (1, 0) + tuple(range(2, out.ndim)))
    return reshape(out, lhs_shape)


def _transpose_rhs(ct, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                   feature_group_count, batch_group_count):
    """A convolution of the input (batch and features swapped) with the cotangent
    as kernel; feature groups and batch groups trade places."""
    rhs_shape = rhs.aval.shape
    extent = dilate_shape(rhs_shape[2:], rhs_dilation)
    in_shape = dilate_shape(lhs.shape[2:], lhs_dilation)
    out_shape = dilate_shape(ct.shape[2:], window_strides)
    pads = [(lo, (o - n) + (e - lo - 1)) for (lo, _), o, n, e in zip(padding, out_shape, in_shape, extent)]
    swap = (1, 0) + tuple(range(2, lhs.ndim))
    out = _canonical_conv(transpose(lhs, swap), transpose(ct, swap), rhs_dilation, pads,
                          lhs_dilation, window_strides, batch_group_count, feature_group_count)
    return transpose(out, swap)


ad.defbilinear(conv_general_dilated_p, _transpose_lhs, _transpose_rhs)


def _merge_groups(x, groups):
    """(size, groups * m, ...) -> (groups * size * m, ...): the vmapped axis folded
    inside each group, so the groups stay contiguous runs."""
    size, m = x.shape[0], x.shape[1] // groups
    x = reshape(x, (size, groups, m) + x.shape[2:])
    x = transpose(x, (1, 0) + tuple(range(2, x.ndim)))
    return reshape(x, (groups * size * m,) + x.shape[3:])


def _split_groups(x, axis, groups, size):
    """Undo _merge_groups on `axis` of x: (..., groups * size * m, ...) -> (..., size, groups * m, ...)."""
    m = x.shape[axis] // (groups * size)
    x = reshape(x, x.shape[:axis] + (groups, size, m) + x.shape[axis + 1:])
    x = transpose(x, tuple(range(axis)) + (axis + 1, axis) + tuple(range(axis + 2, x.ndim)))
    return reshape(x, x.shape[:axis] + (size, groups * m) + x.shape[axis + 3:])


def _conv_batch(args, dims, feature_group_count, batch_group_count, **params):
    """Fold the vmapped axis into the lhs batch or the rhs output features (inside
    each group), or, when both are batched, into more groups."""
    (lhs, rhs), (d_lhs, d_rhs) = args, dims
    groups = dict(feature_group_count=feature_group_count, batch_group_count=batch_group_count)
    if d_rhs is None:
        lhs = move_dim(lhs, d_lhs, 0)
        size = lhs.shape[0]
        out = _canonical_conv(_merge_groups(lhs, batch_group_count), rhs, **groups, **params)
        return reshape(out, (size, out.shape[0] // size) + out.shape[1:]), 0
    rhs = move_dim(rhs, d_rhs, 0)
    size, o = rhs.shape[:2]
    if d_lhs is None:
        all_groups = feature_group_count * batch_group_count
        out = _canonical_conv(lhs, _merge_groups(rhs, all_groups), **groups, **params)
        return _split_groups(out, 1, all_groups, size), 1
    lhs = move_dim(lhs, d_lhs, 0)
    kernel = reshape(rhs, (size * o,) + rhs.shape[2:])
    if batch_group_count > 1:
        folded = reshape(lhs, (size * lhs.shape[1],) + lhs.shape[2:])
        out = _canonical_conv(folded, kernel, feature_group_count=1,
                              batch_group_count=size * batch_group_count, **params)
    else:
        folded = _fold_into_features(lhs)
        out = _canonical_conv(folded, kernel, feature_group_count=size * feature_group_count,
                              batch_group_count=1, **params)
    return reshape(out, (out.shape[0], size, o) + out.shape[2:]), 1


def _fold_into_features(lhs):
    """(size, N, C, ...) -> (N, size * C, ...)."""
    lhs = transpose(lhs, (1, 0) + tuple(range(2, lhs.ndim)))
    return reshape(lhs, (lhs.shape[0], lhs.shape[1] * lhs.shape[2]) + lhs.shape[3:])


batching.batch_rules[conv_general_dilated_p] = _conv_batch


# ---------------------------------------------------------------- the public function

class ConvDimensionNumbers(collections.namedtuple("ConvDimensionNumbers", "lhs_spec rhs_spec out_spec")):
    """Where each operand keeps its batch/feature (out/in for the kernel) and spatial axes:
    lhs_spec[0] is the lhs batch axis, lhs_spec[1] its feature axis, the rest spatial."""


def conv_dimension_permutations(dimension_numbers, ndim):
    """Permutations taking lhs, rhs and out to the canonical N,C,spatial / O,I,spatial layouts."""
    if dimension_numbers is None:
        identity = tuple(range(ndim))
        return identity, identity, identity
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return tuple(tuple(int(a) for a in spec) for spec in dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if not all(isinstance(s, str) and len(s) == ndim for s in dimension_numbers):
        raise ValueError(f"dimension_numbers {dimension_numbers} must be three strings of length {ndim}")
    spatial = [ch for ch in rhs_spec if ch not in "OI"]

    def perm(spec, batch, feature):
        if sorted(spec) != sorted([batch, feature] + spatial):
            raise ValueError(f"dimension_numbers spec {spec!r} must name {batch}, {feature} and the "
                             f"spatial axes {''.join(spatial)} of the rhs spec {rhs_spec!r}")
        return tuple(spec.index(ch) for ch in [batch, feature] + spatial)
    return perm(lhs_spec, "N", "C"), perm(rhs_spec, "O", "I"), perm(out_spec, "N", "C")


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """A general N-d convolution (cross-correlation, as in XLA), laid out by dimension_numbers."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    lhs_perm, rhs_perm, out_perm = conv_dimension_permutations(dimension_numbers, lhs.ndim)
    lhs, rhs = transpose(lhs, lhs_perm), transpose(rhs, rhs_perm)
    n_spatial = lhs.ndim - 2
    lhs_dilation = tuple(lhs_dilation or (1,) * n_spatial)
    rhs_dilation = tuple(rhs_dilation or (1,) * n_spatial)
    window_strides = tuple(window_strides)
    extent = dilate_shape(rhs.shape[2:], rhs_dilation)
    pads = padding_pairs(padding, lhs.shape[2:], extent, window_strides)
    out = _canonical_conv(lhs, rhs, window_strides, pads, lhs_dilation, rhs_dilation,
                          feature_group_count, batch_group_count)
    return transpose(out, tuple(int(i) for i in np.argsort(out_perm)))


# ---------------------------------------------------------------- im2col for the compiler

def _patches_impl(x, window_shape, window_strides, window_dilation, first_axis):
    n_spatial = len(window_shape)
    trailing = x.ndim - first_axis - n_spatial
    front = tuple(range(trailing))
    moved = np.moveaxis(x, tuple(range(x.ndim - trailing, x.ndim)), front)
    patches = windows(moved, window_shape, window_strides, window_dilation)
    return np.moveaxis(patches, front, tuple(range(patches.ndim - trailing, patches.ndim)))


def _patches_aval(x, window_shape, window_strides, window_dilation, first_axis):
    spatial = x.shape[first_axis:first_axis + len(window_shape)]
    extent = dilate_shape(window_shape, window_dilation)
    out = tuple(max(0, (n - e) // s + 1) if n >= e else 0 for n, e, s in zip(spatial, extent, window_strides))
    shape = x.shape[:first_axis] + out + tuple(window_shape) + x.shape[first_axis + len(spatial):]
    return ShapedArray(shape, x.dtype, x.weak_type)


# Every window of the axes from `first_axis`: x (lead..., spatial..., trailing...) ->
# (lead..., out spatial..., window..., trailing...), out[o, k] = x[o * stride + k * dilation].
conv_patches_p = Primitive("conv_patches")
fusion_rules.fused(conv_patches_p, fusion_rules.conv_patches_rule)
conv_patches_p.def_impl(_patches_impl)
conv_patches_p.def_abstract_eval(_patches_aval)


def _patches_transpose(ct, x, window_shape, window_strides, window_dilation, first_axis):
    """Each window tap's cotangent slab, spread back over the input (col2im) and summed."""
    shape, n_spatial = x.aval.shape, len(window_shape)
    taps = first_axis + n_spatial
    out = ct.shape[first_axis:taps]
    terms = []
    for tap in itertools.product(*map(range, window_shape)):
        start = [0] * ct.ndim
        start[taps:taps + n_spatial] = tap
        limit = list(ct.shape)
        limit[taps:taps + n_spatial] = [t + 1 for t in tap]
        slab = squeeze(shapes.slice(ct, start, limit), range(taps, taps + n_spatial))
        config = [(0, 0, 0)] * slab.ndim
        for j, (t, o, s, d) in enumerate(zip(tap, out, window_strides, window_dilation)):
            reach = dilate_shape((o,), (s,))[0]
            config[first_axis + j] = (t * d, shape[first_axis + j] - t * d - reach, s - 1)
        terms.append(pad(slab, np.zeros((), ct.dtype), config))
    while len(terms) > 1:       # summed pairwise: a shallow expression for fusion to inline
        terms = [add(a, b) for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) // 2 * 2:]
    return terms


def _patches_batch(args, dims, first_axis, **params):
    (x,), (d,) = args, dims
    return conv_patches_p.bind(move_dim(x, d, 0), first_axis=first_axis + 1, **params), 0


ad.deflinear(conv_patches_p, _patches_transpose)
batching.batch_rules[conv_patches_p] = _patches_batch


def conv_patches(x, window_shape, window_strides, window_dilation, first_axis):
    return conv_patches_p.bind(as_operand(x), window_shape=tuple(window_shape),
                               window_strides=tuple(window_strides),
                               window_dilation=tuple(window_dilation), first_axis=int(first_axis))


def _conv_as_gemm(lhs, rhs, memory_orders, window_strides, padding, lhs_dilation, rhs_dilation,
                  feature_group_count, batch_group_count, preferred_element_type=None):
    """The convolution as im2col and one matrix product (per group, as a batch axis).

    The patch matrix's axes are (groups?, rows: batch and output positions, columns:
    window taps and input features), each block ordered as the lhs buffer is laid
    out (`memory_orders`), so the kernel writing it reads the input contiguously, and
    the kernel matrix in the same column order. A 1x1 window needs no patches: a
    (strided) view of the input is the matrix.
    """
    out = _conv_aval(lhs.aval, rhs.aval, window_strides, padding, lhs_dilation, rhs_dilation,
                     feature_group_count, batch_group_count)
    if out.size == 0 or lhs.size == 0 or rhs.size == 0:
        # Sums of nothing (or of padding); the padded input may even have a negative size.
        return shapes.full(out.shape, 0, preferred_element_type or out.dtype)
    if _runs_as_col2im(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                  batch_group_count, preferred_element_type):
        return _conv_by_col2im(lhs, rhs, memory_orders, padding, lhs_dilation, rhs_dilation,
                                          feature_group_count)
    groups = feature_group_count * batch_group_count
    lead = int(groups > 1)
    x, x_keys = _lhs_by_group(lhs, memory_orders[0], feature_group_count, batch_group_count)
    window, out_spatial = rhs.shape[2:], out.shape[2:]
    reach = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_spatial, window_strides, window, rhs_dilation)]
    x, x_keys, place = _padded_in_memory_order(x, x_keys, lead, padding, lhs_dilation, reach)
    patches, place, keys = _windows(x, x_keys, place, window, out_spatial, window_strides, rhs_dilation)
    rows = sorted([place["batch"]] + place["out"], key=keys.get)
    columns = sorted(place["taps"] + [place["features"]], key=keys.get)
    columns_last = keys[place["features"]] > max(keys[r] for r in rows)
    patches = transpose(patches, list(range(lead)) + (rows + columns if columns_last else columns + rows))
    kernel, kernel_last = _kernel_by_columns(rhs, memory_orders[1], groups, columns, place["taps"],
                                             place["features"], lead)
    first_column = lead + (len(rows) if columns_last else 0)
    contracting = tuple(range(first_column, first_column + len(columns)))
    kernel_contracting = tuple(range(lead + (not kernel_last), lead + (not kernel_last) + len(columns)))
    batch = tuple(range(lead))
    out = dot_general(patches, kernel, ((contracting, kernel_contracting), (batch, batch)),
                      preferred_element_type=preferred_element_type)
    # out: (groups?, rows..., out features per group) -> (batch, features, spatial...)
    position = {axis: lead + k for k, axis in enumerate(rows)}
    order = [position[place["batch"]]] + list(range(lead)) + [out.ndim - 1] + [position[a] for a in place["out"]]
    out = transpose(out, order)
    return reshape(out, (out.shape[0], rhs.shape[0]) + out.shape[lead + 2:]) if lead else out


def _padded_in_memory_order(x, keys, lead, padding, lhs_dilation, reach):
    """x (groups?, batch, features, spatial...) dilated and padded, cropped to the `reach`
    of the windows, with its axes in memory order (the spatial ones kept together, in
    order); its keys, and where batch, features and the first spatial axis went.

    Cropping and ordering make the patches of one input the same equation wherever they
    are taken (a convolution and its kernel gradient), so CSE keeps one patch matrix."""
    dilated = dilate_shape(x.shape[lead + 2:], lhs_dilation)
    config = [(0, 0, 0)] * (lead + 2) + [(lo, hi - (n + lo + hi - r), d - 1)
                                         for (lo, hi), n, r, d in zip(padding, dilated, reach, lhs_dilation)]
    spatial = list(range(lead + 2, x.ndim))
    units = sorted([unit for unit in ([lead], [lead + 1], spatial) if unit],
                   key=lambda unit: min(keys[a] for a in unit))
    arrangement = list(range(lead)) + [a for unit in units for a in unit]
    place = {"batch": arrangement.index(lead), "features": arrangement.index(lead + 1),
             "spatial": arrangement.index(spatial[0]) if spatial else x.ndim}
    # Transposed first, then padded: the transpose merges with the ones before it.
    x, config = transpose(x, arrangement), [config[a] for a in arrangement]
    x = pad(x, np.zeros((), x.dtype), config) if any(map(any, config)) else x
    return x, [keys[a] for a in arrangement], place


def _windows(x, keys, place, window, out_spatial, window_strides, rhs_dilation):
    """The patches of x: (patches, where batch, features, output positions and window
    taps are, a memory-order key per patch axis). A 1x1 window is a strided slice.

    Windows and output positions are interchangeable (x[o * stride + k * dilation]);
    the pair that comes first is taken as the window, a canonical form for CSE."""
    first, n_spatial = place["spatial"], len(window)
    if all(k == 1 for k in window):
        strides = [1] * x.ndim
        strides[first:first + n_spatial] = window_strides
        patches = shapes.slice(x, (0,) * x.ndim, x.shape, strides)
        outs, taps, shift = list(range(first, first + n_spatial)), [], 0
    else:
        swapped = [(o, s) < (k, d) for o, s, k, d in zip(out_spatial, window_strides, window, rhs_dilation)]
        pick = lambda flags, a, b: tuple(p if flag else q for flag, p, q in zip(flags, a, b))
        patches = conv_patches(x, pick(swapped, out_spatial, window), pick(swapped, rhs_dilation, window_strides),
                               pick(swapped, window_strides, rhs_dilation), first)
        outs = [first + j + n_spatial * flag for j, flag in enumerate(swapped)]
        taps = [first + j + n_spatial * (not flag) for j, flag in enumerate(swapped)]
        shift = n_spatial
    moved = {a: a + shift if a >= first else a for a in (place["batch"], place["features"])}
    patch_keys = {moved[a]: keys[a] for a in moved}
    patch_keys.update({axis: keys[first + j] for j, axis in enumerate(outs)})
    patch_keys.update({axis: keys[first + j] for j, axis in enumerate(taps)})
    return patches, {"batch": moved[place["batch"]], "features": moved[place["features"]],
                     "out": outs, "taps": taps}, patch_keys


def _lhs_by_group(lhs, memory_order, feature_group_count, batch_group_count):
    """lhs as (groups, batch, features, spatial...) (no group axis without groups), and
    per axis a sort key for its place in memory."""
    keys = [(rank, 0) for rank in memory_order]
    if feature_group_count > 1:
        n, c = lhs.shape[:2]
        g = feature_group_count
        x = reshape(lhs, (n, g, c // g) + lhs.shape[2:])
        keys = [keys[0], (keys[1][0], 0), (keys[1][0], 1)] + keys[2:]
        order = (1, 0) + tuple(range(2, x.ndim))
        return transpose(x, order), [keys[a] for a in order]
    if batch_group_count > 1:
        b = batch_group_count
        x = reshape(lhs, (b, lhs.shape[0] // b) + lhs.shape[1:])
        return x, [(keys[0][0], 0), (keys[0][0], 1)] + keys[1:]
    return lhs, keys


def _kernel_by_columns(rhs, memory_order, groups, columns, taps, feature, lead):
    """The kernel as (groups?, columns..., out features) or (groups?, out features,
    columns...) in the patch matrix's column order, whichever its buffer is closer to;
    the flag says whether the out features come last."""
    w = reshape(rhs, (groups, rhs.shape[0] // groups) + rhs.shape[1:]) if lead else rhs
    w_keys = list(memory_order[:1]) * (lead + 1) + list(memory_order[1:])
    out_features, in_features = lead, lead + 1
    spatial_of_tap = {t: lead + 2 + j for j, t in enumerate(taps)}
    column_axes = [in_features if c == feature else spatial_of_tap[c] for c in columns]
    last = w_keys[out_features] > max(w_keys[a] for a in column_axes)
    middle = column_axes + [out_features] if last else [out_features] + column_axes
    # A 1x1 window's unit axes are no columns: moved last and dropped (as a reshape
    # of the kernel buffer when the other axes keep their order).
    unit = [a for a in range(lead + 2, w.ndim) if a not in column_axes]
    w = transpose(w, list(range(lead)) + middle + unit)
    return (reshape(w, w.shape[:w.ndim - len(unit)]) if unit else w), last


def _runs_as_col2im(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                               batch_group_count, preferred_element_type):
    """Whether to compute the convolution as the transpose of another (`_conv_by_col2im`):
    when it dilates its input, as the gradient of a
    strided convolution does, or when it has fewer output than input features, so that
    the GEMM's output (window taps x output features per row) is smaller than the patch
    matrix (taps x input features) would be."""
    extent = dilate_shape(rhs.shape[2:], rhs_dilation)
    fewer_outputs = rhs.shape[0] < lhs.shape[1] and any(k > 1 for k in rhs.shape[2:])
    return (any(d > 1 for d in lhs_dilation) or fewer_outputs) and all(s == 1 for s in window_strides) \
        and batch_group_count == 1 and preferred_element_type is None \
        and int(np.prod(rhs.shape[2:])) <= COL2IM_MAX_TAPS \
        and all(n > 0 for n in _conv_out_spatial(lhs.shape[2:], padding, lhs_dilation, extent))


# col2im sums one term per window tap into each element: meant for small windows (a
# kernel-gradient convolution's window is the whole cotangent, and stays direct).
COL2IM_MAX_TAPS = 27


def _conv_out_spatial(in_shape, padding, lhs_dilation, extent):
    return tuple((m - 1) * d + 1 + lo + hi - e + 1
                 for m, (lo, hi), d, e in zip(in_shape, padding, lhs_dilation, extent))


def _conv_by_col2im(ct, rhs, memory_orders, padding, lhs_dilation, rhs_dilation,
                               feature_group_count):
    """The convolution computed as the transpose of the (strided) convolution whose lhs
    gradient it is (`_transpose_lhs` read backwards): its input times the kernel gives
    that convolution's patch-matrix cotangent (one GEMM), and the transpose of
    conv_patches sums it back into place (col2im). Multiplying the zeros an lhs dilation
    inserts (3/4 of the patch matrix for stride 2 in 2-D) is skipped."""
    g, n_spatial = feature_group_count, rhs.ndim - 2
    o_t, i_t = rhs.shape[:2]
    spatial = tuple(range(2, rhs.ndim))
    extent = dilate_shape(rhs.shape[2:], rhs_dilation)
    kernel = reshape(rev(rhs, spatial), (g, o_t // g, i_t) + rhs.shape[2:])
    kernel = reshape(transpose(kernel, (0, 2, 1) + tuple(range(3, kernel.ndim))), (g * i_t, o_t // g) + rhs.shape[2:])
    out_spatial = _conv_out_spatial(ct.shape[2:], padding, lhs_dilation, extent)
    lows = [e - 1 - lo for e, (lo, _) in zip(extent, padding)]
    pads = tuple((lo, (m - 1) * s + e - n - lo)
                 for lo, m, s, e, n in zip(lows, ct.shape[2:], lhs_dilation, extent, out_spatial))
    forward_params = dict(window_strides=tuple(lhs_dilation), padding=pads, lhs_dilation=(1,) * n_spatial,
                          rhs_dilation=tuple(rhs_dilation), feature_group_count=g, batch_group_count=1)
    kernel_order = (memory_orders[1][1], memory_orders[1][0]) + tuple(memory_orders[1][2:])
    x_aval = ShapedArray((ct.shape[0], o_t) + out_spatial, ct.dtype)

    def forward(x, w):
        return [_conv_as_gemm(x, w, (memory_orders[0], kernel_order), **forward_params)]
    closed = trace_to_jaxpr(forward, [x_aval, kernel.aval], "a strided convolution")
    x_ct, _ = ad.backward_pass(closed.jaxpr, closed.consts, [ad.UndefinedPrimal(x_aval), kernel], [ct])
    return ad.instantiate(x_ct)


compiler_rewrites[conv_general_dilated_p] = _conv_as_gemm
