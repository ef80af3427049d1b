"""JAX's libraries run unmodified on jaxlite (issue 21): each quickstart in library_quickstarts.py
runs after jaxlite.install_as_jax() and gives the numbers real JAX gave
(tests/data/library_quickstarts.json, recorded by tests/data/record_library_quickstarts.py).

The libraries are test dependencies installed without real JAX (requirements-libraries.txt,
installed with --no-deps by .ci/run): a missing one fails here, it never skips.
"""
import importlib
import json
import math
import pathlib
import sys

import pytest

import jaxlite

HERE = pathlib.Path(__file__).resolve().parent
RECORDED = json.loads((HERE / "data" / "library_quickstarts.json").read_text())
REQUIREMENTS = HERE.parent / "requirements-libraries.txt"


def _installed_as_jax():
    real_jax = sys.modules.get("jax")
    if real_jax is not None and not getattr(real_jax, "__jaxlite_version__", None):
        pytest.fail("real JAX is imported in the test process; jaxlite's tests must not import it")
    jaxlite.install_as_jax()


def _import_library(name):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name and error.name.split(".")[0] == name.split(".")[0]:
            pytest.fail(f"{name} is not installed: pip install --no-deps -r {REQUIREMENTS.name}")
        raise


def assert_close(actual, expected, path="result", rtol=2e-5, atol=2e-6):
    """Nested dicts/lists of numbers equal to float32 tolerance; everything else exactly."""
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_close(actual[key], expected[key], f"{path}[{key!r}]", rtol, atol)
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, f"{path}[{i}]", rtol, atol)
    elif isinstance(expected, float):
        assert math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol), f"{path}: {actual} != {expected} (JAX)"
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r} (JAX)"


def _run(name, *libraries, **tolerance):
    _installed_as_jax()
    for library in libraries:
        _import_library(library)
    import library_quickstarts
    assert_close(library_quickstarts.QUICKSTARTS[name](), RECORDED["results"][name], name, **tolerance)


def test_optax_adam_and_a_scheduled_chain_train_a_linear_model():
    _run("optax_linear_regression", "optax")


def test_equinox_mlp_trains_with_filter_jit_and_filter_grad():
    _run("equinox_mlp", "equinox")


def test_flax_linen_conv_and_dense_init_apply_grad():
    _run("flax_linen_cnn", "flax")


def test_flax_nnx_module_trains_with_nnx_optimizer_under_nnx_jit():
    _run("flax_nnx_mlp", "flax")


def test_chex_asserts_and_dataclasses():
    _run("chex_asserts_and_dataclasses", "chex")


def test_chex_chexify_checks_asserts_inside_jit():
    _run("chex_chexify", "chex")


def test_distrax_normal_and_categorical_log_prob_sample_grad():
    _run("distrax_distributions", "distrax")


def test_numpyro_nuts_on_a_tiny_model():
    # A chain is chaotic: rounding differences (jaxlite's exp/log are not XLA's to the last ulp)
    # grow along it until an accept decision flips. A short chain matches JAX's samples closely;
    # over a few hundred samples the posterior's mean and spread are compared at the precision a
    # few hundred samples give (the exact posterior here has mean ~0.89 and sd 0.11).
    _installed_as_jax()
    _import_library("numpyro")
    import library_quickstarts
    result, recorded = library_quickstarts.numpyro_nuts(), RECORDED["results"]["numpyro_nuts"]
    assert_close(result["short_chain"], recorded["short_chain"], "short_chain", rtol=1e-3, atol=1e-4)
    assert_close(result["posterior"], recorded["posterior"], "posterior", rtol=0.0, atol=0.03)


def test_blackjax_nuts_under_jit_on_a_2d_gaussian():
    _run("blackjax_nuts", "blackjax")


def test_jaxtyping_checks_shapes_of_jaxlite_arrays_and_tracers():
    _installed_as_jax()
    jaxtyping = _import_library("jaxtyping")
    import jax.numpy as jnp
    from jaxtyping import Array, Float
    assert isinstance(jnp.ones((2, 3)), Float[Array, "2 3"])
    assert not isinstance(jnp.ones((2, 3)), Float[Array, "3 2"])
    assert not isinstance(jnp.ones((2, 3), jnp.int32), Float[Array, "2 3"])
    seen = []

    def f(x):
        seen.append(isinstance(x, Float[Array, "4"]))
        return x * 2
    jaxlite.jit(f)(jnp.ones(4))
    assert seen == [True] and jaxtyping.__name__ == "jaxtyping"


def test_recorded_with_the_pinned_library_versions():
    pinned = dict(line.split("==") for line in REQUIREMENTS.read_text().split()
                  if "==" in line and not line.startswith("#"))
    for library in ("optax", "equinox", "flax", "chex", "distrax", "numpyro", "blackjax", "jaxtyping"):
        assert RECORDED["versions"][library] == pinned[library], library
    assert RECORDED["versions"]["jax"] == jaxlite.jax_api_version
