"""Gather, the scatter family, reduce_window and the cumulative ops compile to native
kernels under jit (no numpy fallback step) and agree with eager evaluation, for any
index value: far out of bounds, negative, the integer extremes."""
import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.lower import fusion, fusion_rules
from jaxlite.lower.fusion import EqnStep
from jaxlite.lower.kernel_ir import Reduce

seeds = st.integers(0, 2 ** 16)
EXTREMES = [0, 1, -1, 7, -100, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 2, -2 ** 31 + 1]
AT_OPS = ["set", "add", "multiply", "min", "max"]
NOW_NATIVE = {"gather", "scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max",
              "reduce_window_sum", "reduce_window_max", "reduce_window_min", "cumsum", "cumprod",
              "cummax", "cummin", "cumlogsumexp"}
SCATTER_MODES = [None, "clip", "drop", "promise_in_bounds"]


def fallback_steps(fun, *args):
    steps = jaxlite.jit(fun).lower(*args).program.steps
    return [s.eqn.primitive.name for s in steps if isinstance(s, EqnStep) and s.kind == "fallback"]


def assert_native_and_agree(fun, *args, rtol=0.0, atol=0.0):
    """jit(fun) runs without fallback steps and gives eager's values, dtypes and shapes."""
    assert fallback_steps(fun, *args) == []
    want, got = fun(*args), jaxlite.jit(fun)(*args)
    for w, g in zip(jaxlite.tree_util.tree_leaves(want), jaxlite.tree_util.tree_leaves(got)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g).astype(np.float64), np.asarray(w).astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)


def random_indices(rng, shape, size, dtype=np.int32):
    """Mostly in range, some out of it either side, some at the dtype's extremes."""
    info = np.iinfo(dtype)
    indices = rng.integers(max(-2 * size - 1, info.min), min(2 * size + 1, info.max), shape, endpoint=True)
    extremes = np.array([e for e in EXTREMES if info.min <= e <= info.max])
    spots = rng.random(shape) < 0.15
    indices[spots] = rng.choice(extremes, size=int(spots.sum()))
    return indices.astype(dtype)


def floats(rng, shape, dtype=np.float32):
    return rng.uniform(-3, 3, shape).astype(dtype)


operand_shapes = st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple)


# ---------------------------------------------------------------- gather

@settings(deadline=None, max_examples=30)
@given(operand_shapes, st.lists(st.integers(0, 5), min_size=1, max_size=2).map(tuple), seeds,
       st.sampled_from([np.int32, np.int8, np.uint8, np.uint32]))
def test_fancy_indexing(shape, index_shape, seed, index_dtype):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(floats(rng, shape))
    i = jnp.asarray(random_indices(rng, index_shape, shape[0], index_dtype))
    assert_native_and_agree(lambda a, k: jnp.exp(a[k]) * 2, x, i, rtol=1e-6)
    if len(shape) >= 2:
        j = jnp.asarray(random_indices(rng, index_shape, shape[1], index_dtype))
        assert_native_and_agree(lambda a, k, m: a[k, m], x, i, j)
        assert_native_and_agree(lambda a, k: a[1:, k], x, j)


@settings(deadline=None, max_examples=30)
@given(operand_shapes, st.integers(0, 6), seeds, st.sampled_from(["clip", "fill", "wrap", None]),
       st.sampled_from([np.float32, np.int32, dtypes.bfloat16, np.float16, np.bool_]))
def test_take_with_each_mode(shape, count, seed, mode, dtype):
    rng = np.random.default_rng(seed)
    axis = int(rng.integers(0, len(shape)))
    x = jnp.asarray(floats(rng, shape) > 0 if dtype == np.bool_ else floats(rng, shape, dtype))
    i = jnp.asarray(random_indices(rng, (count,), shape[axis]))
    assert_native_and_agree(lambda a, k: jnp.take(a, k, axis=axis, mode=mode), x, i)
    if mode == "fill" and dtype != np.bool_:
        assert_native_and_agree(lambda a, k: jnp.take(a, k, axis=axis, mode="fill", fill_value=5), x, i)


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), st.integers(0, 5), seeds,
       st.sampled_from(["clip", "fill", None]))
def test_take_along_axis_with_each_mode(shape, count, seed, mode):
    rng = np.random.default_rng(seed)
    axis = int(rng.integers(0, len(shape)))
    x = jnp.asarray(floats(rng, shape))
    index_shape = shape[:axis] + (count,) + shape[axis + 1:]
    i = jnp.asarray(random_indices(rng, index_shape, shape[axis]))
    assert_native_and_agree(lambda a, k: jnp.take_along_axis(a, k, axis, mode=mode) + 1, x, i)


