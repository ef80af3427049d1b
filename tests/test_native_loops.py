"""Control flow under jit as native loops and branches (lower/native_flow.py).

jit agrees with eager for while_loop, fori_loop, scan, cond and switch, nested and under
grad; bodies run without Python (no Python step, no callback into Python) unless they
hold a debug callback or a fallback, which native code calls back in program order.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.tree_util import tree_flatten
from jaxlite.lower import native_flow, runtime
from jaxlite.test_util import jit_twice_through_the_disk_cache

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def assert_jit_matches_eager(f, *args, rtol=1e-5, atol=1e-6):
    expected, expected_tree = tree_flatten(f(*args))
    actual, actual_tree = tree_flatten(jaxlite.jit(f)(*args))
    assert actual_tree == expected_tree
    for a, e in zip(actual, expected):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)


def executable(f, *args):
    return jaxlite.jit(f).lower(*args).compile().executable


def runs_without_python(exe):
    return not exe._host_steps and all(isinstance(r, runtime._SerialEntry) for r in exe._runners)


@pytest.mark.parametrize("spec", ["bqhd,bkhd->bhqk", "bhqk,bkhd->bqhd", "ij,kj->ik", "ji,jk->ik", "abc,cbd->bad"])
def test_products_of_operands_stored_in_another_order_run_in_the_native_call(spec):
    """An operand the GEMM cannot read as stored is transposed by a fused kernel first."""
    lhs_spec, rhs_spec = spec.split("->")[0].split(",")
    # (sizes whose products stay above step_policy.SMALL_PRODUCT, so they run on the GEMM)
    sizes = dict(zip("abcdhijkq", (60, 5, 16, 12, 2, 24, 40, 36, 40)))
    x, y = rand(*[sizes[c] for c in lhs_spec]), rand(*[sizes[c] for c in rhs_spec])
    f = lambda x, y: jnp.einsum(spec, x, y)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(f)(x, y)), np.einsum(spec, x, y), rtol=1e-4, atol=1e-5)
    exe = executable(f, x, y)
    assert exe._native_eqns and one_native_call(exe) and runs_without_python(exe)


def test_sort_and_gemm_program_is_one_native_call():
    def f(x, w):
        y = jnp.sort(x @ w, axis=1)
        return jnp.linalg.cholesky(y.T @ y + 64.0 * jnp.eye(32)), jnp.argsort(x[:, 0])
    x, w = rand(64, 32), rand(32, 32)
    assert_jit_matches_eager(f, x, w, rtol=1e-4, atol=1e-4)
    exe = executable(f, x, w)
    assert len(exe._native_eqns) >= 4 and one_native_call(exe) and runs_without_python(exe)


def one_native_call(exe):
    """The whole program is one entry point: the builtin, or (when loops call back into
    Python) one serial entry."""
    return exe._native is not None and not exe._runners or len(exe._runners) == 1 and exe._native is None


# ---------------------------------------------------------------- loops

def collatz_steps(n):
    def body(state):
        value, steps = state
        value = jnp.where(value % 2 == 0, value // 2, 3 * value + 1)
        return value, steps + 1
    return lax.while_loop(lambda s: s[0] != 1, body, (n, 0))[1]


@pytest.mark.parametrize("n", [1, 6, 27])
def test_while_loop_with_data_dependent_trip_count(n):
    assert int(jaxlite.jit(collatz_steps)(n)) == int(collatz_steps(n))
    assert runs_without_python(executable(collatz_steps, n))


def test_fori_loop_is_one_native_call_without_python():
    def f(x):
        return lax.fori_loop(0, 1000, lambda i, x: x * 0.999 + 0.001, x)
    x = rand(16)
    assert_jit_matches_eager(f, x, rtol=1e-4)
    exe = executable(f, x)
    assert runs_without_python(exe) and one_native_call(exe) and exe._bridge is None


def test_fori_loop_with_dynamic_bounds_uses_the_index():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, acc: acc + i * x, jnp.zeros_like(x))
    assert_jit_matches_eager(f, 7, rand(3))
    assert_jit_matches_eager(f, 0, rand(3))


def rnn_step(carry, x):
    h, count = carry
    h = jnp.tanh(h * 0.5 + x)
    return (h, count + 1), (h * 2.0, jnp.sum(h))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_several_carries_and_ys(reverse):
    def f(h, xs):
        return lax.scan(rnn_step, (h, 0), xs, reverse=reverse)
    assert_jit_matches_eager(f, rand(3), rand(5, 3))


def test_scan_of_length_zero_returns_the_initial_carry():
    def f(h, xs):
        return lax.scan(rnn_step, (h, 0), xs)
    h = rand(3)
    (carry, count), (ys, sums) = jaxlite.jit(f)(h, np.zeros((0, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(carry), h)
    assert int(count) == 0 and ys.shape == (0, 3) and sums.shape == (0,)


def test_scan_over_pytrees_with_a_length_and_no_xs():
    def f(tree):
        def body(c, _):
            new = {"a": c["a"] + c["b"][0], "b": (c["b"][0] * 2.0, c["b"][1] - 1)}
            return new, {"sum": jnp.sum(new["a"])}
        return lax.scan(body, tree, None, length=4)
    assert_jit_matches_eager(f, {"a": rand(2, 2), "b": (rand(2, 2), 3)})


def test_carry_passed_through_and_swapped():
    def f(a, b):
        return lax.fori_loop(0, 3, lambda i, c: (c[1], c[0] + 1.0, c[0]), (a, b, a))
    assert_jit_matches_eager(f, rand(4), rand(4))


@settings(deadline=None, max_examples=12)
@given(length=st.integers(0, 6), width=st.integers(1, 5), reverse=st.booleans())
def test_scan_agrees_with_a_python_loop(length, width, reverse):
    xs = RNG.standard_normal((length, width)).astype(np.float32)

    def f(c, xs):
        return lax.scan(lambda c, x: (c * 0.9 + jnp.sin(x), c * x), c, xs, reverse=reverse)
    carry, ys = jaxlite.jit(f)(np.ones(width, np.float32), xs)
    c, expected = np.ones(width, np.float32), np.zeros_like(xs)
    for i in reversed(range(length)) if reverse else range(length):
        expected[i] = c * xs[i]
        c = c * 0.9 + np.sin(xs[i])
    np.testing.assert_allclose(np.asarray(ys), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(carry), c, rtol=1e-5, atol=1e-6)


@settings(deadline=None, max_examples=10)
@given(limit=st.floats(0.5, 50.0), index=st.integers(-3, 5))
def test_while_of_switch_agrees_with_python(limit, index):
    branches = [lambda v: v * 2.0, lambda v: v + 1.5, lambda v: v * v + 1.0]

    def f(limit, index):
        def body(state):
            value, count = state
            return lax.switch(index + count % 2, branches, value), count + 1
        return lax.while_loop(lambda s: s[0] < limit, body, (np.float32(0.25), 0))
    value, count = jaxlite.jit(f)(np.float32(limit), index)
    expected, steps = np.float32(0.25), 0
    while expected < np.float32(limit):
        expected = branches[min(max(index + steps % 2, 0), 2)](expected)
        steps += 1
    assert int(count) == steps
    np.testing.assert_allclose(float(value), float(expected), rtol=1e-6)


# ---------------------------------------------------------------- branches

def test_cond_takes_either_branch():
    def f(x):
        return lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * 2.0, lambda v: v * v - 1.0, x)
    assert_jit_matches_eager(f, np.abs(rand(4)))
    assert_jit_matches_eager(f, -np.abs(rand(4)))
    assert runs_without_python(executable(f, rand(4)))


@pytest.mark.parametrize("index", [-5, 0, 1, 2, 9])
def test_switch_clamps_out_of_range_indices(index):
    branches = [lambda v: v + 1.0, lambda v: v * 10.0, lambda v: -v]

    def f(i, x):
        return lax.switch(i, branches, x)
    x = rand(3)
    expected = branches[min(max(index, 0), 2)](x)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(f)(index, x)), expected, rtol=1e-6)


def test_branch_returning_an_operand_or_a_constant():
    def f(p, x):
        return lax.cond(p, lambda v: (v, 2.0), lambda v: (v + 1.0, 3.0), x)
    assert_jit_matches_eager(f, True, rand(3))
    assert_jit_matches_eager(f, False, rand(3))


# ---------------------------------------------------------------- nesting, gradients, GEMMs

def test_cond_inside_scan():
    def f(xs):
        def body(c, x):
            c = lax.cond(x > 0, lambda c: c + x, lambda c: c * 0.5, c)
            return c, c
        return lax.scan(body, 1.0, xs)
    assert_jit_matches_eager(f, rand(9))


def test_scan_inside_while():
    def f(x):
        def inner(c, _):
            return c * 1.1 + 0.1, c
        def body(state):
            x, total, i = state
            x, ys = lax.scan(inner, x, None, length=3)
            return x, total + jnp.sum(ys), i + 1
        return lax.while_loop(lambda s: s[2] < 4, body, (x, 0.0, 0))
    assert_jit_matches_eager(f, rand(5), rtol=1e-4)
    assert runs_without_python(executable(f, rand(5)))


def batched_rnn_loss(w, h, xs):
    """Big enough for its products to run on GEMMs, forwards and backwards."""
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, jnp.mean(h, axis=1)
    h, means = lax.scan(step, h, xs)
    return jnp.sum(means ** 2) + jnp.sum(h)


def test_scan_rnn_under_jit_of_grad():
    w, h, xs = rand(32, 32) * 0.2, rand(4, 32), rand(7, 4, 32)
    expected = jaxlite.grad(batched_rnn_loss, argnums=(0, 1, 2))(w, h, xs)
    actual = jaxlite.jit(jaxlite.grad(batched_rnn_loss, argnums=(0, 1, 2)))(w, h, xs)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-4, atol=1e-5)


def test_gemm_inside_a_scan_body_runs_natively():
    def f(w, xs):
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x), jnp.sum(h)), jnp.zeros((16, 48)), xs)
    w, xs = rand(48, 48) * 0.2, rand(6, 16, 48)     # 16x48x48: above step_policy.SMALL_PRODUCT
    assert_jit_matches_eager(f, w, xs, rtol=1e-4, atol=1e-5)
    exe = executable(f, w, xs)
    assert exe._native_eqns and runs_without_python(exe)


def test_routine_inside_a_loop_body_runs_natively():
    def f(xs):
        return lax.scan(lambda c, x: (c + jnp.sort(x)[0], jnp.sort(x)), 0.0, xs)
    xs = rand(4, 5)
    assert_jit_matches_eager(f, xs)
    exe = executable(f, xs)
    assert exe._native_eqns and runs_without_python(exe) and one_native_call(exe)


# ---------------------------------------------------------------- callbacks

def test_debug_print_in_a_loop_prints_every_iteration_in_order(capsys):
    def f(x):
        def body(i, x):
            jaxlite.debug.print("before {i}", i=i)
            x = x * 2.0
            jaxlite.debug.print("after {} {}", i, x)
            return x
        return lax.fori_loop(0, 3, body, x)
    out = jaxlite.jit(f)(np.float32(1.0))
    assert float(out) == 8.0
    assert capsys.readouterr().out.splitlines() == [
        "before 0", "after 0 2.0", "before 1", "after 1 4.0", "before 2", "after 2 8.0"]
    exe = executable(f, np.float32(1.0))
    assert one_native_call(exe) and len(exe._host_steps) == 2     # one crossing into native code


class Stop(Exception):
    pass


def test_exception_in_a_callback_inside_a_loop_is_raised():
    seen = []

    def check(i):
        seen.append(int(i))
        if i == 2:
            raise Stop(f"stopped at {i}")

    def f(x):
        def body(i, x):
            jaxlite.debug.callback(check, i)
            return x + 1.0
        return lax.fori_loop(0, 5, body, x)
    run = jaxlite.jit(f)
    with pytest.raises(Stop, match="stopped at 2"):
        run(np.float32(0.0))
    assert seen == [0, 1, 2]        # the loop stopped at the raise
    seen.clear()
    with pytest.raises(Stop):       # and the compiled function stays usable
        run(np.float32(0.0))
    assert seen == [0, 1, 2]


def test_exception_in_a_nested_loop_ends_the_whole_call(capsys):
    def check(total):
        if total > 3:
            raise Stop("too big")

    def f(x):
        def inner(c, _):
            jaxlite.debug.callback(check, c)
            return c + 1.0, c
        def outer(state):
            x, i = state
            return lax.scan(inner, x, None, length=2)[0], i + 1
        after = lax.while_loop(lambda s: s[1] < 5, outer, (x, 0))
        jaxlite.debug.print("not reached {}", after[0])
        return after
    with pytest.raises(Stop, match="too big"):
        jaxlite.jit(f)(np.float32(0.0))
    assert "not reached" not in capsys.readouterr().out


def test_no_python_runs_per_iteration(monkeypatch):
    calls = []
    original = runtime.PythonStep.run_on
    monkeypatch.setattr(runtime.PythonStep, "run_on", lambda self, view: calls.append(1) or original(self, view))
    bridge_calls = []
    original_step = native_flow.HostBridge._run_step
    monkeypatch.setattr(native_flow.HostBridge, "_run_step",
                        lambda self, *a: bridge_calls.append(1) or original_step(self, *a))

    def f(x):
        return lax.fori_loop(0, 50, lambda i, x: jnp.sin(x) + i, x)
    jaxlite.jit(f)(rand(4))
    assert calls == [] and bridge_calls == []


def test_the_loop_shows_in_the_lowered_and_compiled_text():
    def f(x):
        return lax.fori_loop(0, 10, lambda i, x: x * 0.5 + 1.0, x)
    lowered = jaxlite.jit(f).lower(rand(3))
    assert "native scan body" in lowered.as_text()
    compiled = lowered.compile()
    assert "scan.body" in compiled.executable.llvm_ir      # before LLVM unrolls the short loop
    assert compiled.executable._whole_entry in compiled.as_text()     # the one entry point


def test_a_loop_program_loads_from_the_disk_cache(tmp_path):
    """Its body calls a GEMM and a routine (sort) natively."""
    def f(x, w):
        return lax.fori_loop(0, 3, lambda i, x: jnp.sort(x @ w, axis=1) * 0.5 + 1.0, x)
    x, w = rand(8, 32), rand(32, 32) * 0.2
    first, second = jit_twice_through_the_disk_cache(f, (x, w), tmp_path / "cache")
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, np.asarray(f(x, w)), rtol=1e-4, atol=1e-5)


def test_cost_analysis_counts_a_scan_body_per_iteration():
    def f(x):
        return lax.fori_loop(0, 10, lambda i, x: x * 0.5 + 1.0, x)
    x = rand(1000)
    flops = jaxlite.jit(f).lower(x).compile().cost_analysis()["flops"]
    assert 10 * 2 * x.size <= flops < 10 * 4 * x.size


def test_callbacks_in_loops_see_ieee_subnormals():
    """Native code flushes subnormals; Python called back from it must not."""
    seen = []

    def f(x):
        def body(i, x):
            jaxlite.debug.callback(lambda v: seen.append(float(v) * 1e-310 / 1e-10), x)
            return x + 1.0
        return lax.fori_loop(0, 2, body, x)
    jaxlite.jit(f)(np.float32(1.0))
    assert seen[0] > 0.0 and seen[1] > seen[0]


_REPEATED_LOOP_CALLS = """
import numpy as np, jaxlite
from jaxlite import lax
x = jaxlite.numpy.asarray(np.ones(64, np.float32))
f = jaxlite.jit(lambda x: lax.fori_loop(0, 3, lambda i, x: x * 0.5 + 1.0, x))
g = jaxlite.jit(lambda x: lax.scan(lambda c, v: (c * 0.5 + v, c), x[:8], x.reshape(8, 8)))
for _ in range(20):
    y, (c, ys) = f(x), g(x)
