"""custom_gradient: a function that returns its value together with its own VJP, as in JAX.

`fun(*args) -> (out, vjp_fn)` becomes a custom_vjp function: the forward pass
traces vjp_fn (closure-converted, so the arrays it closes over become the
residuals) and the backward pass evaluates that trace on the cotangent.
"""
from jaxlite.core.staging import eval_jaxpr
from jaxlite.core.tree_util import register_pytree_node, tree_flatten, tree_unflatten
from jaxlite.transforms import ad
from jaxlite.transforms.custom_derivatives import custom_vjp


class _TracedVJP:
    """The traced vjp_fn: static data of the residuals' tree (its arrays are the consts)."""

    def __init__(self, body, ct_tree):
        self.body, self.ct_tree = body, ct_tree


register_pytree_node(_TracedVJP, lambda t: ((), t), lambda t, children: t)


def custom_gradient(fun):
    """fun(*args) returns (output, vjp_fn), vjp_fn(output_cotangent) -> one cotangent per argument
    (a tuple, or a single value for one argument)."""
    @custom_vjp
    def wrapped(*args):
        return fun(*args)[0]

    def fwd(*args):
        out, vjp_fn = fun(*args)
        body, operands, ct_tree = ad.trace_call(lambda ct: vjp_fn(ct), (out,), "custom_gradient vjp_fn")
        num_consts = len(operands) - len(tree_flatten(out)[0])
        return out, (_TracedVJP(body, ct_tree), operands[:num_consts])

    def bwd(residuals, ct):
        traced, consts = residuals
        cts = tree_unflatten(traced.ct_tree, eval_jaxpr(traced.body.jaxpr, traced.body.consts,
                                                        *consts, *tree_flatten(ct)[0]))
        return cts if isinstance(cts, tuple) else (cts,)

    wrapped.defvjp(fwd, bwd)
    return wrapped
