"""jaxlite.experimental: JAX's experimental APIs (multihost_utils, ...)."""
