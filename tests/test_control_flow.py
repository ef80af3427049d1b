"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map.

Each is checked eagerly, through make_jaxpr + eval_jaxpr and against a plain Python
loop; then under jvp (against central differences), vmap (against a Python loop
over the batch) and their compositions.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.ir import typecheck
from jaxlite.core.staging import eval_jaxpr
from jaxlite.core.tree_util import tree_flatten, tree_leaves, tree_unflatten
from jaxlite.test_util import check_grads, check_vmap

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def assert_trees_close(actual, expected, rtol=1e-5, atol=1e-6):
    actual_leaves, actual_tree = tree_flatten(actual)
    expected_leaves, expected_tree = tree_flatten(expected)
    assert actual_tree == expected_tree
    for a, e in zip(actual_leaves, expected_leaves):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)


def staged(f, *args):
    """f run by tracing it to a (typechecked) jaxpr and evaluating the jaxpr."""
    closed, out_shape = jaxlite.make_jaxpr(f, return_shape=True)(*args)
    typecheck(closed)
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *tree_leaves(args))
    return tree_unflatten(tree_flatten(out_shape)[1], outs)


def check_eager_staged_python(f, python_f, *args):
    expected = python_f(*args)
    assert_trees_close(f(*args), expected)
    assert_trees_close(staged(f, *args), expected)


# ---------------------------------------------------------------- test functions

def piecewise(x):
    return lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * 2.0, lambda v: v * v - 1.0, x)


def piecewise_python(x):
    return np.sin(x) * 2 if np.sum(x) > 0 else x * x - 1


BRANCHES = [lambda v, w: v * w, lambda v, w: jnp.sin(v) + w, lambda v, w: v - jnp.exp(w)]
BRANCHES_PYTHON = [lambda v, w: v * w, lambda v, w: np.sin(v) + w, lambda v, w: v - np.exp(w)]


def three_way(k, x, y):
    return lax.switch(k, BRANCHES, x, y)


def three_way_python(k, x, y):
    return BRANCHES_PYTHON[int(np.clip(k, 0, 2))](x, y)


def newton_sqrt(a):
    """A while loop with a data-dependent trip count and a pytree carry."""
    def body(state):
        return {"x": 0.5 * (state["x"] + a / state["x"]), "steps": state["steps"] + 1}
    def keep_going(state):
        return (jnp.abs(state["x"] * state["x"] - a) > 1e-4 * a) & (state["steps"] < 50)
    return lax.while_loop(keep_going, body, {"x": a + 1.0, "steps": 0})


def newton_sqrt_python(a):
    x, steps = a + 1.0, 0
    while abs(x * x - a) > 1e-4 * a and steps < 50:
        x, steps = 0.5 * (x + a / x), steps + 1
    return {"x": x, "steps": steps}


def power_series(x):
    """fori_loop with static bounds: sum_{i<6} x^i / i!."""
    def body(i, carry):
        term, total = carry
        term = term * x / (i + 1.0)
        return term, total + term
    return lax.fori_loop(0, 6, body, (jnp.ones_like(x), jnp.ones_like(x)))[1]


def power_series_python(x):
    return sum(x ** i / np.prod(np.arange(1, i + 1)) for i in range(7))


def rnn(h0, w, xs):
    """scan with a tuple carry, per-step outputs and a closed-over weight."""
    def step(carry, x):
        h, count = carry
        h = jnp.tanh(w * h + x)
        return (h, count + 1), h * 2.0
    return lax.scan(step, (h0, 0), xs)


def rnn_python(h0, w, xs):
    h, ys = h0, []
    for x in xs:
        h = np.tanh(w * h + x)
        ys.append(h * 2.0)
    return (h, len(xs)), np.stack(ys)


# ---------------------------------------------------------------- eager / staged / Python

@pytest.mark.parametrize("x", [rand(3), -np.abs(rand(3)) - 1])
def test_cond_agrees_with_python(x):
    check_eager_staged_python(piecewise, piecewise_python, x)


@pytest.mark.parametrize("k", [-3, 0, 1, 2, 7])
def test_switch_clamps_index_as_jax(k):
    x, y = rand(4), rand(4)
    check_eager_staged_python(lambda x, y: three_way(k, x, y),
                              lambda x, y: three_way_python(k, x, y), x, y)
    check_eager_staged_python(three_way, three_way_python, np.int32(k), x, y)


