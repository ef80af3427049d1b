import os

import pytest
from hypothesis import settings

import jaxlite

# The machine is shared and noisy; compiled tests must not flake on deadlines.
settings.register_profile("jaxlite", deadline=None, max_examples=30, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "jaxlite"))


@pytest.fixture
def enable_x64():
    """64-bit mode for one test: gradient checks in float64 keep tolerances tight."""
    jaxlite.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jaxlite.config.update("jax_enable_x64", False)
