"""NumPy indexing `x[idx]`, `.at[idx]` updates, take and take_along_axis, against numpy."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core.errors import NonConcreteBooleanIndexError
from jaxlite.test_util import check_grads, check_vmap

DTYPES = [np.float32, np.int32, np.bool_]


def _array(shape, dtype, seed=0):
    values = np.random.default_rng(seed).integers(-5, 6, size=shape)
    return values.astype(dtype)


@st.composite
def indices(draw, shape):
    """A NumPy index for `shape`: slices, ints, None, Ellipsis, int and bool arrays."""
    entries, axis = [], 0
    used_ellipsis = False
    while axis < len(shape) and draw(st.booleans()):
        n = shape[axis]
        kind = draw(st.sampled_from(["slice", "int", "none", "array", "bool", "ellipsis"]))
        if n == 0 and kind in ("int", "array"):
            kind = "slice"  # no valid integer index on an empty axis
        if kind == "slice":
            start, stop = draw(st.integers(-n - 1, n + 1)), draw(st.integers(-n - 1, n + 1))
            step = draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
            entries.append(slice(start, stop, step))
        elif kind == "int":
            entries.append(draw(st.integers(-n, n - 1)))
        elif kind == "none":
            entries.append(None)
            continue
        elif kind == "array":
            size = draw(st.integers(1, 3))
            entries.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=size,
                                                  max_size=size)), np.int32))
        elif kind == "bool":
            entries.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        elif not used_ellipsis:
            entries.append(Ellipsis)
            used_ellipsis = True
            axis = len(shape) - sum(isinstance(e, (slice, int, np.ndarray)) for e in entries)
            continue
        axis += 1
    return tuple(entries)


def _broadcast_compatible(x, index):
    try:
        x[index]
    except IndexError:
        return False
    return True


@settings(deadline=None, max_examples=150)
@given(st.lists(st.integers(0, 4), min_size=0, max_size=4).flatmap(
    lambda shape: st.tuples(st.just(tuple(shape)), indices(shape), st.sampled_from(DTYPES))))
def test_getitem_and_at_match_numpy(case):
    shape, index, dtype = case
    x = _array(shape, dtype)
    if not _broadcast_compatible(x, index):
        return
    expected = x[index]
    out = jnp.asarray(x)[index]
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)
    updated = x.copy()
    updated[index] = 1
    np.testing.assert_array_equal(jnp.asarray(x).at[index].set(1), updated)
    if dtype != np.bool_:
        added = x.copy()
        np.add.at(added, index, 2)
        np.testing.assert_array_equal(jnp.asarray(x).at[index].add(2), added)


def test_advanced_index_placement_follows_numpy():
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    i = np.array([[0, 1], [1, 0]])
    for index in [(slice(None), i, i), (i, slice(None), i), (0, slice(None), i),
                  (Ellipsis, i, None, slice(1, 3)), (i, None, i)]:
        np.testing.assert_array_equal(jnp.asarray(x)[index], x[index])


def test_at_update_methods():
    x = np.arange(6.0, dtype=np.float32)
    index = np.array([1, 1, 4, 9])
    jx = jnp.asarray(x)
    np.testing.assert_array_equal(jx.at[index].multiply(2.0), [0, 4, 2, 3, 8, 5])
    np.testing.assert_array_equal(jx.at[index].min(2.0), [0, 1, 2, 3, 2, 5])
    np.testing.assert_array_equal(jx.at[index].max(3.0), [0, 3, 2, 3, 4, 5])
    np.testing.assert_allclose(jx.at[1:3].divide(2.0), [0, 0.5, 1, 3, 4, 5])
    np.testing.assert_array_equal(jx.at[index].get(), x[[1, 1, 4, 5]])
    assert np.isnan(np.asarray(jx.at[index].get(mode="fill"))[-1])


def test_out_of_bounds_arrays_clip_on_read_and_drop_on_write():
    x = jnp.arange(5.0)
    np.testing.assert_array_equal(x[np.array([7, -9])], [4.0, 0.0])
    np.testing.assert_array_equal(x.at[np.array([7])].set(1.0), np.arange(5.0))
    np.testing.assert_array_equal(x.at[np.array([-1])].set(9.0), [0, 1, 2, 3, 9])


def test_traced_integer_scalars_use_dynamic_slice():
    x = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    i = np.array([0, 3, -1, 2], np.int32)
    check_vmap(lambda i: jnp.asarray(x)[i, 1::2], [i])
    check_vmap(lambda row, i: jnp.asarray(row)[i], [x, i])
    check_vmap(lambda row, i: jnp.asarray(row).at[i].add(10.0), [x, i])
    jaxpr = jaxlite.make_jaxpr(lambda i: jnp.asarray(x)[i])(np.int32(1))
    assert "dynamic_slice" in str(jaxpr)


def test_index_errors():
    x = jnp.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        jnp.zeros((0, 3))[0]        # (a static index into a non-empty axis clamps, as in JAX)
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(TypeError, match="position 0"):
        x[np.array([1.0])]
    with pytest.raises(TypeError, match="float"):
        x[1.0]
    with pytest.raises(IndexError, match="boolean index"):
        x[np.array([True, False, True])]
    with pytest.raises(NonConcreteBooleanIndexError, match="size="):
        jaxlite.vmap(lambda row: row[row > 1])(x)


def test_indexing_derivatives(enable_x64):
    x = np.random.default_rng(0).standard_normal((4, 5))
    check_grads(lambda x: jnp.asarray(x)[np.array([3, 0, 3]), 1:4:2], [x], order=2)
    check_grads(lambda x: jnp.asarray(x).at[np.array([1, 1]), :2].set(0.5), [x], order=2)
    check_grads(lambda x: jnp.asarray(x).at[::2].multiply(x[1::2]), [x], order=2)


# ---------------------------------------------------------------- take


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_take_and_take_along_axis(shape, data):
    x = _array(shape, np.float32)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=4)), np.int32)
    np.testing.assert_array_equal(jnp.take(x, idx, axis=axis), np.take(x, idx, axis=axis))
    np.testing.assert_array_equal(jnp.take(x, idx), np.take(x, idx))
    along = np.argsort(x, axis=axis)
    np.testing.assert_array_equal(jnp.take_along_axis(x, along, axis), np.take_along_axis(x, along, axis))


def test_take_modes():
    x = jnp.arange(4.0)
    out = np.asarray(jnp.take(x, np.array([1, 9])))
    assert out[0] == 1 and np.isnan(out[1])
    np.testing.assert_array_equal(jnp.take(x, np.array([5, -6]), mode="wrap"), [1, 2])
    np.testing.assert_array_equal(jnp.take(x, np.array([5]), mode="clip"), [3])
    with pytest.raises(TypeError, match="integers"):
        jnp.take(x, np.array([1.0]))


def test_empty_ellipsis_still_separates_advanced_indices():
    x = np.arange(60).reshape(5, 3, 4)
    i = np.array([0, 2])
    for index in [(slice(1, 4), i, Ellipsis, i), (slice(1, 4), i, i, Ellipsis)]:
        np.testing.assert_array_equal(jnp.asarray(x)[index], x[index])
    assert x[slice(1, 4), i, Ellipsis, i].shape == (2, 3)  # advanced dims first: separated


# ---------------------------------------------------------------- index routines


def test_put_along_axis_inverts_take_along_axis():
    x = _array((3, 4), np.float32)
    order = np.argsort(x, axis=1, kind="stable")
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = x.copy()
    np.put_along_axis(expected, order, values, axis=1)
    np.testing.assert_array_equal(jnp.put_along_axis(x, order, values, 1, inplace=False), expected)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put_along_axis(x, order, values, 1)


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_unravel_and_ravel_multi_index(shape, data):
    total = int(np.prod(shape))
    flat = np.array(data.draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=5)))
    coordinates = jnp.unravel_index(flat, shape)
    for ours, theirs in zip(coordinates, np.unravel_index(flat, shape)):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(jnp.ravel_multi_index(coordinates, shape), flat)
    wild = [np.array(data.draw(st.lists(st.integers(-6, 6), min_size=2, max_size=2))) for _ in shape]
    for mode in ("clip", "wrap"):
        np.testing.assert_array_equal(jnp.ravel_multi_index(wild, shape, mode=mode),
                                      np.ravel_multi_index(wild, shape, mode=mode))


def test_unravel_index_clamps_and_ravel_raise_checks():
    np.testing.assert_array_equal(jnp.unravel_index(np.array([-1, 7, -30]), (2, 3))[1], [2, 2, 0])
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.ravel_multi_index((np.array([2]), np.array([0])), (2, 3))


def test_ix():
    x = np.arange(20).reshape(4, 5)
    rows, cols = np.array([0, 3]), np.array([4, 0, 1])
    np.testing.assert_array_equal(jnp.asarray(x)[jnp.ix_(rows, cols)], x[np.ix_(rows, cols)])


def test_at_updates_drop_static_out_of_bounds_indices_as_jax():
    # JAX drops out-of-bounds scatter updates and honours get(mode=...) for any index,
    # static ones included; only plain x[i] raises numpy's IndexError for a static int.
    x, m = jnp.arange(5.0), jnp.arange(12.0).reshape(3, 4)
    for update in (lambda: x.at[10].set(1.0), lambda: x.at[-6].add(1.0), lambda: x.at[7].multiply(3.0),
                   lambda: jaxlite.jit(lambda a: a.at[10].set(1.0))(x)):
        np.testing.assert_array_equal(update(), np.arange(5.0))
    np.testing.assert_array_equal(m.at[1:, 9].set(-1.0), np.arange(12.0).reshape(3, 4))
    assert float(x.at[10].get(mode="fill", fill_value=-1.0)) == -1.0
    assert float(x.at[-10].get(mode="fill", fill_value=-1.0)) == -1.0
    assert float(x.at[10].get(mode="clip")) == 4.0


def test_take_along_axis_refuses_mode_wrap_as_jax():
    """'wrap' is take's mode; JAX's take_along_axis hands its mode to gather, which has no such
    mode, so it raises (it once wrapped silently here)."""
    x, i = jnp.arange(6.0).reshape(2, 3), jnp.array([[0, 4], [-1, 2]])
    with pytest.raises(ValueError, match='Unknown gather mode "wrap"'):
        jnp.take_along_axis(x, i, 1, mode="wrap")
    np.testing.assert_array_equal(jnp.take_along_axis(x, i, 1, mode="clip"), [[0, 2], [5, 5]])   # JAX's
    np.testing.assert_array_equal(jnp.take(x, i, axis=1, mode="wrap")[0], [[0, 1], [2, 2]])
