"""The native sort, top_k, cholesky, triangular_solve and lu routines under jit agree with eager."""
import ctypes
import itertools
import logging
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.tree_util import tree_leaves as jax_tree_leaves
from jaxlite.test_util import assert_jit_matches_eager_bits, assert_same_bits, enable_x64

SORT_DTYPES = [np.float32, np.float16, dtypes.bfloat16, np.int8, np.int16, np.int32, np.uint8,
               np.uint16, np.uint32, np.bool_]
SPECIALS = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0]
LENGTHS = [0, 1, 2, 3, 7, 13, 16, 31, 67]   # 67: radix sorted (RADIX_MIN_LENGTH)
NATIVE = ("sort", "top_k", "cholesky", "triangular_solve", "lu")


def _values(rng, shape, dtype):
    """Values with many ties, and for floats NaNs of both signs, signed zeros and infinities."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if not dtypes.is_float(dtype):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -4), min(info.max, 4), shape, endpoint=True).astype(dtype)
    values = rng.integers(-3, 4, shape).astype(np.float32)
    special = rng.random(shape) < 0.3
    values[special] = rng.choice(SPECIALS, size=int(special.sum()))
    return values.astype(dtype)


shapes = st.lists(st.sampled_from(LENGTHS), min_size=1, max_size=3).filter(lambda s: np.prod(s) < 5000).map(tuple)


@settings(deadline=None, max_examples=40)
@given(shapes, st.data(), st.integers(0, 2 ** 16))
def test_lax_sort_with_several_operands_and_keys(shape, data, seed):
    rng = np.random.default_rng(seed)
    count = data.draw(st.integers(1, 3))
    operands = [_values(rng, shape, data.draw(st.sampled_from(SORT_DTYPES))) for _ in range(count)]
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    num_keys = data.draw(st.integers(1, count))
    assert_jit_matches_eager_bits(lambda *ops: lax.sort(ops, axis, num_keys=num_keys), *operands)


@settings(deadline=None, max_examples=30)
@given(shapes, st.sampled_from(SORT_DTYPES), st.data(), st.integers(0, 2 ** 16))
def test_jnp_sort_and_argsort(shape, dtype, data, seed):
    x = _values(np.random.default_rng(seed), shape, dtype)
    axis = data.draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    descending = data.draw(st.booleans())
    assert_jit_matches_eager_bits(lambda a: jnp.sort(a, axis=axis, descending=descending), x)
    assert_jit_matches_eager_bits(lambda a: jnp.argsort(a, axis=axis, descending=descending), x)


def test_descending_sort_of_an_empty_matrix_flattened():
    x = np.zeros((0, 3), np.float32)
    assert_jit_matches_eager_bits(lambda a: jnp.sort(a, axis=None, descending=True), x)


@pytest.mark.parametrize("length", [1009, 4099])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, dtypes.bfloat16])
def test_long_sorts(length, dtype):
    rng = np.random.default_rng(length)
    x = _values(rng, (length,), dtype)
    assert_jit_matches_eager_bits(jnp.sort, x)
    assert_jit_matches_eager_bits(lambda a, b: lax.sort((a, b), num_keys=2), x, _values(rng, (length,), np.int8))
    assert_jit_matches_eager_bits(lambda a: jnp.argsort(a, axis=0), _values(rng, (length, 3), dtype))


def test_a_large_batch_of_lanes_split_over_threads():
    from jaxlite.lower import native_routines, sort_kernels
    x = _values(np.random.default_rng(5), (4096, 130), np.float32)
    spec = sort_kernels.SortSpec((np.dtype(np.float32),), 4096, 130, 1, 1, 130)
    assert native_routines.compile_routine(spec).threads == min(os.cpu_count(), 2)
    assert_jit_matches_eager_bits(lambda a: lax.sort(a, 1), x)


def test_sixty_four_bit_keys():
    with enable_x64():
        rng = np.random.default_rng(0)
        for dtype in (np.float64, np.int64, np.uint64):
            x = _values(rng, (5, 37), dtype)
            assert_jit_matches_eager_bits(lambda a, b: lax.sort((a, b), 1, num_keys=2), x, x[::-1].copy())
            assert_jit_matches_eager_bits(lambda a: lax.top_k(a, 5), x)


@settings(deadline=None, max_examples=30)
@given(shapes, st.sampled_from(SORT_DTYPES[:-1]), st.data(), st.integers(0, 2 ** 16))
def test_top_k(shape, dtype, data, seed):
    x = _values(np.random.default_rng(seed), shape, dtype)
    k = data.draw(st.integers(0, shape[-1]))
    assert_jit_matches_eager_bits(lambda a: lax.top_k(a, k), x)


def test_top_k_ranks_nan_above_infinity():
    values, indices = jaxlite.jit(lambda a: lax.top_k(a, 3))(np.array([1.0, np.inf, np.nan, 2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(indices), [2, 1, 3])


def test_sort_gradient_under_jit():
    x = np.random.default_rng(0).standard_normal((3, 11)).astype(np.float32)

    def loss(a):
        return jnp.sum(jnp.sort(a, axis=1) * jnp.arange(11.0))
    np.testing.assert_allclose(np.asarray(jaxlite.jit(jaxlite.grad(loss))(x)), np.asarray(jaxlite.grad(loss)(x)))


# ---------------------------------------------------------------- linear algebra

FLOATS = [np.float32, np.float64]
batches = st.lists(st.integers(1, 3), max_size=2).map(tuple)
sizes = st.sampled_from([1, 2, 3, 5, 8, 17])


def _eps(dtype):
    return np.finfo(dtype).eps


def _tolerance(a, dtype):
    """Forward error of a backward-stable method: ~ n eps cond(a)."""
    n = a.shape[-1]
    return 20 * n * _eps(dtype) * float(np.max(np.linalg.cond(np.asarray(a, np.float64))))


def _well_conditioned(rng, shape):
    n = shape[-1]
    return rng.standard_normal(shape) + 2 * n * np.eye(n, shape[-2]) if len(shape) >= 2 else rng.standard_normal(shape)


def _spd(rng, batch, n):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def assert_jit_close(fun, args, tolerance):
    want, got = fun(*args), jaxlite.jit(fun)(*args)
    for w, g in zip(jaxlite.tree_util.tree_leaves(want), jaxlite.tree_util.tree_leaves(got)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=tolerance, atol=tolerance, equal_nan=True)


def _x64_for(dtype):
    return enable_x64() if dtype == np.float64 else _nothing()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@settings(deadline=None, max_examples=20)
@given(batches, sizes, st.sampled_from(FLOATS), st.integers(0, 2 ** 16))
def test_cholesky(batch, n, dtype, seed):
    with _x64_for(dtype):
        a = _spd(np.random.default_rng(seed), batch, n).astype(dtype)
        assert_jit_close(lambda x: lax.cholesky(x), [a], _tolerance(a, dtype))


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan():
    a = np.stack([np.eye(3, dtype=np.float32), -np.eye(3, dtype=np.float32)])
    factor = np.asarray(jaxlite.jit(lax.cholesky)(a))
    np.testing.assert_array_equal(factor[0], np.eye(3))
    assert np.isnan(factor[1][np.tril_indices(3)]).all()       # as JAX: NaN below, zeros above
    assert not factor[1][np.triu_indices(3, 1)].any()


@pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal", list(itertools.product([True, False], repeat=4)))
@pytest.mark.parametrize("dtype", FLOATS)
def test_triangular_solve_variants(left_side, lower, transpose_a, unit_diagonal, dtype):
    with _x64_for(dtype):
        rng = np.random.default_rng(0)
        a = _well_conditioned(rng, (2, 6, 6)).astype(dtype)
        b = rng.standard_normal((2, 6, 4) if left_side else (2, 4, 6)).astype(dtype)
        params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
        triangle = np.tril(a) if lower else np.triu(a)
        if unit_diagonal:
            triangle[..., range(6), range(6)] = 1
        assert_jit_close(lambda x, y: lax.triangular_solve(x, y, **params), [a, b], _tolerance(triangle, dtype))


@settings(deadline=None, max_examples=20)
@given(batches, sizes, sizes, st.sampled_from(FLOATS), st.integers(0, 2 ** 16))
def test_lu_is_the_eager_factorization(batch, m, n, dtype, seed):
    with _x64_for(dtype):
        a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(dtype)
        got, want = jaxlite.jit(lax.lu)(a), lax.lu(a)
        # The same operations in the same order: the same bits.
        assert_same_bits(got, want)


@settings(deadline=None, max_examples=15)
@given(batches, sizes, st.sampled_from(FLOATS), st.integers(0, 2 ** 16))
def test_solve_inv_det(batch, n, dtype, seed):
    with _x64_for(dtype):
        rng = np.random.default_rng(seed)
        a = _well_conditioned(rng, batch + (n, n)).astype(dtype)
        b = rng.standard_normal(batch + (n, 3)).astype(dtype)
        tolerance = _tolerance(a, dtype)
        assert_jit_close(jnp.linalg.solve, [a, b], tolerance)
        assert_jit_close(jnp.linalg.inv, [a], tolerance)
        assert_jit_close(jnp.linalg.det, [a], tolerance)
        assert_jit_close(lambda x, y: jnp.linalg.cholesky(x @ jnp.swapaxes(x, -1, -2)) @ y, [a, b], 10 * tolerance)


def test_cholesky_gradient_under_jit():
    with enable_x64():
        a = _spd(np.random.default_rng(1), (2,), 4)

        def loss(x):
            return jnp.sum(jnp.linalg.cholesky(x) ** 2)
        np.testing.assert_allclose(np.asarray(jaxlite.jit(jaxlite.grad(loss))(a)),
                                   np.asarray(jaxlite.grad(loss)(a)), rtol=1e-10, atol=1e-10)


def test_no_fallback_is_logged_for_the_native_primitives(caplog):
    rng = np.random.default_rng(2)
    a = _spd(rng, (2,), 5).astype(np.float32)
    b = rng.standard_normal((2, 5, 3)).astype(np.float32)

    def everything(x, y):
        factor = lax.cholesky(x)
        solved = lax.triangular_solve(factor, y, left_side=True, lower=True)
        lu, pivots, _ = lax.lu(x)
        values, indices = lax.top_k(solved[..., 0], 2)
        return jnp.sort(solved, axis=1), lax.sort((lu, solved[..., :1] * lu), 2, num_keys=2), pivots, values, indices
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        lowered = jaxlite.jit(everything).lower(a, b)
        assert_jit_close(everything, [a, b], 1e-4)
    assert not [r for r in caplog.records if any(f"running {name} " in r.getMessage() for name in NATIVE)]
    assert lowered.as_text().count("native:") == 6


def test_routines_are_stored_in_the_persistent_cache(tmp_path):
    from jaxlite.lower import disk_cache, linalg_kernels, native_routines
    previous = jaxlite.config.jax_compilation_cache_dir
    jaxlite.config.update("jax_compilation_cache_dir", str(tmp_path / "cache"))
    spec = linalg_kernels.CholeskySpec(np.dtype(np.float32), 2, 3)
    try:
        native_routines.compile_routine.cache_clear()
        native_routines.compile_routine(spec)
        native_routines.compile_routine.cache_clear()
        hits = disk_cache.stats["hits"]
        loaded = native_routines.compile_routine(spec)
        assert disk_cache.stats["hits"] == hits + 1
    finally:
        jaxlite.config.update("jax_compilation_cache_dir", previous)
        native_routines.compile_routine.cache_clear()
    a = np.stack([4 * np.eye(3, dtype=np.float32), np.diag([1.0, 9.0, 16.0]).astype(np.float32)])
    factor = np.empty_like(a)
    scratch = np.empty(loaded.scratch_bytes, np.uint8)
    aligned = -(-scratch.ctypes.data // 64) * 64
    whole_batch = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(loaded.address)
    whole_batch(a.ctypes.data, factor.ctypes.data, aligned)
    np.testing.assert_array_equal(factor, np.sqrt(a))


@pytest.mark.parametrize("dtype", [np.float16, dtypes.bfloat16])
def test_narrow_float_linear_algebra_runs_the_float32_routines(dtype, caplog):
    """16-bit operands widen to float32 around the native routine, as eager computes; what
    numpy's linalg rejects in float16 (cholesky, svd) still raises its error."""
    rng = np.random.default_rng(3)
    m = rng.normal(size=(3, 6, 6))
    a = jnp.asarray((m @ m.transpose(0, 2, 1) + 6 * np.eye(6)).astype(dtype))
    programs = [lambda a: lax.linalg.lu(a),
                lambda a: lax.linalg.triangular_solve(a, a * 0.5, left_side=True, lower=True)]
    if dtype == dtypes.bfloat16:
        programs += [lax.linalg.cholesky, lambda a: lax.linalg.svd(a)]
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        for f in programs:
            for got, want in zip(jax_tree_leaves(jaxlite.jit(f)(a)), jax_tree_leaves(f(a))):
                # (not bitwise: eager solves with numpy, the routine in its own order)
                assert got.dtype == want.dtype
                np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                           rtol=2e-2, atol=1e-3)
    assert "numpy implementation" not in caplog.text
    if dtype == np.float16:
        with pytest.raises(TypeError, match="float16"):
            jaxlite.jit(lax.linalg.cholesky)(a)
