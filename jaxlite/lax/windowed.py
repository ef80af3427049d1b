"""reduce_window for sum, max and min (pooling), with strides, padding and dilations.

Sum is linear; its transpose spreads each cotangent over its window, which is
a windowed sum of the stride-dilated, padded cotangent. Max and min
differentiate through their windows gathered as patches: the tangent of a
window's extremum is the tangent at its arg-extremum (shared between ties, as
reduce_max does), so the derivative is a gather, a linear primitive with a
scatter-add transpose.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, NUMBER, as_operand, check_dtype
from jaxlite.lax.convolution import dilate_shape, pad_and_dilate, padding_pairs, windows
from jaxlite.lax.elementwise import (add, convert_element_type, max as lax_max, min as lax_min,
                                     mul)
from jaxlite.lax.reductions import reduce_max_p, reduce_min_p
from jaxlite.lax.shapes import broadcasted_iota, concatenate, full, pad, reshape, slice
from jaxlite.lax.slicing import GatherDimensionNumbers, gather
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


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """Reduce each window with computation (lax.add, lax.max or lax.min), as lax.reduce_window.

    init_value must be the computation's identity (0 for add, -inf or the dtype's
    minimum for max, +inf or the maximum for min).
    """
    operand = as_operand(operand)
    if computation not in _REDUCERS:
        raise NotImplementedError("reduce_window supports computation=lax.add, lax.max or lax.min")
    primitive, identity = _REDUCERS[computation]
    if np.asarray(init_value).item() != identity(operand.dtype):
        raise ValueError(f"reduce_window: init_value must be the identity {identity(operand.dtype)} "
                         f"of {primitive.name}, got {init_value}")
    ones = (1,) * operand.ndim
    base_dilation = tuple(base_dilation or ones)
    window_dilation = tuple(window_dilation or ones)
    window_dimensions, window_strides = tuple(window_dimensions), tuple(window_strides)
    pads = padding_pairs(padding, dilate_shape(operand.shape, base_dilation),
                         dilate_shape(window_dimensions, window_dilation), window_strides)
    return primitive.bind(operand, window_dimensions=window_dimensions, window_strides=window_strides,
                          padding=pads, base_dilation=base_dilation, window_dilation=window_dilation)
