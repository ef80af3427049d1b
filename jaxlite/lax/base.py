"""Shared pieces for declaring primitives: operand preparation and the common
primitive shapes (unary and n-ary elementwise), each registering its abstract
evaluation and batching rule in one call.
"""
import operator

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.primitive import Primitive
from jaxlite.transforms import batching

FLOAT = "floating-point"
INEXACT = "floating-point or complex"
COMPLEX = "complex"
NUMBER = "numeric"
REAL = "integer or floating-point"
ORDERED = "integer, floating-point or boolean"
INTEGER = "integer"
INTEGRAL = "integer or boolean"
ANY = "any"

_ACCEPTS = {
    FLOAT: dtypes.is_float,
    INEXACT: dtypes.is_inexact,
    COMPLEX: dtypes.is_complex,
    NUMBER: lambda d: dtypes.is_inexact(d) or dtypes.is_int(d),
    REAL: lambda d: dtypes.is_float(d) or dtypes.is_int(d),
    ORDERED: lambda d: not dtypes.is_complex(d),
    INTEGER: dtypes.is_int,
    INTEGRAL: lambda d: dtypes.is_int(d) or dtypes.is_bool(d),
    ANY: lambda d: True,
}


def check_dtype(name, aval, accepts, position="argument"):
    try:
        accepted = _ACCEPTS[accepts](aval.dtype)
    except TypeError:   # an extended dtype (typed keys): no arithmetic, as in JAX
        accepted = accepts == ANY
    if not accepted:
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name} for its {position}; "
                        f"it needs a {accepts} dtype")


def as_operand(x, dtype=None):
    """Prepare one primitive operand: Python scalars become weakly typed arrays (of
    `dtype` when given), numpy values Arrays of their canonical dtype."""
    if dtypes.is_python_scalar(x) and dtype is not None:
        return Array(dtypes.scalar_to_numpy(x, dtype), dtypes.can_be_weak(dtype))
    if dtypes.is_python_scalar(x) or isinstance(x, (np.ndarray, np.generic)):
        return as_array_argument(x)
    if isinstance(x, (list, tuple)):
        raise TypeError(f"lax operations take arrays, not {type(x).__name__}s; "
                        "convert with jnp.asarray first")
    return x


def as_operands(*args):
    """Operands for an elementwise primitive: a Python scalar is a weakly typed array of its
    default dtype (int32, float32, complex64, bool), as in JAX, so the primitive refuses a mix
    of dtypes as JAX's lax does: lax.add(float32_array, 1.0) is float32, lax.add(float32_array, 1),
    lax.add(float16_array, 1.0), lax.add(complex64_array, 1.0) and lax.add(1, 1.0) raise
    TypeError (jnp.add promotes)."""
    return [as_operand(a) for a in args]


def scalar_like(x, value):
    """`value` as a weakly typed scalar of x's dtype: the constants in jaxlite's own rules,
    which lax ops would refuse as Python scalars of another dtype."""
    return as_operand(value, x.dtype)


def elementwise_shape(name, avals):
    """Elementwise operands share one shape; rank-0 operands stand for any shape."""
    shapes = {a.shape for a in avals if a.ndim > 0}
    if len(shapes) > 1:
        shown = ", ".join(str(a.shape) for a in avals)
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {shown}")
    return shapes.pop() if shapes else ()


# The jnp function a mixed-dtype error points to, for the binary primitives JAX names one for.
_JNP_EQUIVALENTS = {"add": "add", "atan2": "arctan2", "div": "divide", "eq": "equal", "max": "maximum",
                    "min": "minimum", "mul": "multiply", "ne": "not_equal", "nextafter": "nextafter",
                    "pow": "float_power", "sub": "subtract", "shift_left": "left_shift",
                    "shift_right_logical": "right_shift", "shift_right_arithmetic": "right_shift"}


def elementwise_aval(name, avals, accepts, out_dtype=None):
    for position, aval in enumerate(avals):
        check_dtype(name, aval, accepts, f"argument {position}")
    if len({a.dtype for a in avals}) > 1:
        shown = ", ".join(a.dtype.name for a in avals)
        tip = _JNP_EQUIVALENTS.get(name)
        tip = "" if tip is None else (f" (Tip: jnp.{tip} is a similar function that does automatic type "
                                      "promotion on inputs).")
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {shown}.{tip}")
    dtype = avals[0].dtype if out_dtype is None else out_dtype
    dtype = dtype(avals[0].dtype) if callable(dtype) else dtype
    # As JAX's: weak when every operand is, whatever the result dtype (a comparison of Python
    # scalars is a weak bool, which promotes as bool does).
    weak = all(a.weak_type for a in avals)
    return ShapedArray(elementwise_shape(name, avals), dtype, weak)


