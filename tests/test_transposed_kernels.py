"""Fused kernels that read an operand through a transpose: codegen tiles them
(transposed_reads.py) and must agree with numpy for every shape, edge tiles included."""
import operator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.lower import fusion, kernel_ir, pipeline, transposed_reads

pytestmark = pytest.mark.usefixtures("enable_x64")     # float64 and int64 stay 64-bit

EXTENTS = st.sampled_from([0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 40])
DTYPES = [np.float32, np.float64, ml_dtypes.bfloat16, np.float16, np.int32, np.int8, np.uint16, np.int64]


def kernels(fun, *args):
    program = pipeline.lower_jaxpr(jaxlite.make_jaxpr(fun)(*args))
    return [step.kernel for step in program.steps if isinstance(step, fusion.KernelStep)]


def tiled_stages(kernel):
    return [stage for stage in kernel.stages if transposed_reads.plan(stage) is not None]


def sample(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@st.composite
def permuted_shapes(draw):
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(EXTENTS) for _ in range(rank))
    return shape, tuple(draw(st.permutations(range(rank))))


@settings(deadline=None, max_examples=60)
@given(permuted_shapes(), st.sampled_from(DTYPES), st.sampled_from([None, 0, -1]), st.integers(0, 1000))
def test_transposed_read_fused_with_elementwise_work(shape_and_permutation, dtype, flipped, seed):
    shape, permutation = shape_and_permutation
    rng = np.random.default_rng(seed)
    x = sample(rng, shape, dtype)
    y = sample(rng, tuple(shape[a] for a in permutation), dtype)

    def fun(xp, x, y):      # flipped: an axis of x read backwards (a negative step)
        x = x if flipped is None else xp.flip(x, flipped)
        return xp.transpose(x, permutation) * 2 + y
    got = jaxlite.jit(lambda x, y: fun(jnp, x, y))(x, y)
    np.testing.assert_array_equal(np.asarray(got), fun(np, x, y))


@settings(deadline=None, max_examples=30)
@given(EXTENTS, EXTENTS, st.integers(0, 1000))
def test_several_transposed_operands_and_booleans(rows, columns, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, columns, rows)).astype(np.float32)
    mask = rng.random((columns, rows)) < 0.5
    fun = jaxlite.jit(lambda a, b, mask: jnp.where(mask.T, a.T - b.T, a.T * b.T))
    np.testing.assert_array_equal(np.asarray(fun(a, b, mask)), np.where(mask.T, a.T - b.T, a.T * b.T))


def test_the_transposed_read_is_tiled_in_the_one_fused_kernel():
    x, y = np.ones((64, 48), np.float32), np.ones((48, 64), np.float32)
    (kernel,) = kernels(lambda x, y: x.T * 2.0 + y, x, y)
    (stage,) = tiled_stages(kernel)
    tiles = transposed_reads.plan(stage)
    assert (tiles.rows.extent, tiles.columns.extent, tiles.tile) == (48, 64, 16)
    assert list(tiles.loads.values()) == [48]     # the source's row length, read along columns


def test_contiguous_reads_and_small_tiles_are_left_alone():
    x = np.ones((64, 48), np.float32)
    assert not tiled_stages(kernels(lambda x: x * 2.0, x)[0])
    # The innermost axis stays the operand's innermost: rows are read whole already.
    assert not tiled_stages(kernels(lambda x: jnp.transpose(x, (1, 0, 2)), np.ones((4, 8, 32)))[0])
    assert not tiled_stages(kernels(lambda x: x.T + 1.0, np.ones((64, 7), np.float32))[0])


def test_short_axes_take_tiles_of_eight():
    (stage,) = tiled_stages(kernels(lambda x: x.T + 1.0, np.ones((64, 9), np.float32))[0])
    assert transposed_reads.plan(stage).tile == 8


