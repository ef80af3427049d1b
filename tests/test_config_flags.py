"""JAX's config options and their context managers: debug_nans/infs, dtype and rank promotion,
transfer guard, accepted-only flags, unknown flags."""
import logging

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.dtypes import TypePromotionError
from jaxlite.errors import JaxRuntimeError


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_debug_nans_names_the_primitive(jit, caplog):
    def f(x):
        return jnp.sin(x) + jnp.log(x) * 2
    run = jaxlite.jit(f) if jit else f
    with jaxlite.debug_nans(True), caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        np.testing.assert_allclose(run(jnp.ones(2)), np.sin(1.0) * np.ones(2), rtol=1e-6)
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
            run(-jnp.ones(2))
    assert not jaxlite.config.jax_debug_nans
    assert f(-jnp.ones(2)).shape == (2,)       # off again: nan results, no error
    assert any("de-optimized" in r.getMessage() for r in caplog.records) == jit


def test_debug_nans_inside_loops_and_gradients():
    with jaxlite.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"nan\) encountered in sqrt"):
            lax.fori_loop(0, 2, lambda i, c: jnp.sqrt(c - 2.0), jnp.ones(2))
        with pytest.raises(FloatingPointError, match=r"nan\) encountered in sqrt"):
            jaxlite.jit(jaxlite.grad(lambda v: jnp.sqrt(v - 2.0).sum()))(jnp.ones(2))


def test_debug_infs():
    with jaxlite.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
            jaxlite.jit(lambda x: 1.0 / x)(0.0)
        assert float(jnp.log(2.0)) == pytest.approx(np.log(2.0))


def test_strict_dtype_promotion():
    with jaxlite.numpy_dtype_promotion("strict"):
        assert (jnp.ones(2, np.float32) + 1.0).dtype == np.float32
        assert (jnp.ones(2, np.float32) + 1).dtype == np.float32
        for a, b in [(jnp.ones(2, np.float32), jnp.ones(2, np.int32)), (jnp.ones(2, np.int32), jnp.ones(2, np.int8)),
                     (jnp.ones(2, np.int32), 1.0)]:
            with pytest.raises(TypePromotionError, match="jax_numpy_dtype_promotion=strict"):
                jnp.add(a, b)
    assert (jnp.ones(2, np.int32) + 1.0).dtype == np.float32


def test_rank_promotion_warn_and_raise():
    with jaxlite.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match=r"for add on shapes \(2,\) \(3, 2\)"):
            jnp.ones(2) + jnp.ones((3, 2))
        assert (jnp.ones(2) + jnp.float32(1)).shape == (2,)
    with jaxlite.numpy_rank_promotion("warn"), pytest.warns(UserWarning, match="rank promotion"):
        jnp.ones(2) * jnp.ones((3, 2))


def test_transfer_guard_refuses_host_values_to_jit():
    f = jaxlite.jit(lambda x: x + 1)
    with jaxlite.transfer_guard("disallow"):
        assert float(f(jnp.float32(1.0))) == 2.0
        with pytest.raises(JaxRuntimeError, match="Disallowed host-to-device transfer"):
            f(np.float32(1.0))


def test_accepted_and_unknown_options():
    for name, value in [("jax_platforms", "cpu"), ("jax_num_cpu_devices", 1), ("jax_remat3", True),
                        ("jax_threefry_partitionable", False)]:
        previous = jaxlite.config.read(name)
        jaxlite.config.update(name, value)
        assert getattr(jaxlite.config, name) == value
        jaxlite.config.update(name, previous)
    with pytest.raises(AttributeError, match="Unrecognized config option: jax_foo"):
        jaxlite.config.update("jax_foo", 1)
    with pytest.raises(ValueError, match=r"must be in \['allow', 'warn', 'raise'\]"):
        jaxlite.config.update("jax_numpy_rank_promotion", "sometimes")
