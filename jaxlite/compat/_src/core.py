"""jax._src.core, for flax (its fp8 ops): the public jax.core names."""
from jaxlite.compat.core import *  # noqa: F401,F403 -- this module is an alias of that one
from jaxlite.compat.core import ShapedArray
