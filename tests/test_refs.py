"""Mutable array references: new_ref, ref[...] reads and writes, freeze; eager, jit, grad, vmap."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax


def _doubled_through_a_ref(x):
    ref = jaxlite.new_ref(x)
    ref[...] = ref[...] * 2
    ref[0] = ref[0] + 1
    return jaxlite.freeze(ref)


def test_eager_reads_writes_and_printed_forms():
    ref = jaxlite.new_ref(jnp.zeros(3))
    ref[...] += 1.0
    ref[1] = 5.0
    assert isinstance(ref, jaxlite.Ref) and ref.shape == (3,) and ref.dtype == np.float32
    np.testing.assert_array_equal(ref[...], [1.0, 5.0, 1.0])
    assert repr(ref) == "Ref([1., 5., 1.], dtype=float32)" and str(jaxlite.typeof(ref)) == "Ref{float32[3]}"
    with pytest.raises(TypeError):
        ref + 1


def test_a_ref_made_inside_a_function_under_jit_grad_vmap():
    x = jnp.array([1.0, 2.0])
    expected = np.array([3.0, 4.0])
    np.testing.assert_array_equal(_doubled_through_a_ref(x), expected)
    np.testing.assert_array_equal(jaxlite.jit(_doubled_through_a_ref)(x), expected)
    np.testing.assert_array_equal(jaxlite.grad(lambda v: _doubled_through_a_ref(v).sum())(x), [2.0, 2.0])
    np.testing.assert_array_equal(jaxlite.vmap(_doubled_through_a_ref)(jnp.stack([x, x])), [expected] * 2)


def test_jit_writes_back_into_a_ref_argument():
    @jaxlite.jit
    def accumulate(total, x):
        total[...] += jnp.sum(x)
        return x * 2

    total = jaxlite.new_ref(jnp.float32(0))
    for i in range(3):
        out = accumulate(total, jnp.arange(3.0) + i)
    np.testing.assert_array_equal(out, 2 * (np.arange(3.0) + 2))
    assert float(total[...]) == 3.0 + 6.0 + 9.0

    @jaxlite.jit
    def increment(ref):
        ref[...] += 1

    @jaxlite.jit
    def outer(v):
        ref = jaxlite.new_ref(v)
        increment(ref)
        return jaxlite.freeze(ref)
    assert float(outer(1.0)) == 2.0


def test_jit_lifts_a_closed_over_ref():
    counts = jaxlite.new_ref(jnp.zeros(3))

    @jaxlite.jit
    def bump():
        counts[1] += 1.0

    @jaxlite.jit
    def shifted(x):
        return lax.fori_loop(0, 2, lambda i, c: c + counts[...], x)
    bump()
    bump()
    np.testing.assert_array_equal(counts[...], [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(shifted(jnp.ones(3)), [1.0, 5.0, 1.0])
    counts[...] = jnp.ones(3)       # read again at the next call, not baked in
    np.testing.assert_array_equal(shifted(jnp.ones(3)), [3.0, 3.0, 3.0])


def test_errors_as_jax():
    ref = jaxlite.new_ref(jnp.zeros(2))
    with pytest.raises(ValueError, match="cannot be returned"):
        jaxlite.jit(lambda r: r)(ref)
    with pytest.raises(ValueError, match="only one reference to a mutable array"):
        jaxlite.jit(lambda a, b: None)(ref, ref)
    with pytest.raises(ValueError, match="did not create it"):
        jaxlite.grad(lambda x: (ref.__setitem__(..., x), x.sum())[1])(jnp.ones(2))



def test_vmap_maps_ref_arguments_and_writes_them_back():
    def dist(x, y, out_ref):
        out_ref[...] = jnp.sum((x - y) ** 2)

    vecs = jnp.arange(12.0).reshape(3, 4)
    out_ref = jaxlite.new_ref(jnp.zeros((3, 3)))
    jaxlite.vmap(jaxlite.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, out_ref)
    expected = ((np.arange(12.0).reshape(3, 1, 4) - np.arange(12.0).reshape(1, 3, 4)) ** 2).sum(-1)
    np.testing.assert_array_equal(out_ref[...], expected.T)
    unmapped = jaxlite.new_ref(0.0)
    with pytest.raises(ValueError, match="batched value into the unbatched"):
        jaxlite.vmap(lambda x, r: r.__setitem__(..., x), (0, None))(jnp.arange(3.0), unmapped)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_loop_bodies_write_outer_refs(jit):
    total = jaxlite.new_ref(jnp.int32(0))

    def summed(xs):
        def body(carry, x):
            total[...] += x
            return carry, x * 2
        return lax.scan(body, 0, xs)[1]

    def accumulated(x):
        acc = jaxlite.new_ref(jnp.zeros(3))

        def body(i, c):
            acc[...] = acc[...] + c * i
            return c
        lax.fori_loop(0, 4, body, x)
        return jaxlite.freeze(acc)
    wrap = jaxlite.jit if jit else (lambda f: f)
    np.testing.assert_array_equal(wrap(summed)(jnp.arange(10)), 2 * np.arange(10))
    np.testing.assert_array_equal(wrap(summed)(jnp.arange(10)), 2 * np.arange(10))
    assert int(total[...]) == 90
    np.testing.assert_array_equal(wrap(accumulated)(jnp.ones(3)), [6.0, 6.0, 6.0])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_while_and_cond_functions_write_outer_refs(jit):
    wrap = jaxlite.jit if jit else (lambda f: f)
    log = jaxlite.new_ref(jnp.zeros(3))

    def doubled_until(x):
        def body(state):
            i, c = state
            log[i] = c * 2.0
            return i + 1, c + 1.0
        return lax.while_loop(lambda s: s[0] < 3, body, (0, x))[1]
    assert float(wrap(doubled_until)(1.0)) == 4.0
    np.testing.assert_array_equal(log[...], [2.0, 4.0, 6.0])

    last = jaxlite.new_ref(jnp.float32(0.0))

    def branch(p, x):
        def true_fun(x):
            last[...] = x
            return x

        def false_fun(x):
            last[...] = -x
            return x * 2
        return lax.cond(p, true_fun, false_fun, x)
    assert (float(wrap(branch)(True, 3.0)), float(last[...])) == (3.0, 3.0)
    assert (float(wrap(branch)(False, 5.0)), float(last[...])) == (10.0, -5.0)

    def summed_while(x):      # a Ref made inside, written in the body and read in cond_fun
        acc = jaxlite.new_ref(x)

        def body(c):
            acc[...] = acc[...] + c
            return c - 1.0
        lax.while_loop(lambda c: (c > 0) & (acc[...][0] < 100.0), body, 3.0)
        return acc[...]
    np.testing.assert_array_equal(wrap(summed_while)(jnp.ones(2)), [7.0, 7.0])

    def written_in_a_branch(x):
        out = jaxlite.new_ref(0.0)
        lax.cond(x > 0, lambda: out.__setitem__(..., x * x), lambda: None)
        return out[...]
    assert float(jaxlite.grad(wrap(written_in_a_branch))(3.0)) == 6.0


def test_vjp_with_refs_accumulates_gradients_into_refs():
    _, pullback = jaxlite.vjp(lambda w, x: w @ x, jnp.ones((2, 2)), jnp.ones(2))
    w_bar, x_bar = pullback.with_refs(jaxlite.ad.GradValue(), jaxlite.ad.DontWant())(jnp.ones(2))
    np.testing.assert_array_equal(w_bar, np.ones((2, 2)))
    assert isinstance(x_bar, jaxlite.ad.DidntWant)
    w_grad = jaxlite.new_ref(jnp.full((2, 2), 10.0))
    pullback.with_refs(w_grad, jaxlite.ad.GradValue())(jnp.ones(2))
    np.testing.assert_array_equal(w_grad[...], np.full((2, 2), 11.0))    # added, not set

    def g(x_ref):
        x_ref[...] = jnp.sin(x_ref[...])
        return x_ref[...] ** 2
    x_ref, g_grad = jaxlite.new_ref(2.0), jaxlite.new_ref(0.0)
    _, g_vjp = jaxlite.vjp(g, x_ref)          # runs g: x_ref now holds sin(2)
    g_vjp.with_refs(g_grad)(1.0)
    np.testing.assert_allclose(float(x_ref[...]), np.sin(2.0), rtol=1e-6)
    np.testing.assert_allclose(float(g_grad[...]), 2 * np.sin(2.0) * np.cos(2.0), rtol=1e-5)
    with pytest.raises(TypeError, match="accumulated into a ref"):
        g_vjp(1.0)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_custom_vjp_rule_writes_a_ref_it_is_given(jit):
    @jaxlite.custom_vjp
    def stash_grads(grads_ref, x):
        return x

    def bwd(grads_ref, g):
        grads_ref[...] = g
        return None, g
    stash_grads.defvjp(lambda grads_ref, x: (x, grads_ref), bwd)
    stash = jaxlite.new_ref(0.0)
    grad = jaxlite.grad(lambda x: jnp.sin(stash_grads(stash, x)))
    np.testing.assert_allclose(float((jaxlite.jit(grad) if jit else grad)(1.0)), np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(float(stash[...]), np.cos(1.0), rtol=1e-6)


def test_make_jaxpr_lifts_closed_over_refs_and_markers_are_pytrees():
    seen = jaxlite.new_ref(jnp.zeros(2))

    def f(x):
        seen[...] += x
        return x * 2
    closed = jaxlite.make_jaxpr(f)(jnp.ones(2))
    assert len(closed.in_avals) == 2 and len(closed.out_avals) == 2     # the ref is an input and an output
    np.testing.assert_array_equal(seen[...], [0.0, 0.0])                 # tracing runs nothing
    _, pullback = jaxlite.vjp(lambda w, x: w @ x, jnp.ones((2, 2)), jnp.ones(2))
    closed = jaxlite.make_jaxpr(lambda: pullback.with_refs(jaxlite.ad.GradValue(), jaxlite.ad.DontWant())(jnp.ones(2)))()
    assert len(closed.out_avals) == 1
