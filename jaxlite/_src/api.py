"""jax._src.api: the transformations, as jaxlite's public API has them."""
from jaxlite import (eval_shape, grad, hessian, jacfwd, jacrev, jit, jvp, linearize, make_jaxpr,  # noqa: F401
                     value_and_grad, vjp, vmap)
