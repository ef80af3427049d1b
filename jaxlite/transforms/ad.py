"""Automatic differentiation: forward mode by a JVP trace; reverse mode by
linearizing (partially evaluating the JVP) and transposing the linear part.

Rule tables (filled in by each primitive's module, next to its definition):
  jvp_rules[p](primals, tangents, **params) -> (primal_out, tangent_out)
  transpose_rules[p](ct, *args, **params) -> one cotangent (or None) per argument,
      where the linear arguments arrive as UndefinedPrimal.
Zero tangents and cotangents are the symbolic `Zero(aval)`: never arrays of zeros.

Reverse mode follows JAX: `linearize_flat` runs the JVP trace on top of a
partial-evaluation trace (transforms/partial_eval.py), so the primal outputs are
computed at once and the tangent computation is staged into a linear jaxpr whose
consts are the residuals; `backward_pass` transposes that jaxpr equation by
equation, in reverse. vjp and grad are these two steps in sequence.
"""
import functools

import numpy as np

from jaxlite.core import dtypes, errors
from jaxlite.core.abstract import ShapedArray, hi_type_of, is_hi
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.ir import Literal, Var, dce_closed
from jaxlite.core.staging import eval_jaxpr, flatten_fun, jaxpr_as_fun, literal_value, trace_to_jaxpr
from jaxlite.core.trace import Trace, Tracer, current_trace, set_current_trace
from jaxlite.core.ref import Ref
from jaxlite.core.tree_util import register_pytree_node, tree_flatten, tree_unflatten

jvp_rules = {}
transpose_rules = {}
# Rules that may change a primitive's (primals, tangents) before its JVP rule sees them:
# shard_map's check_vma inserts pvary there, so linearization records it (shard_map.py).
operand_rules = []


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
    if hasattr(x, "aval"):
        return x.aval
    return hi_type_of(x) or as_array_argument(x).aval


def zero_like(x):
    return Zero(tangent_aval(aval_of(x)))


def tangent_aval(aval):
    """Tangents have the primal's shape and dtype, never a weak type; those of an extended
    dtype (typed keys) are float0, as in JAX; a hijax type names its own."""
    if is_hi(aval):
        return aval.to_tangent_aval()
    if isinstance(aval.dtype, dtypes.ExtendedDType):
        return ShapedArray(aval.shape, dtypes.float0)
    return ShapedArray(aval.shape, aval.dtype)


def instantiate(t):
    """A real array for a tangent that may be a symbolic zero, inside a JVP rule.

    While linearizing, the current trace stages the zeros into the linear jaxpr
    (`instantiate_zero`): made at once, they would be kept as a residual.
    Values handed back to user code (API outputs, cotangents) use `materialize`:
    user code may run inside a JVP rule, where such a value is not a tangent.
    """
    if not is_zero(t):
        return t
    trace = current_trace()
    if hasattr(trace, "instantiate_zero"):
        return trace.instantiate_zero(t.aval)
    return zeros(t.aval)


def materialize(t):
    """A real array for a value that may be a symbolic zero, made in the current trace."""
    return zeros(t.aval) if is_zero(t) else t


def zeros(aval):
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    from jaxlite import lax  # lax registers into this module's tables: import lazily
    if is_hi(aval):
        return aval.vspace_zero()
    return lax.full(aval.shape, 0, aval.dtype)


def add_tangents(a, b):
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    aval = aval_of(a)
    if is_hi(aval):
        return aval.vspace_add(a, b)
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
    rule.zero_derivative = True   # lets the completeness test tell these apart
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

    def __repr__(self):
        from jaxlite.transforms.partial_eval import PartialEvalTrace
        if isinstance(self._trace.parent, PartialEvalTrace):   # reverse mode, as JAX names it
            return f"GradTracer(primal={self.primal}, typeof(tangent)={aval_of(self.tangent).str_short()})"
        return f"JVPTracer(primal={self.primal}, tangent={self.tangent})"

    def to_concrete_value(self):
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.to_concrete_value()
        return primal._value if type(primal) is Array else primal

    def __float__(self):
        # bool() and int() of a differentiated value are allowed (they have no derivative
        # to lose), but float() would silently drop one: JAX refuses it, and so do we.
        if not is_zero(self.tangent):
            raise errors.differentiated_float_error(self)
        return super().__float__()


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
            for adjust in operand_rules:
                primals, tangents = adjust(primitive, primals, tangents, params)
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