def test_gather_with_windows_and_batching_dims():
    rng = np.random.default_rng(0)
    x = jnp.asarray(floats(rng, (5, 6, 3)))
    starts = jnp.asarray(np.array([[0, 4], [-3, 2], [9, 9], [2 ** 31 - 1, -2 ** 31]], np.int32))
    dnums = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0, 1))
    for mode in ["clip", "fill"]:
        assert_native_and_agree(lambda a, s: lax.gather(a, s, dnums, (1, 3, 2), mode=mode), x, starts)
    batched = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,),
                                         operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    rows = jnp.asarray(np.array([[1], [-2], [7], [5], [3]], np.int32))
    for mode in ["clip", "fill"]:
        assert_native_and_agree(lambda a, s: lax.gather(a, s, batched, (1, 1, 3), mode=mode), x, rows)


def test_gather_fuses_into_its_consumers():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    i = np.array([3, 0, 9], np.int32)
    lowered = jaxlite.jit(lambda a, k: jnp.tanh(jnp.take(a * 2, k, axis=0, mode="clip")) + 1).lower(x, i)
    assert lowered.program.kernel_count() == 1


# ---------------------------------------------------------------- scatter

@settings(deadline=None, max_examples=30)
@given(operand_shapes, st.integers(0, 8), seeds, st.sampled_from(AT_OPS), st.sampled_from(SCATTER_MODES),
       st.sampled_from([np.float32, np.int32, dtypes.bfloat16, np.float16]))
