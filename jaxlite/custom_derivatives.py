"""jaxlite.custom_derivatives: user-defined differentiation rules (as jax.custom_derivatives)."""
from jaxlite.transforms.custom_derivatives import (CustomVJPPrimal, SymbolicZero, custom_jvp,
                                                   custom_jvp_call_p, custom_vjp, custom_vjp_call_p)
from jaxlite.transforms.custom_gradient import custom_gradient
