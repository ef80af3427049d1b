"""jaxlite.custom_batching: functions with their own vmap rule (as jax.custom_batching)."""
from jaxlite.transforms.custom_batching import custom_vmap
