"""Partial evaluation, residuals, dead-code elimination, checkpoint and call primitives."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core.ir import dce, typecheck
from jaxlite.core.primitive import Primitive
from jaxlite.core.staging import eval_jaxpr
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.test_util import check_grads
from jaxlite.transforms import ad, batching
from jaxlite.transforms.partial_eval import (call_partial_eval_rule, partial_eval_rules,
                                             split_jaxpr)


def linear_jaxpr(fun, *args):
    """The linear (tangent) jaxpr of fun at args; its consts are the residuals."""
    flat, tree = tree_flatten(args)
    flat_fun = lambda *xs: ([fun(*tree_unflatten(tree, xs))], [])
    _, _, linear, _ = ad.linearize_flat(flat_fun, [jnp.asarray(x) for x in flat])
    typecheck(linear)
    return linear


rng = np.random.default_rng(0)
X = jnp.asarray(rng.standard_normal((8, 4)).astype(np.float32))
Y = jnp.asarray(rng.standard_normal((8, 2)).astype(np.float32))
PARAMS = [jnp.asarray(rng.standard_normal(s).astype(np.float32)) for s in [(4, 16), (16,), (16, 2), (2,)]]


def mlp_loss(params):
    w1, b1, w2, b2 = params
    hidden = jnp.tanh(X @ w1 + b1)
    return jnp.mean((hidden @ w2 + b2 - Y) ** 2)


def test_mlp_keeps_only_the_needed_residuals():
    # Exactly five: X (for X @ dW1), 1 - hidden**2 (tanh's derivative), W2 (for
    # dhidden @ W2), hidden (for hidden @ dW2) and 2 * (out - Y) (the square's
    # derivative). Nothing else: not W1, not the pre-activations, not zeros for
    # the tangent of Y, not the biases (their tangents only broadcast and add).
    linear = linear_jaxpr(mlp_loss, PARAMS)
    shapes = sorted(tuple(c.shape) for c in linear.consts)
    assert shapes == sorted([(8, 4), (8, 16), (16, 2), (8, 16), (8, 2)])


def test_python_loop_keeps_two_residuals_per_step():
    # x <- sin(x) * w: each step keeps cos(x) (sin's derivative) and sin(x)
    # (for sin(x) * dw); w itself is read by every step but kept once.
    steps = 100

    def recurrence(w, x):
        for _ in range(steps):
            x = jnp.sin(x) * w
        return jnp.sum(x)

    w = jnp.asarray(np.full(3, 0.9, np.float32))
    linear = linear_jaxpr(recurrence, w, jnp.ones(3))
    assert len(linear.consts) == 2 * steps + 1


def test_dce_drops_unused_equations_and_consts():
    closed = jaxlite.make_jaxpr(lambda x: (jnp.sin(x) * X[0, 0], jnp.cos(x)))(jnp.ones(3))
    jaxpr, used_consts, used_invars = dce(closed.jaxpr, [False, True])
    assert [e.primitive.name for e in jaxpr.eqns] == ["cos"]
    assert not any(used_consts) and used_invars == [True]
    assert jaxpr.invars == closed.jaxpr.invars
    pruned, _, _ = dce(closed.jaxpr, [False, False], prune_invars=True)
    assert pruned.eqns == [] and pruned.invars == []


def test_split_jaxpr_known_and_unknown_parts():
    closed = jaxlite.make_jaxpr(lambda x, y: (jnp.sin(x), jnp.sin(x) * y))(1.0, 2.0)
    known, unknown, out_unknowns, num_res = split_jaxpr(closed, [False, True])
    assert out_unknowns == [False, True] and num_res == 1
    typecheck(known)
    typecheck(unknown)
    outs = eval_jaxpr(known.jaxpr, known.consts, jnp.asarray(1.0))
    result = eval_jaxpr(unknown.jaxpr, unknown.consts, outs[1], jnp.asarray(2.0))
    np.testing.assert_allclose(float(result[0]), np.sin(1.0) * 2.0, rtol=1e-6)
    # Not saving anything: the unknown side recomputes sin from the known input.
    _, unknown, _, num_res = split_jaxpr(closed, [False, True], saveable=lambda eqn: False)
    assert num_res == 1 and [e.primitive.name for e in unknown.eqns] == ["sin", "mul"]


def test_split_jaxpr_can_force_outputs_unknown():
    closed = jaxlite.make_jaxpr(lambda x, y: (jnp.cos(x), x * y, 2.0))(1.0, 2.0)
    known, unknown, out_unknowns, num_res = split_jaxpr(closed, [False, True], instantiate=True)
    assert out_unknowns == [True, True, True] and num_res == 2   # cos(x) and x
    typecheck(unknown)
    residuals = eval_jaxpr(known.jaxpr, known.consts, jnp.asarray(1.0))
    outs = eval_jaxpr(unknown.jaxpr, unknown.consts, *residuals, jnp.asarray(2.0))
    np.testing.assert_allclose([float(o) for o in outs], [np.cos(1.0), 2.0, 2.0], rtol=1e-6)


# ---------------------------------------------------------------- checkpoint

@pytest.mark.usefixtures("enable_x64")
def test_checkpoint_values_and_gradients():
    f = lambda x: jnp.sum(jnp.sin(jnp.sin(x)) * x)
    x = jnp.asarray(np.array([0.3, -0.2, 1.1]))
    for policy in (None, jaxlite.checkpoint_policies.dots_saveable,
                   jaxlite.checkpoint_policies.everything_saveable):
        g = jaxlite.checkpoint(f, policy=policy)
        assert float(g(x)) == float(f(x))
        check_grads(g, (x,), order=2)


def test_checkpoint_saves_only_its_inputs_by_default():
    layer = lambda w, h: jnp.tanh(h @ w)

    def deep(params):
        hidden = X @ params[0]
        for _ in range(3):
            hidden = jaxlite.checkpoint(layer)(params[1], hidden)
        return jnp.sum(hidden)

    params = [PARAMS[0], jnp.asarray(rng.standard_normal((16, 16)).astype(np.float32))]
    linear = linear_jaxpr(deep, params)
    # X for X @ dW0, the shared w, and each layer's input hidden state (3 of them):
    # no tanh derivatives, which the backward pass recomputes.
    assert len(linear.consts) == 5
    without = linear_jaxpr(lambda p: jnp.sum(layer(p[1], layer(p[1], layer(p[1], X @ p[0])))), params)
    assert len(without.consts) == 8  # X, w, and per layer its input and 1 - tanh**2
    grads = jaxlite.grad(deep)(params)
    expected = jaxlite.grad(lambda p: jnp.sum(layer(p[1], layer(p[1], layer(p[1], X @ p[0])))))(params)
    for a, b in zip(grads, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_dots_saveable_policy_keeps_matmul_outputs():
    two_layers = lambda w, x: jnp.sum(jnp.tanh(jnp.tanh(x @ w) @ w))
    w = jnp.asarray(rng.standard_normal((4, 4)).astype(np.float32))
    nothing = linear_jaxpr(lambda w: jaxlite.checkpoint(two_layers)(w, X), w)
    dots = linear_jaxpr(lambda w: jaxlite.checkpoint(
        two_layers, policy=jaxlite.checkpoint_policies.dots_saveable)(w, X), w)
    # Inputs only (w, X) against inputs plus the two matmul outputs.
    assert len(nothing.consts) == 2 and len(dots.consts) == 4
    np.testing.assert_allclose(np.asarray(jaxlite.grad(lambda w: jaxlite.checkpoint(two_layers)(w, X))(w)),
                               np.asarray(jaxlite.grad(two_layers)(w, X)), rtol=1e-5)


def test_checkpoint_under_vmap_make_jaxpr_and_static_argnums():
    f = jaxlite.remat(lambda x, n: jnp.sin(x) * n, static_argnums=(1,))
    xs = jnp.asarray(np.linspace(0, 1, 4).astype(np.float32))
    np.testing.assert_allclose(np.asarray(jaxlite.vmap(lambda x: f(x, 3))(xs)), 3 * np.sin(np.asarray(xs)),
                               rtol=1e-6)
    grads = jaxlite.vmap(jaxlite.grad(lambda x: f(x, 3)))(xs)
    np.testing.assert_allclose(np.asarray(grads), 3 * np.cos(np.asarray(xs)), rtol=1e-6)
    closed = jaxlite.make_jaxpr(jaxlite.grad(lambda x: f(x, 3)))(1.0)
    typecheck(closed)
    assert [e.primitive.name for e in jaxlite.make_jaxpr(lambda x: f(x, 2))(1.0).eqns] == ["checkpoint"]


# ---------------------------------------------------------------- a jit-style call primitive

call_p = Primitive("test_call", multiple_results=True)
call_p.def_impl(ad.call_impl)
call_p.def_abstract_eval(lambda *avals, jaxpr: jaxpr.out_avals)
ad.jvp_rules[call_p] = ad.call_jvp_rule(call_p)
ad.transpose_rules[call_p] = ad.call_transpose_rule
batching.axis_batch_rules[call_p] = batching.call_batch_rule(call_p)
partial_eval_rules[call_p] = call_partial_eval_rule(call_p)


def call(fun):
    def called(*args):
        body, operands, out_tree = ad.trace_call(fun, args, "test call")
        return tree_unflatten(out_tree, call_p.bind(*operands, jaxpr=body))
    return called


@pytest.mark.usefixtures("enable_x64")
def test_generic_call_primitive_rules():
    g = call(lambda x, y: jnp.sin(x) * y + jnp.exp(y))
    x, y = jnp.asarray(np.array([0.1, 0.5])), jnp.asarray(np.array([1.0, -1.0]))
    check_grads(g, (x, y), order=2)
    batched = jaxlite.vmap(g, in_axes=(0, None))(jnp.ones((3, 2)), jnp.asarray([1.0, 2.0]))
    assert batched.shape == (3, 2)
    # Linearizing in x only: the call splits; the staged part is a call on (residual, dx).
    linear = linear_jaxpr(lambda x: jnp.sum(g(x, y)), x)
    assert [e.primitive.name for e in linear.eqns][0] == "test_call"
    # cos(x) and y; the zero tangent of exp(y) is rebuilt in the staged call, not saved.
    assert len(linear.consts) == 2
