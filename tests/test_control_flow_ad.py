"""Reverse mode of cond, switch, scan, fori_loop and while_loop."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.ir import ClosedJaxpr, typecheck
from jaxlite.test_util import check_grads
from jaxlite.transforms import ad


pytestmark = pytest.mark.usefixtures("enable_x64")   # gradient checks in float64


def typecheck_all(closed):
    """Typecheck a jaxpr and every jaxpr held by its equations' parameters."""
    typecheck(closed)
    for eqn in closed.jaxpr.eqns:
        for value in eqn.params.values():
            for inner in (value if isinstance(value, tuple) else (value,)):
                if isinstance(inner, ClosedJaxpr):
                    typecheck_all(inner)


def rand(*shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def test_switch_and_cond_through_closures():
    w = rand(3, seed=1)

    def f(k, x):
        branches = [lambda a: a * w, lambda a: jnp.sin(a) * jnp.sum(w), lambda a: jnp.exp(a)]
        return lax.switch(k, branches, x)

    for k in range(3):
        check_grads(lambda x, w_: lax.switch(k, [lambda a: a * w_, lambda a: jnp.sin(a) * jnp.sum(w_),
                                                 lambda a: jnp.exp(a)], x), (rand(3), w), order=2)
        g = jaxlite.grad(lambda x: jnp.sum(f(k, x)))(rand(3))
        assert g.shape == (3,)
    typecheck_all(jaxlite.make_jaxpr(jaxlite.grad(lambda x: jnp.sum(f(1, x))))(rand(3)))


def test_grad_of_cond_under_vmap_picks_each_lanes_branch():
    f = lambda x: lax.cond(x > 0, lambda a: a ** 3, lambda a: -2.0 * a, x)
    xs = jnp.asarray(np.array([-1.0, 0.5, 2.0]))
    np.testing.assert_allclose(np.asarray(jaxlite.vmap(jaxlite.grad(f))(xs)), [-2.0, 0.75, 12.0])
    np.testing.assert_allclose(np.asarray(jaxlite.grad(lambda v: jnp.sum(jaxlite.vmap(f)(v)))(xs)),
                               [-2.0, 0.75, 12.0])


def rnn_loss(w, h0, xs):
    def step(h, x):
        h = jnp.tanh(w @ h + x)
        return h, jnp.sum(h * h)
    h, losses = lax.scan(step, h0, xs)
    return jnp.sum(losses) + jnp.sum(h)


def rnn_loss_python(w, h0, xs):
    h, total = h0, 0.0
    for x in xs:
        h = jnp.tanh(w @ h + x)
        total = total + jnp.sum(h * h)
    return total + jnp.sum(h)


def test_grad_of_scan_matches_the_unrolled_loop():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(6, 3, seed=2)
    got = jaxlite.grad(rnn_loss, argnums=(0, 1, 2))(w, h0, xs)
    expected = jaxlite.grad(rnn_loss_python, argnums=(0, 1, 2))(w, h0, xs)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10)
    check_grads(rnn_loss, (w, h0, xs), order=2, modes=("rev",))
    typecheck_all(jaxlite.make_jaxpr(jaxlite.grad(rnn_loss))(w, h0, xs))
    typecheck_all(jaxlite.make_jaxpr(jaxlite.hessian(rnn_loss))(w, h0, xs))
    hess = jaxlite.hessian(rnn_loss)(w, h0, xs)
    np.testing.assert_allclose(np.asarray(hess), np.asarray(jaxlite.hessian(rnn_loss_python)(w, h0, xs)),
                               rtol=1e-8, atol=1e-10)