@errors.api_boundary
def jvp(fun, primals, tangents):
    """(fun(*primals), the directional derivative of fun at primals along tangents)."""
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
            tree_unflatten(out_tree[0], [materialize(t) for t in out_tangents]))


def _check_tangent_type(primal, tangent):
    p_aval, t_aval = aval_of(primal), aval_of(tangent)
    if is_hi(p_aval) or is_hi(t_aval):
        if tangent_aval(p_aval) != t_aval:
            raise TypeError(f"jvp: the tangent of a primal of type {p_aval.str_short()} must be of its "
                            f"tangent type {tangent_aval(p_aval).str_short()}, got {t_aval.str_short()}")
    elif p_aval.shape != t_aval.shape or p_aval.dtype != t_aval.dtype:
        raise TypeError("jvp: primal and tangent arguments must have equal shapes and dtypes, "
                        f"got primal {p_aval.str_short()} and tangent {t_aval.str_short()}")

# ---------------------------------------------------------------- transforming closed jaxprs

def jvp_jaxpr(closed, nonzeros, instantiate=False):
    """The JVP of a closed jaxpr as a new closed jaxpr, and which output tangents are nonzero.

    The new jaxpr takes (*primals, *tangents for the inputs marked nonzero) and returns
    (*primal outputs, *nonzero output tangents). `instantiate` (a bool, or one per
    output) makes an output tangent present even when it is zero: a loop carry's
    tangent must keep one type across iterations, and the branches of a cond must
    agree. Used by call-like primitives (jit, checkpoint, control flow), whose JVP
    rule transforms their body; memoized, so repeated transforms reuse one jaxpr.
    """
    count = len(closed.out_avals)
    forced = [instantiate] * count if isinstance(instantiate, bool) else instantiate
    return _jvp_jaxpr_cached(closed, tuple(bool(nz) for nz in nonzeros),
                             tuple(bool(f) for f in forced))


@functools.lru_cache(maxsize=256)
def _jvp_jaxpr_cached(closed, nonzeros, forced):
    in_avals = closed.in_avals
    tangent_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    out_nonzero = []

    def jvp_fun(*args):
        primals, given = args[:len(in_avals)], iter(args[len(in_avals):])
        tangents = [next(given) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
        outs, out_tangents = jvp_flat(jaxpr_as_fun(closed), primals, tangents)
        out_nonzero[:] = [not is_zero(t) or f for t, f in zip(out_tangents, forced)]
        return list(outs) + [instantiate(t) for t, nz in zip(out_tangents, out_nonzero) if nz]

    new = trace_to_jaxpr(jvp_fun, list(in_avals) + tangent_avals, "jvp of a jaxpr")
    return new, tuple(out_nonzero)


def nonzero_tangents(tangents):
    """The tangents a transformed call receives: symbolic zeros are left out."""
    return [t for t in tangents if not is_zero(t)]


def tangents_out(outs, nonzeros, avals):
    """Split a JVP'd call's outputs into primals and tangents (Zero where absent)."""
    primals, given = outs[:len(avals)], iter(outs[len(avals):])
    return list(primals), [next(given) if nz else Zero(tangent_aval(a)) for nz, a in zip(nonzeros, avals)]


def is_differentiable(aval):
    """Only floating-point and complex values carry tangents; integer and boolean ones are constant.
    A hijax type's values carry tangents of the type its to_tangent_aval names."""
    return is_hi(aval) or dtypes.is_inexact(aval.dtype)


# ---------------------------------------------------------------- call primitives
# Rules shared by every primitive whose `jaxpr` parameter (a ClosedJaxpr) is
# applied to all of its operands: checkpoint here, jit-style calls elsewhere.

def trace_call(fun, args, description):
    """Trace fun(*args) for a higher-order primitive: (body, operands, out_tree).

    The body is closure-converted, so `operands` are its consts followed by the
    flattened arguments; binding the primitive on them reproduces fun(*args).
    """
    from jaxlite.core.ir import constvars_as_invars
    from jaxlite.core.staging import abstractify
    flat_args, in_tree = tree_flatten(tuple(args))
    flat_args = [as_array_argument(x) for x in flat_args]
    out_trees = []

    def flat_fun(*leaves):
        outs, out_tree = tree_flatten(fun(*tree_unflatten(in_tree, leaves)))
        out_trees.append(out_tree)
        return outs

    closed = trace_to_jaxpr(flat_fun, [abstractify(x) for x in flat_args], description)
    body, consts = constvars_as_invars(closed)
    return body, consts + flat_args, out_trees[0]


def call_jvp_rule(primitive):
    """The JVP of a call primitive: the same primitive, with the same params, on the JVP of its body."""
    def rule(primals, tangents, jaxpr, **params):
        jvp_closed, out_nonzero = jvp_jaxpr(jaxpr, [not is_zero(t) for t in tangents])
        outs = primitive.bind(*primals, *nonzero_tangents(tangents), jaxpr=jvp_closed, **params)
        return tangents_out(outs, out_nonzero, jaxpr.out_avals)
    return rule


def call_transpose_rule(cts, *args, jaxpr, **params):
    """Transpose the body in place: its non-linear part is recomputed here."""
    return backward_pass(jaxpr.jaxpr, jaxpr.consts, list(args), cts)


def call_impl(*args, jaxpr, **params):
    return [np.asarray(out) for out in eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)]