def test_cond_accepts_numeric_predicates_and_no_operands():
    assert float(lax.cond(2, lambda: 1.0, lambda: 2.0)) == 1.0
    assert float(lax.cond(0.0, lambda: 1.0, lambda: 2.0)) == 2.0


@pytest.mark.parametrize("a", [0.5, 2.0, 9.0, 100.0])
def test_while_loop_agrees_with_python(a):
    a = np.float32(a)
    check_eager_staged_python(newton_sqrt, newton_sqrt_python, a)


def test_fori_loop_static_bounds_is_a_scan_and_dynamic_bounds_a_while():
    x = rand(3)
    check_eager_staged_python(power_series, power_series_python, x)
    assert [e.primitive.name for e in jaxlite.make_jaxpr(power_series)(x).eqns][-1] == "scan"

    def dynamic(n, x):
        return lax.fori_loop(1, n, lambda i, c: c * x + i, x)
    closed = jaxlite.make_jaxpr(dynamic)(np.int32(4), x)
    assert "while" in [e.primitive.name for e in closed.eqns]
    expected = x.copy()
    for i in range(1, 4):
        expected = expected * x + i
    assert_trees_close(dynamic(np.int32(4), x), expected)
    assert_trees_close(staged(dynamic, np.int32(4), x), expected)
    assert_trees_close(dynamic(np.int32(0), x), x)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_agrees_with_python(reverse):
    h0, w, xs = rand(3), np.float32(0.7), rand(5, 3)
    if reverse:
        expected_carry, expected_ys = rnn_python(h0, w, xs[::-1])
        expected = (expected_carry, expected_ys[::-1])
        f = lambda h0, w, xs: lax.scan(lambda c, x: ((jnp.tanh(w * c[0] + x), c[1] + 1),
                                                     jnp.tanh(w * c[0] + x) * 2.0),
                                       (h0, 0), xs, reverse=True)
        assert_trees_close(f(h0, w, xs), expected)
        assert_trees_close(staged(f, h0, w, xs), expected)
    else:
        check_eager_staged_python(rnn, rnn_python, h0, w, xs)


def test_scan_pytree_xs_ys_and_length():
    xs = {"a": rand(4, 2), "b": rand(4)}
    carry, ys = lax.scan(lambda c, x: (c + jnp.sum(x["a"]) * x["b"], [x["b"], c]), 0.0, xs)
    expected = np.cumsum(xs["a"].sum(1) * xs["b"])
    assert_trees_close(carry, expected[-1], rtol=1e-5)
    assert_trees_close(ys, [xs["b"], np.concatenate([[0.0], expected[:-1]]).astype(np.float32)])
    count, nothing = lax.scan(lambda c, _: (c + 1, None), 0, None, length=7)
    assert int(count) == 7 and nothing is None
    empty_carry, empty_ys = lax.scan(lambda c, x: (c + x, x * 2), 1.0, np.zeros((0,), np.float32))
    assert float(empty_carry) == 1.0 and empty_ys.shape == (0,)


def test_map_is_a_loop_over_the_leading_axis():
    xs = rand(5, 3)
    check_eager_staged_python(lambda xs: lax.map(lambda x: jnp.sum(jnp.sin(x)), xs),
                              lambda xs: np.sin(xs).sum(1), xs)


def test_loops_trace_the_user_function_once():
    calls = {"body": 0, "cond": 0, "scan": 0}

    def body(c):
        calls["body"] += 1
        return c + 1

    def keep_going(c):
        calls["cond"] += 1
        return c < 100

    def step(c, x):
        calls["scan"] += 1
        return c + x, c

    assert int(lax.while_loop(keep_going, body, np.int32(0))) == 100
    lax.scan(step, np.float32(0), np.ones(50, np.float32))
    assert calls == {"body": 1, "cond": 1, "scan": 1}


def test_weakly_typed_initial_carry_takes_the_body_type():
    out = lax.fori_loop(0, 3, lambda i, c: c + np.float32(0.5), 0)
    assert out.dtype == np.float32 and float(out) == 1.5
    total = lax.while_loop(lambda c: c < 2.5, lambda c: c + np.float32(1), 0.0)
    assert total.dtype == np.float32 and not total.weak_type


# ---------------------------------------------------------------- type errors