def test_scan_stacks_one_set_of_residuals_per_iteration():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(6, 3, seed=2)
    _, _, linear, _ = ad.linearize_flat(lambda w: ([rnn_loss(w, h0, xs)], []), [w])
    typecheck_all(linear)
    # The known scan emits, per step, the carry entering it (for dW @ h, already
    # reshaped to a column), tanh's derivative 1 - h**2, and the new h (for the
    # derivative of h * h): three arrays stacked over the 6 steps. The weight
    # (for W @ dh) is a loop invariant, passed once rather than stacked.
    stacked = [c for c in linear.consts if c.shape[0] == 6]
    assert sorted(c.shape for c in stacked) == [(6, 3), (6, 3), (6, 3, 1)]
    assert len(linear.consts) == 4 and any(c.shape == (3, 3) for c in linear.consts)


def test_grad_of_reverse_scan_and_fori_loop():
    h0, xs = rand(2), rand(4, 2, seed=1)
    f = lambda h0, xs: lax.scan(lambda c, x: (jnp.sin(c) * x, c + x), h0, xs, reverse=True)
    check_grads(f, (h0, xs), order=2)
    g = lambda x: lax.fori_loop(0, 5, lambda i, c: c * jnp.cos(c) + i * c, x)
    check_grads(g, (rand(3),), order=2)


def test_grad_of_scan_under_vmap_and_vmap_under_grad():
    w, xs = rand(3, 3) * 0.5, rand(4, 3, seed=2)
    h0s = rand(5, 3, seed=1)
    per_lane = jaxlite.vmap(jaxlite.grad(lambda h0: rnn_loss(w, h0, xs)))(h0s)
    for h0, g in zip(h0s, per_lane):
        np.testing.assert_allclose(np.asarray(g), np.asarray(jaxlite.grad(lambda h: rnn_loss(w, h, xs))(h0)),
                                   rtol=1e-10)
    total = jaxlite.grad(lambda w: jnp.sum(jaxlite.vmap(lambda h0: rnn_loss(w, h0, xs))(h0s)))(w)
    expected = sum(np.asarray(jaxlite.grad(rnn_loss)(w, h0, xs)) for h0 in h0s)
    np.testing.assert_allclose(np.asarray(total), expected, rtol=1e-10)


def test_while_loop_linearizes_but_has_no_reverse_mode():
    f = lambda x: lax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2.0, c[1] * c[0]), (x, x))
    out, f_jvp = jaxlite.linearize(f, 1.0)
    assert [float(o) for o in out] == [16.0, 64.0]
    _, expected = jaxlite.jvp(f, (1.0,), (1.0,))
    assert [float(t) for t in f_jvp(1.0)] == [float(t) for t in expected]
    from jaxlite.lax.control_flow.loops import WHILE_REVERSE_MODE_MESSAGE
    with pytest.raises(ValueError) as info:
        jaxlite.grad(lambda x: f(x)[1])(1.0)
    assert str(info.value) == WHILE_REVERSE_MODE_MESSAGE


def test_checkpointed_scan_body():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(6, 3, seed=2)

    def loss(w):
        step = jaxlite.checkpoint(lambda h, x: (jnp.tanh(w @ h + x), jnp.sum(jnp.sin(h))))
        h, ys = lax.scan(step, h0, xs)
        return jnp.sum(ys) + jnp.sum(h)

    def plain(w):
        h, total = h0, 0.0
        for x in xs:
            h, y = jnp.tanh(w @ h + x), jnp.sum(jnp.sin(h))
            total = total + y
        return total + jnp.sum(h)

    np.testing.assert_allclose(np.asarray(jaxlite.grad(loss)(w)), np.asarray(jaxlite.grad(plain)(w)),
                               rtol=1e-10)


