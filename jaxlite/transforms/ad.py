"""Automatic differentiation: forward mode by a JVP trace; reverse mode by
linearizing (partially evaluating the JVP) and transposing the linear part.

Rule tables (filled in by each primitive's module, next to its definition):
  jvp_rules[p](primals, tangents, **params) -> (primal_out, tangent_out)
  transpose_rules[p](ct, *args, **params) -> one cotangent (or None) per argument,
      where the linear arguments arrive as UndefinedPrimal.
Zero tangents and cotangents are the symbolic `Zero(aval)`: never arrays of zeros.
"""
import functools

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.trace import Trace, Tracer, current_trace, set_current_trace

jvp_rules = {}
transpose_rules = {}


class Zero:
    """A tangent or cotangent known to be zero, of the given abstract value."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear input of a transposed equation: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_zero(x):
    return type(x) is Zero


def is_undefined(x):
    return type(x) is UndefinedPrimal


def aval_of(x):
    return x.aval if hasattr(x, "aval") else Array(x).aval


def zero_like(x):
    return Zero(tangent_aval(aval_of(x)))


def tangent_aval(aval):
    """Tangents have the primal's shape and dtype, never a weak type."""
    return ShapedArray(aval.shape, aval.dtype)


def instantiate(t):
    """A real array for a tangent that may be a symbolic zero."""
    if not is_zero(t):
        return t
    from jaxlite import lax  # lax registers into this module's tables: import lazily
    return lax.full(t.aval.shape, 0, t.aval.dtype)


def add_tangents(a, b):
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    from jaxlite import lax
    return lax.add_any(a, b)


# ---------------------------------------------------------------- rule helpers

def defjvp(primitive, *partial_jvps):
    """The JVP as a sum of per-argument terms: partial_jvps[i](t_i, *primals, **params).

    A None entry marks an argument the output does not differentiate through.
    """
    def rule(primals, tangents, **params):
        primal_out = primitive.bind(*primals, **params)
        tangent_out = Zero(tangent_aval(aval_of(primal_out)))
        for partial, t in zip(partial_jvps, tangents):
            if partial is not None and not is_zero(t):
                tangent_out = add_tangents(tangent_out, partial(t, *primals, **params))
        return primal_out, tangent_out
    jvp_rules[primitive] = rule


def defjvp_with_output(primitive, partial_jvp):
    """A JVP that reuses the primal output: partial_jvp(tangents, out, *primals, **params)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if all(is_zero(t) for t in tangents):
            return out, Zero(tangent_aval(aval_of(out)))
        return out, partial_jvp(tangents, out, *primals, **params)
    jvp_rules[primitive] = rule


def defjvp_zero(primitive):
    """Outputs that are piecewise constant (comparisons, rounding, integer results)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        outs = out if primitive.multiple_results else [out]
        zeros = [Zero(tangent_aval(aval_of(o))) for o in outs]
        return out, zeros if primitive.multiple_results else zeros[0]
    jvp_rules[primitive] = rule