# ---------------------------------------------------------------- linearize

def linearize_flat(flat_fun, primals):
    """Run flat_fun(*primals) -> (outputs, aux) and stage its tangent map.

    Returns (primal outputs, aux, linear, out_nonzero): `linear` is a ClosedJaxpr
    from one tangent per primal to the tangents of the outputs flagged in
    `out_nonzero` (the others are symbolic zeros); its consts are the residuals,
    already pruned by dead-code elimination.
    """
    from jaxlite.transforms.partial_eval import PartialEvalTrace
    staging = PartialEvalTrace(current_trace(), "linearize")
    trace = JVPTrace(staging, "linearize")
    try:
        tangent_args = [staging.new_arg(tangent_aval(aval_of(p))) for p in primals]
        inputs = [JVPTracer(trace, p, t if is_differentiable(t.aval) else Zero(t.aval))
                  for p, t in zip(primals, tangent_args)]
        with set_current_trace(trace):
            outs, aux = flat_fun(*inputs)
        pairs = [trace.primal_and_tangent(o) for o in outs]
        aux = [trace.primal_and_tangent(a)[0] for a in aux]
    finally:
        trace.finish()
    try:
        out_nonzero = [not is_zero(t) for _, t in pairs]
        linear = staging.to_closed_jaxpr(nonzero_tangents([t for _, t in pairs]))
    finally:
        staging.finish()
    return [p for p, _ in pairs], aux, dce_closed(linear), out_nonzero


# ---------------------------------------------------------------- transposition

def backward_pass(jaxpr, consts, args, cts_out):
    """Transpose `jaxpr` with respect to its arguments given as UndefinedPrimal.

    Equations that read no linear variable are evaluated forward first (they are
    recomputation, e.g. inside a checkpoint); the others are transposed in
    reverse order, summing cotangents with add_tangents and keeping Zero
    symbolic. Returns one cotangent per argument (None for defined arguments).
    """
    primal_env = dict(zip(jaxpr.constvars, consts))
    primal_env.update((v, a) for v, a in zip(jaxpr.invars, args) if not is_undefined(a))
    linear_vars = {v for v, a in zip(jaxpr.invars, args) if is_undefined(a)}

    def read_primal(v):
        return literal_value(v) if isinstance(v, Literal) else primal_env[v]

    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(isinstance(v, Var) and v in linear_vars for v in eqn.inputs):
            linear_eqns.append(eqn)
            linear_vars.update(eqn.outputs)
        else:
            outs = eqn.primitive.bind(*map(read_primal, eqn.inputs), **eqn.params)
            primal_env.update(zip(eqn.outputs, outs if eqn.primitive.multiple_results else [outs]))

    ct_env = {}

    def write_ct(v, ct):
        if ct is not None and isinstance(v, Var) and v in linear_vars:
            ct_env[v] = add_tangents(ct_env.pop(v, Zero(tangent_aval(v.aval))), ct)

    for v, ct in zip(jaxpr.outvars, cts_out):
        write_ct(v, ct)
    for eqn in reversed(linear_eqns):
        cts = [ct_env.pop(v, Zero(tangent_aval(v.aval))) for v in eqn.outputs]
        if all(is_zero(ct) for ct in cts):
            continue
        eqn_args = [UndefinedPrimal(v.aval) if isinstance(v, Var) and v in linear_vars
                    else read_primal(v) for v in eqn.inputs]
        cts_in = _transpose_rule(eqn.primitive)(cts if eqn.primitive.multiple_results else cts[0],
                                                *eqn_args, **eqn.params)
        for v, ct in zip(eqn.inputs, cts_in):
            write_ct(v, ct)
    return [ct_env.get(v, Zero(tangent_aval(v.aval))) if is_undefined(a) else None
            for v, a in zip(jaxpr.invars, args)]


