"""lax gather, the scatter family, dynamic_slice and dynamic_update_slice."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
from jaxlite import lax
from jaxlite.lax import slicing
from jaxlite.lax.slicing import GatherDimensionNumbers, ScatterDimensionNumbers
from jaxlite.test_util import check_grads, check_transpose, check_vmap

ROWS = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
ROW_UPDATES = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
POINTS = ScatterDimensionNumbers((), (0, 1), (0, 1))


def _operand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- dynamic_slice


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_dynamic_slice_clamps_like_jax(shape, data):
    """A negative start counts from the end (as in JAX's lax.dynamic_slice), then the start is
    clamped so the window fits (as XLA's dynamic-slice)."""
    x = _operand(shape)
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    starts = [data.draw(st.integers(-n - 3, n + 3)) for n in shape]
    clamped = [min(max(s + n if s < 0 else s, 0), n - k) for s, n, k in zip(starts, shape, sizes)]
    expected = x[tuple(slice(s, s + k) for s, k in zip(clamped, sizes))]
    np.testing.assert_array_equal(lax.dynamic_slice(x, starts, sizes), expected)
    update = _operand(sizes, seed=1)
    written = x.copy()
    written[tuple(slice(s, s + k) for s, k in zip(clamped, sizes))] = update
    np.testing.assert_array_equal(lax.dynamic_update_slice(x, update, starts), written)


def test_dynamic_slice_derivatives(enable_x64):
    x = _operand((4, 5), dtype=np.float64)
    check_grads(lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(3)), (2, 3)), [x], order=2)
    check_grads(lambda x, u: lax.dynamic_update_slice(x, u, (np.int32(3), np.int32(-1))),
                [x, _operand((2, 2), dtype=np.float64)], order=2)
    # Starts as traced arguments (held fixed), clamped into range.
    check_grads(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)), [x, np.int32(1), np.int32(4)],
                order=2)


def test_dynamic_slice_vmap_with_batched_starts():
    x = _operand((4, 6))
    starts = np.array([0, 2, 5, -1], np.int32)
    check_vmap(lambda row, s: lax.dynamic_slice(row, (s,), (3,)), [x, starts])
    check_vmap(lambda row, s: lax.dynamic_slice(row, (s,), (3,)), [x[0], starts], in_axes=(None, 0))
    check_vmap(lambda row, s: lax.dynamic_update_slice(row, np.ones(2, np.float32), (s,)), [x, starts])
    check_vmap(lambda row, u: lax.dynamic_update_slice(row, u, (np.int32(2),)), [x, x[:, :3]])


# ---------------------------------------------------------------- gather


def test_gather_rows_with_modes():
    x = _operand((5, 3))
    indices = np.array([[1], [4], [7], [-2]], np.int32)
    clipped = lax.gather(x, indices, ROWS, (1, 3), mode="clip")
    np.testing.assert_array_equal(clipped, x[[1, 4, 4, 0]])
    filled = np.asarray(lax.gather(x, indices, ROWS, (1, 3), mode="fill"))
    np.testing.assert_array_equal(filled[:2], x[[1, 4]])
    assert np.isnan(filled[2:]).all()
    ints = lax.gather(np.arange(5, dtype=np.int32), indices, GatherDimensionNumbers((), (0,), (0,)), (1,))
    np.testing.assert_array_equal(ints, [1, 4, np.iinfo(np.int32).min, np.iinfo(np.int32).min])


def test_gather_windows_and_batching_dims():
    x = _operand((3, 6, 4))
    # Per batch element b, the window x[b, i_b : i_b + 2, :].
    starts = np.array([[0], [4], [2]], np.int32)
    dnums = GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                   start_index_map=(1,), operand_batching_dims=(0,),
                                   start_indices_batching_dims=(0,))
    out = lax.gather(x, starts, dnums, (1, 2, 4), mode="clip")
    np.testing.assert_array_equal(out, np.stack([x[b, s:s + 2] for b, s in zip(range(3), [0, 4, 2])]))


def test_gather_rejects_bad_dimension_numbers():
    with pytest.raises(TypeError, match="indices"):
        lax.gather(_operand((3, 3)), np.zeros((2, 2), np.int32), ROWS, (1, 3))
    with pytest.raises(TypeError, match="integer"):
        lax.gather(_operand((3, 3)), np.zeros((2, 1), np.float32), ROWS, (1, 3))


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_derivatives(mode, enable_x64):
    x = _operand((5, 3), dtype=np.float64)
    indices = np.array([[1], [4], [1], [9]], np.int32)
    check_grads(lambda x: lax.gather(x, indices, ROWS, (1, 3), mode=mode, fill_value=0), [x], order=2)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 1)])
def test_gather_vmap(in_axes):
    xs, idx = _operand((4, 5, 3)), np.array([[[1], [3]], [[0], [0]], [[4], [2]], [[7], [-1]]], np.int32)
    xs = xs[0] if in_axes[0] is None else np.moveaxis(xs, 0, in_axes[0])
    idx = idx[0] if in_axes[1] is None else np.moveaxis(idx, 0, in_axes[1])
    for mode in ("clip", "fill"):
        check_vmap(lambda x, i: lax.gather(x, i, ROWS, (1, 3), mode=mode), [xs, idx], in_axes)


# ---------------------------------------------------------------- scatter family

