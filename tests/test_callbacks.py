"""pure_callback and io_callback: eager, under jit, vmap (every vmap_method) and grad."""
import logging

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.experimental import io_callback

SCALAR = jaxlite.ShapeDtypeStruct((), np.float32)


def _shift(a, b):
    return (np.sin(a) + b).astype(np.float32)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_pure_callback_returns_the_functions_values(jit):
    spec = jaxlite.ShapeDtypeStruct((3,), np.float32)
    f = lambda a: jaxlite.pure_callback(np.cos, spec, a) * 2
    run = jaxlite.jit(f) if jit else f
    x = jnp.arange(3.0)
    np.testing.assert_allclose(run(x), 2 * np.cos(np.arange(3.0)), rtol=1e-6)
    loop = lambda c: lax.fori_loop(0, 3, lambda i, v: v + jaxlite.pure_callback(np.cos, spec, v), c)
    np.testing.assert_allclose((jaxlite.jit(loop) if jit else loop)(x), loop(x), rtol=1e-6)


@pytest.mark.parametrize("method, seen", [("sequential", [((), ())] * 3), ("expand_dims", [((3,), (1,))]),
                                          ("broadcast_all", [((3,), (3,))]), ("legacy_vectorized", [((3,), ())])])
def test_vmap_methods_call_as_jax(method, seen):
    shapes = []

    def callback(a, b):
        shapes.append((np.shape(a), np.shape(b)))
        return _shift(a, b)

    def f(a, b):
        return jaxlite.pure_callback(callback, jaxlite.ShapeDtypeStruct(a.shape, np.float32), a, b,
                                     vmap_method=method)
    x = jnp.arange(3.0)
    out = jaxlite.jit(jaxlite.vmap(f, in_axes=(0, None)))(x, jnp.float32(1.0))
    np.testing.assert_allclose(out, _shift(np.arange(3.0), 1.0), rtol=1e-6)
    assert shapes == seen


def test_vmap_without_a_method_and_grad_raise_as_jax():
    f = lambda a: jaxlite.pure_callback(np.sin, SCALAR, a)
    with pytest.raises(NotImplementedError, match="vmap_method=None"):
        jaxlite.vmap(f)(jnp.arange(3.0))
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        jaxlite.grad(f)(1.0)
    # A callback off the differentiated path is fine.
    g = jaxlite.grad(lambda a, b: a * jaxlite.pure_callback(np.cos, SCALAR, b))(2.0, 0.0)
    assert float(g) == 1.0


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_results_of_the_wrong_shape_or_dtype_are_errors(jit):
    wrap = jaxlite.jit if jit else (lambda f: f)
    with pytest.raises(RuntimeError, match="Incorrect output shape"):
        wrap(lambda a: jaxlite.pure_callback(lambda v: np.zeros(2, np.float32), SCALAR, a))(1.0)
    with pytest.raises(RuntimeError, match="Incorrect output dtype"):
        wrap(lambda a: jaxlite.pure_callback(lambda v: np.int32(1), SCALAR, a))(1.0)


def test_unused_pure_results_are_dropped_but_io_callbacks_run(caplog):
    calls = []
    spec = SCALAR

    def f(a):
        jaxlite.pure_callback(lambda v: calls.append("pure") or v, spec, a)
        io_callback(lambda v: calls.append("io") or v, spec, a)
        return a
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        jaxlite.jit(f)(np.float32(1.0))
    assert calls == ["io"] and caplog.records == []     # and no fallback warning


def test_io_callback_under_vmap_runs_per_element_and_ordered_refuses():
    seen = []
    f = lambda a: io_callback(lambda v: seen.append(float(v)) or v * 2, SCALAR, a)
    np.testing.assert_array_equal(jaxlite.jit(jaxlite.vmap(f))(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    assert seen == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        jaxlite.vmap(lambda a: io_callback(lambda v: v, SCALAR, a, ordered=True))(jnp.arange(3.0))
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        jaxlite.grad(f)(1.0)


def test_breakpoint_eager_stops_in_the_callers_frame(monkeypatch):
    frames = []
    monkeypatch.setattr("pdb.Pdb.set_trace", lambda self, frame=None: frames.append(frame))

    def f(x):
        y = x + 1
        jaxlite.debug.breakpoint()
        return y
    f(jnp.ones(2))
    assert frames[0].f_code is f.__code__
    jaxlite.jit(f)(jnp.ones(2))
    np.testing.assert_array_equal(frames[1].f_locals["y"], [2.0, 2.0])