def test_at_updates_with_duplicates_and_out_of_bounds(shape, count, seed, op, mode, dtype):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(floats(rng, shape, dtype))
    i = random_indices(rng, (count,), shape[0])
    i[count // 2:] = i[:count - count // 2]         # duplicates
    updates = jnp.asarray(floats(rng, (count,) + shape[1:], dtype))

    def update(a, k, u):
        return getattr(a.at[k], op)(u, mode=mode) * 2
    assert_native_and_agree(update, x, jnp.asarray(i), updates)


def scatter_kernels(fun, *args):
    steps = jaxlite.jit(fun).lower(*args).program.steps
    return [s.kernel for s in steps if hasattr(s, "kernel") and s.kernel.stages[-1].ordered]


@settings(deadline=None, max_examples=12)
@given(st.integers(0, 40), seeds, st.sampled_from(AT_OPS), st.sampled_from(SCATTER_MODES),
       st.sampled_from([np.float32, np.int32]))
def test_big_scatters_split_their_rows_across_threads(count, seed, op, mode, dtype):
    """Each thread copies its share of the rows, then applies (in order) the updates that
    land there: duplicates on either side of the split and out-of-bounds indices in
    every mode give eager's values exactly."""
    from jaxlite.lower import entry_points
    rows = entry_points.PARALLEL_MIN_POINTS // 64 + 3
    rng = np.random.default_rng(seed)
    x = jnp.asarray(floats(rng, (rows, 64), dtype))
    i = random_indices(rng, (count,), rows)
    i[: count // 4] = rng.choice([0, rows // 2 - 1, rows // 2, rows - 1], count // 4)
    i[count // 2:] = i[:count - count // 2]         # duplicates
    updates = jnp.asarray(floats(rng, (count, 64), dtype))

    def update(a, k, u):
        return getattr(a.at[k], op)(u, mode=mode) + 1
    assert_native_and_agree(update, x, jnp.asarray(i), updates)
    [kernel] = scatter_kernels(update, x, jnp.asarray(i), updates)
    assert kernel.owned is not None and entry_points.splits(kernel) == (entry_points.native_pool.available_cpus() > 1)


def test_split_scatter_windows_straddle_the_shares():
    """Windows along the split axis: a window's rows may belong to both threads."""
    from jaxlite.lower import entry_points
    rows = entry_points.PARALLEL_MIN_POINTS // 16 + 1
    rng = np.random.default_rng(3)
    x = jnp.asarray(floats(rng, (rows, 16)))
    middle = rows // 2
    starts = jnp.asarray(np.array([[middle - 2, 0], [middle - 1, 3], [middle - 2, 1], [rows - 2, 9],
                                   [2 ** 31 - 1, 0], [-2 ** 31, 5], [-1, 2]], np.int32))
    updates = jnp.asarray(floats(rng, (7, 4, 8)))
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                        scatter_dims_to_operand_dims=(0, 1))
    for name in ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]:
        for mode in ["clip", "fill"]:
            def scatter(a, s, u):
                return getattr(lax, name)(a, s, u, dnums, mode=mode)
            assert_native_and_agree(scatter, x, starts, updates)
            assert [k.owned is not None for k in scatter_kernels(scatter, x, starts, updates)] == [True]


def test_split_scatter_under_vmap_shares_the_batch_axis():
    """vmap's operand batching axis leads the output: threads own whole batch entries."""
    from jaxlite.lower import entry_points
    rng = np.random.default_rng(4)
    x = jnp.asarray(floats(rng, (40, entry_points.PARALLEL_MIN_POINTS // 320 + 1, 8)))
    i = jnp.asarray(random_indices(rng, (40, 50), x.shape[1]))
    updates = jnp.asarray(floats(rng, (40, 50, 8)))
    for mode in SCATTER_MODES:
        batched = jaxlite.vmap(lambda a, k, u: a.at[k].add(u, mode=mode))
        assert_native_and_agree(batched, x, i, updates)
        assert [k.owned is not None for k in scatter_kernels(batched, x, i, updates)] == [True]


def test_scatters_with_more_updates_than_rows_stay_on_one_thread():
    """Each thread would read every update: not worth it when the updates dominate."""
    x = jnp.zeros((8, 2))
    i = jnp.asarray(np.arange(40000, dtype=np.int32) % 11 - 1)
    updates = jnp.ones((40000, 2))

    def update(a, k, u):
        return a.at[k].add(u)
    assert_native_and_agree(update, x, i, updates)
    assert [k.owned for k in scatter_kernels(update, x, i, updates)] == [None]


@settings(deadline=None, max_examples=20)
@given(st.integers(1, 6), st.integers(0, 12), seeds, st.sampled_from(AT_OPS))
def test_at_updates_on_a_column_and_a_scalar_index(n, count, seed, op):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(floats(rng, (n, 4)))
    i = jnp.asarray(random_indices(rng, (count,), 4))
    updates = jnp.asarray(floats(rng, (n, count)))
    assert_native_and_agree(lambda a, k, u: getattr(a.at[:, k], op)(u), x, i, updates)
    assert_native_and_agree(lambda a, u: getattr(a.at[n - 1, 2], op)(u[0, 0] if count else 1.0), x, updates)


def test_at_updates_on_booleans_and_integers():
    flags = jnp.asarray(np.array([False, True, False]))
    i = jnp.asarray(np.array([0, 0, 2, 5, -7], np.int32))
    assert_native_and_agree(lambda a, k: a.at[k].add(True), flags, i)
    assert_native_and_agree(lambda a, k: a.at[k].set(True), flags, i)
    counts = jnp.asarray(np.array([2 ** 31 - 1, 5, -3], np.int32))
    assert_native_and_agree(lambda a, k: a.at[k].add(7), counts, i)     # wraps as numpy does
    assert_native_and_agree(lambda a, k: a.at[k].multiply(3), counts, i)


@settings(deadline=None, max_examples=20)
@given(st.integers(1, 30), st.integers(1, 6), seeds)
def test_segment_sum(count, segments, seed):
    rng = np.random.default_rng(seed)
    data = jnp.asarray(floats(rng, (count, 3)))
    ids = jnp.asarray(np.sort(rng.integers(-1, segments + 1, count)).astype(np.int32))

    def segment_sum(d, s):
        return jnp.zeros((segments, 3), d.dtype).at[s].add(d)
    assert_native_and_agree(segment_sum, data, ids, rtol=1e-6, atol=1e-6)


def test_scatter_with_windows_and_extreme_indices():
    rng = np.random.default_rng(1)
    x = jnp.asarray(floats(rng, (6, 5)))
    starts = jnp.asarray(np.array([[1, 1], [4, 3], [-1, 0], [2 ** 31 - 1, 0], [-2 ** 31, 2]], np.int32))
    updates = jnp.asarray(floats(rng, (5, 2, 3)))
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                        scatter_dims_to_operand_dims=(0, 1))
    for name in ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]:
        for mode in ["clip", "fill"]:
            assert_native_and_agree(lambda a, s, u: getattr(lax, name)(a, s, u, dnums, mode=mode),
                                    x, starts, updates)


# ---------------------------------------------------------------- reduce_window

@settings(deadline=None, max_examples=30)
@given(seeds, st.sampled_from([(lax.max, -np.inf), (lax.add, 0.0), (lax.min, np.inf)]),
       st.sampled_from(["VALID", "SAME", "explicit"]), st.sampled_from([np.float32, np.int32, dtypes.bfloat16]))
def test_reduce_window_pooling(seed, computation, padding, dtype):
    rng = np.random.default_rng(seed)
    op, init = computation
    if dtype == np.int32:
        init = {lax.max: np.iinfo(np.int32).min, lax.add: 0, lax.min: np.iinfo(np.int32).max}[op]
    x = jnp.asarray(rng.uniform(-3, 3, (2, 7, 6, 3)).astype(dtype) if dtype != np.int32
                    else rng.integers(-50, 50, (2, 7, 6, 3)).astype(dtype))
    window = (1,) + tuple(int(w) for w in rng.integers(1, 4, 2)) + (1,)
    strides = (1,) + tuple(int(s) for s in rng.integers(1, 3, 2)) + (1,)
    base = (1,) + tuple(int(d) for d in rng.integers(1, 3, 2)) + (1,)
    dilation = (1,) + tuple(int(d) for d in rng.integers(1, 3, 2)) + (1,)
    if padding == "explicit":
        padding = ((0, 0),) + tuple(tuple(int(p) for p in rng.integers(0, 3, 2)) for _ in range(2)) + ((0, 0),)
    # bfloat16 sums: eager rounds after every addition, the kernel once at the end.
    tolerance = {np.dtype(np.float32): 1e-5, dtypes.bfloat16: 0.25}.get(np.dtype(dtype), 0) if op is lax.add else 0

    def pool(a):
        return lax.reduce_window(a, init, op, window, strides, padding, base, dilation)
    assert_native_and_agree(pool, x, rtol=tolerance, atol=tolerance)


def test_max_and_average_pool():
    x = jnp.asarray(floats(np.random.default_rng(2), (2, 8, 8, 4)))
    max_pool = lambda a: lax.reduce_window(a, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    avg_pool = lambda a: lax.reduce_window(a, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") / 9
    assert_native_and_agree(max_pool, x)
    assert_native_and_agree(avg_pool, x, rtol=1e-5, atol=1e-5)
    assert jaxlite.jit(lambda a: jnp.maximum(max_pool(a), 0)).lower(x).program.kernel_count() == 1


# ---------------------------------------------------------------- cumulative

CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin"]


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple), seeds,
       st.sampled_from(CUMULATIVE + ["cumlogsumexp"]), st.booleans(),
       st.sampled_from([np.float32, np.float16, dtypes.bfloat16, np.int32]))
def test_cumulative_reversed_and_narrow(shape, seed, name, reverse, dtype):
    if name == "cumlogsumexp" and dtype == np.int32:
        return
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.uniform(-1.5, 1.5, shape).astype(dtype) if dtype != np.int32
                    else rng.integers(-4, 5, shape).astype(dtype))
    axis = int(rng.integers(0, len(shape)))
    tolerance = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3, dtypes.bfloat16: 1e-2}.get(np.dtype(dtype), 0)
    assert_native_and_agree(lambda a: getattr(lax, name)(a, axis=axis, reverse=reverse), x,
                            rtol=tolerance, atol=tolerance)


