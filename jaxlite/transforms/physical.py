"""The shared physical rule of extended dtypes (see core/extended.py) for primitives that
only move elements around."""
from jaxlite.core.extended import is_extended, physical_rules
from jaxlite.transforms.batching import vmap


def structural(primitive):
    """Register the rule of a primitive that only moves elements around: it is applied
    to each physical component of the extended operands, vmapped over the trailing
    physical axes (which never meet the primitive's own axes)."""
    def rule(in_avals, *operands, **params):
        fun = lambda *xs: primitive.bind(*xs, **params)
        for _ in range(_physical_rank(in_avals)):
            axes = tuple(-1 if is_extended(a) else None for a in in_avals)
            fun = vmap(fun, in_axes=axes, out_axes=-1)
        return fun(*operands)
    physical_rules[primitive] = rule


def _physical_rank(in_avals):
    return max(len(a.dtype.physical_shape) for a in in_avals if is_extended(a))
