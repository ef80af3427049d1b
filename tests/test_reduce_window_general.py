"""lax.reduce_window with an arbitrary computation (and pytrees of operands), against a
numpy loop that folds each window's operand elements in row-major order from init_value,
skipping padding and base-dilation holes (XLA's semantics, checked in JAX 0.10.2: e.g.
reduce_window(x, 0.5, lambda a, b: 2 * a + b, (3,)) of [1, 10, 100, 1000] is [128, 1244])."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
from jaxlite import lax
from jaxlite.test_util import check_grads, check_vmap


def numpy_reduce_window(fold, xs, inits, window, strides, padding, base_dilation, window_dilation):
    """The reference: an explicit loop over outputs and window positions."""
    shape = xs[0].shape
    dilated = [(n - 1) * b + 1 if n else 0 for n, b in zip(shape, base_dilation)]
    extent = [(w - 1) * d + 1 if w else 0 for w, d in zip(window, window_dilation)]
    out_shape = [max(0, (n + lo + hi - e) // s + 1) if n + lo + hi >= e else 0
                 for n, e, s, (lo, hi) in zip(dilated, extent, strides, padding)]
    outs = [np.empty(out_shape, x.dtype) for x in xs]
    for index in itertools.product(*map(range, out_shape)):
        acc = list(inits)
        for position in itertools.product(*map(range, window)):
            q = [i * s + p * d - lo for i, s, p, d, (lo, _) in
                 zip(index, strides, position, window_dilation, padding)]
            if all(0 <= v < n and v % b == 0 for v, n, b in zip(q, dilated, base_dilation)):
                source = tuple(v // b for v, b in zip(q, base_dilation))
                acc = fold(acc, [x[source] for x in xs])
        for out, a in zip(outs, acc):
            out[index] = a
    return outs


def affine(a, b):
    return 0.5 * a + b  # not commutative: the fold's order and argument order matter


@st.composite
def windowings(draw, max_rank=3):
    rank = draw(st.integers(1, max_rank))
    shape = draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank))
    window = draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank))
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    padding = [tuple(draw(st.lists(st.integers(-1, 2), min_size=2, max_size=2))) for _ in range(rank)]
    base = draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank))
    dilation = draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank))
    return shape, window, strides, padding, base, dilation


def _valid(shape, window, strides, padding, base, dilation):
    dilated = [(n - 1) * b + 1 if n else 0 for n, b in zip(shape, base)]
    return all(n + lo + hi >= 0 for n, (lo, hi) in zip(dilated, padding))


@settings(deadline=None, max_examples=40)
@given(windowings(), st.integers(0, 2 ** 31 - 1))
def test_affine_fold_matches_numpy_loop(windowing, seed):
    shape, window, strides, padding, base, dilation = windowing
    if not _valid(*windowing):
        return
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    want, = numpy_reduce_window(lambda acc, xs: [affine(acc[0], xs[0])], [x], [np.float32(0.25)],
                                window, strides, padding, base, dilation)
    f = lambda x: lax.reduce_window(x, np.float32(0.25), affine, window, strides, padding, base, dilation)
    np.testing.assert_allclose(f(x), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jaxlite.jit(f)(x), want, rtol=1e-6, atol=1e-6)


def _sum_and_argmax(a, b):
    """A pair (sum, (max, its index)): the pytree computation pooling with indices uses."""
    total_a, (best_a, at_a), total_b, (best_b, at_b) = a[0], a[1], b[0], b[1]
    take_b = best_b > best_a
    return total_a + total_b, (lax.select(take_b, best_b, best_a), lax.select(take_b, at_b, at_a))


@settings(deadline=None, max_examples=15)
@given(windowings(max_rank=2), st.integers(0, 2 ** 31 - 1))
def test_pytree_operands_match_numpy_loop(windowing, seed):
    shape, window, strides, padding, base, dilation = windowing
    if not _valid(*windowing):
        return
    x = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)
    index = np.arange(x.size, dtype=np.int32).reshape(shape)

    def fold(acc, xs):
        take = xs[1] > acc[1]
        return [acc[0] + xs[0], xs[1] if take else acc[1], xs[2] if take else acc[2]]
    inits = [np.float32(0), np.float32(-np.inf), np.int32(-1)]
    want = numpy_reduce_window(fold, [x, x, index], inits, window, strides, padding, base, dilation)
    f = lambda x, i: lax.reduce_window((x, (x, i)), (inits[0], (inits[1], inits[2])), _sum_and_argmax,
                                       window, strides, padding, base, dilation)
    for got in (f(x, index), jaxlite.jit(f)(x, index)):
        total, (best, at) = got
        np.testing.assert_allclose(total, want[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(best, want[1])
        np.testing.assert_array_equal(at, want[2])


def test_large_windows_loop_over_positions():
    """A window of more positions than are unrolled runs a scan: same values, eager and jit."""
    x = np.random.default_rng(0).standard_normal((11, 12)).astype(np.float32)
    params = ((9, 8), (2, 3), ((1, 2), (0, 3)), (1, 2), (1, 1))
    want, = numpy_reduce_window(lambda acc, xs: [affine(acc[0], xs[0])], [x], [np.float32(1)], *params)
    f = lambda x: lax.reduce_window(x, np.float32(1), affine, *params)
    assert "scan" in str(jaxlite.make_jaxpr(f)(x))
    np.testing.assert_allclose(f(x), want, rtol=1e-6)
    np.testing.assert_allclose(jaxlite.jit(f)(x), want, rtol=1e-6)


@pytest.mark.parametrize("window", [(2, 2), (9, 8)])
def test_vmap_and_derivatives(window, enable_x64):
    """JAX differentiates a general reduce_window in forward mode (the jvp of the
    computation, folded over (primal, tangent) pairs); it is a composition here, so both
    modes hold; vmap matches a loop for batched operands (and for batched init values,
    which JAX's batching rule refuses)."""
    x = np.random.default_rng(1).standard_normal((10, 9))
    prod_pool = lambda x: lax.reduce_window(x, x.dtype.type(1), lax.mul, window, (1, 2), "SAME")
    check_grads(prod_pool, [x], order=2)
    check_vmap(prod_pool, [x.reshape(2, 5, 9).astype(np.float32)])
    check_vmap(lambda x, init: lax.reduce_window(x, init, affine, window, (2, 1), "VALID"),
               [np.stack([x, -x]).astype(np.float32), np.arange(2, dtype=np.float32)])


def test_monoids_not_at_their_identity_fold():
    """lax.add started at 1 (not its identity) adds 1 once per window, padding skipped."""
    x = np.arange(1.0, 7.0, dtype=np.float32)
    np.testing.assert_array_equal(lax.reduce_window(x, 1.0, lax.add, (2,), (1,), [(1, 0)]),
                                  [2, 4, 6, 8, 10, 12])
    np.testing.assert_array_equal(lax.reduce_window(x, 2.0, lax.mul, (2,), (2,), [(1, 1)]), [2, 12, 40, 12])
    assert lax.reduce_window(x, 0.0, lax.add, (2,)).shape == (5,)  # JAX's default strides and padding


def test_bad_arguments_raise_jax_errors():
    x = np.arange(6.0, dtype=np.float32)
    with pytest.raises(TypeError, match="wrong number of window_dimensions"):
        lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="inconsistent window_strides"):
        lax.reduce_window(x, 1.0, lax.mul, (2,), (1, 1), "VALID")
    with pytest.raises(TypeError, match="inconsistent dtypes"):
        lax.reduce_window(x, 1, lax.mul, (2,), (1,), "VALID")
    with pytest.raises(TypeError, match="init_values to be scalars"):
        lax.reduce_window(x, np.ones(2, np.float32), lax.mul, (2,), (1,), "VALID")
    with pytest.raises(ValueError, match="same tree structure as init_values"):
        lax.reduce_window((x, x), (1.0,), lambda a, b: a, (2,), (1,), "VALID")
    with pytest.raises(ValueError, match="output must have the same tree structure"):
        lax.reduce_window(x, 1.0, lambda a, b: (a, b), (2,), (1,), "VALID")