np.testing.assert_allclose(np.asarray(y), 1.875)
print("ok")
"""


def test_repeated_loop_calls_stay_inside_their_workspace():
    """The fast path's workspace holds the loop bodies' regions too: with Python's
    debugging allocator an overrun corrupts the heap and the process dies."""
    env = {**os.environ, "PYTHONMALLOC": "malloc_debug",
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, "-c", _REPEATED_LOOP_CALLS], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_callback_reentering_its_program_gets_a_workspace_of_its_own():
    """A program's big workspace is kept for its next call on the thread; a call made from
    a callback inside the running program must not reuse the one in use."""
    inner = []

    def f(x, depth):
        y = jnp.tanh(x * 0.5) + 1.0
        jaxlite.debug.callback(lambda v, d: inner.append(np.asarray(g(v, d + 1))) if d == 0 else None, y, depth)
        return y * 2.0 + jnp.sum(y)

    g = jaxlite.jit(f)
    x = rand(256, 512)      # 512 KB intermediates: a kept workspace
    out = np.asarray(g(x, 0))
    assert runtime.KEEP_WORKSPACE_BYTES <= executable(f, x, 0).workspace_size
    y = np.tanh(x * 0.5) + 1.0
    np.testing.assert_allclose(out, y * 2.0 + y.sum(), rtol=1e-5)
    z = np.tanh(y * 0.5) + 1.0
    np.testing.assert_allclose(inner[0], z * 2.0 + z.sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g(x, 0)), out, rtol=1e-6)    # after the reuse


def test_an_operand_passed_twice_frees_its_buffer_once():
    """while_loop((t, t)) lists t twice among the step's inputs; freeing its workspace twice
    gave u and v below one buffer, and every result read v."""
    def f(x, y):
        t = jnp.dot(x, y)
        a, b = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + c[1], c[1]), (t, t))
        u, v = a * x, y - b
        return jnp.dot(u, v), jnp.dot(u, u), jnp.dot(v, v)
    x, y = np.float32([1, 2]), np.float32([3, 5])
    for got, want in zip(jaxlite.jit(f)(x, y), f(x, y)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
