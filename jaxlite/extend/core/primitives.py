"""jaxlite.extend.core.primitives: the primitive objects, for code that matches equations on them
(as jax.extend.core.primitives): lax's, and the call primitives."""
from jaxlite.lax import *  # noqa: F401,F403 -- the *_p names are what this module offers
from jaxlite.transforms.calls import call_p, closed_call_p
from jaxlite.transforms.jit import jit_p
