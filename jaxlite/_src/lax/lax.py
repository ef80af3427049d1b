"""jax._src.lax.lax: jaxlite.lax's operations."""
from jaxlite.lax import *  # noqa: F401,F403