def test_carry_type_mismatch_names_the_leaf_by_path():
    def body(carry):
        x, state = carry
        return x, {"h": jnp.concatenate([state["h"], state["h"][:1]])}
    with pytest.raises(TypeError) as info:
        lax.while_loop(lambda c: False, body, (1.0, {"h": jnp.zeros(3)}))
    assert ("the input carry component carry[1]['h'] has type float32[3] but the "
            "corresponding output carry component has type float32[4], so the shapes do not "
            "match") in str(info.value)
    assert str(info.value).startswith("while_loop body function carry input")


def test_scan_carry_dtype_and_structure_mismatch():
    with pytest.raises(TypeError, match=r"carry\[0\] has type int32\[\] .* float32\[\]"):
        lax.scan(lambda c, x: ((c[0] * 1.5,), x), (np.int32(1),), rand(3))
    with pytest.raises(TypeError, match="same pytree structure"):
        lax.scan(lambda c, x: ((c, c), x), 1.0, rand(3))


def test_cond_branches_must_agree():
    with pytest.raises(TypeError, match=r"output of true_fun at path \[1\] has type float32\[3\] "
                                        r"but the corresponding output of false_fun has type float32\[2\]"):
        lax.cond(True, lambda x: (x, x), lambda x: (x, x[:2]), rand(3))
    with pytest.raises(TypeError, match=r"same pytree structure.*true_fun returns PyTreeDef\(\*\) "
                                        r"and false_fun returns PyTreeDef\(\(\*,\)\)"):
        lax.cond(True, lambda x: x, lambda x: (x,), rand(3))
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        lax.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(0, [])


def test_while_cond_fun_must_return_a_boolean_scalar():
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c, 1.0)


def test_reverse_mode_message_for_while_is_jax_s():
    from jaxlite.lax.control_flow.loops import WHILE_REVERSE_MODE_MESSAGE
    assert "Try using lax.scan" in WHILE_REVERSE_MODE_MESSAGE


# ---------------------------------------------------------------- jvp

# Reverse mode and higher orders are checked in test_control_flow_ad.py.
FORWARD = {"order": 1, "modes": ("fwd",)}


def test_jvp_of_cond_and_switch():
    check_grads(piecewise, (rand(3),), **FORWARD)
    check_grads(piecewise, (-np.abs(rand(3)) - 1,), **FORWARD)
    for k in range(3):
        check_grads(lambda x, y: three_way(k, x, y), (rand(4), rand(4)), **FORWARD)


def test_jvp_of_cond_through_closed_over_values_and_constant_branches():
    square_or_negate = lambda w: lax.cond(w > 0, lambda: w * w, lambda: -w)
    check_grads(square_or_negate, (np.float32(1.5),), **FORWARD)
    check_grads(square_or_negate, (np.float32(-1.5),), **FORWARD)
    # One branch ignores the operand: its tangent is a symbolic zero the other branch lacks.
    constant_or_sin = lambda p, x: lax.cond(p > 0, lambda v: jnp.ones(3), jnp.sin, x)
    for p in (np.float32(1), np.float32(-1)):
        check_grads(lambda x: constant_or_sin(p, x), (rand(3),), **FORWARD)


def test_jvp_of_while_and_fori():
    check_grads(lambda a: newton_sqrt(a)["x"], (np.float32(3.0),), **FORWARD)
    check_grads(power_series, (rand(3),), **FORWARD)
    # A carry whose tangent becomes nonzero only through the closed-over x.
    check_grads(lambda x: lax.fori_loop(0, 4, lambda i, c: (c[1], c[0] + x * c[1]),
                                        (jnp.zeros(2), jnp.ones(2)))[0], (rand(2),), **FORWARD)
    # Bounds computed from a traced value make fori_loop a while_loop.
    traced_stop = lambda x: 3 + lax.convert_element_type(0 * x[0], np.int32)
    check_grads(lambda x: lax.fori_loop(0, traced_stop(x), lambda i, c: jnp.sin(c) * x, x),
                (rand(2),), **FORWARD)


def test_jvp_of_scan_with_closed_over_values():
    check_grads(rnn, (rand(3), np.float32(0.7), rand(5, 3)), **FORWARD)
    check_grads(lambda w: lax.scan(lambda c, _: (c * w, c), 1.0, None, length=4),
                (np.float32(1.3),), **FORWARD)


def test_jvp_jaxprs_typecheck():
    for f, args in [(piecewise, (rand(3),)), (power_series, (rand(3),)),
                    (lambda h0, w, xs: rnn(h0, w, xs), (rand(3), np.float32(0.7), rand(5, 3)))]:
        typecheck(jaxlite.make_jaxpr(lambda *a: jaxlite.jvp(f, a, a))(*args))


