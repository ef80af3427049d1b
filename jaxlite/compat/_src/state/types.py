"""jax._src.state.types, for flax.nnx: AbstractRef, the type of a Ref (tested with isinstance)."""
from jaxlite.core.ref import AbstractRef
