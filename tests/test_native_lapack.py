"""svd under jit calls numpy's own LAPACK dgesdd natively: the same bits as eager svd."""
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.lower import lapack
from jaxlite.test_util import (assert_jit_matches_eager_bits, assert_same_bits, cache_hits_in_a_second_process,
                               enable_x64)

pytestmark = pytest.mark.skipif(lapack.gesdd() is None, reason="numpy's LAPACK exports no dgesdd")

FLOATS = [np.float32, np.float64]
batches = st.lists(st.integers(0, 3), max_size=2).map(tuple)
sizes = st.sampled_from([0, 1, 2, 3, 5, 8, 17, 40])


@settings(deadline=None, max_examples=40)
@given(batches, sizes, sizes, st.booleans(), st.sampled_from(FLOATS), st.integers(0, 2 ** 16))
def test_lax_svd_is_the_eager_decomposition(batch, m, n, full_matrices, dtype, seed):
    with enable_x64():
        a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(dtype)
        assert_jit_matches_eager_bits(lambda x: lax.svd(x, full_matrices=full_matrices), a)


@settings(deadline=None, max_examples=20)
@given(batches, sizes, sizes, st.booleans(), st.booleans(), st.integers(0, 2 ** 16))
def test_jnp_svd_and_numpy_agree_bitwise(batch, m, n, full_matrices, compute_uv, seed):
    """jnp.linalg.svd under jit gives np.linalg.svd's bits (float32: computed in float64, rounded)."""
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(np.float32)
    got = jaxlite.jit(lambda x: jnp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv))(a)
    want = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    assert_same_bits(got, tuple(want) if compute_uv else want)


def test_wide_tall_and_single_row_matrices():
    rng = np.random.default_rng(0)
    for shape in [(1, 9), (9, 1), (2, 1, 1), (3, 30, 4), (3, 4, 30), (64, 48)]:
        a = rng.standard_normal(shape).astype(np.float32)
        for full_matrices in (False, True):
            assert_jit_matches_eager_bits(lambda x: lax.svd(x, full_matrices=full_matrices), a)


def test_a_matrix_lapack_fails_on_is_nan_and_the_others_are_not():
    a = np.random.default_rng(1).standard_normal((3, 4, 3)).astype(np.float32)
    a[1, 2, 0] = np.nan
    for full_matrices in (False, True):
        got = jaxlite.jit(lambda x: lax.svd(x, full_matrices=full_matrices))(a)
        assert_same_bits(got, lax.svd(a, full_matrices=full_matrices))
        for result in got:
            result = np.asarray(result)
            assert np.isnan(result[1]).all() and not np.isnan(result[[0, 2]]).any()


def test_svd_under_vmap_and_grad():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 5, 3)).astype(np.float32)
    batched = jaxlite.vmap(lambda x: lax.svd(x), in_axes=2, out_axes=0)
    stacked = np.stack([np.asarray(a[..., k]) for k in range(3)])
    assert_same_bits(jaxlite.jit(batched)(a), lax.svd(stacked))
    with enable_x64():
        weights = rng.standard_normal((2, 5, 3))

        def loss(x):
            u, s, vt = lax.svd(x, full_matrices=False)
            return jnp.sum(s ** 2) + jnp.sum(u * u * weights)   # free of the vectors' signs
        x = a.astype(np.float64)
        np.testing.assert_allclose(np.asarray(jaxlite.jit(jaxlite.grad(loss))(x)),
                                   np.asarray(jaxlite.grad(loss)(x)), rtol=1e-10, atol=1e-10)


def test_svd_runs_natively_without_a_fallback(caplog):
    a = np.ones((2, 4, 3), np.float32)
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        lowered = jaxlite.jit(lambda x: lax.svd(x, full_matrices=True)).lower(a)
        jaxlite.jit(lambda x: lax.svd(x, full_matrices=True))(a)
    assert "native:" in lowered.as_text()
    assert not [r for r in caplog.records if "running svd " in r.getMessage()]


def test_without_numpys_lapack_svd_falls_back_to_eager(monkeypatch, caplog):
    monkeypatch.setattr(lapack, "gesdd", lambda: None)
    a = np.random.default_rng(3).standard_normal((3, 7, 2)).astype(np.float32)
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        got = jaxlite.jit(lambda x: lax.svd(x))(a)
    assert_same_bits(got, lax.svd(a))
    assert [r for r in caplog.records if "running svd " in r.getMessage() and "dgesdd" in r.getMessage()]


_CACHED_SVD = """
import numpy as np, jaxlite
from jaxlite import lax
from jaxlite.lower import disk_cache
jaxlite.config.update("jax_compilation_cache_dir", {cache!r})
a = np.random.default_rng(4).standard_normal((2, 6, 4)).astype(np.float32)
u, s, vt = jaxlite.jit(lambda x: lax.svd(x, full_matrices=True))(a)
want_u, want_s, want_vt = np.linalg.svd(a, full_matrices=True)
assert all(np.array_equal(np.asarray(x), y) for x, y in ((s, want_s), (u, want_u), (vt, want_vt)))
print(disk_cache.stats["hits"])
"""


def test_cached_object_code_links_to_this_processs_lapack(tmp_path):
    """The routine stored by one process calls LAPACK by our symbol name, bound again in the next."""
    assert cache_hits_in_a_second_process(_CACHED_SVD, tmp_path / "cache") > 0


def test_debug_allocator_sees_no_heap_corruption(tmp_path):
    """LAPACK writes as much workspace as LWORK says: under Python's debugging allocator and
    glibc's checks, a too-small scratch region would abort."""
    script = textwrap.dedent("""
        import numpy as np, jaxlite
        from jaxlite import lax
        for shape in [(3, 40, 13), (13, 40), (1, 5), (6, 6)]:
            a = np.random.default_rng(5).standard_normal(shape)
            for full_matrices in (False, True):
                f = lambda x: lax.svd(x, full_matrices=full_matrices)
                assert all(np.array_equal(np.asarray(g), np.asarray(w)) for g, w in zip(jaxlite.jit(f)(a), f(a)))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PYTHONMALLOC="malloc_debug", MALLOC_CHECK_="3")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
