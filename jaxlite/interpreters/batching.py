"""The vmap rule table and helpers, as jax.interpreters.batching names them."""
from jaxlite.transforms.batching import BatchTrace, BatchTracer
from jaxlite.transforms.batching import axis_batch_rules as _axis_batch_rules
from jaxlite.transforms.batching import batch_rules as primitive_batchers
from jaxlite.transforms.batching import move_dim as moveaxis

# The batch dimension of a value that is not batched.
not_mapped = None


class _AxisPrimitiveBatchers(dict):
    """Rules that also see the vmapped axis, in JAX's form rule(axis_size, axis_name, trace_type,
    args, dims, **params); registering one installs it in jaxlite's axis_batch_rules."""

    def __setitem__(self, primitive, rule):
        super().__setitem__(primitive, rule)

        def axis_rule(axis, args, dims, **params):
            return rule(axis.axis_size, axis.axis_name, None, args, dims, **params)
        _axis_batch_rules[primitive] = axis_rule


axis_primitive_batchers = _AxisPrimitiveBatchers()
