"""jaxlite.debug.print and debug.callback: side effects that run with the computation,
not at trace time, under every transformation, in program order."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.ir import typecheck
from jaxlite.lower import pipeline


def printed(capsys):
    return capsys.readouterr().out.splitlines()


def recorder():
    """A callback that keeps what it is given, and the list it keeps it in."""
    calls = []
    return lambda *args, **kwargs: calls.append((args, kwargs)), calls


def test_eager_prints_at_once_with_str_format(capsys):
    x = jnp.arange(3.0)
    jaxlite.debug.print("x={} y={y:.2f} n={}", x, 7, y=np.float32(1.5))
    assert printed(capsys) == ["x=[0. 1. 2.] y=1.50 n=7"]


def test_callback_receives_numpy_values_of_pytrees():
    record, calls = recorder()
    jaxlite.debug.callback(record, {"a": jnp.ones(2)}, 3.0, scale=jnp.int32(4))
    (args, kwargs), = calls
    np.testing.assert_array_equal(args[0]["a"], np.ones(2, np.float32))
    assert isinstance(args[0]["a"], np.ndarray) and float(args[1]) == 3.0
    assert int(kwargs["scale"]) == 4


def test_python_print_runs_at_trace_time_debug_print_every_call(capsys):
    def f(x):
        print("traced")
        jaxlite.debug.print("value {}", x)
        return x + 1

    jitted = jaxlite.jit(f)
    jitted(jnp.float32(1))
    jitted(jnp.float32(2))
    jitted(jnp.float32(3))
    assert printed(capsys) == ["traced", "value 1.0", "value 2.0", "value 3.0"]


def test_make_jaxpr_records_the_callback_even_with_unused_results():
    def f(x):
        jaxlite.debug.print("{}", x * 2)
        return x
    closed = jaxlite.make_jaxpr(f)(jnp.ones(3))
    typecheck(closed)
    assert [e.primitive.name for e in closed.eqns] == ["mul", "debug_callback"]


def test_passes_keep_and_never_merge_effects():
    def f(x):
        jaxlite.debug.print("{}", x)
        jaxlite.debug.print("{}", x)
        return x
    closed = jaxlite.make_jaxpr(f)(jnp.ones(3))
    optimized = pipeline.run_stages(closed, pipeline.CLEANUP)
    assert [e.primitive.name for e in optimized.eqns] == ["debug_callback"] * 2


def test_jit_runs_effects_in_program_order(capsys):
    """The second print needs a fused kernel's result; the third only the input:
    the runtime must not run the third before the second."""
    def f(x):
        jaxlite.debug.print("first {}", x)
        y = jnp.tanh(jnp.sin(x) * 3.0)
        jaxlite.debug.print("second {}", y.sum())
        jaxlite.debug.print("third {}", x.sum())
        return y
    x = jnp.arange(4.0)
    jaxlite.jit(f)(x)
    lines = printed(capsys)
    assert [line.split()[0] for line in lines] == ["first", "second", "third"]
    f(x)
    eager = printed(capsys)
    assert [eager[0], eager[2]] == [lines[0], lines[2]]
    # The compiled tanh is within a few ulp of numpy's, not bitwise equal.
    np.testing.assert_allclose(float(eager[1].split()[1]), float(lines[1].split()[1]), rtol=1e-6)


def test_jit_callback_values_are_not_overwritten_buffers():
    record, calls = recorder()

    def f(x):
        for k in range(3):
            x = jnp.sin(x) + k
            jaxlite.debug.callback(record, x)
        return x * 2
    x = jnp.arange(5.0)
    jaxlite.jit(f)(x)
    expected = np.arange(5, dtype=np.float32)
    for (args, _), k in zip(calls, range(3)):
        expected = np.sin(expected) + k
        np.testing.assert_allclose(args[0], expected, rtol=1e-5)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_loops_print_once_per_iteration(capsys, jit):
    def body(carry, x):
        jaxlite.debug.print("c={} x={}", carry, x)
        return carry + x, carry

    def while_body(i):
        jaxlite.debug.print("i={}", i)
        return i + 1

    def branch(v):
        jaxlite.debug.print("branch {}", v)
        return v * 2

    def program(xs):
        lax.scan(body, 0.0, xs)
        lax.while_loop(lambda i: i < 2, while_body, 0)
        lax.fori_loop(0, 2, lambda i, c: (jaxlite.debug.print("fori {}", i), c)[1], 0.0)
        return lax.cond(xs[0] > 0, branch, lambda v: v, xs)

    run = jaxlite.jit(program) if jit else program
    run(jnp.arange(1.0, 4.0))
    assert printed(capsys) == ["c=0.0 x=1.0", "c=1.0 x=2.0", "c=3.0 x=3.0", "i=0", "i=1",
                               "fori 0", "fori 1", "branch [1. 2. 3.]"]


def test_vmap_prints_each_element(capsys):
    def f(x, c):
        jaxlite.debug.print("x={} c={}", x, c)
        return x * c
    jaxlite.vmap(f, in_axes=(1, None))(jnp.arange(6.0).reshape(3, 2), jnp.float32(2))
    assert printed(capsys) == ["x=[0. 2. 4.] c=2.0", "x=[1. 3. 5.] c=2.0"]


def test_vmap_of_a_scan_calls_back_per_element_per_iteration():
    record, calls = recorder()

    def f(x):
        def body(c, _):
            jaxlite.debug.callback(record, c)
            return c * 2, None
        return lax.scan(body, x, None, length=2)[0]
    jaxlite.jit(jaxlite.vmap(f))(jnp.array([1.0, 3.0]))
    assert [a[0].tolist() for a, _ in calls] == [1.0, 3.0, 2.0, 6.0]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_derivatives_see_primals_only_and_are_unaffected(jit):
    record, calls = recorder()

    def f(x):
        jaxlite.debug.callback(record, x)
        y = jnp.sin(x)
        jaxlite.debug.callback(record, y)
        return (y * x).sum()

    def plain(x):
        return (jnp.sin(x) * x).sum()

    x = jnp.array([0.5, 1.0])
    wrap = jaxlite.jit if jit else (lambda g: g)
    grad = wrap(jaxlite.grad(f))(x)
    np.testing.assert_allclose(grad, jaxlite.grad(plain)(x), rtol=1e-6)
    assert len(calls) == 2      # once, in the forward pass
    np.testing.assert_allclose(calls[0][0][0], x)
    np.testing.assert_allclose(calls[1][0][0], np.sin(x), rtol=1e-6)
    calls.clear()
    _, tangent = jaxlite.jvp(wrap(f), (x,), (jnp.ones(2),))
    _, expected = jaxlite.jvp(plain, (x,), (jnp.ones(2),))
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
    assert len(calls) == 2 and not any(isinstance(a[0], jaxlite.Array) for a, _ in calls)


def test_grad_of_a_scan_prints_each_forward_iteration_once(capsys):
    def f(x):
        def body(c, _):
            jaxlite.debug.print("c={}", c)
            return c * x, None
        return lax.scan(body, 1.0, None, length=3)[0]
    np.testing.assert_allclose(jaxlite.grad(f)(jnp.float32(2.0)), 12.0)
    assert printed(capsys) == ["c=1.0", "c=2.0", "c=4.0"]
