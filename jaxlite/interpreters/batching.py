"""The vmap rule table and helpers, as jax.interpreters.batching names them."""
from jaxlite.transforms.batching import BatchTrace, BatchTracer
from jaxlite.transforms.batching import batch_rules as primitive_batchers
from jaxlite.transforms.batching import move_dim as moveaxis

# The batch dimension of a value that is not batched.
not_mapped = None
