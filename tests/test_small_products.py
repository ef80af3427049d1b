"""Small products under jit: fused loops (no GEMM family compiled), agreeing with eager.

Up to step_policy.SMALL_PRODUCT multiply-adds a dot_general is a fused loop: a sum of row
updates when its right operand is contiguous along a free axis, else a sum along k per
output element. Eager computes the same product with numpy.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.lower import fusion, gemm, kernel_rewrites, pipeline, step_policy

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": dtypes.bfloat16, "int32": np.int32,
          "int8": np.int8}


def _operand(rng, shape, dtype):
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def _product_operands(rng, m, n, k, batch, lhs_transposed, rhs_transposed, dtype):
    """Operands and dimension numbers of a (batched) m x k by k x n product whose operands
    are stored transposed or not."""
    lead = (batch,) if batch else ()
    lhs = _operand(rng, lead + ((k, m) if lhs_transposed else (m, k)), dtype)
    rhs = _operand(rng, lead + ((n, k) if rhs_transposed else (k, n)), dtype)
    b = len(lead)
    contracting = ((b + (0 if lhs_transposed else 1),), (b + (1 if rhs_transposed else 0),))
    return lhs, rhs, (contracting, (tuple(range(b)), tuple(range(b))))


def _gemm_steps(fun, *args):
    program = pipeline.lower_jaxpr(jaxlite.make_jaxpr(fun)(*args))
    return [step for step in program.steps if isinstance(step, fusion.EqnStep) and step.kind == "gemm"]


@settings(deadline=None, max_examples=30)
@given(m=st.integers(1, 20), n=st.integers(1, 20), k=st.integers(1, 24), batch=st.sampled_from([None, 1, 3]),
       lhs_transposed=st.booleans(), rhs_transposed=st.booleans(), dtype=st.sampled_from(sorted(DTYPES)),
       seed=st.integers(0, 2 ** 16))
def test_small_products_under_jit_agree_with_eager(m, n, k, batch, lhs_transposed, rhs_transposed, dtype, seed):
    rng = np.random.default_rng(seed)
    lhs, rhs, numbers = _product_operands(rng, m, n, k, batch, lhs_transposed, rhs_transposed, DTYPES[dtype])
    product = lambda a, b: lax.dot_general(a, b, numbers)
    assert not _gemm_steps(product, lhs, rhs)
    got, want = jaxlite.jit(product)(lhs, rhs), product(lhs, rhs)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype.startswith("int"):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    else:
        tolerance = 1e-5 if dtype == "float32" else 1e-2
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=tolerance, atol=tolerance * np.sqrt(k))


def test_a_product_at_the_threshold_compiles_no_gemm_family(monkeypatch):
    def no_family(family):
        raise AssertionError(f"a small product compiled a GEMM family: {family}")
    monkeypatch.setattr(gemm, "compile_family", no_family)
    rng = np.random.default_rng(1)
    a, b = _operand(rng, (16, 64), np.float32), _operand(rng, (64, 32), np.float32)
    assert 16 * 64 * 32 == step_policy.SMALL_PRODUCT
    np.testing.assert_allclose(jaxlite.jit(lambda a, b: a @ b)(a, b), a @ b, rtol=1e-5, atol=1e-5)
    x, y = _operand(rng, (4, 16, 32), np.float32), _operand(rng, (4, 32, 8), np.float32)
    einsum = lambda x, y: jnp.einsum("bij,bjk->bik", x, y)
    np.testing.assert_allclose(jaxlite.jit(einsum)(x, y), np.einsum("bij,bjk->bik", x, y), rtol=1e-5, atol=1e-5)


def test_a_small_mlp_gradient_compiles_no_gemm_family(monkeypatch):
    monkeypatch.setattr(gemm, "compile_family", lambda family: pytest.fail(f"compiled a GEMM family: {family}"))
    rng = np.random.default_rng(2)
    w1, w2 = _operand(rng, (32, 64), np.float32) * 0.1, _operand(rng, (64, 10), np.float32) * 0.1
    x, y = _operand(rng, (16, 32), np.float32), _operand(rng, (16, 10), np.float32)
    loss = lambda w1, w2: jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)
    for got, want in zip(jaxlite.jit(jaxlite.grad(loss, argnums=(0, 1)))(w1, w2),
                         jaxlite.grad(loss, argnums=(0, 1))(w1, w2)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_a_product_above_the_threshold_runs_on_the_gemm():
    rng = np.random.default_rng(3)
    a, b = _operand(rng, (16, 64), np.float32), _operand(rng, (64, 33), np.float32)
    assert len(_gemm_steps(lambda a, b: a @ b, a, b)) == 1


def test_row_updates_take_several_points_of_k_at_a_time():
    """a @ b: out = 0, then out[i, :] += the products of ROW_UPDATE_POINTS columns of a at a
    time, then of the columns left one at a time."""
    a, b = np.ones((5, 20), np.float32), np.ones((20, 7), np.float32)
    program = pipeline.lower_jaxpr(jaxlite.make_jaxpr(lambda a, b: a @ b)(a, b))
    (step,) = program.steps
    points = kernel_rewrites.ROW_UPDATE_POINTS
    assert [[loop.extent for loop in stage.loops] for stage in step.kernel.stages] == \
        [[5, 7], [5, 20 // points, 7], [5, 20 % points, 7]]
    np.testing.assert_array_equal(jaxlite.jit(lambda a, b: a @ b)(a, b), np.full((5, 7), 20.0, np.float32))