def test_cond_inside_scan_and_scan_inside_cond():
    """Nested higher-order equations are split by their own rules, not kept whole."""
    xs = jnp.asarray(np.array([1.0, -2.0, 3.0, 0.5]))

    def piecewise_rnn(h0):
        step = lambda c, x: (lax.cond(x > 0, lambda a: jnp.sin(a) * x, lambda a: a * x, c), c)
        return lax.scan(step, h0, xs)[0]

    def python_rnn(h0):
        for x in np.asarray(xs):
            h0 = jnp.sin(h0) * x if x > 0 else h0 * x
        return h0

    np.testing.assert_allclose(float(jaxlite.grad(piecewise_rnn)(0.5)), float(jaxlite.grad(python_rnn)(0.5)),
                               rtol=1e-12)
    check_grads(piecewise_rnn, (jnp.asarray(0.5),), order=2)
    inner = lambda h: lax.cond(h > 0, lambda a: lax.scan(lambda c, x: (c * jnp.cos(x), c), a, xs)[0],
                               jnp.sin, h)
    check_grads(inner, (jnp.asarray(0.7),), order=2)
    check_grads(inner, (jnp.asarray(-0.7),), order=2)


def test_loop_invariant_residuals_are_kept_once():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(6, 3, seed=2)

    def loss(w):
        step = lambda h, x: (jnp.tanh(h @ (w.T * 2.0) + x), ())   # w.T * 2 is loop invariant
        return jnp.sum(lax.scan(step, h0, xs)[0])

    _, _, linear, _ = ad.linearize_flat(lambda w: ([loss(w)], []), [w])
    invariant = [c for c in linear.consts if c.shape == (3, 3)]
    assert len(invariant) == 1 and not any(c.shape[:1] == (6,) and c.ndim == 3 and c.shape[1:] == (3, 3)
                                           for c in linear.consts)
    np.testing.assert_allclose(np.asarray(invariant[0]), 2.0 * np.asarray(w).T)
    check_grads(loss, (w,), order=1)


def test_reverse_mode_through_jit():
    f = lambda x, w: jnp.sum(jnp.tanh(x @ w) ** 2)
    x, w = rand(4, 3), rand(3, 2, seed=1)
    expected = np.asarray(jaxlite.grad(f, argnums=1)(x, w))
    for g in (jaxlite.grad(jaxlite.jit(f), argnums=1), jaxlite.jit(jaxlite.grad(f, argnums=1)),
              jaxlite.jit(jaxlite.grad(jaxlite.jit(f), argnums=1))):
        np.testing.assert_allclose(np.asarray(g(x, w)), expected, rtol=1e-10)
    per_example = jaxlite.vmap(jaxlite.grad(jaxlite.jit(f), argnums=1), in_axes=(0, None))(
        jnp.stack([x, 2.0 * x]), w)
    np.testing.assert_allclose(np.asarray(per_example[0]), expected, rtol=1e-10)
    check_grads(jaxlite.jit(lambda v: jnp.sin(v) ** 3 * v), (rand(3),), order=2)


def test_custom_rules_and_stop_gradient_inside_scan():
    @jaxlite.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (jnp.minimum(jnp.maximum(g, -0.1), 0.1),))

    @jaxlite.custom_jvp
    def softplus(x):
        return jnp.log1p(jnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1 + jnp.exp(-p[0]))))

    def cell(w, h, x):
        h = clip_gradient(softplus(w * h + x))
        return h, lax.stop_gradient(h) * h

    def scanned(w, xs):
        h, ys = lax.scan(lambda h, x: cell(w, h, x), jnp.ones(2), xs)
        return jnp.sum(ys) + jnp.sum(h)

    def unrolled(w, xs):
        h, total = jnp.ones(2), 0.0
        for x in xs:
            h, y = cell(w, h, x)
            total = total + jnp.sum(y)
        return total + jnp.sum(h)

    w, xs = rand(2), rand(5, 2, seed=1)
    np.testing.assert_allclose(np.asarray(jaxlite.grad(scanned)(w, xs)),
                               np.asarray(jaxlite.grad(unrolled)(w, xs)), rtol=1e-12)