def _transpose_rule(primitive):
    rule = transpose_rules.get(primitive)
    if rule is None:
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                  f"'{primitive.name}' not implemented")
    return rule


# ---------------------------------------------------------------- the reverse-mode API

def _flatten_with_aux(fun, in_tree, has_aux):
    """flat_fun(*leaves) -> (output leaves, aux leaves), with both structures kept in `trees`."""
    trees = {}

    def flat_fun(*flat_args):
        args, kwargs = tree_unflatten(in_tree, flat_args)
        result = fun(*args, **kwargs)
        if has_aux:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                got = (f"a single array {result.aval.str_short()}" if isinstance(result, Tracer)
                       else f"{type(result).__name__} {result!r:.60}")
                raise TypeError("has_aux=True requires the function to return a pair "
                                f"(output, aux), but it returned {got}")
            result, aux = result
        else:
            aux = None
        outs, trees["out"] = tree_flatten(result)
        aux_leaves, trees["aux"] = tree_flatten(aux)
        return outs, aux_leaves

    return flat_fun, trees


def _linearize_tree(fun, primals, has_aux):
    flat_primals, in_tree = tree_flatten((tuple(primals), {}))
    flat_primals = [as_array_argument(p) for p in flat_primals]
    flat_fun, trees = _flatten_with_aux(fun, in_tree, has_aux)
    outs, aux, linear, out_nonzero = linearize_flat(flat_fun, flat_primals)
    outs = [as_array_argument(o) for o in outs]
    return flat_primals, in_tree, outs, tree_unflatten(trees["aux"], aux), linear, out_nonzero, trees