def unary_primitive(name, numpy_fn, accepts, subnormals_as_zero=False, out_dtype=None, underflows=False):
    """`subnormals_as_zero`: eager reads float32/bfloat16/float64 subnormal inputs as signed
    zeros, as compiled code does (its entry point sets DAZ, as XLA:CPU's does), for the
    functions whose value at a subnormal is far from their value at zero (log, sqrt, floor,
    sign, lgamma, ...). The others see subnormals as they are in both: bit operations
    (abs, neg), and functions equal to x near 0 that JAX passes them through (sin, tanh).
    `underflows`: the function of normal inputs can be subnormal (exp(-100)); eager runs it
    with FTZ/DAZ set, so that result is a zero, as compiled code and JAX give, eager and jit."""
    if underflows:
        numpy_fn = flushing_subnormals(numpy_fn)
    primitive = Primitive(name)
    primitive.def_impl(_reading_subnormals_as_zero(numpy_fn) if subnormals_as_zero else numpy_fn)
    primitive.def_abstract_eval(lambda x, **params: elementwise_aval(name, [x], accepts, out_dtype))
    batching.vectorized_rule(primitive)
    return primitive


# Float dtypes whose subnormals DAZ reads as zeros -> their smallest normal. float16's are
# float32 normals once widened. bfloat16 joins when ml_dtypes is loaded (no value has it before).
_FLUSHED_FLOATS = {np.dtype(t): np.finfo(t).tiny for t in (np.float32, np.float64)}


def _flushed_float_tiny(dtype):
    tiny = _FLUSHED_FLOATS.get(dtype)
    if tiny is None and dtypes.is_bfloat16(dtype):
        tiny = _FLUSHED_FLOATS[dtype] = dtypes.finfo(dtype).tiny
    return tiny


def _reading_subnormals_as_zero(numpy_fn):
    def impl(x, **params):
        return numpy_fn(subnormals_flushed(x), **params)
    return impl


def subnormals_flushed(x):
    """x with its subnormals as signed zeros (float32/float64/bfloat16; others unchanged), as
    FTZ/DAZ make compiled code read and write them."""
    tiny = _flushed_float_tiny(x.dtype)
    if tiny is not None and x.size and _may_hold_subnormals(x, tiny):
        magnitude = np.abs(x)
        if magnitude.min() < tiny:                # zeros, or subnormals
            subnormal = (magnitude < tiny) & (magnitude > 0)
            if subnormal.any():
                x = np.where(subnormal, np.copysign(np.zeros((), x.dtype), x), x).astype(x.dtype)
    return x


def flushed_below(dtype):
    """The smallest normal of a dtype whose subnormals compiled code flushes, else None."""
    tiny = _flushed_float_tiny(np.dtype(dtype))
    return None if tiny is None else float(tiny)


def smallest_nonzero_magnitude(x):
    """min |x| over x's nonzero non-NaN entries (inf when there are none), as a Python float, for a
    float32/float64/bfloat16 x. Scans the bit patterns doubled (the sign shifted out) less two,
    so that zeros wrap to the largest, in blocks that stay in cache: |x| and a masked min over
    1e7 float32 cost 53 ms (a temporary of x's size), this 7 ms (a float32 BLAS dot 1.4)."""
    bits = x.reshape(-1).view(np.dtype(f"u{x.dtype.itemsize}"))
    block = np.empty(min(bits.size, _SCAN_BLOCK), bits.dtype)
    smallest = np.iinfo(bits.dtype).max
    for start in range(0, bits.size, _SCAN_BLOCK):
        chunk = block[:min(_SCAN_BLOCK, bits.size - start)]
        np.left_shift(bits[start:start + _SCAN_BLOCK], 1, out=chunk)
        np.subtract(chunk, 2, out=chunk, casting="unsafe")
        smallest = min(smallest, chunk.min())
    if smallest == np.iinfo(bits.dtype).max - 1:
        return np.inf                                           # zeros only
    value = float(np.asarray((smallest + 2) >> 1, bits.dtype).view(x.dtype))
    return np.inf if np.isnan(value) else value                 # NaNs are no magnitudes


