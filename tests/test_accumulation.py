"""Float32 sums under jit lose digits like log n, not n: fused reductions add in blocks whose
sums meet in float64 (codegen._blocked_sum), cumsum scans in float64 (eager too). Before,
jit(sum(a * a)) and jit(var) over 1e7 points erred by 2e-5 and cumsum by 7e-5 (benchmarks/
bench_accumulation.py: errors and times before and after, and JAX's)."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp

N = 1 << 21
A = np.random.default_rng(0).random(N, dtype=np.float32) + 0.5
WIDE = A.astype(np.float64)


@pytest.mark.parametrize("fun, reference", [
    (lambda x: jnp.sum(x * x), np.sum(WIDE * WIDE)),
    (jnp.var, np.var(WIDE)),
    (lambda x: jnp.dot(x, x), np.dot(WIDE, WIDE)),
    (lambda x: jnp.mean(jnp.exp(x), axis=0), np.mean(np.exp(WIDE))),
    (lambda x: jnp.sum(x.reshape(64, -1) * 2, axis=1), 2 * WIDE.reshape(64, -1).sum(axis=1)),
], ids=["sum of squares", "var", "dot", "mean of exp", "row sums"])
def test_fused_float32_sum_error_stays_near_eps(fun, reference):
    out = np.asarray(jaxlite.jit(fun)(A), np.float64)
    assert np.max(np.abs(out - reference) / np.abs(reference)) < 1e-7    # before: 1.6e-7 to 2.3e-6


@pytest.mark.parametrize("fun", [jnp.cumsum, jaxlite.jit(jnp.cumsum)], ids=["eager", "jit"])
def test_float32_cumsum_error_stays_near_eps(fun):
    out = np.asarray(fun(A), np.float64)
    reference = np.cumsum(WIDE)
    assert np.max(np.abs(out - reference) / reference) < 1e-7      # before: 1.9e-5
    assert np.asarray(fun(A)).dtype == np.float32


def test_blocked_sum_matches_numpy_on_awkward_lengths():
    """Lengths around the block size: the last, partial block is summed too."""
    from jaxlite.lower.codegen import SUM_BLOCK
    for n in (2 * SUM_BLOCK - 1, 2 * SUM_BLOCK, 2 * SUM_BLOCK + 1, 5 * SUM_BLOCK + 77):
        x = A[:n]
        np.testing.assert_allclose(jaxlite.jit(lambda v: jnp.sum(v * 3))(x), 3 * WIDE[:n].sum(), rtol=2e-7)
