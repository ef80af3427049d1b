"""cholesky under jit calls numpy's own LAPACK dpotrf (eager's bits); big triangular solves call
numpy's BLAS strsm/dtrsm; without them the hand-written routines run."""
import itertools
import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import numpy_blas
from jaxlite.lower import lapack, linalg_kernels
from jaxlite.test_util import (assert_jit_matches_eager_bits, assert_same_bits, cache_hits_in_a_second_process,
                               enable_x64)

pytestmark = pytest.mark.skipif(lapack.potrf() is None or lapack.trsm(np.float32) is None,
                                reason="numpy's LAPACK exports no dpotrf/strsm")

FLOATS = [np.float32, np.float64]
batches = st.lists(st.integers(0, 3), max_size=2).map(tuple)
sizes = st.sampled_from([0, 1, 2, 3, 7, 8, 9, 17, 33])
FLAGS = ("left_side", "lower", "transpose_a", "unit_diagonal")


def _spd(rng, batch, n):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@settings(deadline=None, max_examples=30)
@given(batches, sizes, st.sampled_from(FLOATS), st.integers(0, 2 ** 16))
def test_cholesky_is_the_eager_factorization(batch, n, dtype, seed):
    with enable_x64():
        a = _spd(np.random.default_rng(seed), batch, n).astype(dtype)
        assert_jit_matches_eager_bits(lax.cholesky, a)


def test_jnp_cholesky_and_numpy_agree_bitwise():
    """float32 computed in float64 and rounded, as numpy does; the lower triangle alone is read."""
    rng = np.random.default_rng(1)
    a = _spd(rng, (2,), 40).astype(np.float32)
    a_upper_garbage = a + np.triu(rng.standard_normal(a.shape), 1).astype(np.float32)
    got = jaxlite.jit(lambda x: lax.cholesky(x, symmetrize_input=False))(a_upper_garbage)
    assert_same_bits(got, np.linalg.cholesky(a))
    assert_same_bits(jaxlite.jit(jnp.linalg.cholesky)(a), np.linalg.cholesky(a))


def test_the_routine_symmetrizes_as_eager_does():
    """symmetrize_input: (a + a^T) * 0.5 in the dtype, in the routine's copy (8 x 8 tiles and edges)."""
    rng = np.random.default_rng(10)
    a = (_spd(rng, (2,), 43) + rng.standard_normal((2, 43, 43))).astype(np.float32)
    assert_jit_matches_eager_bits(lax.cholesky, a)
    assert_same_bits(jaxlite.jit(lax.cholesky)(a), np.linalg.cholesky((a + np.swapaxes(a, -1, -2)) * np.float32(0.5)))


def test_big_factorizations_keep_eager_bits_and_leave_blas_threads_as_they_were():
    """From n = 128 OpenBLAS's threaded potrf rounds otherwise: eager and jit both run one thread."""
    control = numpy_blas.thread_control()
    before = control.get() if control is not None else None
    a = _spd(np.random.default_rng(8), (2,), 200).astype(np.float32)
    assert_jit_matches_eager_bits(lax.cholesky, a)
    b = np.random.default_rng(9).standard_normal((2, 200, 150)).astype(np.float32)
    jaxlite.jit(lambda x, y: lax.triangular_solve(x, y, left_side=True, lower=True))(a, b)
    assert (control.get() if control is not None else None) == before


@pytest.mark.skipif(numpy_blas.thread_control() is None, reason="numpy's LAPACK is not OpenBLAS")
def test_single_threaded_puts_back_only_what_it_changed():
    control = numpy_blas.thread_control()
    before = control.get()
    with numpy_blas.single_threaded():
        assert control.get() == 1
        with numpy_blas.single_threaded():      # found 1: leaves it alone
            assert control.get() == 1
        assert control.get() == 1
    assert control.get() == before


