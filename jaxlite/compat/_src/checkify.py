"""jax._src.checkify, for flax.nnx: the checkify module itself."""
from jaxlite.experimental.checkify import *  # noqa: F401,F403 -- this module is an alias of that one
from jaxlite.experimental.checkify import JaxRuntimeError as JaxException
