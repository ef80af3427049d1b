"""custom_vmap: a function with its own rule for vmap, as a primitive.

Calling the function traces it and binds custom_vmap_call, holding its jaxpr
and the user's rule. Eager evaluation, jit and differentiation use the jaxpr
(the rule only says how to vectorize; JAX differentiates through the rule
instead, which gives the same values when the rule is right); vmap calls the rule with the axis size,
which arguments are batched, and the arguments with their batch axis first.
"""
import functools

from jaxlite.core.primitive import Primitive, call_primitives
from jaxlite.core.staging import jaxpr_as_fun
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.transforms import ad, batching


class custom_vmap:
    """`f = custom_vmap(fun)`, then `@f.def_vmap` on rule(axis_size, in_batched, *args) -> (out, out_batched).

    in_batched mirrors the arguments with a bool per leaf; out_batched mirrors the output.
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun, self.vmap_rule = fun, None

    def def_vmap(self, rule):
        self.vmap_rule = rule
        return rule

    def __call__(self, *args):
        name = getattr(self.fun, "__name__", "fun")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} using def_vmap.")
        body, operands, out_tree = ad.trace_call(self.fun, args, f"custom_vmap function {name}")
        in_tree = tree_flatten(tuple(args))[1]
        rule = _FlatVmapRule(self.vmap_rule, in_tree, out_tree, len(operands) - in_tree.num_leaves)
        outs = custom_vmap_call_p.bind(*operands, jaxpr=body, rule=rule)
        return tree_unflatten(out_tree, outs)


class _FlatVmapRule:
    """The user's rule on flat lists of the function's own arguments (after the closed-over consts)."""

    def __init__(self, rule, in_tree, out_tree, num_consts):
        self.rule, self.in_tree, self.out_tree, self.num_consts = rule, in_tree, out_tree, num_consts

    def __call__(self, axis_size, batched, args):
        args_tree = tree_unflatten(self.in_tree, args[self.num_consts:])
        batched_tree = tree_unflatten(self.in_tree, batched[self.num_consts:])
        out, out_batched = self.rule(axis_size, list(batched_tree), *args_tree)
        outs, tree = tree_flatten(out)
        if tree != self.out_tree:
            raise TypeError(f"custom_vmap rule must produce an output with the function's output structure "
                            f"{self.out_tree}, got {tree}")
        flags = tree_flatten(out_batched)[0] if not isinstance(out_batched, bool) else [out_batched] * len(outs)
        return outs, flags

    def __repr__(self):
        return getattr(self.rule, "__name__", "vmap_rule")


def _custom_vmap_batch_rule(axis, args, dims, jaxpr, rule):
    if any(d is not None for d in dims[:rule.num_consts]):
        raise NotImplementedError("custom_vmap: vmap over a value the function closes over is not supported "
                                  "(pass it as an argument)")
    args = [x if d is None else batching.move_dim(x, d, 0) for x, d in zip(args, dims)]
    outs, out_batched = rule(axis.axis_size, [d is not None for d in dims], args)
    return outs, [0 if b else None for b in out_batched]


def _custom_vmap_jvp(primals, tangents, jaxpr, rule):
    """Differentiate the body itself: the rule says how to vectorize, not how to differentiate."""
    return ad.jvp_flat(jaxpr_as_fun(jaxpr), primals, tangents)


custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.def_impl(ad.call_impl)
custom_vmap_call_p.def_abstract_eval(lambda *avals, jaxpr, rule: jaxpr.out_avals)
call_primitives.add(custom_vmap_call_p)     # under jit its value is its body's
ad.jvp_rules[custom_vmap_call_p] = _custom_vmap_jvp
batching.axis_batch_rules[custom_vmap_call_p] = _custom_vmap_batch_rule
