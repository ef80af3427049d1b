"""Traces, tracers and the current-trace context.

We follow JAX's newer "current trace" design instead of numbered trace levels:
`bind` hands every operation to the single current trace, and each
transformation's trace knows its parent. A rule that needs to compute on the
values it wraps (the primal of a JVP, the batched value of a vmap) switches the
current trace to its parent for that computation. Nesting is then explicit and
local: no global level numbers to compare, no search for the "top" tracer among
the arguments, and a tracer from a trace that has finished is recognized at once
(`Trace.alive`) instead of silently being treated as a constant.
"""
import threading
from contextlib import contextmanager

import numpy as np

from jaxlite.core import errors, extended
from jaxlite.core.abstract import ShapedArray, hi_type_of, hitype_typeof, is_hi
from jaxlite.core.array import Array, wrap_numpy_outputs
from jaxlite.core.config import config


class Trace:
    """Interprets primitive applications; subclasses give each transformation's meaning."""

    parent = None
    alive = True

    def process_primitive(self, primitive, args, params):
        raise NotImplementedError(f"{type(self).__name__} does not interpret primitives")

    def describe(self):
        return type(self).__name__

    def finish(self):
        """Mark the trace as ended, so tracers that escape it are caught when used."""
        self.alive = False


class Tracer:
    """A stand-in for an array while a function is being transformed.

    Array-like operators and methods are attached by jaxlite.numpy, shared with Array.
    """

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    @property
    def aval(self):
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def to_concrete_value(self):
        """The concrete value behind this tracer, when the transformation knows it (else None)."""
        return None

    def _concrete(self, error_factory):
        value = self.to_concrete_value()
        if value is None:
            raise error_factory(self)
        return value

    def __bool__(self):
        return bool(self._concrete(errors.bool_conversion_error))

    def __int__(self):
        return int(self._concrete(errors.integer_conversion_error))

    def __index__(self):
        return self._concrete(errors.integer_conversion_error).__index__()

    def __float__(self):
        return float(self._concrete(errors.concretization_error))

    def item(self, *index):
        return self._concrete(errors.concretization_error).item(*index)

    def __array__(self, dtype=None, copy=None):
        raise errors.array_conversion_error(self)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}; "
                        "arrays cannot be used as dict keys or static arguments")

    def __repr__(self):
        return f"Traced({self.aval})"


Array.virtual_instance_types += (Tracer,)


class EvalTrace(Trace):
    """The bottom trace: runs each primitive's numpy implementation at once.

    The abstract-eval rule runs too, so eager code gets exactly the type errors,
    result dtypes and weak types that traced code gets.
    """

    def process_primitive(self, primitive, args, params):
        try:
            values = [_numpy_value(x, Array) for x in args]
        except extended.ExtendedOperand:
            return extended.evaluate(primitive, args, params)
        if primitive.abstract_eval is None:     # as JAX, a primitive with only an impl runs eagerly
            return _impl_only(primitive, values, params)
        out_avals = primitive.abstract_eval_list([_aval(x, v) for x, v in zip(args, values)], params)
        errors.check_allocation(sum(a.size * a.dtype.itemsize for a in out_avals if not is_hi(a)), lambda: (
            f"the result of {primitive.name} ({', '.join(a.str_short() for a in out_avals)})"))
        with np.errstate(all="ignore"):  # IEEE results (inf, nan) without numpy's warnings, as in JAX
            outputs = primitive.impl(*values, **params)
        if float_checks.enabled:
            float_checks.check(primitive, values, params, outputs)
        return wrap_numpy_outputs(outputs, out_avals, primitive.multiple_results)

    def describe(self):
        return "eager evaluation"


def _impl_only(primitive, values, params):
    outputs = primitive.impl(*values, **params)
    if not primitive.multiple_results:
        return Array(np.asarray(outputs))
    return [Array(np.asarray(o)) for o in outputs]


def _numpy_value(x, array_type):
    if type(x) is array_type:
        return x._value
    if isinstance(x, Tracer):
        raise errors.escaped_tracer_error(x)
    if isinstance(x, extended.ExtendedArray):
        raise extended.ExtendedOperand
    if type(x) in hitype_typeof:
        return x
    return np.asarray(x)


def _aval(x, value):
    if value is x and type(x) in hitype_typeof:
        return hi_type_of(x)
    return ShapedArray(value.shape, value.dtype, getattr(x, "weak_type", False))


EVAL_TRACE = EvalTrace()


class _FloatChecks:
    """jax_debug_nans / jax_debug_infs for eager evaluation: each primitive's outputs are
    checked, and a call primitive (jit) that produced one is re-run equation by equation,
    so that the error names the primitive that did."""

    def __init__(self):
        self.nans = self.infs = self.enabled = False

    def on_config_change(self, name, value):
        if name in ("jax_debug_nans", "jax_debug_infs"):
            setattr(self, name[len("jax_debug_"):], bool(value))
            self.enabled = self.nans or self.infs

    def invalid(self, value):
        """"nan" or "inf" if a checked value has one, else None."""
        value = np.asarray(value)
        if value.dtype.kind not in "fc":
            return None
        if self.nans and np.isnan(value).any():
            return "nan"
        if self.infs and np.isinf(value).any():
            return "inf"
        return None

    def check(self, primitive, args, params, outputs):
        for out in outputs if primitive.multiple_results else [outputs]:
            kind = self.invalid(out)
            if kind is None:
                continue
            if "jaxpr" in params:
                self.rerun(params["jaxpr"], args)
            raise FloatingPointError(f"invalid value ({kind}) encountered in {primitive.name}")

    def rerun(self, closed, args):
        """Evaluate a program's equations one by one: the failing one raises."""
        from jaxlite.core.staging import eval_jaxpr
        with set_current_trace(EVAL_TRACE):
            eval_jaxpr(closed.jaxpr, closed.consts, *[Array(np.asarray(a)) for a in args])


float_checks = _FloatChecks()
config.on_change(float_checks.on_config_change)
for _name in ("jax_debug_nans", "jax_debug_infs"):
    float_checks.on_config_change(_name, config.read(_name))


class _TraceContext(threading.local):
    trace = EVAL_TRACE


_context = _TraceContext()


def current_trace():
    return _context.trace


@contextmanager
def set_current_trace(trace):
    previous = _context.trace
    _context.trace = trace
    try:
        yield trace
    finally:
        _context.trace = previous


class _CompileTimeEvalTrace(Trace):
    """Computes at once what depends on no traced value; the rest goes to the trace it
    interrupted (see ensure_compile_time_eval)."""

    def __init__(self, interrupted):
        self.parent = interrupted

    def process_primitive(self, primitive, args, params):
        trace = self.parent if any(isinstance(x, Tracer) for x in args) else EVAL_TRACE
        with set_current_trace(trace):
            return trace.process_primitive(primitive, args, params)

    def describe(self):
        return f"ensure_compile_time_eval inside {self.parent.describe()}"


@contextmanager
def ensure_compile_time_eval():
    """Inside a traced function, compute operations on concrete values now, to concrete arrays
    (which Python control flow can then inspect), instead of staging them."""
    trace = current_trace()
    if trace is EVAL_TRACE:
        yield
        return
    with set_current_trace(_CompileTimeEvalTrace(trace)):
        yield
