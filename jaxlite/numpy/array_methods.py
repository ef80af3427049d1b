"""Operators and methods shared by Array and Tracer, attached here so the core
does not depend on the NumPy-style API built above it."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.array import Array
from jaxlite.core.extended import ExtendedArray
from jaxlite.core.trace import Tracer
from jaxlite.numpy import (array_api, cumulative, indexing, joining, math_functions, products,
                           reductions,
                           shape_ops, sorting, ufuncs)


def _swap(fn):
    return lambda self, other: fn(other, self)


def _defer_to_others(fn):
    """Return NotImplemented for operands we do not know, so Python tries the other side."""
    from jaxlite.numpy.util import is_array_like

    def op(self, other):
        if not is_array_like(other):
            return NotImplemented
        return fn(self, other)
    return op


_BINARY = {
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "pow": ufuncs.power, "matmul": products.matmul, "and": ufuncs.bitwise_and,
    "or": ufuncs.bitwise_or, "xor": ufuncs.bitwise_xor,
    "lshift": ufuncs.left_shift, "rshift": ufuncs.right_shift,
}

_COMPARISONS = {
    "eq": ufuncs.equal, "ne": ufuncs.not_equal, "lt": ufuncs.less, "le": ufuncs.less_equal,
    "gt": ufuncs.greater, "ge": ufuncs.greater_equal,
}

_UNARY = {"neg": ufuncs.negative, "pos": ufuncs.positive, "abs": ufuncs.absolute,
          "invert": ufuncs.invert}


def _reshape_method(self, *shape, order="C"):
    newshape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return shape_ops.reshape(self, newshape, order)


def _transpose_method(self, *axes):
    axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
    return shape_ops.transpose(self, axes)


def _astype(self, dtype, copy=False, device=None):
    dtypes.check_user_dtype(dtype, "astype")
    return lax.convert_element_type(self, dtype)


def _view(self, dtype=None, type=None):
    """The same bytes read as `dtype`, as JAX's Array.view: a wider dtype takes whole groups of
    the last axis, a narrower one splits each entry along it (little-endian byte order). Built
    from bitcasts, shifts and an or-reduction of unsigned words, so jit runs it natively."""
    if type is not None:
        raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
        return self
    try:
        new = dtypes.canonicalize_dtype(dtypes.as_dtype(dtype))
    except TypeError as error:
        raise TypeError(f"data type {dtype!r} not understood in view") from error
    dtypes.check_user_dtype(dtype, "view")
    if new == self.dtype:
        return self
    if self.ndim == 0 and new.itemsize != self.dtype.itemsize:
        raise ValueError("view() of a 0d array is only supported if the itemsize is unchanged.")
    if new.itemsize > self.dtype.itemsize and self.shape[-1] * self.dtype.itemsize % new.itemsize:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of the total "
                         "size in bytes of the last axis of the array.")
    viewed = _from_words(_as_words(self), new)
    return lax.reshape(viewed, ()) if self.ndim == 0 else viewed


def _as_words(x):
    """x's bits as unsigned integers of its itemsize (a complex as its real and imaginary
    parts along a longer last axis, so no word is wider than a real dtype)."""
    if dtypes.is_complex(x.dtype):
        parts = shape_ops.stack([lax.real(x), lax.imag(x)], axis=-1)
        x = lax.reshape(parts, x.shape[:-1] + (2 * x.shape[-1],) if x.ndim else (2,))
    if dtypes.is_bool(x.dtype):
        return lax.convert_element_type(x, dtypes.uint8)
    return lax.bitcast_convert_type(x, f"u{x.dtype.itemsize}")


def _resized_words(words, size):
    """Unsigned words of `size` bytes holding the same bytes along the last axis."""
    old = words.dtype.itemsize
    if old == size:
        return words
    count, wide = (old // size, words.dtype) if old > size else (size // old, np.dtype(f"u{size}"))
    shifts = lax.mul(lax.broadcasted_iota(wide, (count,), 0), lax.full((count,), 8 * min(old, size), wide))
    *lead, last = words.shape
    if old > size:       # each word splits into `count` narrower ones, low bytes first
        spread = lax.broadcast_in_dim(words, (*lead, last, count), tuple(range(len(lead) + 1)))
        split = lax.shift_right_logical(spread, lax.broadcast_in_dim(shifts, spread.shape, (len(lead) + 1,)))
        return lax.reshape(lax.convert_element_type(split, f"u{size}"), (*lead, last * count))
    grouped = lax.convert_element_type(lax.reshape(words, (*lead, last // count, count)), wide)
    placed = lax.shift_left(grouped, lax.broadcast_in_dim(shifts, grouped.shape, (len(lead) + 1,)))
    return lax.reduce_or(placed, (len(lead) + 1,))


def _from_words(words, dtype):
    """Unsigned words read as `dtype` (a complex from pairs of its real parts)."""
    if dtypes.is_complex(dtype):
        parts = _from_words(words, dtypes.real_dtype(dtype))
        pairs = lax.reshape(parts, parts.shape[:-1] + (parts.shape[-1] // 2, 2))
        return lax.complex(pairs[..., 0], pairs[..., 1])
    words = _resized_words(words, dtype.itemsize)
    if dtypes.is_bool(dtype):
        return lax.ne(words, lax.full_like(words, 0))
    return lax.bitcast_convert_type(words, dtype)


def _python_round(self, ndigits=None):
    """round(x): as JAX, an integer array without ndigits, else rounded to ndigits decimals."""
    if ndigits is None:
        return lax.convert_element_type(ufuncs.round(self), dtypes.default_int_dtype())
    return ufuncs.round(self, ndigits)


def _without_out(fn):
    """The method form of a jnp function, taking JAX's `out=None` (arrays are immutable:
    no other value is accepted)."""
    def method(self, *args, out=None, **kwargs):
        if out is not None:
            raise NotImplementedError(f"The 'out' argument to {fn.__name__} is not supported.")
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    return method


def _tracer_iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


def _setitem(self, index, value):
    raise TypeError("jaxlite arrays are immutable and do not support in-place item "
                    "assignment. Instead of x[idx] = y, write x = x.at[idx].set(y) "
                    "(or .add, .multiply, .min, .max).")


_METHODS = {
    "reshape": _reshape_method, "transpose": _transpose_method, "astype": _astype, "view": _view,
    "sum": reductions.sum, "prod": reductions.prod, "mean": reductions.mean,
    "max": reductions.max, "min": reductions.min, "all": reductions.all, "any": reductions.any,
    "var": reductions.var, "std": reductions.std,
    "argmax": reductions.argmax, "argmin": reductions.argmin,
    "squeeze": shape_ops.squeeze, "ravel": shape_ops.ravel, "flatten": shape_ops.ravel,
    "swapaxes": shape_ops.swapaxes, "dot": products.dot, "round": ufuncs.round,
    "__getitem__": indexing.getitem, "__setitem__": _setitem,
    "T": property(lambda self: shape_ops.transpose(self)),
    "mT": property(lambda self: shape_ops.swapaxes(self, -1, -2)),
    "at": property(indexing.IndexUpdateHelper),
    "cumsum": cumulative.cumsum, "cumprod": cumulative.cumprod, "clip": math_functions.clip,
    "repeat": joining.repeat, "trace": products.trace, "conj": math_functions.conj,
    "conjugate": math_functions.conj, "real": property(math_functions.real),
    "imag": property(math_functions.imag),
    "sort": sorting.sort, "argsort": sorting.argsort, "searchsorted": sorting.searchsorted,
    "nonzero": sorting.nonzero, "take": indexing.take, "__round__": _python_round,
}


# JAX's methods take `out=None` where NumPy's have an output argument.
for _name in ("sum", "prod", "mean", "max", "min", "all", "any", "var", "std", "argmax", "argmin",
              "round", "cumsum", "cumprod", "trace", "take"):
    _METHODS[_name] = _without_out(_METHODS[_name])


def install():
    # Typed key arrays get the operators and methods too (their own fast indexing and reshaping
    # come first), so they behave, and arithmetic on them raises, as on traced keys.
    for cls in (Array, Tracer, ExtendedArray):
        for name, fn in _BINARY.items():
            setattr(cls, f"__{name}__", _defer_to_others(fn))
            setattr(cls, f"__r{name}__", _defer_to_others(_swap(fn)))
        for name, fn in _COMPARISONS.items():
            setattr(cls, f"__{name}__", _defer_to_others(fn))
        for name, fn in _UNARY.items():
            setattr(cls, f"__{name}__", fn)
        for name, fn in _METHODS.items():
            setattr(cls, name, fn)
    for name, attribute in array_api.ARRAY_METHODS.items():
        setattr(Array, name, attribute)
    Tracer.__iter__ = _tracer_iter
