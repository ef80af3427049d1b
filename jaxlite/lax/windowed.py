"""reduce_window: sum, max and min (pooling) primitives, with strides, padding and
dilations, and any other computation as a fold of strided slices of the padded operand.

Sum is linear; its transpose spreads each cotangent over its window, which is
a windowed sum of the stride-dilated, padded cotangent. Max and min
differentiate through their windows gathered as patches: the tangent of a
window's extremum is the tangent at its arg-extremum (shared between ties, as
reduce_max does), so the derivative is a gather, a linear primitive with a
scatter-add transpose.
"""
import functools
import itertools

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, NUMBER, as_operand, check_dtype
from jaxlite.lax.composites import padtype_to_pads
from jaxlite.lax.control_flow import scan
from jaxlite.lax.convolution import dilate_shape, pad_and_dilate, windows
from jaxlite.lax.elementwise import (add, convert_element_type, max as lax_max, min as lax_min,
                                     mul, select_n)
from jaxlite.lax.reductions import reduce_max_p, reduce_min_p
from jaxlite.lax.shapes import (broadcast_in_dim, broadcasted_iota, concatenate, full, pad, reshape,
                                slice)
from jaxlite.lax.slicing import GatherDimensionNumbers, dynamic_slice, gather
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching


def _lowest(dtype):
    if dtypes.is_inexact(dtype):
        return -np.inf
    if dtypes.is_bool(dtype):
        return False
    return dtypes.iinfo(dtype).min


def _highest(dtype):
    if dtypes.is_inexact(dtype):
        return np.inf
    if dtypes.is_bool(dtype):
        return True
    return dtypes.iinfo(dtype).max