def test_a_matrix_lapack_fails_on_is_nan_and_the_others_are_not():
    a = _spd(np.random.default_rng(2), (4,), 12).astype(np.float32)
    a[1] = -a[1]
    a[2, 3, 3] = np.nan
    got = np.asarray(jaxlite.jit(lax.cholesky)(a))
    assert_same_bits(got, lax.cholesky(a))
    # (OpenBLAS's dpotrf reports no failure for a NaN pivot: the NaN spreads from there.)
    # As JAX, a failed factor is NaN in its lower triangle and zero above it.
    lower = np.tril_indices(12)
    assert np.isnan(got[1][lower]).all() and not got[1][np.triu_indices(12, 1)].any()
    assert np.isnan(got[2, 3:]).any() and not np.isnan(got[[0, 3]]).any()


def _triangular(rng, batch, m, dtype):
    """Values in both triangles (garbage for whichever is not named), well conditioned also
    with a unit diagonal: off-diagonal entries ~ 1/m."""
    return (rng.standard_normal(batch + (m, m)) / max(m, 1) + 2 * np.eye(m)).astype(dtype)


def _reference_solve(a, b, left_side, lower, transpose_a, unit_diagonal):
    """In float64, from the named triangle only."""
    t = np.tril(a) if lower else np.triu(a)
    t = t.astype(np.float64)
    if unit_diagonal:
        t[..., range(a.shape[-1]), range(a.shape[-1])] = 1
    t = np.swapaxes(t, -1, -2) if transpose_a else t
    if left_side:
        return np.linalg.solve(t, b.astype(np.float64))
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b.astype(np.float64), -1, -2)), -1, -2)


@pytest.fixture
def blas_for_every_size(monkeypatch):
    """BLAS's trsm also for small solves, in chunks of two right-hand sides (and a remainder)."""
    monkeypatch.setattr(linalg_kernels, "_TRSM_MIN_WORK", 0)
    monkeypatch.setattr(linalg_kernels, "_TRSM_CHUNK", 2)


@pytest.mark.usefixtures("blas_for_every_size")
@settings(deadline=None, max_examples=40)
@given(batches, sizes, st.integers(0, 5), st.tuples(*[st.booleans()] * 4), st.sampled_from(FLOATS),
       st.integers(0, 2 ** 16))
def test_blas_triangular_solve_variants(batch, m, rhs, flags, dtype, seed):
    params = dict(zip(FLAGS, flags))
    with enable_x64():
        rng = np.random.default_rng(seed)
        a = _triangular(rng, batch, m, dtype)
        b = rng.standard_normal(batch + ((m, rhs) if params["left_side"] else (rhs, m))).astype(dtype)
        got = jaxlite.jit(lambda x, y: lax.triangular_solve(x, y, **params))(a, b)
        assert got.dtype == dtype and got.shape == b.shape
        np.testing.assert_allclose(np.asarray(got, np.float64), _reference_solve(a, b, **params),
                                   rtol=50 * max(m, 1) * np.finfo(dtype).eps, atol=50 * max(m, 1) * np.finfo(dtype).eps)


@pytest.fixture
def chosen_specs(monkeypatch):
    """The routine specs jit picks for cholesky and triangular_solve, as they are picked."""
    from jaxlite.lower import runtime
    specs = []
    for name in ("cholesky", "triangular_solve"):
        def recording(eqn, spec_for=runtime.NATIVE_ROUTINES[name]):
            specs.append(spec_for(eqn))
            return specs[-1]
        monkeypatch.setitem(runtime.NATIVE_ROUTINES, name, recording)
    return specs


def test_big_solves_run_on_blas_and_agree_with_eager(chosen_specs):
    rng = np.random.default_rng(3)
    m, rhs = 130, 300       # over _TRSM_MIN_WORK; not multiples of any block; 3 chunks, the last short
    for flags in itertools.product([True, False], repeat=4):
        params = dict(zip(FLAGS, flags))
        a = _triangular(rng, (2,), m, np.float32)
        b = rng.standard_normal((2, m, rhs) if params["left_side"] else (2, rhs, m)).astype(np.float32)
        got = jaxlite.jit(lambda x, y: lax.triangular_solve(x, y, **params))(a, b)
        np.testing.assert_allclose(np.asarray(got), np.asarray(lax.triangular_solve(a, b, **params)),
                                   rtol=1e-4, atol=1e-4)
    assert chosen_specs and all(isinstance(spec, linalg_kernels.TrsmSpec) for spec in chosen_specs)