def test_higher_order_reverse_mode_through_scan_cond_and_checkpoint():
    ys = [0.5, 1.5, -0.7]
    scanned = lambda x: lax.scan(lambda c, y: (jnp.sin(c) * y, c * c), x, jnp.asarray(np.array(ys)))[0]

    def unrolled(x):
        for y in ys:
            x = jnp.sin(x) * y
        return x

    cases = [(scanned, unrolled),
             (jaxlite.checkpoint(lambda x: jnp.sin(jnp.cos(x))), lambda x: jnp.sin(jnp.cos(x))),
             (lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), jnp.sin)]
    for fun, reference in cases:
        for order in (2, 3):
            derivative, expected = fun, reference
            for _ in range(order):
                derivative, expected = jaxlite.grad(derivative), jaxlite.grad(expected)
            np.testing.assert_allclose(float(derivative(0.3)), float(expected(0.3)), rtol=1e-12)


def _rnn_loss(params, xs):
    w_h, w_x = params

    def step(h, x):
        h = jnp.tanh(h @ w_h + x @ w_x)
        return h, jnp.sum(h ** 2)

    _, per_step = lax.scan(step, jnp.zeros(w_h.shape[0]), xs)
    return jnp.sum(per_step)


def _rnn_loss_unrolled(params, xs):
    w_h, w_x = params
    h, total = jnp.zeros(w_h.shape[0]), 0.0
    for x in xs:
        h = jnp.tanh(h @ w_h + x @ w_x)
        total = total + jnp.sum(h ** 2)
    return total


def test_scan_rnn_under_jit_of_grad_matches_the_loop_and_finite_differences():
    params = (0.5 * rand(4, 4), rand(3, 4, seed=1))
    xs = rand(7, 3, seed=2)
    compiled = jaxlite.jit(jaxlite.grad(_rnn_loss))
    expected = jaxlite.grad(_rnn_loss_unrolled)(params, xs)
    for got, want in zip(compiled(params, xs), expected):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9)
    check_grads(jaxlite.jit(_rnn_loss), (params, xs), order=2, modes=("rev",))


def test_per_example_mlp_gradients_match_a_loop():
    from jaxlite.examples import mlp
    params = [(jnp.asarray(w, jnp.float64), jnp.asarray(b, jnp.float64))
              for w, b in mlp.init_params([3, 5, 2], seed=3)]
    x, labels = mlp.two_spirals(4, seed=4)
    x = jnp.asarray(np.concatenate([x, x[:, :1]], axis=1), jnp.float64)
    y = jnp.asarray(mlp.one_hot(labels, 2), jnp.float64)
    example_loss = lambda p, xi, yi: mlp.loss(jnp, p, xi[None], yi[None])
    batched = jaxlite.jit(jaxlite.vmap(jaxlite.grad(example_loss), in_axes=(None, 0, 0)))(params, x, y)
    for i in range(x.shape[0]):
        single = jaxlite.grad(example_loss)(params, x[i], y[i])
        for (gw, gb), (bw, bb) in zip(single, batched):
            np.testing.assert_allclose(np.asarray(bw[i]), np.asarray(gw), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(np.asarray(bb[i]), np.asarray(gb), rtol=1e-9, atol=1e-12)


def test_vmap_of_hessian_matches_a_loop_and_finite_differences():
    f = lambda v: jnp.sum(jnp.sin(v) * v ** 3) + v[0] * v[1]
    points = rand(4, 3, seed=5)
    hessians = jaxlite.vmap(jaxlite.hessian(f))(points)
    eps = 1e-5
    for i in range(points.shape[0]):
        np.testing.assert_allclose(np.asarray(hessians[i]), np.asarray(jaxlite.hessian(f)(points[i])), rtol=1e-12)
        grad = jaxlite.grad(f)
        numerical = np.stack([(np.asarray(grad(points[i] + eps * e)) - np.asarray(grad(points[i] - eps * e))) / (2 * eps)
                              for e in np.eye(3)])
        np.testing.assert_allclose(np.asarray(hessians[i]), numerical, rtol=1e-6, atol=1e-7)