def _out_shape(shape, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    in_shape = dilate_shape(shape, base_dilation)
    extent = dilate_shape(window_dimensions, window_dilation)
    return tuple(max(0, (n + lo + hi - e) // s + 1) if n + lo + hi >= e else 0
                 for n, e, s, (lo, hi) in zip(in_shape, extent, window_strides, padding))


def _reduce_window_aval(name, accepts):
    def rule(x, **params):
        check_dtype(name, x, accepts)
        if any(len(v) != x.ndim for v in params.values()):
            raise TypeError(f"{name}: window_dimensions, window_strides, padding and dilations "
                            f"need one entry per axis of the operand shape {x.shape}")
        return ShapedArray(_out_shape(x.shape, **params), x.dtype, x.weak_type)
    return rule


def _reduce_window_primitive(name, numpy_reduce, identity, accepts):
    primitive = Primitive(name)

    def impl(x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        padded = pad_and_dilate(x, padding, base_dilation, identity(x.dtype))
        patches = windows(padded, window_dimensions, window_strides, window_dilation)
        return numpy_reduce(patches, axis=tuple(range(x.ndim, 2 * x.ndim))).astype(x.dtype)
    primitive.def_impl(impl)
    primitive.def_abstract_eval(_reduce_window_aval(name, accepts))
    batching.batch_rules[primitive] = _batch_rule(primitive)
    return primitive


def _batch_rule(primitive):
    """The batch axis gets a window of one, stride and dilations one, no padding."""
    def rule(args, dims, padding, **params):
        (x,), (d,) = args, dims
        widened = {name: _insert(value, d, 1) for name, value in params.items()}
        return primitive.bind(x, padding=_insert(padding, d, (0, 0)), **widened), d
    return rule


def _insert(entries, position, value):
    return tuple(entries[:position]) + (value,) + tuple(entries[position:])


reduce_window_sum_p = _reduce_window_primitive("reduce_window_sum", np.sum, lambda dtype: 0, NUMBER)
fusion_rules.window_reduction(reduce_window_sum_p, "sum")
reduce_window_max_p = _reduce_window_primitive("reduce_window_max", np.max, _lowest, ANY)
fusion_rules.window_reduction(reduce_window_max_p, "max")
reduce_window_min_p = _reduce_window_primitive("reduce_window_min", np.min, _highest, ANY)
fusion_rules.window_reduction(reduce_window_min_p, "min")


def _reduce_window_sum_transpose(ct, x, window_dimensions, window_strides, padding, base_dilation,
                                 window_dilation):
    """Every input gathers the cotangents of the windows covering it: a windowed sum
    of the stride-dilated, padded cotangent, stepping by the base dilation."""
    in_shape = dilate_shape(x.aval.shape, base_dilation)
    extent = dilate_shape(window_dimensions, window_dilation)
    config = []
    for n, e, s, (lo, _), out in zip(in_shape, extent, window_strides, padding, ct.shape):
        before = e - lo - 1
        after = n + e - 1 - dilate_shape((out,), (s,))[0] - before
        config.append((before, after, s - 1))
    spread = pad(ct, convert_element_type(0, ct.dtype), config)
    ones = (1,) * x.aval.ndim
    return [reduce_window_sum_p.bind(spread, window_dimensions=window_dimensions,
                                     window_strides=base_dilation, padding=((0, 0),) * len(ones),
                                     base_dilation=ones, window_dilation=window_dilation)]


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _window_patches(x, fill, out_shape, window_dimensions, window_strides, padding, base_dilation,
                    window_dilation):
    """Every window of the dilated, padded x: shape out_shape + window_dimensions.

    One gather takes each window's whole (dilated) extent; a strided slice then
    keeps the positions the window dilation selects.
    """
    config = [(lo, hi, d - 1) for (lo, hi), d in zip(padding, base_dilation)]
    padded = pad(x, convert_element_type(fill, x.dtype), config)
    starts = [mul(broadcasted_iota(dtypes.int32, out_shape, axis), full(out_shape, stride, dtypes.int32))
              for axis, stride in enumerate(window_strides)]
    indices = concatenate([reshape(s, out_shape + (1,)) for s in starts], len(out_shape))
    n = x.ndim
    dnums = GatherDimensionNumbers(offset_dims=tuple(range(n, 2 * n)), collapsed_slice_dims=(),
                                   start_index_map=tuple(range(n)))
    extent = dilate_shape(window_dimensions, window_dilation)
    patches = gather(padded, indices, dnums, extent, mode="clip")
    return slice(patches, (0,) * patches.ndim, patches.shape, (1,) * n + tuple(window_dilation))


def _extremum_jvp(primitive, reduce_primitive, fill):
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, **params)
        x_patches = _window_patches(x, fill(x.dtype), out.shape, **params)
        t_patches = _window_patches(ad.instantiate(t), 0, out.shape, **params)
        window_axes = tuple(range(x.ndim, 2 * x.ndim))
        _, t_out = ad.jvp_rules[reduce_primitive]([x_patches], [t_patches], axes=window_axes)
        return out, t_out
    ad.jvp_rules[primitive] = rule


_extremum_jvp(reduce_window_max_p, reduce_max_p, _lowest)
_extremum_jvp(reduce_window_min_p, reduce_min_p, _highest)

_REDUCERS = {add: (reduce_window_sum_p, lambda dtype: 0), lax_max: (reduce_window_max_p, _lowest),
             lax_min: (reduce_window_min_p, _highest)}

# Windows of up to this many positions fold as unrolled strided slices, one fused
# elementwise kernel under jit; larger ones loop over their positions with a scan,
# so the traced program stays small.
_UNROLLED_POSITIONS = 64


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduce each window of operand (an array or a pytree of arrays) with computation, as
    lax.reduce_window.

    lax.add, lax.max or lax.min started at their identity are the pooling primitives;
    any other computation folds each window's elements in row-major order,
    acc = computation(acc, element), starting from init_value once per window;
    padding and base-dilation holes are skipped, as XLA does.
    """
    flat_ops, tree = tree_flatten(operand)
    flat_inits, init_tree = tree_flatten(init_value)
    if tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} vs. {init_tree}")
    if not flat_ops:
        raise ValueError("reduce_window must have at least one operand.")
    flat_ops = [as_operand(x) for x in flat_ops]
    params = _window_params(flat_ops[0].shape, window_dimensions, window_strides, padding,
                            base_dilation, window_dilation)
    monoid = _monoid_primitive(computation, flat_ops, flat_inits)
    if monoid is not None:
        return tree_unflatten(tree, [monoid.bind(flat_ops[0], **params)])
    inits = [_scalar_init(init, x.dtype) for init, x in zip(flat_inits, flat_ops)]
    return tree_unflatten(tree, _fold_windows(computation, tree, flat_ops, inits, params))


def _window_params(shape, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    ones = (1,) * len(window_dimensions)
    window_dimensions = tuple(window_dimensions)
    window_strides = tuple(window_strides or ones)
    window_dilation = tuple(window_dilation or ones)
    if len(window_dimensions) != len(shape):
        raise TypeError(f"reduce_window got the wrong number of window_dimensions for operand: "
                        f"got operand shape {shape} with window_dimensions {window_dimensions}.")
    if len(window_strides) != len(window_dimensions):
        raise TypeError(f"reduce_window got inconsistent window_strides and window_dimensions: "
                        f"got window_strides {window_strides} and window_dimensions {window_dimensions}.")
    if isinstance(padding, str):
        # JAX pads for "SAME" by the undilated operand's shape.
        padding = padtype_to_pads(shape, dilate_shape(window_dimensions, window_dilation),
                                  window_strides, padding)
    return dict(window_dimensions=window_dimensions, window_strides=window_strides,
                padding=tuple((int(lo), int(hi)) for lo, hi in padding),
                base_dilation=tuple(base_dilation or ones), window_dilation=window_dilation)


def _monoid_primitive(computation, flat_ops, flat_inits):
    """The pooling primitive for lax.add, max or min started at a concrete identity, else None."""
    if len(flat_ops) != 1 or computation not in _REDUCERS:
        return None
    init = flat_inits[0]
    if not (type(init) is Array or dtypes.is_python_scalar(init) or isinstance(init, (np.ndarray, np.generic))):
        return None
    primitive, identity = _REDUCERS[computation]
    init = np.asarray(init)
    return primitive if init.shape == () and init == identity(flat_ops[0].dtype) else None


def _scalar_init(init, dtype):
    init = as_operand(init)
    if init.dtype != dtype:
        raise TypeError(f"reduce_window got inconsistent dtypes for operands and init_values: "
                        f"got operand dtype {dtype} and init_value dtype {init.dtype}.")
    if init.shape != ():
        raise TypeError(f"reduce_window expected init_values to be scalars but init_values "
                        f"have shape {init.shape}.")
    return init


def _fold_windows(computation, tree, operands, inits, params):
    out_shape = _out_shape(operands[0].shape, **params)
    acc = [broadcast_in_dim(init, out_shape, ()) for init in inits]
    positions = list(itertools.product(*map(range, params["window_dimensions"])))
    if 0 in out_shape or not positions:
        return acc
    holes = [(d - 1) for d in params["base_dilation"]]
    padded = [pad(x, init, [(lo, hi, h) for (lo, hi), h in zip(params["padding"], holes)])
              for x, init in zip(operands, inits)]

    def combine(acc, elements, valid):
        out, out_tree = tree_flatten(computation(tree_unflatten(tree, acc), tree_unflatten(tree, elements)))
        if out_tree != tree:
            raise ValueError(f"reduce_window output must have the same tree structure as the "
                             f"operands {tree} vs. {out_tree}")
        return out if valid is None else [select_n(valid, a, o) for a, o in zip(acc, out)]

    starts = [tuple(p * d for p, d in zip(position, params["window_dilation"])) for position in positions]
    masks = [_valid_elements(start, operands[0].shape, out_shape, params) for start in starts]
    if len(positions) <= _UNROLLED_POSITIONS:
        for start, mask in zip(starts, masks):
            elements = [_strided_window_elements(x, start, out_shape, params["window_strides"]) for x in padded]
            acc = combine(acc, elements, None if mask.all() else mask)
        return acc
    return _scanned_fold(combine, acc, padded, starts, masks, out_shape, params["window_strides"])


def _valid_elements(start, in_shape, out_shape, params):
    """Which windows' element at `start` (in padded coordinates) is an operand element,
    not padding or a base-dilation hole: a constant of the output's shape."""
    per_axis = []
    for first, n, out, s, (lo, _), b in zip(start, in_shape, out_shape, params["window_strides"],
                                             params["padding"], params["base_dilation"]):
        position = first + s * np.arange(out) - lo
        valid = (position >= 0) & (position < dilate_shape((n,), (b,))[0]) & (position % b == 0)
        per_axis.append(valid.reshape([-1 if d == len(per_axis) else 1 for d in range(len(out_shape))]))
    return functools.reduce(np.logical_and, per_axis, np.ones(out_shape, bool))


def _strided_window_elements(x, start, out_shape, strides):
    limit = [first + (out - 1) * s + 1 for first, out, s in zip(start, out_shape, strides)]
    return slice(x, start, limit, strides)


def _scanned_fold(combine, acc, padded, starts, masks, out_shape, strides):
    span = [(out - 1) * s + 1 for out, s in zip(out_shape, strides)]

    def step(acc, position):
        start, mask = position
        elements = [slice(dynamic_slice(x, list(start), span), (0,) * len(span), span, strides)
                    for x in padded]
        return combine(acc, elements, mask), None
    starts = np.asarray(starts, np.int32).reshape(len(starts), len(span))
    return scan(step, acc, (starts, np.stack(masks)))[0]
