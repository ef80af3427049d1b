"""Reductions over static axes."""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray, canonicalize_axes, canonicalize_axis
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, INTEGRAL, NUMBER, as_operand, check_dtype
from jaxlite.lax.elementwise import convert_element_type, div, eq, mul, select_n
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
    primitive.def_impl(lambda x, axes: numpy_fn(x, axis=axes))
    primitive.def_abstract_eval(lambda x, axes: _reduced_aval(name, x, axes, accepts))
    _batch_reduction(primitive)
    return primitive


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


reduce_sum_p = _reduction_primitive("reduce_sum", np.sum, NUMBER)
reduce_sum = _binder(reduce_sum_p)
ad.deflinear(reduce_sum_p, lambda ct, x, axes: [_expand_reduced(ct, x.aval.shape, axes)])

reduce_prod_p = _reduction_primitive("reduce_prod", np.prod, NUMBER)
reduce_prod = _binder(reduce_prod_p)


def _product_of_others(x, axes):
    """For each element, the product of the other elements in its reduction group.

    Formed without dividing by zero: with one zero in a group only that position
    gets a nonzero value (the product of the rest); with two or more, all are 0.
    """
    from jaxlite.lax.elementwise import full_like
    is_zero = eq(x, full_like(x, 0))
    zeros_in_group = _expand_reduced(reduce_sum(convert_element_type(is_zero, dtypes.int32), axes),
                                     x.shape, axes)
    x_nonzero = select_n(is_zero, x, full_like(x, 1))
    product_nonzero = _expand_reduced(reduce_prod(x_nonzero, axes), x.shape, axes)
    no_zeros = eq(zeros_in_group, full_like(zeros_in_group, 0))
    one_zero = eq(zeros_in_group, full_like(zeros_in_group, 1))
    nothing = full_like(x, 0)
    at_zero = select_n(one_zero, nothing, product_nonzero)
    elsewhere = select_n(no_zeros, nothing, div(product_nonzero, x_nonzero))
    return select_n(is_zero, elsewhere, at_zero)


def _reduce_prod_jvp(primals, tangents, axes):
    (x,), (t,) = primals, tangents
    return reduce_prod(x, axes), reduce_sum(mul(t, _product_of_others(x, axes)), axes)


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


reduce_max_p = _reduction_primitive("reduce_max", np.max, ANY)
reduce_max = _binder(reduce_max_p)
_extremum_jvp(reduce_max_p)

reduce_min_p = _reduction_primitive("reduce_min", np.min, ANY)
reduce_min = _binder(reduce_min_p)
_extremum_jvp(reduce_min_p)

reduce_and_p = _reduction_primitive("reduce_and", np.all, INTEGRAL)
reduce_and = _binder(reduce_and_p)
ad.defjvp_zero(reduce_and_p)

reduce_or_p = _reduction_primitive("reduce_or", np.any, INTEGRAL)
reduce_or = _binder(reduce_or_p)
ad.defjvp_zero(reduce_or_p)


def _arg_extremum_aval(name, x, axes, index_dtype):
    check_dtype(name, x, ANY)
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
argmin_p, argmin = _arg_primitive("argmin", np.argmin)

