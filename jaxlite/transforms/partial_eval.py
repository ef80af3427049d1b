"""Partial evaluation: compute what is known now, stage what is not into a jaxpr.

Reverse mode rests on this. Linearizing runs the JVP trace on top of a
PartialEvalTrace whose primal inputs are known and whose tangent inputs are
unknown: the primal computation happens at once (in the parent trace) and only
the tangent computation is recorded. The recorded jaxpr is linear in the
tangents; the known values it reads become its consts, the *residuals*.

Known values are simply values of the parent trace (Arrays when eager, tracers
of an enclosing transformation otherwise); unknown values are the staging
tracers of JaxprTrace, whose recording machinery this trace reuses.

Rule table, for primitives that need more than the default:
  partial_eval_rules[p](trace, args, **params) -> output(s)
called only when at least one argument is unknown (`trace.is_unknown(x)`).
The default stages the whole equation, turning its known arguments into
residuals. A higher-order primitive holding a jaxpr (a call, cond, scan, ...)
should instead split its body into a known part, bound at once in
`trace.parent`, and an unknown part staged with `trace.stage`, passing
residuals from the first to the second. `split_jaxpr` does the jaxpr-level
split; `call_partial_eval_rule(p)` is the complete rule for a primitive whose
`jaxpr` parameter is a ClosedJaxpr applied to all of its operands (jit-style
calls, checkpoint): register it with
  partial_eval_rules[my_call_p] = call_partial_eval_rule(my_call_p)
Control flow with its own operand layout (cond's index, scan's carry) builds
on split_jaxpr in the same way; a loop whose carry becomes unknown must
iterate the split until the set of unknown carries stops growing.

The unknown part then meets `ad.backward_pass`: the primitive needs a
transpose rule, which typically runs `ad.backward_pass(body.jaxpr,
body.consts, args, cts)` on its body (args are values for residuals and
UndefinedPrimal for linear operands), as `ad.call_transpose_rule` does. Its
JVP rule usually binds the primitive again on `ad.jvp_jaxpr(body, nonzeros)`
(see `ad.call_jvp_rule`), and batching on `batching.batch_jaxpr`.
"""
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Var, dce
from jaxlite.core.staging import JaxprTrace, JaxprTracer
from jaxlite.core.trace import set_current_trace

partial_eval_rules = {}


class PartialEvalTrace(JaxprTrace):
    """Known values pass through to the parent; unknown ones are staged into a jaxpr."""

    def __init__(self, parent, description="linearize"):
        super().__init__(description)
        self.parent = parent
        self.staging_everything = False

    def is_unknown(self, x):
        return isinstance(x, JaxprTracer) and x._trace is self

    def instantiate_zero(self, aval):
        """Zeros for a symbolic-zero tangent, built on the staged side (no residual)."""
        from jaxlite.transforms.ad import zeros
        self.staging_everything = True
        try:
            with set_current_trace(self):
                return zeros(aval)
        finally:
            self.staging_everything = False

    def process_primitive(self, primitive, args, params):
        if not self.staging_everything and not any(self.is_unknown(x) for x in args):
            with set_current_trace(self.parent):
                return primitive.bind(*args, **params)
        rule = partial_eval_rules.get(primitive)
        if rule is None:
            return self.stage(primitive, args, params)
        return rule(self, args, **params)

    def stage(self, primitive, args, params):
        """Record the equation; its known arguments become residuals."""
        return JaxprTrace.process_primitive(self, primitive, args, params)


# ---------------------------------------------------------------- jaxpr-level split

def everything_saveable(eqn):
    return True


def nothing_saveable(eqn):
    return False


