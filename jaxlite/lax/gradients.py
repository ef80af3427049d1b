"""Primitives that exist for differentiation's sake."""
from jaxlite.core.primitive import Primitive
from jaxlite.core.tree_util import tree_map
from jaxlite.lax.base import as_operand
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching

# The identity whose derivative is zero: the value is kept, the dependence forgotten.
stop_gradient_p = Primitive("stop_gradient")
fusion_rules.fused(stop_gradient_p, fusion_rules.identity_rule)
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)
ad.defjvp_zero(stop_gradient_p)
batching.vectorized_rule(stop_gradient_p)


def stop_gradient(x):
    """The value of x (a pytree) with every leaf treated as a constant by differentiation.

    Integer and boolean leaves carry no derivative anyway and are returned as they are.
    """
    def stop(leaf):
        leaf = as_operand(leaf)
        return stop_gradient_p.bind(leaf) if ad.is_differentiable(leaf.aval) else leaf
    return tree_map(stop, x)


# Should a tangent ever pass through it, the map is zero, and so is its transpose.
ad.transpose_rules[stop_gradient_p] = lambda ct, x: [None]
