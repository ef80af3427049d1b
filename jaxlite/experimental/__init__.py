"""jaxlite.experimental: APIs that JAX keeps under jax.experimental."""
from jaxlite.experimental import checkify, sparse
