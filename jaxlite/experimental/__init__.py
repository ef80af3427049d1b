"""jaxlite.experimental: JAX's experimental names that jaxlite provides."""
from jaxlite.callback import io_callback

__all__ = ["io_callback"]