def split_jaxpr(closed, unknowns, saveable=everything_saveable, instantiate=False):
    """Split a jaxpr into a known part and an unknown part that runs later.

    known:   (known invars)                -> (known outputs, residuals)
    unknown: (residuals, unknown invars)    -> (unknown outputs)
    Returns (known, unknown, out_unknowns, num_residuals), both parts closed.

    A known equation needed by the unknown side is normally run on the known
    side and its outputs saved as residuals. When `saveable(eqn)` says no, the
    unknown side recomputes it instead, from its own inputs: this is how
    checkpoint policies trade memory for recomputation. Equations computing
    constants (from literals only, like instantiated zero tangents) are always
    recomputed: saving them would cost memory to spare a broadcast.

    `instantiate` (a bool, or one per output) forces outputs onto the unknown
    side even when they are known, as a loop needs for a carry that is unknown
    on the way in: the known value then reaches it as a residual.
    """
    jaxpr = closed.jaxpr
    unknown_vars = {v for v, unknown in zip(jaxpr.invars, unknowns) if unknown}
    constant_vars = set()
    eqn_unknown = []
    for eqn in jaxpr.eqns:
        unknown = any(isinstance(v, Var) and v in unknown_vars for v in eqn.inputs)
        eqn_unknown.append(unknown)
        if unknown:
            unknown_vars.update(eqn.outputs)
        elif all(not isinstance(v, Var) or v in constant_vars for v in eqn.inputs):
            constant_vars.update(eqn.outputs)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.outvars)
    out_unknowns = [force or (isinstance(v, Var) and v in unknown_vars)
                    for v, force in zip(jaxpr.outvars, instantiate)]
    staged, needed = _unknown_side(jaxpr, eqn_unknown, out_unknowns,
                                   lambda eqn: eqn.outputs[0] not in constant_vars and saveable(eqn))
    defined_later = {v for eqn in staged for v in eqn.outputs} | unknown_vars.intersection(jaxpr.invars)
    candidates = jaxpr.constvars + jaxpr.invars + [v for eqn in jaxpr.eqns for v in eqn.outputs]
    residuals = [v for v in candidates if v in needed and v not in defined_later]
    known = _known_side(closed, unknowns, out_unknowns, residuals)
    unknown_invars = [v for v, unknown in zip(jaxpr.invars, unknowns) if unknown]
    unknown_outvars = [v for v, unknown in zip(jaxpr.outvars, out_unknowns) if unknown]
    unknown = ClosedJaxpr(Jaxpr([], residuals + unknown_invars, staged, unknown_outvars), [])
    return known, unknown, out_unknowns, len(residuals)


def _unknown_side(jaxpr, eqn_unknown, out_unknowns, saveable):
    """The equations the unknown part runs, found backward from its outputs, and the vars they read."""
    needed = {v for v, unknown in zip(jaxpr.outvars, out_unknowns) if unknown}
    staged = []
    for eqn, unknown in zip(reversed(jaxpr.eqns), reversed(eqn_unknown)):
        if not any(v in needed for v in eqn.outputs):
            continue
        if unknown or not saveable(eqn):
            staged.append(eqn)
            needed.update(v for v in eqn.inputs if isinstance(v, Var))
    return staged[::-1], needed


def _known_side(closed, unknowns, out_unknowns, residuals):
    jaxpr = closed.jaxpr
    invars = [v for v, unknown in zip(jaxpr.invars, unknowns) if not unknown]
    outvars = [v for v, unknown in zip(jaxpr.outvars, out_unknowns) if not unknown] + residuals
    known, used_consts, _ = dce(Jaxpr(jaxpr.constvars, invars, jaxpr.eqns, outvars))
    return ClosedJaxpr(known, [c for c, used in zip(closed.consts, used_consts) if used])


def call_partial_eval_rule(primitive, saveable_of=lambda params: everything_saveable):
    """The partial-eval rule of a call primitive: `jaxpr` param applied to all operands.

    The known part is bound now, as the same primitive, in the parent trace; the
    unknown part is staged as the same primitive taking the residuals first.
    `saveable_of(params)` picks the residual policy (checkpoint passes its own).
    """
    def rule(trace, args, **params):
        unknowns = [trace.is_unknown(x) for x in args]
        known, unknown, out_unknowns, num_res = split_jaxpr(params["jaxpr"], unknowns,
                                                           saveable_of(params))
        with set_current_trace(trace.parent):
            known_results = primitive.bind(*[x for x, u in zip(args, unknowns) if not u],
                                           **dict(params, jaxpr=known))
        num_known = len(known_results) - num_res
        residuals = _forward_inputs(params["jaxpr"], unknown, args, known_results[num_known:])
        unknown_args = [x for x, u in zip(args, unknowns) if u]
        staged = trace.stage(primitive, residuals + unknown_args, dict(params, jaxpr=unknown))
        return _merge(out_unknowns, known_results[:num_known], staged)
    return rule


def _forward_inputs(closed, unknown, args, residuals):
    """Residuals that are inputs of the call, taken from the arguments themselves:
    then an array passed to many calls (a weight) stays one residual, not one per call."""
    position = {v: i for i, v in enumerate(closed.jaxpr.invars)}
    res_vars = unknown.jaxpr.invars[:len(residuals)]
    return [args[position[v]] if v in position else r for v, r in zip(res_vars, residuals)]


def _merge(mask, if_false, if_true):
    false_iter, true_iter = iter(if_false), iter(if_true)
    return [next(true_iter) if flag else next(false_iter) for flag in mask]
