"""checkpoint (remat): trade memory for recomputation in reverse mode.

`checkpoint(f)` binds a call primitive holding f's jaxpr. Its JVP is the same
primitive on the JVP of the body. When linearizing, the body is split by
`split_jaxpr` under the checkpoint's policy: values the policy does not let us
save are not kept as residuals; the staged (unknown) part recomputes them from
the checkpoint's inputs during the backward pass, where `backward_pass`
evaluates the non-linear equations of the body before transposing the rest.
"""
import functools
import types

from jaxlite.core.primitive import Primitive, call_primitives
from jaxlite.core.staging import _split_static, _with_static
from jaxlite.core.tree_util import tree_unflatten
from jaxlite.transforms import ad, batching
from jaxlite.transforms.partial_eval import call_partial_eval_rule, partial_eval_rules


# Policies, as JAX spells them: policy(primitive, *input_avals, **params) -> may its output be saved?
def nothing_saveable(primitive, *avals, **params):
    return False


def everything_saveable(primitive, *avals, **params):
    return True


def dots_saveable(primitive, *avals, **params):
    return primitive.name == "dot_general"


checkpoint_policies = types.SimpleNamespace(
    nothing_saveable=nothing_saveable, everything_saveable=everything_saveable,
    dots_saveable=dots_saveable, checkpoint_dots=dots_saveable)


def _saveable(params):
    policy = params["policy"] or nothing_saveable

    def saveable(eqn):
        return policy(eqn.primitive, *[v.aval for v in eqn.inputs], **eqn.params)
    return saveable


remat_p = Primitive("checkpoint", multiple_results=True)
remat_p.def_impl(ad.call_impl)
remat_p.def_abstract_eval(lambda *avals, jaxpr, **params: jaxpr.out_avals)
# Inlined under jit, where the recomputation may be merged with the forward pass (CSE):
# the same values, without the memory saving prevent_cse asks XLA for.
call_primitives.add(remat_p)
ad.jvp_rules[remat_p] = ad.call_jvp_rule(remat_p)
ad.transpose_rules[remat_p] = ad.call_transpose_rule
batching.axis_batch_rules[remat_p] = batching.call_batch_rule(remat_p)
partial_eval_rules[remat_p] = call_partial_eval_rule(remat_p, _saveable)


def checkpoint(fun, prevent_cse=True, policy=None, static_argnums=()):
    """fun, but reverse mode saves only what `policy` allows and recomputes the rest.

    The default policy saves nothing: only the inputs of the checkpointed call.
    """
    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        dynamic, static = _split_static(args, static_argnums)
        body, operands, out_tree = ad.trace_call(
            lambda dyn, kw: _with_static(fun, static)(*dyn, **kw), (dynamic, kwargs),
            f"checkpoint of {getattr(fun, '__name__', 'fun')}")
        outs = remat_p.bind(*operands, jaxpr=body, policy=policy, prevent_cse=prevent_cse)
        return tree_unflatten(out_tree, outs)
    return remat_fun


remat = checkpoint