def test_small_solves_run_the_substitution_routine(chosen_specs):
    a = _triangular(np.random.default_rng(4), (3,), 8, np.float32)
    b = np.ones((3, 8, 2), np.float32)
    jaxlite.jit(lambda x, y: lax.triangular_solve(x, y, left_side=True, lower=True))(a, b)
    assert chosen_specs and {type(spec) for spec in chosen_specs} == {linalg_kernels.TriangularSolveSpec}


def test_under_grad_and_vmap(chosen_specs):
    rng = np.random.default_rng(5)
    with enable_x64():
        a = _spd(rng, (2,), 100)

        def loss(x):
            return jnp.sum(jnp.linalg.cholesky(x) ** 2)
        np.testing.assert_allclose(np.asarray(jaxlite.jit(jaxlite.grad(loss))(a)), np.asarray(jaxlite.grad(loss)(a)),
                                   rtol=1e-9, atol=1e-9)
    a = _spd(rng, (3,), 90).astype(np.float32)
    b = rng.standard_normal((90, 3, 90)).astype(np.float32)

    def solve(x, y):
        return lax.triangular_solve(lax.cholesky(x), y, left_side=True, lower=True)
    batched = jaxlite.vmap(solve, in_axes=(0, 1))
    np.testing.assert_allclose(np.asarray(jaxlite.jit(batched)(a, b)), np.asarray(batched(a, b)), rtol=1e-4, atol=1e-4)
    assert_same_bits(jaxlite.jit(jaxlite.vmap(lax.cholesky))(a), np.linalg.cholesky(a))
    assert {type(spec) for spec in chosen_specs} == {linalg_kernels.PotrfSpec, linalg_kernels.TrsmSpec}


def test_without_numpys_lapack_the_hand_written_routines_run(monkeypatch, caplog):
    monkeypatch.setattr(lapack, "potrf", lambda: None)
    monkeypatch.setattr(lapack, "trsm", lambda dtype: None)
    rng = np.random.default_rng(6)
    a = _spd(rng, (2,), 100).astype(np.float32)
    b = rng.standard_normal((2, 100, 60)).astype(np.float32)

    a[:, 0, 1] += 1.0         # not symmetric: the hand-written routine symmetrizes too

    def solve(x, y):
        return lax.triangular_solve(lax.cholesky(x), y, left_side=True, lower=True)
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        np.testing.assert_allclose(np.asarray(jaxlite.jit(solve)(a, b)), np.asarray(solve(a, b)), rtol=1e-4, atol=1e-4)
    assert not [r for r in caplog.records if "running cholesky " in r.getMessage()]


_CACHED = """
import numpy as np, jaxlite
from jaxlite import lax
from jaxlite.lower import disk_cache
jaxlite.config.update("jax_compilation_cache_dir", {cache!r})
rng = np.random.default_rng(7)
s = rng.standard_normal((2, 100, 100))
a = (s @ np.swapaxes(s, -1, -2) + 100 * np.eye(100)).astype(np.float32)
b = rng.standard_normal((2, 100, 100)).astype(np.float32)
f = jaxlite.jit(lambda x, y: (lax.cholesky(x), lax.triangular_solve(x, y, left_side=True, lower=True)))
factor, solved = f(a, b)
assert np.array_equal(np.asarray(factor), np.linalg.cholesky(a))
want = np.linalg.solve(np.tril(a).astype(np.float64), b)
assert np.allclose(np.asarray(solved), want, rtol=1e-4, atol=1e-4)
print(disk_cache.stats["hits"])
"""


def test_cached_object_code_links_to_this_processs_lapack(tmp_path):
    """Routines stored by one process call LAPACK and BLAS by our symbol names, bound again in the next."""
    assert cache_hits_in_a_second_process(_CACHED, tmp_path / "cache") > 0
