"""Reductions with NumPy's axis, keepdims, initial and where arguments."""
import builtins

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axes
from jaxlite.lax.base import as_operand
from jaxlite.numpy.util import broadcast_to, check_arraylike, promote_and_broadcast


def check_no_out(name, out):
    """JAX's arrays are immutable: the NumPy `out=` argument exists only to be refused."""
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


def _prepare(name, a, axis):
    """The operand of a reduction, strongly typed: JAX's reductions of Python scalars or weak
    arrays give strong results (jnp.max(2.5) is a float32, not a weak one)."""
    check_arraylike(name, a)
    (a,) = promote_and_broadcast(name, a)
    return lax.convert_element_type(a, a.dtype), canonicalize_axes(axis, a.ndim)


def _keep(result, shape, axes, keepdims):
    if not keepdims:
        return result
    return lax.reshape(result, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _masked(a, where, fill):
    if where is None:
        return a
    mask = broadcast_to(promote_and_broadcast("where", where)[0], a.shape)
    return lax.select_n(mask, lax.full_like(a, fill), a)


def sum_dtype(a, dtype):
    """The accumulation dtype of sum and prod: booleans and narrower integers widen to the
    default (unsigned) integer, as in JAX."""
    if dtype is not None:
        return dtypes.canonicalize_dtype(dtype)
    if dtypes.is_bool(a.dtype):
        return dtypes.default_int_dtype()
    if dtypes.is_int(a.dtype) and a.dtype.itemsize < dtypes.default_int_dtype().itemsize:
        unsigned = dtypes.canonicalize_dtype(dtypes.uint64)
        return unsigned if dtypes.is_unsigned(a.dtype) else dtypes.default_int_dtype()
    return a.dtype


def _accumulation(name, reduce, combine, identity):
    """sum or prod: masked entries count as the identity; `initial` joins the result."""
    def accumulate(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
                   promote_integers=True):
        check_no_out(name, out)
        a, axes = _prepare(name, a, axis)
        if promote_integers or dtype is not None or dtypes.is_bool(a.dtype):
            dtype = sum_dtype(a, dtype)
        a = lax.convert_element_type(_masked(a, where, identity), dtype or a.dtype)
        result = _rounded_once(reduce, a, axes)
        if initial is not None:
            result = combine(result, initial)
        return _keep(result, a.shape, axes, keepdims)
    accumulate.__name__ = accumulate.__qualname__ = name
    return accumulate


def _rounded_once(reduce, a, axes):
    """16-bit floats accumulate in float32 and are rounded once, as JAX's jnp does (jit's
    float16 sums accumulated in float16: 17 terms were an ulp off)."""
    if not dtypes.is_16bit_float(a.dtype):
        return reduce(a, axes)
    return lax.convert_element_type(reduce(lax.convert_element_type(a, dtypes.float32), axes), a.dtype)


sum = _accumulation("sum", lax.reduce_sum, lax.add, 0)
prod = _accumulation("prod", lax.reduce_prod, lax.mul, 1)


def _extremum(name, reducer, combine, a, axis, keepdims, initial, where):
    a, axes = _prepare(name, a, axis)
    if where is not None:
        if initial is None:
            raise ValueError(f"reduction operation {name} with where= needs an initial value")
        a = _masked(a, where, initial)
    if initial is None and builtins.any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    result = reducer(a, axes)
    if initial is not None:
        result = combine(result, lax.convert_element_type(initial, result.dtype))
    return _keep(result, a.shape, axes, keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    check_no_out("max", out)
    return _extremum("max", lax.reduce_max, lax.max, a, axis, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    check_no_out("min", out)
    return _extremum("min", lax.reduce_min, lax.min, a, axis, keepdims, initial, where)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    check_no_out("all", out)
    a, axes = _prepare("all", a, axis)
    a = _masked(_to_bool(a), where, True)
    return _keep(lax.reduce_and(a, axes), a.shape, axes, keepdims)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    check_no_out("any", out)
    a, axes = _prepare("any", a, axis)
    a = _masked(_to_bool(a), where, False)
    return _keep(lax.reduce_or(a, axes), a.shape, axes, keepdims)


def _to_bool(a):
    return a if dtypes.is_bool(a.dtype) else lax.ne(a, lax.full_like(a, 0))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    check_no_out("mean", out)
    a, axes = _prepare("mean", a, axis)
    dtype = _float_dtype(a, dtype)
    if dtypes.is_16bit_float(dtype):      # as JAX: summed and divided in float32, rounded once
        return lax.convert_element_type(mean(lax.convert_element_type(a, dtypes.float32), axes, keepdims=keepdims,
                                             where=where), dtype)
    total = sum(lax.convert_element_type(a, dtype), axes, keepdims=keepdims, where=where)
    return lax.div(total, _count(a, axes, where, keepdims, total.dtype))


def _degrees_of_freedom(ddof, correction):
    """The array API's `correction=` is numpy's `ddof=` by another name; not both."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


_mean = mean     # var's numpy-named parameter `mean` hides the function inside it


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """The variance; `mean`, when given, is used instead of a's mean (it must broadcast
    against the keepdims=True shape, as in numpy and JAX)."""
    check_no_out("var", out)
    ddof = _degrees_of_freedom(ddof, correction)
    a, axes = _prepare("var", a, axis)
    dtype_out = _float_dtype(a, dtype)
    center = _mean(a, axes, dtype=dtype, keepdims=True, where=where) if mean is None else \
        lax.convert_element_type(promote_and_broadcast("var", mean)[0], dtype_out)
    # lax.sub does not broadcast: the kept unit axes of the mean must be widened.
    centered = lax.sub(lax.convert_element_type(a, dtype_out), broadcast_to(center, a.shape))
    squares = _abs_squared(centered)
    total = sum(squares, axes, keepdims=keepdims, where=where)
    count = _count(a, axes, where, keepdims, total.dtype)
    return lax.div(total, lax.sub(count, lax.convert_element_type(ddof, total.dtype)))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    check_no_out("std", out)
    return lax.sqrt(var(a, axis, dtype, ddof=_degrees_of_freedom(ddof, correction),
                        keepdims=keepdims, where=where, mean=mean))


def _abs_squared(x):
    """|x|^2, real for complex x (a complex variance is real, as in NumPy and JAX)."""
    if dtypes.is_complex(x.dtype):
        return lax.add(lax.square(lax.real(x)), lax.square(lax.imag(x)))
    return lax.square(x)


def _float_dtype(a, dtype):
    if dtype is not None:
        return dtypes.canonicalize_dtype(dtype)
    return dtypes.to_inexact_dtype(a.dtype)


def _count(a, axes, where, keepdims, dtype):
    """How many elements each reduction sees; a static count is a constant (a literal)."""
    if where is None:
        count = 1
        for i in axes:
            count *= a.shape[i]
        return as_operand(float(count), dtype)
    mask = broadcast_to(promote_and_broadcast("where", where)[0], a.shape)
    return sum(mask, axes, dtype=dtype, keepdims=keepdims)


def _arg(name, lax_fn, a, axis, keepdims):
    keepdims = bool(keepdims)
    check_arraylike(name, a)
    (a,) = promote_and_broadcast(name, a)
    if axis is None:
        flat = lax.reshape(a, (a.size,))
        result = lax_fn(flat, 0, dtypes.default_int_dtype())
        return lax.reshape(result, (1,) * a.ndim) if keepdims else result
    axes = canonicalize_axes(axis, a.ndim)
    if a.shape[axes[0]] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    return _keep(lax_fn(a, axes[0], dtypes.default_int_dtype()), a.shape, axes, keepdims)


def argmax(a, axis=None, out=None, keepdims=None):
    check_no_out("argmax", out)
    return _arg("argmax", lax.argmax, a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
    check_no_out("argmin", out)
    return _arg("argmin", lax.argmin, a, axis, keepdims)
