"""lax.sort / top_k and jnp sort, argsort, lexsort, searchsorted, nonzero and friends."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.errors import ConcretizationTypeError
from fd_check import check_jvp, check_vmap

DTYPES = [np.float32, np.int32, np.uint8, np.bool_]


def _values(shape, dtype, seed=0):
    """Small integers, so that ties (which stability must order) are common."""
    return np.random.default_rng(seed).integers(0, 4, size=shape).astype(dtype)


shapes = st.lists(st.integers(1, 5), min_size=1, max_size=3)


@settings(deadline=None, max_examples=40)
@given(shapes, st.sampled_from(DTYPES), st.data())
def test_sort_and_argsort_match_numpy_stable(shape, dtype, data):
    x = _values(shape, dtype)
    axis = data.draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    np.testing.assert_array_equal(jnp.sort(x, axis=axis), np.sort(x, axis=axis))
    np.testing.assert_array_equal(jnp.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    if dtype != np.bool_ and dtype != np.uint8:
        descending = np.argsort(-x.astype(np.int64), axis=axis, kind="stable")
        np.testing.assert_array_equal(jnp.argsort(x, axis=axis, descending=True), descending)


def test_sort_nan_last_and_multiple_operands():
    x = np.array([3.0, np.nan, 1.0, 2.0], np.float32)
    np.testing.assert_array_equal(lax.sort(x), [1.0, 2.0, 3.0, np.nan])
    keys = np.array([1, 0, 1, 0], np.int32)
    second = np.array([4.0, 3.0, 2.0, 1.0], np.float32)
    k, s = lax.sort((keys, second), num_keys=1)
    np.testing.assert_array_equal(s, [3.0, 1.0, 4.0, 2.0])
    k, s = lax.sort((keys, second), num_keys=2)
    np.testing.assert_array_equal(s, [1.0, 3.0, 2.0, 4.0])


def test_sort_derivative_and_vmap():
    x = np.random.default_rng(0).standard_normal((3, 5))
    check_jvp(lambda x: lax.sort(x, 0), [x])
    check_jvp(lambda x, y: lax.sort((x, y), 1, num_keys=1)[1], [x, x[::-1].copy()])
    check_vmap(lambda x: lax.sort(x), [x.astype(np.float32)], in_axes=1)
    check_vmap(lambda x, y: lax.sort((x, y), num_keys=1), [x.astype(np.float32), x[0].astype(np.float32)],
               in_axes=(0, None))


def test_top_k():
    x = np.array([[1.0, 5.0, 5.0, 2.0], [0.0, np.nan, -1.0, 3.0]], np.float32)
    values, indices = lax.top_k(x, 2)
    np.testing.assert_array_equal(indices, [[1, 2], [1, 3]])
    np.testing.assert_array_equal(values[0], [5.0, 5.0])
    y = np.random.default_rng(1).standard_normal((3, 6))
    check_jvp(lambda y: lax.top_k(y, 3)[0], [y])
    check_vmap(lambda y: lax.top_k(y, 2), [y.astype(np.float32)], in_axes=1)
    with pytest.raises(ValueError, match="k=7"):
        lax.top_k(y, 7)


def test_lexsort_and_searchsorted():
    rng = np.random.default_rng(2)
    keys = (rng.integers(0, 3, 12), rng.integers(0, 3, 12))
    np.testing.assert_array_equal(jnp.lexsort(keys), np.lexsort(keys))
    a = np.array([1.0, 2.0, 2.0, 3.0], np.float32)
    v = np.array([[2.0, 0.0], [5.0, 3.0]], np.float32)
    for side in ("left", "right"):
        np.testing.assert_array_equal(jnp.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side))


@settings(deadline=None, max_examples=30)
@given(shapes, st.integers(0, 30), st.data())
def test_nonzero_family(shape, size, data):
    x = _values(shape, np.int32, seed=data.draw(st.integers(0, 100))) * \
        (np.random.default_rng(3).random(shape) < 0.5)
    for ours, theirs in zip(jnp.nonzero(x), np.nonzero(x)):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(jnp.argwhere(x, size=size, fill_value=-1),
                                  _padded(np.argwhere(x), size, -1))
    np.testing.assert_array_equal(jnp.flatnonzero(x, size=size), _padded(np.flatnonzero(x), size, 0))
    for ours, theirs in zip(jnp.where(x, size=size, fill_value=7), np.nonzero(x)):
        np.testing.assert_array_equal(ours, _padded(theirs, size, 7))


def _padded(rows, size, fill):
    rows = rows[:size]
    padding = np.full((size - len(rows),) + rows.shape[1:], fill, rows.dtype)
    return np.concatenate([rows, padding])


def test_nonzero_needs_size_when_traced():
    with pytest.raises(ConcretizationTypeError, match="size="):
        jaxlite.vmap(jnp.nonzero)(np.ones((2, 3)))
    check_vmap(lambda r: jnp.nonzero(r, size=2)[0], [np.array([[0, 1, 1], [1, 0, 0]])])


def test_three_argument_where():
    c = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(jnp.where(c, 1.0, np.array([5.0, 6.0])), np.where(c, 1.0, [5.0, 6.0]))
    with pytest.raises(ValueError, match="both or neither"):
        jnp.where(c, 1.0)


@settings(deadline=None, max_examples=30)
@given(shapes, st.integers(1, 8), st.data())
def test_unique_with_and_without_size(shape, size, data):
    x = _values(shape, np.int32, seed=data.draw(st.integers(0, 100)))
    flags = dict(return_index=True, return_inverse=True, return_counts=True)
    for ours, theirs in zip(jnp.unique(x, **flags), np.unique(x, **flags)):
        np.testing.assert_array_equal(ours, theirs)
    values, index, inverse, counts = np.unique(x, **flags)
    kept = min(size, len(values))
    ours = jnp.unique(x, size=size, fill_value=-1, **flags)
    np.testing.assert_array_equal(ours[0], _padded(values[:kept], size, -1))
    np.testing.assert_array_equal(ours[1], _padded(index[:kept], size, 0))
    np.testing.assert_array_equal(ours[3], _padded(counts[:kept], size, 0))
    np.testing.assert_array_equal(ours[2], np.where(inverse < kept, inverse, kept).reshape(x.shape))
    check_vmap(lambda r: jnp.unique(r, size=size), [x.reshape(shape[0], -1)])


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sizes", [(7, 3), (6, 4), (3, 7), (5, 5), (1, 1)])
def test_convolve_and_correlate(mode, sizes):
    rng = np.random.default_rng(4)
    a, v = rng.standard_normal(sizes[0]), rng.standard_normal(sizes[1])
    np.testing.assert_allclose(jnp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-5, atol=1e-5)
    if sizes[0] >= sizes[1]:
        np.testing.assert_allclose(jnp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-5, atol=1e-5)
    check_jvp(lambda a, v: jnp.convolve(a, v, mode), [a, v])


def test_array_methods():
    x = jnp.asarray(np.array([[3, 1, 2], [0, 0, 5]], np.int32))
    np.testing.assert_array_equal(x.sort(), np.sort(np.asarray(x)))
    np.testing.assert_array_equal(x.argsort(axis=0), np.argsort(np.asarray(x), axis=0, kind="stable"))
    np.testing.assert_array_equal(x.take(np.array([4, 0])), [0, 3])
    np.testing.assert_array_equal(x.nonzero(size=5, fill_value=-1)[1], [0, 1, 2, 2, -1])
    np.testing.assert_array_equal(x[0].sort().searchsorted(2), 1)


def test_bfloat16_sorts_nan_last():
    x = jnp.asarray(np.array([3.0, -1.0, np.nan, 2.0], np.float32)).astype(jnp.bfloat16)
    np.testing.assert_array_equal(np.asarray(jnp.sort(x), np.float32), [-1.0, 2.0, 3.0, np.nan])
    np.testing.assert_array_equal(jnp.argsort(x), [1, 3, 0, 2])


def test_compress_and_extract():
    a = np.arange(12).reshape(3, 4)
    condition = np.array([True, False, True])
    np.testing.assert_array_equal(jnp.compress(condition, a, axis=0), np.compress(condition, a, axis=0))
    np.testing.assert_array_equal(jnp.compress(condition, a), np.compress(condition, a))
    np.testing.assert_array_equal(jnp.compress(condition, a, axis=0, size=3, fill_value=-1),
                                  np.concatenate([a[[0, 2]], np.full((1, 4), -1)]))
    mask = a % 3 == 0
    np.testing.assert_array_equal(jnp.extract(mask, a), np.extract(mask, a))
    np.testing.assert_array_equal(jnp.extract(mask, a, size=5, fill_value=-1), [0, 3, 6, 9, -1])
    check_vmap(lambda c, r: jnp.compress(c, r, size=2), [a % 2 == 0, a])
