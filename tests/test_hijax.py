"""jaxlite.experimental.hijax: primitives defined by their rules (VJPHiPrimitive, HiPrimitive).

The rules below are deliberately not the true derivative (reverse mode doubles, forward mode
triples) so each test sees which rule a transformation used, as JAX chooses it: grad/vjp the
vjp rule, jvp/jacfwd the jvp rule.
"""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental.hijax import HiPrimitive, VJPHiPrimitive


class SinTimesY(VJPHiPrimitive):
    def __init__(self, x_aval, y_aval):
        self.in_avals, self.out_aval, self.params = (x_aval, y_aval), x_aval, {}
        super().__init__()

    def expand(self, x, y):
        return jnp.sin(x) * y

    def vjp_fwd(self, nzs_in, x, y):
        return self(x, y), (jnp.cos(x), jnp.sin(x), y)

    def vjp_bwd_retval(self, res, g):
        cos_x, sin_x, y = res
        return (2 * cos_x * g * y, 2 * sin_x * g)

    def jvp(self, primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return self(x, y), 3 * (jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot)

    def batch_dim_rule(self, axis_data, in_dims):
        return in_dims[0] if in_dims[0] is not None else in_dims[1]


def f(x, y):
    return SinTimesY(jax.typeof(x), jax.typeof(y))(x, y)


def true_grads(x, y):
    return 2 * np.cos(x) * y, 2 * np.sin(x)


def test_eager_and_jit_run_expand():
    np.testing.assert_allclose(f(2.0, 3.0), np.sin(2.0) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(f)(2.0, 3.0), np.sin(2.0) * 3.0, rtol=1e-6)
    text = str(jax.make_jaxpr(f)(2.0, 3.0))
    assert "call_hi_primitive[_prim=SinTimesY[{}]] a b" in text


def test_reverse_mode_uses_the_vjp_rule_and_forward_mode_the_jvp_rule():
    expected = true_grads(2.0, 3.0)
    for grad in (jax.grad(f, argnums=(0, 1)), jax.jit(jax.grad(f, argnums=(0, 1)))):
        np.testing.assert_allclose(grad(2.0, 3.0), expected, rtol=1e-6)
    _, y_dot = jax.jvp(f, (2.0, 3.0), (1.0, 0.0))
    np.testing.assert_allclose(y_dot, 3 * np.cos(2.0) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(jax.jacfwd(f)(2.0, 3.0), 3 * np.cos(2.0) * 3.0, rtol=1e-6)


def test_vmap_matches_a_loop_with_its_rules():
    xs, ys = jnp.arange(4.0), jnp.linspace(1.0, 2.0, 4)
    looped = [f(x, y) for x, y in zip(xs, ys)]
    np.testing.assert_allclose(jax.vmap(f)(xs, ys), looped, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(f, in_axes=(0, None))(xs, 2.0), [f(x, 2.0) for x in xs], rtol=1e-6)
    grads = jax.vmap(jax.grad(f, argnums=(0, 1)))(xs, ys)
    np.testing.assert_allclose(np.stack(grads), np.stack(true_grads(np.asarray(xs), np.asarray(ys))), rtol=1e-5)
    # Differentiating the vmapped primitive: the unbatched y's cotangent is summed over the batch.
    gy = jax.grad(lambda y: jnp.sum(jax.vmap(f, in_axes=(0, None))(xs, y)))(2.0)
    np.testing.assert_allclose(gy, np.sum(2 * np.sin(np.asarray(xs))), rtol=1e-5)


def test_lin_and_linearized_serve_linearize():
    class Sin(VJPHiPrimitive):
        def __init__(self, x_aval):
            self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, {}
            super().__init__()

        def expand(self, x):
            return jnp.sin(x)

        def lin(self, nzs_in, x):
            return self(x), jnp.cos(x)

        def linearized(self, cos_x, x_dot):
            return 5 * cos_x * x_dot

    y, f_lin = jax.linearize(lambda x: Sin(jax.typeof(x))(x), 3.0)
    np.testing.assert_allclose(y, np.sin(3.0), rtol=1e-6)
    np.testing.assert_allclose(f_lin(1.0), 5 * np.cos(3.0), rtol=1e-6)


def test_missing_declarations_and_rules_raise_as_jax():
    class NoParams(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals, self.out_aval = (aval,), aval
            super().__init__()

    with pytest.raises(AttributeError, match="params"):
        NoParams(jax.typeof(1.0))

    class ExpandOnly(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals, self.out_aval, self.params = (aval,), aval, {}
            super().__init__()

        def expand(self, x):
            return x * 2

    g = lambda x: ExpandOnly(jax.typeof(x))(x)
    assert float(g(2.0)) == 4.0
    with pytest.raises(NotImplementedError, match="must implement `jvp`"):
        jax.jvp(g, (2.0,), (1.0,))
    with pytest.raises(NotImplementedError, match="batch_dim_rule"):
        jax.vmap(g)(jnp.ones(3))
    with pytest.raises(TypeError, match="input type mismatch"):
        ExpandOnly(jax.typeof(1.0))(jnp.ones(3))


class Cube(HiPrimitive):
    def abstract_eval(self, x_aval):
        return x_aval, set()

    def to_lojax(self, x):
        return x * x * x

    def jvp(self, primals, tangents):
        (x,), (t,) = primals, tangents
        return self.bind(x), 3 * x * x * t


cube_p = Cube("cube")


def test_hi_primitive_runs_eagerly_under_jit_and_jvp():
    x = jnp.arange(3.0)
    np.testing.assert_allclose(cube_p.bind(x), np.arange(3.0) ** 3)
    np.testing.assert_allclose(jax.jit(cube_p.bind)(x), np.arange(3.0) ** 3)
    _, t = jax.jvp(cube_p.bind, (x,), (jnp.ones(3),))
    np.testing.assert_allclose(t, 3 * np.arange(3.0) ** 2)
    assert "cube" in str(jax.make_jaxpr(cube_p.bind)(x))
