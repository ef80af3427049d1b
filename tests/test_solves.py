"""lax.custom_linear_solve and lax.custom_root: values, implicit derivatives, jit, vmap."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.test_util import check_grads, check_vmap

RNG = np.random.default_rng(0)
A = (np.eye(3) * 3 + RNG.normal(size=(3, 3)) * 0.3).astype(np.float32)
B = RNG.normal(size=3).astype(np.float32)


def _conjugate_gradient(matvec, b, steps=3):
    """Conjugate gradients for 3x3 systems (exact in 3 steps): a loop grad is not meant to see."""
    def step(_, state):
        x, r, p = state
        ap = matvec(p)
        alpha = jnp.vdot(r, r) / jnp.vdot(p, ap)
        x_new, r_new = x + alpha * p, r - alpha * ap
        beta = jnp.vdot(r_new, r_new) / jnp.maximum(jnp.vdot(r, r), 1e-30)
        return x_new, r_new, r_new + beta * p
    return lax.fori_loop(0, steps, step, (jnp.zeros_like(b), b, b))[0]


def solve_with(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, lambda m, x: jnp.linalg.solve(a, x),
                                   lambda m, x: jnp.linalg.solve(a.T, x))


def solve_symmetric(a, b):
    spd = a @ a.T
    return lax.custom_linear_solve(lambda x: spd @ x, b, _conjugate_gradient, symmetric=True)


def test_value_and_implicit_gradients_match_the_dense_solve():
    np.testing.assert_allclose(solve_with(A, B), np.linalg.solve(A, B), rtol=1e-5)
    dense = jaxlite.grad(lambda a, b: (jnp.linalg.solve(a, b) ** 2).sum(), argnums=(0, 1))(A, B)
    implicit = jaxlite.grad(lambda a, b: (solve_with(a, b) ** 2).sum(), argnums=(0, 1))(A, B)
    for got, want in zip(implicit, dense):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_gradient_checks_in_both_modes_through_an_iterative_solver():
    with jaxlite.enable_x64():
        a, b = A.astype(np.float64), B.astype(np.float64)
        check_grads(solve_symmetric, (a, b), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_jit_matches_eager_and_vmap_matches_a_loop():
    np.testing.assert_allclose(jaxlite.jit(solve_symmetric)(A, B), solve_symmetric(A, B), rtol=1e-5)
    grad = jaxlite.grad(lambda a, b: solve_symmetric(a, b).sum(), argnums=(0, 1))
    for got, want in zip(jaxlite.jit(grad)(A, B), grad(A, B)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    bs = RNG.normal(size=(4, 3)).astype(np.float32)
    check_vmap(solve_symmetric, (A, bs), in_axes=(None, 0), atol=1e-5, rtol=1e-5)
    check_vmap(solve_with, (np.stack([A, 2 * A]), B), in_axes=(0, None), atol=1e-5, rtol=1e-5)


def test_pytree_right_hand_side_and_aux():
    def solve(matvec, b):
        x = {"u": b["u"] / 2.0, "v": b["v"] / 3.0}
        return x, jnp.int32(7)
    b = {"u": jnp.ones(2), "v": jnp.ones(())}
    x, aux = lax.custom_linear_solve(lambda x: {"u": 2.0 * x["u"], "v": 3.0 * x["v"]}, b, solve,
                                     symmetric=True, has_aux=True)
    np.testing.assert_allclose(x["u"], [0.5, 0.5])
    assert int(aux) == 7


def test_errors_name_the_problem():
    with pytest.raises(TypeError, match="transpose_solve required"):
        jaxlite.grad(lambda b: lax.custom_linear_solve(lambda x: 2.0 * x, b, lambda m, x: x / 2.0).sum())(B)
    with pytest.raises(ValueError, match="solve\\(\\) output shapes must match b"):
        lax.custom_linear_solve(lambda x: x, B, lambda m, x: x[:2])


def newton_sqrt(x):
    """sqrt(x) as the root of y^2 - x, found by a while_loop that grad cannot see through."""
    def solve(f, guess):
        return lax.while_loop(lambda y: jnp.abs(f(y)) > 1e-6, lambda y: y - f(y) / (2 * y), guess)
    return lax.custom_root(lambda y: y * y - x, 1.0, solve, lambda g, y: y / g(1.0))


def test_custom_root_implicit_derivatives():
    np.testing.assert_allclose(newton_sqrt(2.0), np.sqrt(2.0), rtol=1e-6)
    np.testing.assert_allclose(jaxlite.grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-5)
    np.testing.assert_allclose(jaxlite.grad(jaxlite.grad(newton_sqrt))(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-4)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(newton_sqrt))(4.0), 0.25, rtol=1e-5)
    xs = np.array([1.0, 4.0, 9.0], np.float32)
    np.testing.assert_allclose(jaxlite.vmap(jaxlite.grad(newton_sqrt))(xs), 0.5 / np.sqrt(xs), rtol=1e-5)
    with jaxlite.enable_x64():
        check_grads(newton_sqrt, (np.float64(3.0),), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_custom_root_vector_problem_with_aux():
    """The root of A y - b (a vector), tangent-solved with the dense Jacobian of g."""
    def root(a, b):
        solve = lambda f, guess: (jnp.linalg.solve(a, b), jnp.float32(0))
        tangent_solve = lambda g, y: jnp.linalg.solve(jaxlite.jacfwd(g)(y), y)
        return lax.custom_root(lambda y: a @ y - b, jnp.zeros(3), solve, tangent_solve, has_aux=True)
    solution, aux = root(A, B)
    np.testing.assert_allclose(solution, np.linalg.solve(A, B), rtol=1e-5)
    dense = jaxlite.grad(lambda a, b: jnp.linalg.solve(a, b).sum(), argnums=(0, 1))(A, B)
    implicit = jaxlite.grad(lambda a, b: root(a, b)[0].sum(), argnums=(0, 1))(A, B)
    for got, want in zip(implicit, dense):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="f\\(\\) output pytree structure must match initial_guess"):
        lax.custom_root(lambda y: (y, y), 1.0, lambda f, g: g, lambda g, y: y)
