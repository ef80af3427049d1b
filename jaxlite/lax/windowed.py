"""reduce_window for sum and max (pooling), with strides and padding.

Sum is linear; its transpose spreads each cotangent over its window, which is
a windowed sum of the stride-dilated, padded cotangent. Max differentiates
through its windows gathered as patches: the tangent of a window's maximum is
the tangent at its argmax (shared between ties, as reduce_max does), so the
derivative is a gather, a linear primitive with a scatter-add transpose.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, NUMBER, as_operand, check_dtype
from jaxlite.lax.convolution import dilate_shape, pad_and_dilate, padding_pairs, windows
from jaxlite.lax.elementwise import add, convert_element_type, max as lax_max, mul
from jaxlite.lax.reductions import reduce_max_p
from jaxlite.lax.shapes import broadcasted_iota, concatenate, full, pad, reshape
from jaxlite.lax.slicing import GatherDimensionNumbers, gather
from jaxlite.transforms import ad, batching


def _lowest(dtype):
    if dtypes.is_float(dtype):
        return -np.inf
    if dtypes.is_bool(dtype):
        return False
    return np.iinfo(dtype).min


def _reduce_window_aval(name, accepts):
    def rule(x, window_dimensions, window_strides, padding):
        check_dtype(name, x, accepts)
        if not len(window_dimensions) == len(window_strides) == len(padding) == x.ndim:
            raise TypeError(f"{name}: window_dimensions, window_strides and padding need one "
                            f"entry per axis of the operand shape {x.shape}")
        shape = tuple(max(0, (n + lo + hi - k) // s + 1) if n + lo + hi >= k else 0
                      for n, k, s, (lo, hi) in zip(x.shape, window_dimensions, window_strides, padding))
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


def _reduce_window_primitive(name, numpy_reduce, fill, accepts):
    primitive = Primitive(name)

    def impl(x, window_dimensions, window_strides, padding):
        padded = pad_and_dilate(x, padding, (1,) * x.ndim, fill(x.dtype))
        patches = windows(padded, window_dimensions, window_strides, (1,) * x.ndim)
        return numpy_reduce(patches, axis=tuple(range(x.ndim, 2 * x.ndim))).astype(x.dtype)
    primitive.def_impl(impl)
    primitive.def_abstract_eval(_reduce_window_aval(name, accepts))
    batching.batch_rules[primitive] = _batch_rule(primitive)
    return primitive


def _batch_rule(primitive):
    """The batch axis gets a window of one, stride one and no padding."""
    def rule(args, dims, window_dimensions, window_strides, padding):
        (x,), (d,) = args, dims
        out = primitive.bind(x, window_dimensions=_insert(window_dimensions, d, 1),
                             window_strides=_insert(window_strides, d, 1),
                             padding=_insert(padding, d, (0, 0)))
        return out, d
    return rule


def _insert(entries, position, value):
    return tuple(entries[:position]) + (value,) + tuple(entries[position:])


reduce_window_sum_p = _reduce_window_primitive("reduce_window_sum", np.sum, lambda dtype: 0, NUMBER)
reduce_window_max_p = _reduce_window_primitive("reduce_window_max", np.max, _lowest, ANY)


def _reduce_window_sum_transpose(ct, x, window_dimensions, window_strides, padding):
    """Every input gathers the cotangents of the windows covering it."""
    in_shape = x.aval.shape
    config = []
    for n, k, s, (lo, _), out in zip(in_shape, window_dimensions, window_strides, padding, ct.shape):
        before = k - lo - 1
        after = n + k - 1 - dilate_shape((out,), (s,))[0] - before
        config.append((before, after, s - 1))
    spread = pad(ct, convert_element_type(0, ct.dtype), config)
    ones = (1,) * len(in_shape)
    return [reduce_window_sum_p.bind(spread, window_dimensions=tuple(window_dimensions),
                                     window_strides=ones, padding=((0, 0),) * len(in_shape))]


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _window_patches(x, fill, window_dimensions, window_strides, padding, out_shape):
    """Every window of the padded x as a gather: shape out_shape + window_dimensions."""
    padded = pad(x, convert_element_type(fill, x.dtype), [(lo, hi, 0) for lo, hi in padding])
    starts = [mul(broadcasted_iota(dtypes.int32, out_shape, axis), full(out_shape, stride, dtypes.int32))
              for axis, stride in enumerate(window_strides)]
    indices = concatenate([reshape(s, out_shape + (1,)) for s in starts], len(out_shape))
    n = x.ndim
    dnums = GatherDimensionNumbers(offset_dims=tuple(range(n, 2 * n)), collapsed_slice_dims=(),
                                   start_index_map=tuple(range(n)))
    return gather(padded, indices, dnums, window_dimensions, mode="clip")


def _reduce_window_max_jvp(primals, tangents, window_dimensions, window_strides, padding):
    (x,), (t,) = primals, tangents
    params = dict(window_dimensions=window_dimensions, window_strides=window_strides, padding=padding)
    out = reduce_window_max_p.bind(x, **params)
    x_patches = _window_patches(x, _lowest(x.dtype), out_shape=out.shape, **params)
    t_patches = _window_patches(ad.instantiate(t), 0, out_shape=out.shape, **params)
    window_axes = tuple(range(x.ndim, 2 * x.ndim))
    _, t_out = ad.jvp_rules[reduce_max_p]([x_patches], [t_patches], axes=window_axes)
    return out, t_out


ad.jvp_rules[reduce_window_max_p] = _reduce_window_max_jvp


_REDUCERS = {add: reduce_window_sum_p, lax_max: reduce_window_max_p}


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """Reduce each window with computation (lax.add or lax.max), as lax.reduce_window.

    init_value must be the computation's identity (0 for add, -inf or the dtype's
    minimum for max); base and window dilation are not supported.
    """
    operand = as_operand(operand)
    primitive = _REDUCERS.get(computation)
    if primitive is None:
        raise NotImplementedError("reduce_window supports computation=lax.add or lax.max")
    if any(d != 1 for d in (base_dilation or ())) or any(d != 1 for d in (window_dilation or ())):
        raise NotImplementedError("reduce_window with base or window dilation")
    identity = 0 if primitive is reduce_window_sum_p else _lowest(operand.dtype)
    if np.asarray(init_value).item() != identity:
        raise ValueError(f"reduce_window: init_value must be the identity {identity} of "
                         f"{primitive.name}, got {init_value}")
    window_dimensions, window_strides = tuple(window_dimensions), tuple(window_strides)
    pads = padding_pairs(padding, operand.shape, window_dimensions, window_strides)
    return primitive.bind(operand, window_dimensions=window_dimensions,
                          window_strides=window_strides, padding=pads)
