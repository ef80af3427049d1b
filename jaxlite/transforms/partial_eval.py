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
on split_jaxpr in the same way (see lax/control_flow); a loop whose carry
becomes unknown must iterate the split until the set of unknown carries stops
growing.

The unknown part then meets `ad.backward_pass`: the primitive needs a
transpose rule, which typically runs `ad.backward_pass(body.jaxpr,
body.consts, args, cts)` on its body (args are values for residuals and
UndefinedPrimal for linear operands), as `ad.call_transpose_rule` does. Its
JVP rule usually binds the primitive again on `ad.jvp_jaxpr(body, nonzeros)`
(see `ad.call_jvp_rule`), and batching on `batching.batch_jaxpr`.
"""
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Var, constvars_as_invars, dce_closed
from jaxlite.core.staging import JaxprTrace, JaxprTracer, eval_jaxpr, trace_to_jaxpr
from jaxlite.core.trace import current_trace, set_current_trace

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


def split_jaxpr(closed, unknowns, saveable=everything_saveable, instantiate=False):
    """Split a jaxpr into a known part and an unknown part that runs later.

    known:   (known invars)                -> (known outputs, residuals)
    unknown: (residuals, unknown invars)    -> (unknown outputs)
    Returns (known, unknown, out_unknowns, num_residuals), both parts closed.

    The split is partial evaluation itself, run over the jaxpr while the known
    part is being staged: so a higher-order equation inside (a cond in a scan
    body, a checkpoint in a loop) is split by its own rule, not kept whole.

    A known value the unknown side needs is normally saved as a residual. When
    `saveable(eqn)` says no for the equation computing it, the unknown side
    recomputes it from the known inputs instead: this is how checkpoint
    policies trade memory for recomputation. Values computed from literals only
    (instantiated zero tangents, say) are always recomputed: saving them would
    cost memory to spare a broadcast.

    `instantiate` (a bool, or one per output) forces outputs onto the unknown
    side even when they are known, as a loop needs for a carry that is unknown
    on the way in: the known value then reaches it as a residual.
    """
    known, staged, out_unknowns = _trace_split(closed, unknowns, instantiate)
    unknown, _ = constvars_as_invars(staged)
    known, unknown = _recompute_residuals(known, unknown, len(staged.consts), saveable)
    num_res = len(unknown.in_avals) - sum(unknowns)
    return known, unknown, out_unknowns, num_res


def _trace_split(closed, unknowns, instantiate):
    """(known jaxpr, unknown jaxpr whose consts are the residuals, out_unknowns)."""
    avals = closed.in_avals
    force = [instantiate] * len(closed.out_avals) if isinstance(instantiate, bool) else instantiate
    parts = {}

    def known_part(*known_args):
        trace = PartialEvalTrace(current_trace(), "partial evaluation of a jaxpr")
        try:
            known_args = iter(known_args)
            args = [trace.new_arg(a) if u else next(known_args) for a, u in zip(avals, unknowns)]
            with set_current_trace(trace):
                outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
            parts["out_unknowns"] = [trace.is_unknown(o) or f for o, f in zip(outs, force)]
            parts["staged"] = trace.to_closed_jaxpr(
                [o for o, u in zip(outs, parts["out_unknowns"]) if u])
        finally:
            trace.finish()
        return [o for o, u in zip(outs, parts["out_unknowns"]) if not u] + parts["staged"].consts

    known_avals = [a for a, u in zip(avals, unknowns) if not u]
    known = trace_to_jaxpr(known_part, known_avals, "the known part of a jaxpr")
    return known, parts["staged"], parts["out_unknowns"]


def _recompute_residuals(known, unknown, num_res, saveable):
    """Move the computation of the residuals that may not be saved to the unknown side.

    Walking back from them through the known part, the unknown side recomputes
    each value until it reaches one it may read instead: a known input, a kept
    residual, or an intermediate value the policy lets us save; those it needs
    become residuals in turn. The two jaxprs may share variables: each is
    self-contained, so a variable of the known part can be defined again here.
    """
    kj, uj = known.jaxpr, unknown.jaxpr
    num_outs = len(kj.outvars) - num_res
    res_known, res_unknown = kj.outvars[num_outs:], uj.invars[:num_res]
    constant = computed_from(kj, ())

    def may_save(eqn):
        return eqn.outputs[0] not in constant and saveable(eqn)

    producer = {v: eqn for eqn in kj.eqns for v in eqn.outputs}
    keep = [v not in constant and (v not in producer or may_save(producer[v])) for v in res_known]
    if all(keep):
        return known, unknown
    kept = {v for v, k in zip(res_known, keep) if k}
    needed = {v for v, k in zip(res_known, keep) if not k}
    recompute, saved = [], set()
    for eqn in reversed(kj.eqns):
        wanted = [v for v in eqn.outputs if v in needed and v not in kept]
        if wanted and may_save(eqn):
            saved.update(wanted)
        elif wanted:
            recompute.append(eqn)
            needed.update(v for v in eqn.inputs if isinstance(v, Var))
    defined = kj.constvars + kj.invars + [v for eqn in kj.eqns for v in eqn.outputs]
    extra = [v for v in defined if v not in kept and (v in saved or (v in needed and v not in producer))]
    new_known = dce_closed(ClosedJaxpr(
        Jaxpr(kj.constvars, kj.invars, kj.eqns, kj.outvars[:num_outs] + extra
              + [v for v, k in zip(res_known, keep) if k]), known.consts))
    # Recomputed values keep their known-side variables; kept residuals are read
    # through the unknown side's variables for them.
    to_recomputed = {u: k for u, k, keep_it in zip(res_unknown, res_known, keep) if not keep_it}
    to_kept = {k: u for u, k, keep_it in zip(res_unknown, res_known, keep) if keep_it}
    eqns = ([_renamed(eqn, to_kept) for eqn in recompute[::-1]]
            + [_renamed(eqn, to_recomputed) for eqn in uj.eqns])
    invars = extra + [u for u, k in zip(res_unknown, keep) if k] + uj.invars[num_res:]
    outvars = [to_recomputed.get(v, v) for v in uj.outvars]
    return new_known, ClosedJaxpr(Jaxpr([], invars, eqns, outvars), [])


def computed_from(jaxpr, roots):
    """`roots` and the variables computed from them and literals alone: with no roots,
    the constants of a jaxpr; with a loop body's consts, its loop invariants."""
    found = set(roots)
    for eqn in jaxpr.eqns:
        if all(not isinstance(v, Var) or v in found for v in eqn.inputs):
            found.update(eqn.outputs)
    return found


def _renamed(eqn, renaming):
    return eqn.replace(inputs=[renaming.get(v, v) if isinstance(v, Var) else v for v in eqn.inputs])


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
        residuals = forward_inputs(known, [x for x, u in zip(args, unknowns) if not u],
                                   known_results[num_known:])
        unknown_args = [x for x, u in zip(args, unknowns) if u]
        staged = trace.stage(primitive, residuals + unknown_args, dict(params, jaxpr=unknown))
        return _merge(out_unknowns, known_results[:num_known], staged)
    return rule


def forward_inputs(known, known_args, residuals):
    """Residuals that are inputs of the known part, taken from its arguments themselves:
    then an array passed to many calls (a weight) stays one residual, not one per call."""
    position = {v: i for i, v in enumerate(known.jaxpr.invars)}
    res_vars = known.jaxpr.outvars[len(known.jaxpr.outvars) - len(residuals):]
    return [known_args[position[v]] if v in position else r for v, r in zip(res_vars, residuals)]


def _merge(mask, if_false, if_true):
    false_iter, true_iter = iter(if_false), iter(if_true)
    return [next(true_iter) if flag else next(false_iter) for flag in mask]
