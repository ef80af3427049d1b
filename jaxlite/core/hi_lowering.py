"""Programs on hijax types lowered to programs on arrays (JAX's "to lojax").

A value of a type defined with jax.experimental.hijax (a HiType: a quantized array, a
tuple, ...) is one variable of that type in a jaxpr, as JAX prints it. Only where a program
meets the machine does it become arrays: when it is compiled, each such variable becomes
the arrays its type's `lo_ty` lists and each primitive on hi types the computation its
rule in `hi_lowerings` gives (a VJPHiPrimitive's `expand`); when a jitted function is
called eagerly on hi values, they are lowered to their arrays (`lower_val`) and the
results raised back (`raise_val`).
"""
from jaxlite.core.abstract import is_hi
from jaxlite.core.ir import ClosedJaxpr, Jaxpr
from jaxlite.core.primitive import call_primitives, hi_lowerings
from jaxlite.core.staging import JaxprTrace, eval_jaxpr, trace_to_jaxpr


def has_hi_types(program):
    """Whether any value in the program (a Jaxpr or ClosedJaxpr, and the programs its
    equations call) is of a hi type."""
    jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
    if any(is_hi(v.aval) for v in jaxpr.constvars + jaxpr.invars):
        return True
    return any(is_hi(v.aval) for eqn in jaxpr.eqns for v in eqn.outputs) or any(
        has_hi_types(p) for eqn in jaxpr.eqns for p in eqn.params.values() if isinstance(p, (ClosedJaxpr, Jaxpr)))


def has_hi_boundary(closed):
    """Whether the program takes or returns a value of a hi type."""
    return any(is_hi(a) for a in closed.in_avals + closed.out_avals)


def lo_types(avals):
    return [lo for aval in avals for lo in (aval.lo_ty() if is_hi(aval) else [aval])]


def lower_values(avals, values):
    """Each hi value as the arrays of its type's lo_ty, in order."""
    return [lo for aval, x in zip(avals, values) for lo in (aval.lower_val(x) if is_hi(aval) else [x])]


def raise_values(avals, lo_values):
    """The inverse of lower_values."""
    lo_values, values = iter(lo_values), []
    for aval in avals:
        if is_hi(aval):
            values.append(aval.raise_val(*[next(lo_values) for _ in aval.lo_ty()]))
        else:
            values.append(next(lo_values))
    return values


def lower_hi_jaxpr(closed):
    """The same program on arrays only (the program itself when it has no hi types)."""
    if not has_hi_types(closed):
        return closed

    def lowered(*lo_args):
        args = raise_values(closed.in_avals, lo_args)
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
        return lower_values(closed.out_avals, outs)
    return trace_to_jaxpr(lowered, lo_types(closed.in_avals), "the lowering of hijax types",
                          trace_type=_LoweringTrace)


class _LoweringTrace(JaxprTrace):
    """Stages array primitives as usual; computes primitives on hi types by their lowering
    rules, and inlines calls (jit) whose bodies hold hi types."""

    def process_primitive(self, primitive, args, params):
        rule = hi_lowerings.get(primitive)
        if rule is not None:
            return rule(*args, **params)
        body = params.get("jaxpr")
        if primitive in call_primitives and isinstance(body, ClosedJaxpr) and has_hi_types(body):
            return eval_jaxpr(body.jaxpr, body.consts, *args)
        if any(isinstance(p, (ClosedJaxpr, Jaxpr)) and has_hi_types(p) for p in params.values()):
            raise TypeError(f"{primitive.name} carries values of hijax types, which jaxlite lowers to "
                            "arrays only through jit and the primitives of jax.experimental.hijax")
        return super().process_primitive(primitive, args, params)
