"""Staging: tracing a Python function into a jaxpr, and running a jaxpr again.

The staging trace records each primitive application as an equation instead of
computing it. Values from outside the function (closed-over arrays, tracers of
an enclosing transformation) become constvars; scalar constants become literals.
"""
import inspect
import sys

import numpy as np

from jaxlite.core import dtypes, errors
from jaxlite.core.abstract import ShapedArray, ShapeDtypeStruct, hi_type_of, hitype_typeof, is_hi
from jaxlite.core.array import Array
from jaxlite.core.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from jaxlite.core.ref import Ref, discharged, lifting_closed_over_refs
from jaxlite.core.trace import Trace, Tracer, set_current_trace
from jaxlite.core.tree_util import tree_flatten, tree_unflatten


class JaxprTracer(Tracer):
    __slots__ = ("_var", "_source_info")

    def __init__(self, trace, var, source_info):
        self._trace, self._var, self._source_info = trace, var, source_info

    @property
    def aval(self):
        return self._var.aval

    def __repr__(self):
        return f"JitTracer({self.aval})"


class JaxprTrace(Trace):
    """Records equations; `to_closed_jaxpr` packages them once the function returns."""

    def __init__(self, description="a staged function"):
        self.description = description
        self.eqns = []
        self.invars = []
        self.const_vars = {}    # id(value) -> (var, value)

    def describe(self):
        return self.description

    def new_arg(self, aval):
        var = Var(aval)
        self.invars.append(var)
        return JaxprTracer(self, var, None)

    def to_var(self, x):
        if isinstance(x, JaxprTracer) and x._trace is self:
            return x._var
        if isinstance(x, Tracer) and not x._trace.alive:
            raise errors.escaped_tracer_error(x)
        if _is_literal(x):
            return _as_literal(x)
        return self._const_var(x)

    def _const_var(self, value):
        entry = self.const_vars.get(id(value))
        if entry is None:
            if type(value) in hitype_typeof:
                _check_hi_constant(value)
            entry = (Var(abstractify(value)), value)
            self.const_vars[id(value)] = entry
        return entry[0]

    def process_primitive(self, primitive, args, params):
        in_vars = [self.to_var(x) for x in args]
        out_avals = primitive.abstract_eval_list([v.aval for v in in_vars], params)
        return self.record(primitive, in_vars, params, out_avals)

    def record(self, primitive, in_vars, params, out_avals):
        """Append an equation and return tracers for its outputs."""
        source_info = errors.user_source_info()
        out_tracers = [JaxprTracer(self, Var(a), source_info) for a in out_avals]
        self.eqns.append(Eqn(primitive, in_vars, params, [t._var for t in out_tracers], source_info))
        return out_tracers if primitive.multiple_results else out_tracers[0]

    def to_closed_jaxpr(self, outputs):
        outvars = [self.to_var(x) for x in outputs]
        constvars = [var for var, _ in self.const_vars.values()]
        consts = [value for _, value in self.const_vars.values()]
        return ClosedJaxpr(Jaxpr(constvars, self.invars, self.eqns, outvars), consts)


def _check_hi_constant(value):
    """A hijax value the function did not get as an argument nor from a primitive: it must hold
    no traced arrays (a hi type's constructor called on tracers smuggles them out)."""
    aval = hi_type_of(value)
    if any(isinstance(lo, Tracer) for lo in aval.lower_val(value)):
        raise TypeError(f"a {type(value).__name__} (of hijax type {aval.str_short()}) holding traced arrays "
                        "was built in traced code by calling its constructor: values of a hijax type "
                        "must come from the primitives that produce them (their expand may construct it)")


def _is_literal(x):
    if type(x) is Array:
        return x.ndim == 0
    return isinstance(x, (np.generic, bool, int, float)) or (isinstance(x, np.ndarray) and x.ndim == 0)


def _as_literal(x):
    aval = abstractify(x)
    value = np.asarray(x._value if type(x) is Array else x, dtype=aval.dtype)[()]
    return Literal(value, aval)


def abstractify(x):
    """The abstract value of a function argument, or a TypeError naming its type."""
    if isinstance(x, (Array, Tracer)):
        return x.aval
    if dtypes.is_python_scalar(x):
        dtype, weak = dtypes.result_type(x, return_weak_type_flag=True)
        return ShapedArray((), dtype, weak)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype))
    if type(x) in hitype_typeof:
        return hi_type_of(x)
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid jaxlite type: "
                    "arguments must be arrays, numpy arrays or Python scalars "
                    "(or pytrees of them)")


def trace_to_jaxpr(flat_fun, in_avals, description="a staged function", trace_type=JaxprTrace):
    """Trace `flat_fun(*tracers) -> list of outputs` into a ClosedJaxpr."""
    trace = trace_type(description)
    try:
        args = [trace.new_arg(a) for a in in_avals]
        with set_current_trace(trace):
            outputs = flat_fun(*args)
        return trace.to_closed_jaxpr(outputs)
    finally:
        trace.finish()


