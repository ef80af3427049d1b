"""closed_call and call: the plain call primitives (a ClosedJaxpr applied to the operands).

jaxlite's transformations stage nested calls as jit_p; these exist for code that
binds JAX's call primitives itself or registers rules for them (numpyro's
provenance tracking). They have a call primitive's rules: the compiler inlines
them, and every transformation transforms the body.
"""
from jaxlite.core.primitive import Primitive, call_primitives
from jaxlite.transforms import ad, batching
from jaxlite.transforms.partial_eval import call_partial_eval_rule, partial_eval_rules


def _call_primitive(name):
    primitive = Primitive(name, multiple_results=True)
    primitive.def_impl(ad.call_impl)
    primitive.def_abstract_eval(lambda *avals, jaxpr: list(jaxpr.out_avals))
    call_primitives.add(primitive)
    ad.jvp_rules[primitive] = ad.call_jvp_rule(primitive)
    batching.axis_batch_rules[primitive] = batching.call_batch_rule(primitive)
    partial_eval_rules[primitive] = call_partial_eval_rule(primitive)
    ad.transpose_rules[primitive] = ad.call_transpose_rule
    return primitive


closed_call_p = _call_primitive("closed_call")
call_p = _call_primitive("call")