def test_cumlogsumexp_keeps_infinities_and_nan():
    x = jnp.asarray(np.array([-np.inf, -np.inf, 1.0, 80.0, np.inf, np.inf, np.nan, 2.0], np.float32))
    for reverse in [False, True]:
        assert_native_and_agree(lambda a: lax.cumlogsumexp(a, reverse=reverse), x, rtol=1e-6)


# ---------------------------------------------------------------- gradients under jit

GRADIENT_CASES = {
    "take clip": lambda x, i: jnp.sum(jnp.take(x, i, axis=0, mode="clip") ** 2),
    "take fill": lambda x, i: jnp.sum(jnp.take(x, i, axis=0, mode="fill", fill_value=0) ** 2),
    "fancy index": lambda x, i: jnp.sum(jnp.sin(x[i])),
    "take_along_axis": lambda x, i: jnp.sum(jnp.take_along_axis(x, i[:, None] % 3, 1) ** 2),
    "at add": lambda x, i: jnp.sum(jnp.sin(x.at[i].add(x[0] * 2))),
    "at set": lambda x, i: jnp.sum(jnp.sin(x.at[i].set(x[1] * 3))),
    "at mul": lambda x, i: jnp.sum(x.at[i].multiply(x[2])),
    "at max": lambda x, i: jnp.sum(x.at[i].max(x[3] * 0.5)),
    "max pool": lambda x, i: jnp.sum(lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "SAME") ** 2),
    "avg pool": lambda x, i: jnp.sum(lax.reduce_window(x, 0.0, lax.add, (2, 3), (2, 1), "VALID") ** 2),
    "cumsum reversed": lambda x, i: jnp.sum(jnp.sin(lax.cumsum(x, axis=1, reverse=True))),
    "cumprod": lambda x, i: jnp.sum(lax.cumprod(x, axis=0)),
    "cummax reversed": lambda x, i: jnp.sum(lax.cummax(x, axis=0, reverse=True) ** 2),
    "cumlogsumexp": lambda x, i: jnp.sum(lax.cumlogsumexp(x, axis=1)),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradients_under_jit(name):
    rng = np.random.default_rng(5)
    x = jnp.asarray(floats(rng, (6, 3)))
    i = jnp.asarray(np.array([0, 5, 5, -1, 9, 2], np.int32))
    grad = jaxlite.grad(GRADIENT_CASES[name])
    assert not NOW_NATIVE & set(fallback_steps(grad, x, i))    # (scatter-mul's derivative sorts)
    np.testing.assert_allclose(jaxlite.jit(grad)(x, i), grad(x, i), rtol=1e-5, atol=1e-5)