_SCAN_BLOCK = 1 << 15


# Complex values are pairs of these floats to the hardware.
_FLOAT_MODE_DTYPES = frozenset(_FLUSHED_FLOATS) | {np.dtype(np.complex64), np.dtype(np.complex128)}


def _in_float_mode(operand):
    dtype = getattr(operand, "dtype", None)
    return dtype in _FLOAT_MODE_DTYPES or dtypes.is_bfloat16(dtype)


def flushing_subnormals(numpy_fn):
    """numpy_fn on float32/float64/bfloat16 (and complex) operands run as compiled code runs (and XLA:CPU,
    eager and jit): subnormal operands and results flushed to signed zeros (FTZ/DAZ set in
    MXCSR, lower/float_mode.py). float16 needs none: its subnormals are float32 normals."""
    flushed = []

    def impl(*operands, **params):
        if not any(_in_float_mode(x) for x in operands):
            return numpy_fn(*operands, **params)
        if not flushed:
            from jaxlite.lower.float_mode import flushing_subnormals as in_float_mode
            flushed.append(in_float_mode(numpy_fn))
        return flushed[0](*operands, **params)
    return impl


def _may_hold_subnormals(x, tiny):
    """False when x's range shows there are none: the usual inputs of log, sqrt, lgamma are all
    positive normals, and a min or max costs a tenth of the full check (no temporary array).
    Measured on 1M float32 (this shared machine, noisy): log 1.05 ms -> 1.2 ms with positive
    inputs; floor of mixed signs 1.1 ms -> 1.9 ms (|x| and its min)."""
    return not (x.min() >= tiny or x.max() <= -tiny)


def naryop_primitive(name, numpy_fn, accepts, out_dtype=None):
    """An elementwise primitive of several same-typed operands (add, eq, ...); `out_dtype` is
    the result's dtype, or a function of the operands' dtype."""
    primitive = Primitive(name)
    primitive.def_impl(flushing_subnormals(numpy_fn))
    primitive.def_abstract_eval(lambda *avals, **params: elementwise_aval(name, avals, accepts, out_dtype))
    batching.broadcasting_rule(primitive)
    return primitive


def shape_tuple(shape, name="shape"):
    """A static shape as a tuple of Python ints, or a TypeError naming the bad entry."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        result = tuple(operator.index(d) for d in shape)
    except TypeError as err:
        raise TypeError(f"{name} must be a sequence of integers, got {shape!r}: {err}") from None
    if any(d < 0 for d in result):
        raise ValueError(f"{name} must be non-negative, got {result}")
    return result



def composite_primitive(name, compute, multiple_results=False):
    """A primitive that JAX has, computed by `compute(*operands, **params)` from other lax
    operations: the jaxpr shows one equation, as JAX's does, while evaluation, jit (a compiler
    rewrite), JVP and vmap all run the composition, so its rules are those of its parts."""
    from jaxlite.core.primitive import compiler_rewrites
    from jaxlite.core.staging import trace_to_jaxpr
    from jaxlite.transforms import ad

    def impl(*args, **params):
        outs = compute(*[Array(a) for a in args], **params)
        return [np.asarray(o) for o in outs] if multiple_results else np.asarray(outs)

    def abstract_eval(*avals, **params):
        closed = trace_to_jaxpr(lambda *xs: _as_list(compute(*xs, **params), multiple_results),
                                list(avals), f"the abstract evaluation of {name}")
        return closed.out_avals if multiple_results else closed.out_avals[0]

    def jvp(primals, tangents, **params):
        outs, out_dots = ad.jvp_flat(lambda *xs: _as_list(compute(*xs, **params), multiple_results),
                                     primals, tangents)
        return (outs, out_dots) if multiple_results else (outs[0], out_dots[0])

    def batch(args, dims, **params):
        outs = batching.vmap(lambda *xs: compute(*xs, **params), in_axes=tuple(dims))(*args)
        return (outs, [0] * len(outs)) if multiple_results else (outs, 0)

    primitive = Primitive(name, multiple_results=multiple_results)
    primitive.def_impl(impl)
    primitive.def_abstract_eval(abstract_eval)
    ad.jvp_rules[primitive] = jvp
    batching.batch_rules[primitive] = batch
    compiler_rewrites[primitive] = lambda *args, memory_orders, **params: compute(*args, **params)
    return primitive


def _as_list(outs, multiple_results):
    return list(outs) if multiple_results else [outs]
