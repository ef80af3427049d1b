"""Reductions over static axes."""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray, canonicalize_axes, canonicalize_axis
from jaxlite.core.ir import print_params_jaxlite_omits
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, INTEGRAL, NUMBER, ORDERED, as_operand, check_dtype, flushing_subnormals
from jaxlite.lax.elementwise import convert_element_type, div, eq, mul
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching


def _reduced_aval(name, x, axes, accepts):
    check_dtype(name, x, accepts)
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _batch_reduction(primitive):
    """The batch dimension is never reduced: renumber the axes around it."""
    def rule(args, dims, axes, **params):
        (x,), (d,) = args, dims
        axes = tuple(a + (a >= d) for a in axes)
        out_dim = d - sum(a < d for a in axes)
        return primitive.bind(x, axes=axes, **params), out_dim
    batching.batch_rules[primitive] = rule


def _reduction_primitive(name, numpy_fn, accepts):
    primitive = Primitive(name)
    primitive.def_impl(flushing_subnormals(lambda x, axes: numpy_fn(x, axis=axes)))
    primitive.def_abstract_eval(lambda x, axes: _reduced_aval(name, x, axes, accepts))
    _batch_reduction(primitive)
    return primitive


def _accumulating_in_float32(numpy_fn):
    """A sum or product of 16-bit floats accumulated in float32 and rounded once, as compiled
    code does (and XLA, for jnp.sum and jnp.prod); numpy would round every partial result."""
    def reduce(x, axis):
        if dtypes.is_16bit_float(x.dtype):
            return numpy_fn(x.astype(np.float32), axis=axis).astype(x.dtype)
        return numpy_fn(x, axis=axis)
    return reduce


def _binder(primitive):
    def reduce(x, axes):
        x = as_operand(x)
        return primitive.bind(x, axes=canonicalize_axes(axes, x.ndim, "axes"))
    reduce.__name__ = primitive.name
    return reduce


def _expand_reduced(x, shape, axes):
    """Broadcast a reduced result back to the operand's shape."""
    from jaxlite.lax.shapes import broadcast_in_dim
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return broadcast_in_dim(x, shape, kept)


reduce_sum_p = _reduction_primitive("reduce_sum", _accumulating_in_float32(np.sum), NUMBER)
print_params_jaxlite_omits(reduce_sum_p, out_sharding=None)
fusion_rules.reduction(reduce_sum_p, "sum")
reduce_sum = _binder(reduce_sum_p)
ad.deflinear(reduce_sum_p, lambda ct, x, axes: [_expand_reduced(ct, x.aval.shape, axes)])

reduce_prod_p = _reduction_primitive("reduce_prod", _accumulating_in_float32(np.prod), NUMBER)
fusion_rules.reduction(reduce_prod_p, "prod")
reduce_prod = _binder(reduce_prod_p)


def pairwise_tree(combine, operands, identities, axis=-1):
    """The reduction over `axis` of `operands` (arrays of one shape, reduced together by
    combine(list, list) -> list, associative) as rounds of pairwise combinations of the
    first half with the second; a round of odd length is padded with `identities` (a scalar
    for each operand), and an empty axis gives them.

    Built from the combination alone, a product's derivatives are right to every order,
    zeros included; a product of the others formed by division needs a special case at
    zeros, which has no derivative of its own. And under jit, complex products and extrema
    are such rounds of elementwise kernels (lower/complex_split.py)."""
    from jaxlite.lax.shapes import pad, squeeze, slice_in_dim
    operands = list(operands)
    axis = axis % operands[0].ndim

    def padded(xs):
        one_more = [(0, 0, 0)] * xs[0].ndim
        one_more[axis] = (0, 1, 0)
        return [pad(x, convert_element_type(fill, x.dtype), one_more) for x, fill in zip(xs, identities)]
    if operands[0].shape[axis] == 0:
        operands = padded(operands)
    while operands[0].shape[axis] > 1:
        if operands[0].shape[axis] % 2:
            operands = padded(operands)
        half = operands[0].shape[axis] // 2
        operands = combine([slice_in_dim(x, 0, half, axis=axis) for x in operands],
                           [slice_in_dim(x, half, 2 * half, axis=axis) for x in operands])
    return [squeeze(x, (axis,)) for x in operands]


def grouped_last(x, axes):
    """x with the axes `axes` moved last and merged into one (the kept axes in order before)."""
    from jaxlite.lax.shapes import reshape, transpose
    kept = [d for d in range(x.ndim) if d not in axes]
    size = int(np.prod([x.shape[d] for d in axes]))
    return reshape(transpose(x, tuple(kept) + tuple(axes)), tuple(x.shape[d] for d in kept) + (size,))


