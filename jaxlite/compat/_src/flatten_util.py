"""jax._src.flatten_util, for blackjax: the public ravel_pytree."""
from jaxlite.flatten_util import ravel_pytree