@pytest.mark.parametrize("shape, permutation", [((1021, 333), (1, 0)), ((4, 300, 70), (0, 2, 1))])
def test_shares_split_over_threads_agree_at_tile_edges(shape, permutation):
    # Big enough that the kernel runs split over the pool: shares end inside tiles (the
    # tiled rows are the split loop in the first case, the loop around them in the second).
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(tuple(shape[a] for a in permutation)).astype(np.float32)
    got = jaxlite.jit(lambda x, y: jnp.transpose(x, permutation) * 2.0 + y)(x, y)
    np.testing.assert_array_equal(np.asarray(got), np.transpose(x, permutation) * np.float32(2) + y)


def test_attention_style_products_agree():
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((2, 2, 37, 3, 20)).astype(np.float32)
    got = jaxlite.jit(lambda q, k: jnp.einsum("bqhd,bkhd->bhqk", q, k))(q, k)
    np.testing.assert_allclose(np.asarray(got), np.einsum("bqhd,bkhd->bhqk", q, k), rtol=1e-5, atol=1e-5)


def test_reversed_and_sliced_operands_read_transposed():
    x = np.arange(40 * 35, dtype=np.float32).reshape(40, 35)
    y = np.ones((34, 38), np.float32)
    fun = jaxlite.jit(lambda x, y: jnp.flip(x, 0)[2:, :-1].T * 2.0 + y)
    np.testing.assert_array_equal(np.asarray(fun(x, y)), x[::-1][2:, :-1].T * np.float32(2) + y)
    assert tiled_stages(kernels(lambda x, y: jnp.flip(x, 0)[2:, :-1].T * 2.0 + y, x, y)[0])


def test_output_written_into_a_donated_operand():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 50, 50)).astype(np.float32)
    expected = x.T * np.float32(2) + y
    fun = jaxlite.jit(lambda x, y: x.T * 2.0 + y, donate_argnums=1)
    np.testing.assert_array_equal(np.asarray(fun(x, jnp.asarray(y))), expected)


@settings(deadline=None, max_examples=30)
@given(st.sampled_from([(4, 2, 5, 48), (2, 17, 16), (3, 40, 33)]), st.integers(1, 3), st.integers(0, 9))
def test_reshaped_then_transposed_operands(shape, split, seed):
    # Reshape index arithmetic (div/rem of sums) folds away, so the read is affine and tiled.
    split = min(split, len(shape) - 1)
    source = (int(np.prod(shape[:split])), int(np.prod(shape[split:])))
    x = np.random.default_rng(seed).standard_normal(source).astype(np.float32)
    permutation = tuple(range(len(shape) - 2)) + (len(shape) - 1, len(shape) - 2)
    fun = jaxlite.jit(lambda x: jnp.transpose(x.reshape(shape), permutation) + 1.0)
    np.testing.assert_array_equal(np.asarray(fun(x)), np.transpose(x.reshape(shape), permutation) + np.float32(1))


def test_reshaped_then_transposed_operand_is_tiled():
    fun = lambda x: x.reshape(8, 64, 32).transpose(0, 2, 1) + 1.0    # noqa: E731
    assert tiled_stages(kernels(fun, np.ones((512, 32), np.float32))[0])


def _evaluate(e, values):
    if e.op == "const":
        return e.attr[1]
    if e.op == "loop":
        return values[e.attr]
    a, b = (_evaluate(arg, values) for arg in e.args)
    return {"add": operator.add, "mul": operator.mul, "div": operator.floordiv, "rem": operator.mod}[e.op](a, b)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.integers(0, 20), st.integers(1, 40), st.data())
def test_index_division_of_sums_folds_exactly(shape, offset, divisor, data):
    eb = kernel_ir.ExprBuilder()
    loops = [eb.new_loop(n) for n in shape]
    a = eb.add(eb.linearize([eb.loop_var(l) for l in loops], shape), eb.index(offset))
    values = {l: data.draw(st.integers(0, l.extent - 1)) for l in loops}
    total = _evaluate(a, values)
    assert _evaluate(eb.floordiv(a, divisor), values) == total // divisor
    assert _evaluate(eb.mod(a, divisor), values) == total % divisor