@errors.api_boundary
def vjp(fun, *primals, has_aux=False, reduce_axes=()):
    """(fun(*primals), vjp_fun[, aux]): vjp_fun(ct) pulls an output cotangent back to the inputs."""
    if any(isinstance(p, Ref) for p in primals):
        return _vjp_of_refs(fun, primals, has_aux)
    flat_primals, in_tree, outs, aux, linear, out_nonzero, trees = _linearize_tree(fun, primals, has_aux)
    out_tree = trees["out"]
    pullback = _Pullback(linear, out_tree, [aval_of(o) for o in outs], out_nonzero, in_tree,
                         [aval_of(p) for p in flat_primals])
    vjp_fun = VJP.of_residuals(pullback, in_tree, out_tree, flat_primals, list(linear.consts))
    out = tree_unflatten(out_tree, outs)
    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
    """(fwd, bwd): fwd(*args) is vjp of fun in the arguments `argnums` (its output, the vjp
    function as the residuals[, aux]); bwd(residuals, cotangent) the cotangents. Both are
    jitted unless jitted=False, so a loop calling them compiles each once."""
    errors.check_callable(fun, "fwd_and_bwd")

    def fwd(*args, **kwargs):
        partial, chosen = select_args(fun, argnums, args, kwargs)
        return vjp(partial, *chosen, has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        cts = f_vjp(outgrad)
        return cts[0] if isinstance(argnums, int) else cts
    if jitted:
        from jaxlite.transforms.jit import jit     # jit sits above ad
        fwd, bwd = jit(fwd), jit(bwd)
    return fwd, bwd


class GradValue:
    """with_refs: return this argument's cotangent as a value."""

    def __repr__(self):
        return f"{type(self).__name__}()"


class DontWant(GradValue):
    """with_refs: this argument's cotangent is not wanted (DidntWant() stands in for it)."""


class DidntWant(GradValue):
    """What with_refs returns for an argument whose cotangent was not wanted."""


class GradRef(GradValue):
    """What with_refs returns for an argument whose cotangent was added into a Ref."""


class NotNeeded:
    """Stands in VJP.args_res for a primal input the backward pass does not read."""

    def __repr__(self):
        return "NotNeeded()"


class VJP:
    """The function vjp returns, callable on a cotangent. A pytree whose leaves are its residuals:
    `args_res` holds the primal arguments (NotNeeded() for inputs the backward pass does not
    read), `opaque_residuals` the other values it saved; so it can cross a jit boundary, and a
    caller may drop an argument from args_res and put it back before calling."""

    def __init__(self, fun, in_tree, out_tree, args_res, opaque_residuals):
        self.fun, self.in_tree, self.out_tree = fun, in_tree, out_tree
        self.args_res, self.opaque_residuals = args_res, opaque_residuals

    @classmethod
    def of_residuals(cls, pullback, in_tree, out_tree, flat_primals, residuals):
        """Residuals that are primal inputs go to args_res, the rest stay opaque."""
        position = {id(p): k for k, p in reversed(list(enumerate(flat_primals)))}
        sources = [position.get(id(r), None) for r in residuals]
        needed = set(s for s in sources if s is not None)
        arg_leaves = [p if k in needed else NotNeeded() for k, p in enumerate(flat_primals)]
        opaque = [r for r, s in zip(residuals, sources) if s is None]
        args_res = tree_unflatten(in_tree, arg_leaves)[0]
        args_tree = tree_flatten(args_res, is_leaf=lambda x: isinstance(x, NotNeeded))[1]
        return cls(_ResidualPullback(pullback, sources), args_tree, out_tree, list(args_res), opaque)

    jaxpr = property(lambda self: self.fun.pullback.jaxpr)

    def __call__(self, out_ct, *extra_args):
        if extra_args:
            raise TypeError(f"The function returned by `jax.vjp` was called with {1 + len(extra_args)} "
                            "arguments, but it takes a single argument: the cotangent of the single "
                            "value the differentiated function returns (a tuple or other container "
                            "when it returns one: call f_vjp((a, b)), not f_vjp(a, b))")
        return self.fun(self.args_res, self.opaque_residuals, out_ct)

    def with_refs(self, *targets):
        """The pullback, one target per primal argument: a Ref (the cotangent is added into
        it), GradValue() (returned) or DontWant()."""
        def pullback(ct):
            cts = self(ct)
            if len(targets) != len(cts):
                raise TypeError(f"with_refs takes one target per primal argument ({len(cts)}), "
                                f"got {len(targets)}")
            return tuple(_deliver(target, value) for target, value in zip(targets, cts))
        return pullback

    def __repr__(self):
        return (f"VJP(fun={self.fun!r}, in_tree={self.in_tree}, out_tree={self.out_tree}, "
                f"args_res={self.args_res!r}, opaque_residuals={self.opaque_residuals!r})")


class _ResidualPullback:
    """The pullback given its residuals back from args_res and opaque_residuals: `sources`
    names, for each residual, the flat primal input it is (None: the next opaque one)."""

    def __init__(self, pullback, sources):
        self.pullback, self.sources = pullback, sources

    def __call__(self, args_res, opaque_residuals, ct):
        arg_leaves = tree_flatten(tuple(args_res), is_leaf=lambda x: isinstance(x, NotNeeded))[0]
        opaque = iter(opaque_residuals)
        residuals = [next(opaque) if k is None else arg_leaves[k] for k in self.sources]
        missing = sorted(set(k for k, r in zip(self.sources, residuals) if isinstance(r, NotNeeded)))
        if missing:
            raise ValueError(f"vjp: the backward pass reads primal input leaves {missing}, but "
                             "args_res holds NotNeeded() for them: put the arguments back in "
                             "f_vjp.args_res before calling it")
        return self.pullback(residuals, ct)

    def __repr__(self):
        return f"pullback({self.pullback.jaxpr})"


def _vjp_of_refs(fun, primals, has_aux):
    """vjp with respect to Refs' values: fun runs on Refs holding them (so it may update them,
    and the Refs hold its final values afterwards); their cotangents go into Refs (with_refs)."""
    is_ref = [isinstance(p, Ref) for p in primals]

    def on_values(*values):
        refs = [Ref(v, current_trace()) if r else v for v, r in zip(values, is_ref)]
        result = fun(*refs)
        out, aux = result if has_aux else (result, None)
        finals = [ref[...] for ref, r in zip(refs, is_ref) if r]
        return (out, finals), aux
    (out, finals), pullback, aux = vjp(on_values, *[p[...] if r else p for p, r in zip(primals, is_ref)],
                                       has_aux=True)
    for primal, value in zip([p for p in primals if isinstance(p, Ref)], finals):
        primal[...] = value
    result = _RefVJP(pullback, is_ref, [zeros(aval_of(v)) for v in finals])
    return (out, result, aux) if has_aux else (out, result)


class _RefVJP:
    """The pullback of a function of Refs: their cotangents are added into Refs (with_refs)."""

    def __init__(self, pullback, is_ref, final_zeros):
        self.pullback, self.is_ref, self.final_zeros = pullback, is_ref, final_zeros

    def __call__(self, ct):
        raise TypeError("the vjp of a function of mutable array references returns their gradient "
                        "into refs: the gradient must be accumulated into a ref, so bind one per "
                        "ref-typed argument with `f_vjp.with_refs(grad_ref, ...)(ct)`")

    def with_refs(self, *targets):
        for target, is_ref in zip(targets, self.is_ref):
            if is_ref and not isinstance(target, Ref):
                raise TypeError(f"with_refs: a ref-typed argument's gradient must be accumulated into "
                                f"a ref, got {target!r}")
        return lambda ct: self.pullback.with_refs(*targets)((ct, self.final_zeros))


def _deliver(target, ct):
    if isinstance(target, DontWant):
        return DidntWant()
    if isinstance(target, GradValue):
        return ct
    target[...] = target[...] + ct
    return GradRef()


# Markers with no leaves: a function may return them like any pytree.
for _marker in (DidntWant, GradRef):
    register_pytree_node(_marker, lambda marker: ((), type(marker)), lambda kind, _: kind())

register_pytree_node(NotNeeded, lambda marker: ((), None), lambda _, children: NotNeeded())
register_pytree_node(VJP, lambda f: ((f.args_res, f.opaque_residuals), (f.fun, f.in_tree, f.out_tree)),
                     lambda static, children: VJP(*static, *children))


class _Pullback:
    """What vjp returns, given the residuals: the cotangents of the inputs for one of the outputs."""

    def __init__(self, linear, out_tree, out_avals, out_nonzero, in_tree, primal_avals):
        self.jaxpr, self.out_tree, self.out_avals = linear.jaxpr, out_tree, out_avals
        self.out_nonzero, self.in_tree, self.primal_avals = out_nonzero, in_tree, primal_avals

    def __call__(self, residuals, ct):
        flat_cts, ct_tree = tree_flatten(ct)
        if ct_tree != self.out_tree:
            raise TypeError(f"Tree structure of cotangent input {ct_tree} does not match structure "
                            f"of primal output {self.out_tree}")
        for aval, ct_leaf in zip(self.out_avals, flat_cts):
            _check_cotangent(aval, ct_leaf)
        flat_cts = [as_array_argument(c) for c, nonzero in zip(flat_cts, self.out_nonzero) if nonzero]
        args = [UndefinedPrimal(v.aval) for v in self.jaxpr.invars]
        cts_in = backward_pass(self.jaxpr, residuals, args, flat_cts)
        cts_in = [_cotangent_value(ct, a) for ct, a in zip(cts_in, self.primal_avals)]
        return tree_unflatten(self.in_tree, cts_in)[0]

    def __repr__(self):
        return f"vjp pullback of {len(self.primal_avals)} inputs"


def _check_cotangent(out_aval, ct):
    ct_aval = aval_of(as_array_argument(ct))
    if is_hi(out_aval) or is_hi(ct_aval):
        if ct_aval != out_aval.to_ct_aval():
            raise ValueError(f"vjp: the cotangent {ct_aval.str_short()} does not match the primal output "
                             f"{out_aval.str_short()}, whose cotangent type is {out_aval.to_ct_aval().str_short()}")
    elif out_aval.shape != ct_aval.shape or out_aval.dtype != ct_aval.dtype:
        raise ValueError(f"vjp: the cotangent {ct_aval.str_short()} does not match the primal output "
                         f"{out_aval.str_short()}: shapes and dtypes must be equal")


def _cotangent_value(ct, primal_aval):
    """Cotangents are arrays for the user, weakly typed as their primal (as JAX); an integer
    input gets zeros of its own dtype, a typed key float0 zeros; a hijax input, a value of its
    tangent type."""
    if is_hi(primal_aval):
        return zeros(tangent_aval(primal_aval)) if is_zero(ct) else ct
    if is_zero(ct):
        return zeros(tangent_aval(primal_aval))
    if primal_aval.weak_type and not aval_of(ct).weak_type and aval_of(ct).dtype == primal_aval.dtype:
        from jaxlite import lax
        return lax.convert_element_type(ct, primal_aval.dtype, weak_type=True)
    return ct


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of a linear function: a function from an output cotangent to the tuple of
    input cotangents. `primals` (arrays or ShapeDtypeStructs) give only the input types; a
    function that is not linear fails to transpose."""
    from jaxlite.core.staging import _aval_of_spec, flatten_fun, trace_to_jaxpr
    flat_primals, in_tree = tree_flatten((tuple(primals), {}))
    flat_fun, out_tree = flatten_fun(fun, in_tree)
    closed = trace_to_jaxpr(flat_fun, [_aval_of_spec(p) for p in flat_primals], "linear_transpose")
    in_avals = closed.in_avals

    def transposed(ct):
        flat_cts, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree[0]:
            raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not match the "
                            f"output structure {out_tree[0]}")
        try:
            cts = backward_pass(closed.jaxpr, closed.consts, [UndefinedPrimal(a) for a in in_avals],
                                [as_array_argument(c) for c in flat_cts])
        except (TypeError, ValueError, AssertionError) as err:
            raise ValueError(f"linear_transpose could not transpose {getattr(fun, '__name__', fun)}: "
                             f"is it linear in its inputs? ({err})") from err
        return tree_unflatten(in_tree, [_cotangent_value(c, a) for c, a in zip(cts, in_avals)])[0]
    return transposed


def linearize(fun, *primals):
    """(fun(*primals), f_jvp): f_jvp(*tangents) is the JVP at primals, evaluated from the
    staged linear jaxpr (no re-running of the primal computation)."""
    flat_primals, in_tree, outs, _, linear, out_nonzero, trees = _linearize_tree(fun, primals, False)

    def f_jvp(*tangents):
        flat_tangents, tangent_tree = tree_flatten((tuple(tangents), {}))
        if tangent_tree != in_tree:
            raise TypeError(f"linearize: tangent structure {tangent_tree} does not match the primal "
                            f"structure {in_tree}")
        for p, t in zip(flat_primals, flat_tangents):
            _check_tangent_type(p, as_array_argument(t))
        nonzero_outs = iter(eval_jaxpr(linear.jaxpr, linear.consts,
                                       *[as_array_argument(t) for t in flat_tangents]))
        out_tangents = [next(nonzero_outs) if nonzero else zeros(aval_of(o))
                        for o, nonzero in zip(outs, out_nonzero)]
        return tree_unflatten(trees["out"], out_tangents)

    return tree_unflatten(trees["out"], outs), f_jvp


class ArgnumsError(TypeError, ValueError):
    """argnums naming a missing argument. JAX raises TypeError here; it is also a
    ValueError because that is what the rest of jaxlite raises for bad argnums."""


def _argnums_tuple(argnums):
    if isinstance(argnums, int):
        return (argnums,)
    if isinstance(argnums, (tuple, list)) and all(isinstance(i, int) for i in argnums):
        return tuple(argnums)
    raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")


def select_args(fun, argnums, args, kwargs):
    """fun as a function of only the arguments named by argnums, and those arguments."""
    positions = _argnums_tuple(argnums)
    if any(not -len(args) <= i < len(args) for i in positions):
        raise ArgnumsError(f"differentiating with respect to argnums={argnums} requires at least "
                           f"{max(i if i < 0 else i + 1 for i in positions)} positional arguments "
                           f"to be passed by the caller, but got only {len(args)} positional arguments.")
    positions = tuple(i % len(args) for i in positions)

    def partial(*chosen):
        full = list(args)
        for i, value in zip(positions, chosen):
            full[i] = value
        return fun(*full, **kwargs)

    return partial, tuple(args[i] for i in positions)


def _leaf_dtypes(tree):
    avals = [aval_of(as_array_argument(leaf)) for leaf in tree_flatten(tree)[0]]
    return [a.dtype for a in avals if not is_hi(a)]


def check_holomorphic_dtypes(name, tree, role):
    """holomorphic=True differentiates complex functions of complex values only."""
    for dtype in _leaf_dtypes(tree):
        if not dtypes.is_complex(dtype):
            raise TypeError(f"{name} with holomorphic=True requires {role} with complex dtype, "
                            f"but got {dtype.name}.")


def _check_grad_inputs(args, allow_int, holomorphic):
    if holomorphic:
        check_holomorphic_dtypes("grad", args, "inputs")
        return
    if allow_int:
        return
    for dtype in _leaf_dtypes(args):
        if isinstance(dtype, dtypes.ExtendedDType) or not dtypes.is_inexact(dtype):
            raise TypeError(f"grad requires real- or complex-valued inputs (input dtype that is a "
                            f"sub-dtype of np.inexact), but got {dtype.name}. If you want to use "
                            f"Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def real_output_error(name, dtype):
    """JAX's error for a complex (or integer) output where only real ones are differentiable."""
    if dtypes.is_complex(dtype):
        return TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                         f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
                         f"holomorphic=True. For differentiation of non-holomorphic functions involving "
                         f"complex outputs, use jaxlite.vjp directly.")
    return TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                     f"np.floating), but got {dtype.name}. For differentiation of functions "
                     f"with integer outputs, use jaxlite.vjp directly.")


