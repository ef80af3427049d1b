"""Every indexing, sorting, windowed and linear-algebra primitive under composed
transformations: staged (typechecked jaxpr) vs eager, second-order JVPs by finite
differences, vmap of jvp and jvp of vmap against loops."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import ir
from jaxlite.core.staging import jaxpr_as_fun
from fd_check import check_jvp, check_reverse_mode, check_vmap, x64


def _spd(x):
    return lax.add(jnp.matmul(x, jnp.swapaxes(x, -1, -2)), jnp.eye(x.shape[-1], dtype=x.dtype) * 4.0)


FUNCTIONS = {
    "gather": (lambda x: jnp.asarray(x)[np.array([2, 0, 2]), 1:], (4, 3)),
    "scatter": (lambda x: jnp.asarray(x).at[np.array([1, 3]), ::2].set(x[0, :2] * 3.0), (4, 3)),
    "scatter_add": (lambda x: jnp.asarray(x).at[np.array([1, 1, 0])].add(x[1:]), (4, 3)),
    "scatter_mul": (lambda x: jnp.asarray(x).at[np.array([2, 0])].multiply(x[:2] + 2.0), (4, 3)),
    "scatter_max": (lambda x: jnp.asarray(x).at[np.array([2, 0])].max(x[1:3] * 2.0), (4, 3)),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(2)), (2, 2)), (4, 3)),
    "dynamic_update_slice": (lambda x: lax.dynamic_update_slice(x, x[:2, :2] * x[2:, 1:], (1, 5)), (4, 3)),
    "sort": (lambda x: lax.sort(x * x, 0), (4, 3)),
    "argsort_take": (lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=1), 1) * x, (4, 3)),
    "top_k": (lambda x: lax.top_k(x * x, 2)[0], (4, 3)),
    "conv": (lambda x: lax.conv_general_dilated(jnp.reshape(x, (2, 2, 6)), jnp.reshape(x * x, (2, 2, 6))[:, :, :3],
                                                (2,), "SAME", rhs_dilation=(2,)), (4, 6)),
    "reduce_window_sum": (lambda x: lax.reduce_window(x * x, 0.0, lax.add, (2, 2), (1, 2), "SAME"), (4, 3)),
    "reduce_window_max": (lambda x: lax.reduce_window(x * x, -np.inf, lax.max, (2, 2), (2, 1), "VALID"), (4, 3)),
    "reduce_window_min_dilated": (lambda x: lax.reduce_window(x * x, np.inf, lax.min, (2, 2), (1, 2), "SAME",
                                                              (2, 1), (1, 2)), (4, 5)),
    "reduce_window_sum_dilated": (lambda x: lax.reduce_window(x * x, 0.0, lax.add, (2, 2), (2, 1), "SAME",
                                                              (1, 2), (2, 1)), (4, 3)),
    "cholesky": (lambda x: lax.cholesky(_spd(x)), (3, 3)),
    "triangular_solve": (lambda x: lax.triangular_solve(_spd(x), x, left_side=True, lower=True), (3, 3)),
    "lu": (lambda x: lax.lu(_spd(x))[0], (3, 3)),
    "solve_det": (lambda x: jnp.linalg.solve(_spd(x), x) * jnp.linalg.det(_spd(x)), (3, 3)),
}


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_staged_matches_eager(name):
    f, shape = FUNCTIONS[name]
    x = _input(shape).astype(np.float32)
    closed = jaxlite.make_jaxpr(f)(x)
    ir.typecheck(closed)
    (staged,) = jaxpr_as_fun(closed)(jnp.asarray(x))
    np.testing.assert_allclose(staged, f(x), rtol=1e-6)
    ir.typecheck(jaxlite.make_jaxpr(lambda x, t: jaxlite.jvp(f, (x,), (t,)))(x, x))
    ir.typecheck(jaxlite.make_jaxpr(jaxlite.vmap(f))(np.stack([x, x])))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_second_order_jvp(name):
    f, shape = FUNCTIONS[name]
    direction = _input(shape, seed=1)
    check_jvp(lambda x: jaxlite.jvp(f, (x,), (direction,))[1], [_input(shape)], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_vmap_of_jvp_and_jvp_of_vmap(name):
    f, shape = FUNCTIONS[name]
    xs, ts = _input((3,) + shape).astype(np.float32), _input((3,) + shape, seed=2).astype(np.float32)
    check_vmap(lambda x, t: jaxlite.jvp(f, (x,), (t,))[1], [xs, ts], rtol=1e-4)
    with x64():
        _, batched = jaxlite.jvp(jaxlite.vmap(f), (xs.astype(np.float64),), (ts.astype(np.float64),))
        looped = [jaxlite.jvp(f, (x,), (t,))[1] for x, t in zip(xs.astype(np.float64), ts.astype(np.float64))]
    np.testing.assert_allclose(batched, np.stack([np.asarray(t) for t in looped]), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_reverse_mode_through_transpose_rules(name):
    f, shape = FUNCTIONS[name]
    check_reverse_mode(f, _input(shape))