def flatten_fun(fun, in_tree):
    """A flat-argument version of `fun` plus a cell that receives its output structure."""
    out_tree_cell = []

    def flat_fun(*flat_args):
        args, kwargs = tree_unflatten(in_tree, flat_args)
        outputs = fun(*args, **kwargs)
        leaves, out_tree = tree_flatten(outputs)
        for leaf in leaves:
            if not isinstance(leaf, _OUTPUT_TYPES) and type(leaf) not in hitype_typeof:
                raise _invalid_output_error(fun, leaf)
        out_tree_cell.append(out_tree)
        return leaves

    return flat_fun, out_tree_cell


_OUTPUT_TYPES = (Array, Tracer, np.ndarray, np.generic, bool, int, float)


def _invalid_output_error(fun, leaf):
    fun = inspect.unwrap(fun)
    code = getattr(fun, "__code__", None)
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code else ""
    if isinstance(leaf, Ref):
        return ValueError(f"function {getattr(fun, '__name__', fun)}{where} returned a mutable array "
                          f"reference of type {leaf.aval}, but mutable array references cannot be "
                          "returned. Return jax.freeze(ref) (its value) instead.")
    return TypeError(f"function {getattr(fun, '__name__', fun)}{where} returned a value of type "
                     f"{type(leaf).__name__} ({leaf!r:.60}), which is not a valid jaxlite type: "
                     "outputs of transformed functions must be arrays, numpy arrays or Python "
                     "scalars (or pytrees of them)")


def _function_name(fun):
    return getattr(fun, "__name__", type(fun).__name__)


def _split_static(args, static_argnums):
    static_argnums = _normalize_argnums(static_argnums, len(args))
    dynamic = tuple(a for i, a in enumerate(args) if i not in static_argnums)
    static = tuple((i, args[i]) for i in static_argnums)
    return dynamic, static


def _normalize_argnums(argnums, num_args):
    if isinstance(argnums, int):
        argnums = (argnums,)
    result = set()
    for i in argnums:
        if not -num_args <= i < num_args:
            raise ValueError(f"static_argnums {i} is out of range for {num_args} positional arguments")
        result.add(i % num_args)
    return result


def _with_static(fun, static):
    def call(*dynamic, **kwargs):
        args = list(dynamic)
        for i, value in static:
            args.insert(i, value)
        return fun(*args, **kwargs)
    return call


def make_jaxpr(fun, static_argnums=(), return_shape=False):
    """Return a function that traces `fun` on its arguments and returns the ClosedJaxpr."""
    @errors.api_boundary
    def make(*args, **kwargs):
        dynamic, static = _split_static(args, static_argnums)
        flat_args, in_tree = tree_flatten((dynamic, kwargs))
        flat_fun, out_tree = flatten_fun(_with_static(fun, static), in_tree)
        # A Ref argument is an input (its value) and an output (its final value).
        refs = tuple(i for i, x in enumerate(flat_args) if isinstance(x, Ref))
        avals = [x.aval.inner_aval if isinstance(x, Ref) else _aval_of_spec(x) for x in flat_args]
        # Refs it closes over are lifted as jit lifts them: inputs and outputs of the jaxpr.
        traced = lifting_closed_over_refs(discharged(flat_fun, refs), [])
        closed = trace_to_jaxpr(traced, avals, f"make_jaxpr of {_function_name(fun)}")
        if not return_shape:
            return closed
        shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                  for a in closed.out_avals[:len(closed.out_avals) - len(refs)]]
        return closed, tree_unflatten(out_tree[0], shapes)
    return make


def eval_shape(fun, *args, **kwargs):
    """The shapes and dtypes `fun` would return, as a pytree of ShapeDtypeStruct."""
    flat_args, in_tree = tree_flatten((args, kwargs))
    flat_fun, out_tree = flatten_fun(fun, in_tree)
    avals = [_aval_of_spec(x) for x in flat_args]
    closed = trace_to_jaxpr(flat_fun, avals, f"eval_shape of {_function_name(fun)}")
    # A hijax type is its own description (JAX returns it as is).
    shapes = [a if is_hi(a) else ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
              for a in closed.out_avals]
    return tree_unflatten(out_tree[0], shapes)


def typeof(x):
    """The abstract value of an array, tracer or Python scalar (a ShapedArray), of a
    mutable array reference (an AbstractRef), or of a registered hijax value."""
    return x.aval if isinstance(x, Ref) else abstractify(x)


def _aval_of_spec(x):
    if isinstance(x, ShapeDtypeStruct):
        if isinstance(x.dtype, dtypes.ExtendedDType):
            return ShapedArray(x.shape, x.dtype)
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type)
    return abstractify(x)


def literal_value(literal):
    """A literal as an array value, keeping its weak type."""
    return Array(np.asarray(literal.val), literal.aval.weak_type)


def eval_jaxpr(jaxpr, consts, *args):
    """Run a jaxpr by binding each equation's primitive in the current trace.

    This one interpreter serves every transformation: under a JVP or batching
    trace, binding the primitives transforms them.
    """
    env = {}

    def read(v):
        return literal_value(v) if isinstance(v, Literal) else env[v]

    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    frame = sys._getframe()
    replays = errors.replaying(frame)
    try:
        for eqn in jaxpr.eqns:
            replays[frame] = eqn.source_info
            outputs = eqn.primitive.bind(*map(read, eqn.inputs), **eqn.params)
            env.update(zip(eqn.outputs, outputs if eqn.primitive.multiple_results else [outputs]))
    finally:
        del replays[frame]
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed):
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)
