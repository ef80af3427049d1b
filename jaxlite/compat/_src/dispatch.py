"""jax._src.dispatch, for equinox."""


def wait_for_tokens():
    """Wait for pending effectful computations: jaxlite runs them synchronously, so none are pending."""