_REFERENCE = {"scatter_add": np.add.at, "scatter_mul": np.multiply.at,
              "scatter_min": np.minimum.at, "scatter_max": np.maximum.at}


@settings(deadline=None, max_examples=25)
@given(st.sampled_from(sorted(_REFERENCE)), st.integers(1, 6), st.data())
def test_scatter_combiners_match_numpy_ufunc_at(name, count, data):
    x = _operand((4, 3))
    rows = data.draw(st.lists(st.integers(-2, 5), min_size=count, max_size=count))
    updates = _operand((count, 3), seed=count)
    expected = x.copy()
    in_bounds = [r for r in range(count) if 0 <= rows[r] < 4]  # mode="drop" skips the rest
    _REFERENCE[name](expected, np.array([rows[r] for r in in_bounds], int), updates[in_bounds])
    out = getattr(lax, name)(x, np.array(rows, np.int32)[:, None], updates, ROW_UPDATES, mode="drop")
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_scatter_clip_mode_clamps_windows():
    out = lax.scatter(np.zeros((4, 2), np.float32), np.array([[9]], np.int32),
                      np.ones((1, 2), np.float32), ROW_UPDATES, mode="clip")
    np.testing.assert_array_equal(out, [[0, 0], [0, 0], [0, 0], [1, 1]])


def test_scatter_derivatives(enable_x64):
    x, indices = _operand((4, 3), dtype=np.float64), np.array([[2], [0], [9]], np.int32)
    updates = _operand((3, 3), 5, dtype=np.float64)
    for name in ("scatter_add", "scatter", "scatter_mul", "scatter_min", "scatter_max"):
        check_grads(lambda x, u: getattr(lax, name)(x, indices, u, ROW_UPDATES, mode="drop"),
                    [x, updates], order=2)
    # No JVP emits scatter itself (its tangent is a masked scatter-add): check its rule directly.
    check_transpose(slicing.scatter_p, [x, indices, updates], [0, 2],
                    dict(dimension_numbers=ROW_UPDATES, mode=slicing.GatherScatterMode.FILL_OR_DROP))


def test_scatter_max_ties_share_the_tangent():
    x = np.array([1.0, 5.0], np.float32)
    _, t = jaxlite.jvp(lambda x, u: lax.scatter_max(x, np.array([[0], [0]], np.int32), u,
                                                     ScatterDimensionNumbers((), (0,), (0,))),
                       (x, np.array([3.0, 3.0], np.float32)), (np.ones(2, np.float32),
                                                               np.array([2.0, 4.0], np.float32)))
    np.testing.assert_allclose(t, [3.0, 1.0])


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 0), (1, 0, 1)])
def test_scatter_vmap(in_axes):
    xs, idx, ups = _operand((3, 4, 2)), np.array([[[1], [3]], [[0], [0]], [[5], [2]]], np.int32), \
        _operand((3, 2, 2), 4)
    args = [a[0] if d is None else np.moveaxis(a, 0, d) for a, d in zip((xs, idx, ups), in_axes)]
    for name in ("scatter", "scatter_add", "scatter_max"):
        check_vmap(lambda x, i, u: getattr(lax, name)(x, i, u, ROW_UPDATES), args, in_axes)


def test_scatter_with_repeated_indices_differentiates_the_surviving_write(enable_x64):
    x = np.zeros(3, np.float32)
    indices = np.array([[1], [1], [2]], np.int32)
    dnums = ScatterDimensionNumbers((), (0,), (0,))
    u = np.array([1.0, 2.0, 3.0], np.float32)
    out, t = jaxlite.jvp(lambda x, u: lax.scatter(x, indices, u, dnums), (x, u),
                         (np.ones(3, np.float32), np.array([10.0, 20.0, 30.0], np.float32)))
    survivor = int(np.asarray(out)[1] == 2.0)  # which of the two writes to entry 1 won
    np.testing.assert_array_equal(t, [1.0, [10.0, 20.0][survivor], 30.0])
    check_transpose(slicing.scatter_p, [x.astype(np.float64), indices, u.astype(np.float64)], [0, 2],
                    dict(dimension_numbers=dnums, mode=slicing.GatherScatterMode.FILL_OR_DROP))


def test_scatter_mul_derivative_with_repeated_indices_and_zeros(enable_x64):
    x = np.array([1.5, -2.0, 3.0])
    indices = np.array([[0], [0], [2], [2], [2]], np.int32)
    dnums = ScatterDimensionNumbers((), (0,), (0,))
    for updates in ([2.0, -3.0, 0.5, 4.0, 1.5], [0.0, -3.0, 0.0, 4.0, 1.5], [0.0, 2.0, 0.0, 0.0, 1.0]):
        check_grads(lambda x, u: lax.scatter_mul(x, indices, u, dnums), [x, np.array(updates)], order=2)
    # A dropped update must not join the products of an entry it would clamp onto.
    dropped = np.array([[0], [0], [7]], np.int32)
    check_grads(lambda x, u: lax.scatter_mul(x, dropped, u, dnums, mode="drop"), [x, np.array([0.0, 2.0, 0.0])],
                order=2)


def test_in_dim_helpers():
    x = _operand((3, 4))
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(x, 7, axis=-1, keepdims=False), x[:, 3])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, 1, 2, axis=0), x[1:3])
    expected = x.copy()
    expected[:, 1] = 0
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(x, np.zeros(3, np.float32), 1, -1), expected)
