"""GEMM operator selection: measured plans compute the same product, are measured once,
can be switched off, and survive the persistent compilation cache."""
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.lower import autotune, gemm, step_policy
from jaxlite.transforms import jit as jit_module


@contextmanager
def option(name, value):
    previous = jaxlite.config.read(name)
    jaxlite.config.update(name, value)
    try:
        yield
    finally:
        jaxlite.config.update(name, previous)


@pytest.fixture
def fresh_plans():
    """No remembered plans or jitted programs before or after the test."""
    autotune.clear()
    jit_module.clear_caches()
    yield
    autotune.clear()
    jit_module.clear_caches()


@settings(deadline=None, max_examples=12)
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 70), trans_a=st.booleans(),
       trans_b=st.booleans(), bias=st.booleans(), seed=st.integers(0, 100))
def test_measured_plan_computes_the_model_plans_product(m, n, k, trans_a, trans_b, bias, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype(np.float32)
    extra = [rng.uniform(-1, 1, n).astype(np.float32)] if bias else []
    kernel = gemm.compile_gemm(m, n, k, trans_a=trans_a, trans_b=trans_b, epilogue=gemm.BIAS if bias else None)
    expected = kernel.run(a, b, *extra, plan=kernel.model_plan(2))
    measured = autotune.measure(kernel, 2)
    assert measured.origin == "measured" and measured in kernel.candidate_plans(2)
    for plan in kernel.candidate_plans(2):
        np.testing.assert_allclose(kernel.run(a, b, *extra, plan=plan), expected, rtol=1e-6, atol=1e-6)


def test_candidates_cover_both_axes_and_the_model():
    kernel = gemm.compile_gemm(300, 200, 64)
    plans = kernel.candidate_plans(2)
    assert {p.split for p in plans if p.threads == 2} == {"rows", "columns"}
    assert gemm.SINGLE_THREAD in plans and kernel.model_plan(2) in plans
    # A single row of C can only be shared out by its columns.
    assert kernel.model_plan(1) == gemm.SINGLE_THREAD
    wide = gemm.compile_gemm(1, 4096, 4096)
    assert wide.model_plan(2).split == "columns"


def _layer(x, w, b):
    return jnp.tanh(x @ w + b)


def _scaled_layer(x, w, b):
    return jnp.tanh(x @ w + b) * 3.0


_ARGS = [np.random.default_rng(0).uniform(-1, 1, s).astype(np.float32) for s in ((40, 56), (56, 24), (24,))]


def test_a_plan_is_measured_once_and_reused(fresh_plans):
    before = autotune.stats["measured"]
    first = jaxlite.jit(_layer).lower(*_ARGS).compile()
    assert autotune.stats["measured"] == before + 1
    # Another program with the same GEMM: the table answers.
    second = jaxlite.jit(_scaled_layer).lower(*_ARGS).compile()
    assert autotune.stats["measured"] == before + 1
    assert first.executable.gemm_plans == second.executable.gemm_plans
    (plan,) = first.executable.gemm_plans.values()
    assert plan.origin == "measured"
    assert f"gemm 40x24x56 float32 epilogue bias: {plan.describe()}" in first.as_text()
    np.testing.assert_allclose(first(*_ARGS), _layer(*_ARGS), rtol=1e-5, atol=1e-6)


def test_switching_measurement_off_gives_the_model_plan_every_time(fresh_plans):
    before = dict(autotune.stats)
    with option("jaxlite_autotune", False):
        plans = [jaxlite.jit(f).lower(*_ARGS).compile().executable.gemm_plans for f in (_layer, _scaled_layer)]
    assert autotune.stats == before
    model = gemm.compile_gemm(40, 24, 56, epilogue=gemm.BIAS).model_plan(step_policy.GEMM_THREADS)
    assert plans[0] == plans[1] == {"native 0": model}
    assert plans[0]["native 0"].origin == "model"


def test_gemms_above_the_limit_are_not_measured(fresh_plans):
    before = autotune.stats["measured"]
    with option("jaxlite_autotune_max_flops", 1000):
        (plan,) = jaxlite.jit(_layer).lower(*_ARGS).compile().executable.gemm_plans.values()
    assert autotune.stats["measured"] == before and plan.origin == "model"


@contextmanager
def _cache_directory(path):
    with option("jax_compilation_cache_dir", str(path)):
        yield


def test_disk_cache_keeps_the_choice(fresh_plans, tmp_path):
    cache = tmp_path / "cache"
    with _cache_directory(cache):
        before = autotune.stats["measured"]
        np.testing.assert_allclose(jaxlite.jit(_layer)(*_ARGS), _layer(*_ARGS), rtol=1e-5, atol=1e-6)
        assert autotune.stats["measured"] == before + 1
        chosen = jaxlite.jit(_layer).lower(*_ARGS).compile().executable.gemm_plans
        # Nothing in memory (as in a fresh process): another program with the same GEMM
        # reads the plan's own entry.
        autotune.clear()
        other = jaxlite.jit(_scaled_layer).lower(*_ARGS).compile().executable.gemm_plans
        assert other == chosen and other["native 0"].origin == "measured"
        # Without that entry, the program's own entry still holds its plans.
        autotune.clear()
        jit_module.clear_caches()
        for entry in cache.glob("gemm-plan-*"):
            entry.unlink()
        np.testing.assert_allclose(jaxlite.jit(_layer)(*_ARGS), _layer(*_ARGS), rtol=1e-5, atol=1e-6)
        assert autotune.stats["measured"] == before + 1