# ---------------------------------------------------------------- vmap

def test_vmap_of_cond_with_batched_and_unbatched_predicates():
    xs = np.concatenate([rand(3, 2), -np.abs(rand(3, 2)) - 1])
    check_vmap(piecewise, (xs,))
    closed = jaxlite.make_jaxpr(jaxlite.vmap(piecewise))(xs)
    assert "select_n" in str(closed) and "cond" not in str(closed)
    unbatched_pred = lambda p, x: lax.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    check_vmap(unbatched_pred, (np.float32(1.0), xs), in_axes=(None, 0))
    assert "cond" in str(jaxlite.make_jaxpr(jaxlite.vmap(unbatched_pred, (None, 0)))(np.float32(1.0), xs))


def test_vmap_of_cond_over_closed_over_values():
    f = lambda w, x: lax.cond(x > 0, lambda v: v * w, lambda v: v - w, x)
    check_vmap(f, (rand(4), np.float32(0.5)), in_axes=(0, None))
    check_vmap(f, (np.float32(2.0), rand(4)), in_axes=(None, 0))


def test_vmap_of_switch_with_batched_index():
    ks = np.array([-1, 0, 1, 2, 5], np.int32)
    check_vmap(three_way, (ks, rand(5, 3), rand(3)), in_axes=(0, 0, None))
    check_vmap(three_way, (np.int32(1), rand(3, 4), rand(3, 4)), in_axes=(None, 1, 1))


def test_vmap_of_while_with_lanes_finishing_at_different_times():
    a = np.array([0.5, 2.0, 9.0, 100.0, 1e4], np.float32)
    check_vmap(newton_sqrt, (a,))
    steps = jaxlite.vmap(newton_sqrt)(a)["steps"]
    assert len(set(np.asarray(steps).tolist())) > 1
    counts = jaxlite.vmap(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),
                                                   (0, 1.0)))(np.array([0, 3, 1], np.int32))
    assert_trees_close(counts, (np.array([0, 3, 1]), np.array([1.0, 8.0, 2.0])))


def test_vmap_of_while_with_unbatched_predicate_batches_only_the_carry():
    f = lambda x: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * x), (0, x))
    check_vmap(f, (rand(3, 2),))
    assert "reduce_or" not in str(jaxlite.make_jaxpr(jaxlite.vmap(f))(rand(3, 2)))


def test_vmap_of_fori_and_scan_over_each_operand():
    check_vmap(power_series, (rand(4, 3),))
    check_vmap(power_series, (rand(3, 4),), in_axes=1)
    h0, w, xs = rand(3), np.float32(0.7), rand(5, 3)
    check_vmap(rnn, (rand(4, 3), w, xs), in_axes=(0, None, None))
    check_vmap(rnn, (h0, rand(4), xs), in_axes=(None, 0, None))
    check_vmap(rnn, (h0, w, rand(5, 4, 3)), in_axes=(None, None, 1))
    check_vmap(rnn, (h0, w, rand(5, 3, 4)), in_axes=(None, None, -1))
    check_vmap(lambda xs: lax.map(lambda x: jnp.sum(x * x), xs), (rand(2, 5, 3),))


def test_vmap_of_fori_with_batched_trip_count():
    f = lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x)
    check_vmap(f, (np.array([0, 1, 4], np.int32), rand(3, 2)))


def test_batched_jaxprs_typecheck():
    for f, args in [(piecewise, (rand(4, 3),)), (newton_sqrt, (np.float32([1.0, 4.0]),)),
                    (power_series, (rand(4, 3),))]:
        typecheck(jaxlite.make_jaxpr(jaxlite.vmap(f))(*args))


# ---------------------------------------------------------------- compositions

