"""jax._src.tree_util, for flax.nnx: the registry of pytree node types (tested with `type in _registry`)."""
from jaxlite.core.tree_util import _registry
