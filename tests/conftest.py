"""Shared fixtures, and the jit-all mode.

Run the whole suite with every function under test compiled:

    PYTHONPATH=. python -m pytest --jit-all        (or JAXLITE_JIT_ALL=1 python -m pytest)

In that mode the test helpers that take the function under test as their first
argument (`check_grads` and `check_vmap` from jaxlite.test_util, and the helpers
of the same kind defined in test modules, listed in JIT_WRAPPED_HELPERS) receive
`jit(f)` instead of `f`: values, derivatives to second order and batching are then
checked through the native compiler, while the references (central differences,
Python loops, numpy) stay eager. Tests that fail only in this mode are listed in
JIT_ALL_XFAILS with the reason, and are strict xfails there.
"""
import os

import pytest
from hypothesis import settings

import jaxlite
from jaxlite import test_util

# The machine is shared and noisy; compiled tests must not flake on deadlines.
settings.register_profile("jaxlite", deadline=None, max_examples=30, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "jaxlite"))

# A failing test shows jaxlite's own frames (users get them filtered out; test_errors checks that).
jaxlite.config.update("jax_traceback_filtering", os.environ.get("JAX_TRACEBACK_FILTERING", "off"))

# Module-level helpers whose first argument is the function under test.
JIT_WRAPPED_HELPERS = ("check_grads", "check_vmap", "check_jvp", "check_eager_staged_python")

# test node id (without parameters) -> why it fails when its function is jitted.
JIT_ALL_XFAILS = {}


def pytest_addoption(parser):
    parser.addoption("--jit-all", action="store_true",
                     help="pass jit(f) to the test helpers that check a function f (see tests/conftest.py)")


def jit_all_enabled(config):
    return config.getoption("--jit-all") or os.environ.get("JAXLITE_JIT_ALL") == "1"


def pytest_collection_modifyitems(config, items):
    if not jit_all_enabled(config):
        return
    for item in items:
        reason = JIT_ALL_XFAILS.get(item.nodeid) or JIT_ALL_XFAILS.get(item.nodeid.split("[")[0])
        if reason:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"--jit-all: {reason}"))


def jitting(helper):
    """The helper, given jit(f) for the function f it checks."""
    def wrapped(f, *args, **kwargs):
        return helper(jaxlite.jit(f), *args, **kwargs)
    wrapped.__wrapped__ = helper
    return wrapped


@pytest.fixture(scope="module", autouse=True)
def jit_all(request):
    """Module-scoped, so hypothesis tests (which refuse function-scoped fixtures) are covered."""
    if not jit_all_enabled(request.config):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        for name in JIT_WRAPPED_HELPERS:
            helper = getattr(request.module, name, None)
            if callable(helper):
                patch.setattr(request.module, name, jitting(helper))
        yield


@pytest.fixture
def enable_x64():
    """64-bit mode for one test: gradient checks in float64 keep tolerances tight."""
    with test_util.enable_x64():
        yield