@pytest.mark.parametrize("f, batch", [
    (piecewise, lambda: np.concatenate([rand(2, 3), -np.abs(rand(2, 3)) - 1])),
    (lambda a: newton_sqrt(a)["x"], lambda: np.float32([0.5, 3.0, 40.0])),
    (power_series, lambda: rand(3, 2)),
    (lambda x: rnn(x, np.float32(0.5), jnp.ones((4, 2)))[1], lambda: rand(3, 2)),
])
def test_vmap_of_jvp_and_jvp_of_vmap(f, batch):
    xs = batch()
    ts = rand(*xs.shape)
    jvp_f = lambda x, t: jaxlite.jvp(f, (x,), (t,))
    looped = [jvp_f(x, t) for x, t in zip(xs, ts)]
    expected = tuple(np.stack([np.asarray(r[i]) for r in looped]) for i in range(2))
    assert_trees_close(jaxlite.vmap(jvp_f)(xs, ts), expected, rtol=1e-4, atol=1e-5)
    assert_trees_close(jaxlite.jvp(jaxlite.vmap(f), (xs,), (ts,)), expected, rtol=1e-4, atol=1e-5)


@settings(deadline=None, max_examples=15)
@given(st.lists(st.floats(-3, 3, width=32, allow_subnormal=False), min_size=1, max_size=6),   # (flushed as in JAX)
       st.integers(0, 6), st.booleans())
def test_scan_of_cond_under_vmap_matches_python(values, length, reverse):
    xs = np.resize(np.asarray(values, np.float32), (length,))

    def f(x0):
        def step(c, x):
            c = lax.cond(c + x > 0, lambda v: v * 0.5, lambda v: v + 1.0, c + x)
            return c, c * 2.0
        return lax.scan(step, x0, xs, reverse=reverse)

    def f_python(x0):
        c, ys = x0, [None] * length
        for i in (reversed(range(length)) if reverse else range(length)):
            c = c + xs[i]
            c = c * 0.5 if c > 0 else c + 1.0
            ys[i] = c * 2.0
        return c, np.array(ys, np.float32).reshape((length,))

    x0s = np.asarray(values, np.float32)
    looped = [f_python(x0) for x0 in x0s]
    expected = (np.array([c for c, _ in looped]), np.stack([ys for _, ys in looped]))
    assert_trees_close(jaxlite.vmap(f)(x0s), expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- compile regressions found by libraries

def test_a_step_reading_one_value_twice_frees_its_buffer_once():
    # blackjax's NUTS under jit: a cond reading the same intermediate twice freed its
    # workspace range twice, so two later values shared one buffer (silently wrong results).
    def f(p, x):
        y = jnp.sin(x)
        s = lax.cond(p, lambda u, v: u * v, lambda u, v: u - v, y, y)
        a, b = lax.cond(p, lambda u: (u + 1.0, u * 3.0), lambda u: (u - 1.0, u * 5.0), s)
        return a * b
    x = jnp.arange(4.0)
    for p in (True, False):
        np.testing.assert_allclose(jaxlite.jit(f)(p, x), f(p, x), rtol=1e-6)


def test_a_jitted_closure_over_an_array_called_in_a_loop_body_under_jit():
    data = jnp.array([1.0, 2.0, 3.0])
    inner = jaxlite.jit(lambda c: jnp.sum(data * c))

    def f(x):
        return lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, s[1] + inner(s[1])), (0, x))[1]
    assert float(jaxlite.jit(f)(1.0)) == float(f(1.0)) == 49.0     # JAX gives 49.0


@pytest.mark.parametrize("batch_size", [1, 3, 4, 7])
def test_map_in_batches_matches_a_loop(batch_size):
    """lax.map(batch_size=b): f vmapped over batches of b rows, the rest in one more call."""
    xs = (np.arange(10.0, dtype=np.float32), np.linspace(1, 2, 20, dtype=np.float32).reshape(10, 2))
    f = lambda x: jnp.sin(x[0]) * x[1]
    want = np.stack([np.asarray(f((a, b))) for a, b in zip(*xs)])
    for mapped in (lax.map(f, xs, batch_size=batch_size), jaxlite.jit(lambda xs: lax.map(f, xs, batch_size=batch_size))(xs)):
        np.testing.assert_allclose(mapped, want, rtol=1e-6)
    with pytest.raises(ValueError, match="positive"):
        lax.map(f, xs, batch_size=0)


def test_fori_loop_unroll_needs_static_bounds():
    body = lambda i, total: total + i * i
    assert int(lax.fori_loop(0, 6, body, 0, unroll=2)) == sum(i * i for i in range(6))
    assert int(lax.fori_loop(0, jnp.int32(6), body, 0, unroll=True)) == sum(i * i for i in range(6))
    with pytest.raises(ValueError, match="statically known"):
        jaxlite.jit(lambda n: lax.fori_loop(0, n, body, 0, unroll=2))(6)