def _check_scalar_output(out, holomorphic):
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(f"Gradient only defined for scalar-output functions. Output was a "
                        f"{type(out).__name__}: {out!r:.200}. If the function also returns "
                        f"auxiliary values, use grad(f, has_aux=True) and return (loss, aux).")
    aval = aval_of(as_array_argument(out))
    if aval.shape != ():
        raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {aval.shape}.")
    if holomorphic:
        check_holomorphic_dtypes("grad", out, "outputs")
    elif not dtypes.is_float(aval.dtype):
        raise real_output_error("grad", aval.dtype)


def _check_unsupported_options(reduce_axes):
    if reduce_axes:
        raise NotImplementedError("grad(reduce_axes=...) is not supported (JAX has removed it too)")


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """A function returning (fun(*args), the gradient of fun with respect to args[argnums])."""
    errors.check_callable(fun, "value_and_grad")
    _argnums_tuple(argnums)
    _check_unsupported_options(reduce_axes)

    @errors.api_boundary
    def value_and_grad_fun(*args, **kwargs):
        partial, chosen = select_args(fun, argnums, args, kwargs)
        _check_grad_inputs(chosen, allow_int, holomorphic)
        out, vjp_fun, *aux = vjp(partial, *chosen, has_aux=has_aux)
        _check_scalar_output(out, holomorphic)
        from jaxlite import lax
        out_aval = aval_of(as_array_argument(out))     # the seed is weakly typed as the output (as JAX)
        grads = vjp_fun(lax.convert_element_type(1, out_aval.dtype, weak_type=out_aval.weak_type))
        grads = grads[0] if isinstance(argnums, int) else grads
        return ((out, aux[0]) if has_aux else out), grads

    value_and_grad_fun.__name__ = f"value_and_grad({getattr(fun, '__name__', 'fun')})"
    value_and_grad_fun.__wrapped__ = fun
    return value_and_grad_fun


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of a scalar function with respect to args[argnums] (a tuple for a tuple)."""
    errors.check_callable(fun, "grad")
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @errors.api_boundary
    def grad_fun(*args, **kwargs):
        (out_and_aux, grads) = value_and_grad_fun(*args, **kwargs)
        return (grads, out_and_aux[1]) if has_aux else grads

    grad_fun.__name__ = f"grad({getattr(fun, '__name__', 'fun')})"
    grad_fun.__wrapped__ = fun
    return grad_fun