def _reduce_prod_jvp(primals, tangents, axes):
    """The JVP of the product tree over the reduced axes (as JAX does)."""
    def product(x):
        return pairwise_tree(lambda a, b: [mul(a[0], b[0])], [grouped_last(x, axes)], [1])

    _, (t_out,) = ad.jvp_flat(product, primals, tangents)
    return reduce_prod_p.bind(*primals, axes=axes), t_out


ad.jvp_rules[reduce_prod_p] = _reduce_prod_jvp


def _extremum_jvp(primitive):
    """The tangent at the extremum, shared equally between tied locations."""
    def rule(primals, tangents, axes):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axes=axes)
        location = convert_element_type(eq(x, _expand_reduced(out, x.shape, axes)), x.dtype)
        counts = reduce_sum(location, axes)
        return out, div(reduce_sum(mul(t, location), axes), counts)
    ad.jvp_rules[primitive] = rule


def _extremum_with_ordered_zeros(numpy_fn, preferred_zero_is_negative):
    """np.max/np.min, where a zero extremum is +0 for max unless every zero is -0 (and the
    mirror for min), as XLA orders signed zeros."""
    def impl(x, axis):
        out = numpy_fn(x, axis=axis)
        if not dtypes.is_float(x.dtype) or not np.any(out == 0):
            return np.multiply(out, np.ones((), x.dtype)) if dtypes.is_float(x.dtype) else out
        preferred = np.any((x == 0) & (np.signbit(x) == preferred_zero_is_negative), axis=axis)
        sign = -1 if preferred_zero_is_negative else 1
        zero = np.where(preferred, sign * 0.0, -sign * 0.0).astype(x.dtype)
        return np.where(out == 0, zero, out).astype(x.dtype)
    return impl


reduce_max_p = _reduction_primitive("reduce_max", _extremum_with_ordered_zeros(np.max, False), ANY)
fusion_rules.reduction(reduce_max_p, "max")
reduce_max = _binder(reduce_max_p)
_extremum_jvp(reduce_max_p)

reduce_min_p = _reduction_primitive("reduce_min", _extremum_with_ordered_zeros(np.min, True), ANY)
fusion_rules.reduction(reduce_min_p, "min")
reduce_min = _binder(reduce_min_p)
_extremum_jvp(reduce_min_p)

# Bitwise on integers, as JAX's (on booleans that is "all"/"any").
reduce_and_p = _reduction_primitive("reduce_and", np.bitwise_and.reduce, INTEGRAL)
fusion_rules.reduction(reduce_and_p, "and")
reduce_and = _binder(reduce_and_p)
ad.defjvp_zero(reduce_and_p)

reduce_or_p = _reduction_primitive("reduce_or", np.bitwise_or.reduce, INTEGRAL)
fusion_rules.reduction(reduce_or_p, "or")
reduce_or = _binder(reduce_or_p)
ad.defjvp_zero(reduce_or_p)

reduce_xor_p = _reduction_primitive("reduce_xor", np.bitwise_xor.reduce, INTEGRAL)
fusion_rules.reduction(reduce_xor_p, "xor")
reduce_xor = _binder(reduce_xor_p)
ad.defjvp_zero(reduce_xor_p)


def _arg_extremum_aval(name, x, axes, index_dtype):
    check_dtype(name, x, ORDERED)     # complex values have no order to take the arg of, as in JAX
    if len(axes) != 1:
        raise ValueError(f"{name} reduces exactly one axis, got axes={axes}")
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return ShapedArray(shape, index_dtype)


def _arg_extremum(numpy_fn, x, axes, index_dtype):
    # NaN counts as the extremum, as in numpy and XLA.
    return numpy_fn(x, axis=axes[0]).astype(index_dtype)


def _arg_primitive(name, numpy_fn):
    primitive = Primitive(name)
    primitive.def_impl(lambda x, axes, index_dtype: _arg_extremum(numpy_fn, x, axes, index_dtype))
    primitive.def_abstract_eval(lambda x, axes, index_dtype: _arg_extremum_aval(name, x, axes, index_dtype))
    _batch_reduction(primitive)
    ad.defjvp_zero(primitive)

    def bind(x, axis, index_dtype=dtypes.int32):
        x = as_operand(x)
        return primitive.bind(x, axes=(canonicalize_axis(axis, x.ndim),),
                              index_dtype=dtypes.canonicalize_dtype(index_dtype))
    bind.__name__ = name
    return primitive, bind


argmax_p, argmax = _arg_primitive("argmax", np.argmax)
fusion_rules.reduction(argmax_p, "argmax")
argmin_p, argmin = _arg_primitive("argmin", np.argmin)
fusion_rules.reduction(argmin_p, "argmin")