def test_no_fallback_warning_is_logged(caplog):
    x = jnp.asarray(floats(np.random.default_rng(6), (4, 6)))
    i = jnp.asarray(np.array([3, -9, 1], np.int32))

    def everything(a, k):
        pooled = lax.reduce_window(a, -np.inf, lax.max, (2, 2), (2, 2), "VALID")
        scanned = lax.cumsum(a.astype(dtypes.bfloat16), axis=1, reverse=True).astype(np.float32)
        return (jnp.sum(jnp.take(a, k, axis=0, mode="fill", fill_value=0)) + jnp.sum(a.at[k].add(1.0))
                + jnp.sum(pooled) + jnp.sum(scanned) + jnp.sum(lax.cumlogsumexp(a, axis=0)))
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        jaxlite.jit(jaxlite.value_and_grad(everything))(x, i)
    assert "numpy implementation" not in caplog.text


def test_long_scan_is_not_split_across_threads():
    """A 1-D scan is one ordered loop: splitting it over threads would start a share
    before the element it reads back exists."""
    from jaxlite.lower import entry_points
    x = jnp.asarray(np.ones(entry_points.PARALLEL_MIN_POINTS + 3, np.int32))
    for reverse in [False, True]:
        assert_native_and_agree(lambda a: lax.cumsum(a, reverse=reverse), x)


def test_int64_and_unsigned_extreme_indices(enable_x64):
    x = jnp.asarray(floats(np.random.default_rng(7), (5, 2), np.float64))
    wide = np.array([0, 4, -1, 5, 2 ** 63 - 1, -2 ** 63, 2 ** 32 + 1], np.int64)
    for indices in [jnp.asarray(wide), jnp.asarray(wide.astype(np.uint64)), jnp.asarray(wide.astype(np.uint32))]:
        for mode in ["clip", "fill"]:
            assert_native_and_agree(lambda a, k: jnp.take(a, k, axis=0, mode=mode), x, indices)
            assert_native_and_agree(lambda a, k: a.at[k].add(1.0, mode=mode if mode == "clip" else "drop"),
                                    x, indices)


@pytest.mark.parametrize("window", [(1, 2, 2, 1), (1, 5, 5, 1)])
def test_small_windows_unroll_and_large_ones_reduce(window):
    """Up to UNROLLED_WINDOW elements a window is one expression (no reduction stage);
    beyond, a reduction stage per output point. Both agree with eager."""
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 9, 11, 3)).astype(np.float32))

    def pool(a):
        return lax.reduce_window(a, -np.inf, lax.max, window, (1, 2, 2, 1), "SAME")
    assert_native_and_agree(pool, x)
    kernels = [step.kernel for step in jaxlite.jit(pool).lower(x).program.steps if hasattr(step, "kernel")]
    has_stage = any(isinstance(stage, Reduce) for kernel in kernels for stage in kernel.stages)
    assert has_stage == (np.prod(window) > fusion_rules.UNROLLED_WINDOW)