def deflinear(primitive, transpose_rule):
    """A primitive linear in all its array arguments: its JVP applies it to the tangents."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if all(is_zero(t) for t in tangents):
            return out, Zero(tangent_aval(aval_of(out)))
        return out, primitive.bind(*map(instantiate, tangents), **params)
    jvp_rules[primitive] = rule
    transpose_rules[primitive] = transpose_rule


def defbilinear(primitive, lhs_transpose, rhs_transpose):
    """A primitive linear in each of its two arguments separately (mul, dot_general).

    lhs_transpose(ct, x, y, **params) gives x's cotangent when x is the linear input.
    """
    def transpose(ct, x, y, **params):
        if is_undefined(x):
            return [lhs_transpose(ct, x, y, **params), None]
        return [None, rhs_transpose(ct, x, y, **params)]
    defjvp(primitive,
           lambda t, x, y, **params: primitive.bind(t, y, **params),
           lambda t, x, y, **params: primitive.bind(x, t, **params))
    transpose_rules[primitive] = transpose


# ---------------------------------------------------------------- forward mode

class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace, self.primal, self.tangent = trace, primal, tangent

    @property
    def aval(self):
        return aval_of(self.primal)

    def to_concrete_value(self):
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.to_concrete_value()
        return primal._value if isinstance(primal, Array) else primal


class JVPTrace(Trace):
    def __init__(self, parent, description="jvp"):
        self.parent, self.description = parent, description

    def describe(self):
        return self.description

    def primal_and_tangent(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, zero_like(x)

    def process_primitive(self, primitive, args, params):
        primals, tangents = zip(*map(self.primal_and_tangent, args)) if args else ((), ())
        with set_current_trace(self.parent):
            if all(is_zero(t) for t in tangents):
                return primitive.bind(*primals, **params)
            rule = jvp_rules.get(primitive)
            if rule is None:
                raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not implemented")
            primal_out, tangent_out = rule(list(primals), list(tangents), **params)
        if primitive.multiple_results:
            return [self.new_tracer(p, t) for p, t in zip(primal_out, tangent_out)]
        return self.new_tracer(primal_out, tangent_out)

    def new_tracer(self, primal, tangent):
        return JVPTracer(self, primal, tangent)


def jvp_flat(flat_fun, primals, tangents):
    """Push tangents through flat_fun; returns (primals_out, tangents_out) with Zero kept symbolic."""
    trace = JVPTrace(current_trace())
    try:
        inputs = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        with set_current_trace(trace):
            outputs = flat_fun(*inputs)
        pairs = [trace.primal_and_tangent(o) for o in outputs]
    finally:
        trace.finish()
    return [p for p, _ in pairs], [t for _, t in pairs]


def jvp(fun, primals, tangents):
    """(fun(*primals), the directional derivative of fun at primals along tangents)."""
    from jaxlite.core.staging import flatten_fun
    from jaxlite.core.tree_util import tree_flatten, tree_unflatten
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists, got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    flat_primals, in_tree = tree_flatten((tuple(primals), {}))
    flat_tangents, tangent_tree = tree_flatten((tuple(tangents), {}))
    if in_tree != tangent_tree:
        raise TypeError(f"jvp: primal and tangent arguments must have the same tree structure, "
                        f"got {in_tree} and {tangent_tree}")
    flat_primals = [as_array_argument(p) for p in flat_primals]
    flat_tangents = [as_array_argument(t) for t in flat_tangents]
    for p, t in zip(flat_primals, flat_tangents):
        _check_tangent_type(p, t)
    flat_fun, out_tree = flatten_fun(fun, in_tree)
    out_primals, out_tangents = jvp_flat(flat_fun, flat_primals, flat_tangents)
    return (tree_unflatten(out_tree[0], out_primals),
            tree_unflatten(out_tree[0], [instantiate(t) for t in out_tangents]))


def _check_tangent_type(primal, tangent):
    p_aval, t_aval = aval_of(primal), aval_of(tangent)
    if p_aval.shape != t_aval.shape or p_aval.dtype != t_aval.dtype:
        raise TypeError("jvp: primal and tangent arguments must have equal shapes and dtypes, "
                        f"got primal {p_aval.str_short()} and tangent {t_aval.str_short()}")


# ---------------------------------------------------------------- transforming closed jaxprs

def jvp_jaxpr(closed, nonzero_tangents):
    """The JVP of a closed jaxpr as a new closed jaxpr, and which output tangents are nonzero.

    The new jaxpr takes (*primals, *tangents for the inputs marked nonzero) and returns
    (*primal outputs, *nonzero output tangents). Used by call-like primitives (jit,
    control flow) whose JVP rule transforms their body.
    """
    return _jvp_jaxpr_cached(closed, tuple(bool(nz) for nz in nonzero_tangents))


@functools.lru_cache(maxsize=256)
def _jvp_jaxpr_cached(closed, nonzero_tangents):
    from jaxlite.core.staging import eval_jaxpr, trace_to_jaxpr
    in_avals = closed.in_avals
    tangent_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzero_tangents) if nz]
    out_nonzero = []

    def jvp_fun(*args):
        primals, given = args[:len(in_avals)], iter(args[len(in_avals):])
        tangents = [next(given) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzero_tangents)]
        outs, out_tangents = jvp_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                      primals, tangents)
        out_nonzero[:] = [not is_zero(t) for t in out_tangents]
        return list(outs) + [t for t in out_tangents if not is_zero(t)]

    new = trace_to_jaxpr(jvp_fun, list(in_avals) + tangent_avals, "jvp of a jaxpr")
    return new, tuple(out_nonzero)
