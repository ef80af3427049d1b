"""A small central-difference check of jaxlite.jvp, used until the shared
gradient-check utility lands. Run it with x64 enabled for meaningful differences."""
import numpy as np
import pytest

import jaxlite


def check_jvp(fun, args, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """Compare jvp(fun) along a random direction with a central difference."""
    rng = np.random.default_rng(seed)
    args = [np.asarray(a, np.float64) for a in args]
    direction = [rng.normal(size=np.shape(a)) for a in args]
    _, tangent = jaxlite.jvp(fun, tuple(args), tuple(direction))
    plus = fun(*[a + eps * d for a, d in zip(args, direction)])
    minus = fun(*[a - eps * d for a, d in zip(args, direction)])
    numeric = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=rtol, atol=atol)


@pytest.fixture
def x64():
    """Enable 64-bit types for one test (finite differences need float64)."""
    jaxlite.config.update("jax_enable_x64", True)
    yield
    jaxlite.config.update("jax_enable_x64", False)
