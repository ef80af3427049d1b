"""jaxlite.experimental: APIs that JAX keeps under jax.experimental."""
from jaxlite.callback import io_callback
from jaxlite.experimental import checkify, hijax, layout, sparse
