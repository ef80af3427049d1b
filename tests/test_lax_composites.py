"""lax functions composed of primitives (lax.composites) and the *_p exports."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.primitive import Primitive


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 17), axis=st.integers(0, 1), reverse=st.booleans())
def test_associative_scan_is_a_cumulative_sum_and_product(n, axis, reverse):
    x = np.random.default_rng(n).uniform(0.5, 1.5, (n, 3) if axis == 0 else (3, n)).astype(np.float32)
    expected = np.flip(np.cumsum(np.flip(x, axis), axis), axis) if reverse else np.cumsum(x, axis)
    np.testing.assert_allclose(lax.associative_scan(lax.add, x, reverse=reverse, axis=axis), expected, rtol=1e-5)
    np.testing.assert_allclose(lax.associative_scan(lax.mul, x, axis=axis), np.cumprod(x, axis), rtol=1e-5)


def test_associative_scan_of_a_pytree_under_jit_and_grad():
    pairs = lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1]))
    x = jnp.array([3.0, -1.0, 4.0, 1.0, -5.0])
    total, running_max = jaxlite.jit(lambda x: lax.associative_scan(pairs, (x, x)))(x)
    np.testing.assert_allclose(total, np.cumsum(x))
    np.testing.assert_allclose(running_max, np.maximum.accumulate(x))
    grad = jaxlite.grad(lambda x: lax.associative_scan(lax.mul, x).sum())(x)
    np.testing.assert_allclose(grad, jaxlite.grad(lambda x: jnp.cumprod(x).sum())(x), rtol=1e-5)


@pytest.mark.parametrize("computation, init, reference", [
    (lax.add, 0.0, np.sum), (lax.max, -np.inf, np.max), (lambda a, b: a * b + 1, 1.0, None)])
def test_reduce(computation, init, reference):
    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    got = lax.reduce(x, init, computation, (1,))
    if reference is None:   # not a monoid: a left fold in index order
        expected = [((1 * r[0] + 1) * r[1] + 1) * r[2] + 1 for r in x]
    else:
        expected = reference(x, axis=1)
    np.testing.assert_allclose(got, expected)
    np.testing.assert_allclose(jaxlite.jit(lambda x: lax.reduce(x, init, computation, (1,)))(x), expected)


def test_shape_helpers_match_numpy():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(lax.tile(x, (2, 2)), np.tile(x, (2, 2)))
    np.testing.assert_array_equal(lax.tile(x, (3, 1, 1)), np.tile(x, (3, 1, 1)))
    assert [p.shape for p in lax.split(x, (1, 2), axis=1)] == [(2, 1), (2, 2)]
    with pytest.raises(ValueError, match="Sum of sizes"):
        lax.split(x, (1, 1), axis=1)
    np.testing.assert_array_equal(lax.stack([x, x], axis=2), np.stack([x, x], 2))
    np.testing.assert_array_equal(lax.unstack(x, 1)[2], x[:, 2])
    assert lax.collapse(np.zeros((2, 3, 4, 5)), 1, 3).shape == (2, 12, 5)
    assert lax.broadcast_to_rank(x, 4).shape == (1, 1, 2, 3)
    assert lax.broadcast_like(np.ones(3), np.zeros((2, 3))).shape == (2, 3)
    assert lax.padtype_to_pads((10, 9), (3, 4), (2, 1), "SAME") == [(0, 1), (1, 2)]
    assert lax.padtype_to_pads((10,), (3,), (2,), "SAME_LOWER") == [(1, 0)]
    np.testing.assert_array_equal(lax.select(x > 2, x, -x), np.where(x > 2, x, -x))
    assert lax.reciprocal(4.0) == 0.25 and lax.dtype(2) == np.int32
    assert lax.optimization_barrier((x, 1.0))[1] == 1.0


def test_primitive_exports():
    exported = {n: getattr(lax, n) for n in dir(lax) if n.endswith("_p")}
    assert len(exported) >= 100 and all(isinstance(p, Primitive) for p in exported.values())
    eqn_names = [e.primitive for e in jaxlite.make_jaxpr(lambda x: lax.sin(x) + 1.0)(1.0).jaxpr.eqns]
    assert eqn_names == [lax.sin_p, lax.add_p] and lax.scatter_add_p.name == "scatter-add"
