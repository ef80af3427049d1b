"""Generated GEMM kernels against a float64 numpy reference.

Compilation dominates the run time, so hypothesis draws few examples and shapes are
chosen to hit tile edges (1, primes, non-multiples of 8x48 and 6x16) and cache blocks
(K > kc, N > nc, M > one row block).
"""
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jaxlite.lower import gemm
from jaxlite.lower.gemm import BIAS, RELU, RESIDUAL, SCALE, chain, compile_gemm

EDGY_SIZES = [1, 2, 3, 7, 8, 9, 13, 14, 15, 16, 17, 31, 32, 33, 47, 48, 49, 61, 97]


def operands(rng, m, n, k, dtype, trans_a=False, trans_b=False, batch=1):
    def matrix(rows, cols):
        return rng.uniform(-1, 1, ((batch,) if batch > 1 else ()) + (rows, cols)).astype(dtype)
    a = matrix(k, m) if trans_a else matrix(m, k)
    b = matrix(n, k) if trans_b else matrix(k, n)
    return a, b


def as_product_operands(a, b, trans_a, trans_b):
    """The float64 matrices that multiply: undo the storage transposes."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (np.swapaxes(a, -1, -2) if trans_a else a), (np.swapaxes(b, -1, -2) if trans_b else b)


def assert_matches(result, expected, abs_product, k, dtype):
    """Within the classic bound 2 * k * eps * (|A| @ |B|), elementwise."""
    eps = np.finfo(dtype).eps
    tolerance = 2 * k * eps * abs_product + np.finfo(dtype).tiny
    error = np.abs(result.astype(np.float64) - expected)
    worst = np.unravel_index(np.argmax(error - tolerance), error.shape)
    assert np.all(error <= tolerance), (
        f"error {error[worst]:.3g} > tolerance {tolerance[worst]:.3g} at {worst}")


def check_gemm(m, n, k, dtype="float32", trans_a=False, trans_b=False, batch=1, vector_bits=None,
               seed=0):
    rng = np.random.default_rng(seed)
    a, b = operands(rng, m, n, k, dtype, trans_a, trans_b, batch)
    kernel = compile_gemm(m, n, k, dtype, trans_a, trans_b, batch=batch, vector_bits=vector_bits)
    result = kernel(a, b)
    x, y = as_product_operands(a, b, trans_a, trans_b)
    assert result.shape == ((m, n) if batch == 1 else (batch, m, n))
    assert_matches(result, x @ y, np.abs(x) @ np.abs(y), k, dtype)


@settings(deadline=None, max_examples=20)
@given(m=st.sampled_from(EDGY_SIZES), n=st.sampled_from(EDGY_SIZES),
       k=st.sampled_from(EDGY_SIZES + [300]), trans_a=st.booleans(), trans_b=st.booleans(),
       dtype=st.sampled_from(["float32", "float64"]))
def test_small_shapes_match_numpy(m, n, k, trans_a, trans_b, dtype):
    check_gemm(m, n, k, dtype, trans_a, trans_b)


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_larger_than_cache_blocks(trans_a, trans_b):
    check_gemm(300, 257, 513, "float32", trans_a, trans_b)


@pytest.mark.parametrize("trans_a", [False, True])
def test_single_column_tile_reads_a_unpacked(trans_a):
    check_gemm(200, 10, 600, "float32", trans_a=trans_a)


def test_many_row_and_column_blocks():
    # M spans two packed A blocks (257 row tiles of 8 > 256 per block), N three B blocks.
    check_gemm(2053, 1100, 260, "float32")


@pytest.mark.parametrize("m, n, k", [(200, 130, 600), (9, 7, 3), (2053, 1100, 260)])
def test_prepacked_b_matches_numpy(m, n, k):
    """B given in micro-panels (zero past column n) is read in place, over K slices and B blocks."""
    rng = np.random.default_rng(1)
    a, b = operands(rng, m, n, k, "float32")
    kernel = compile_gemm(m, n, k, packed_b=True)
    tiles, _, width = gemm.prepacked_b_shape(kernel.blocking, k, n)
    panels = np.pad(b, [(0, 0), (0, tiles * width - n)]).reshape(k, tiles, width).transpose(1, 0, 2)
    result = kernel.run(a, np.ascontiguousarray(panels), threads=2)
    x, y = as_product_operands(a, b, False, False)
    assert_matches(result, x @ y, np.abs(x) @ np.abs(y), k, "float32")


def test_float64_larger_than_cache_blocks():
    check_gemm(129, 83, 300, "float64", trans_a=True)


@settings(deadline=None, max_examples=8)
@given(m=st.sampled_from(EDGY_SIZES + [100]), n=st.sampled_from(EDGY_SIZES + [100]),
       k=st.sampled_from([1, 5, 300]), dtype=st.sampled_from(["float32", "float64"]),
       trans_b=st.booleans())
def test_avx2_variant_matches_numpy(m, n, k, dtype, trans_b):
    check_gemm(m, n, k, dtype, trans_b=trans_b, vector_bits=256)


def test_avx2_variant_uses_no_zmm_registers():
    asm = compile_gemm(40, 40, 300, "float32", vector_bits=256).asm()
    assert "vfmadd231ps\t%ymm" in asm
    assert "zmm" not in asm


@pytest.mark.skipif(not gemm.llvm_target.host_has("avx512f"), reason="needs AVX-512")
def test_avx512_inner_loop_is_broadcast_fma_without_spills():
    kernel = compile_gemm(1024, 1024, 1024, "float32")
    full_tile = max(_functions(kernel.asm()).values(), key=lambda body: body.count("vfmadd231ps"))
    inner_loop = max(full_tile.split("\n.LBB"), key=lambda block: block.count("vfmadd231ps"))
    assert inner_loop.count("vfmadd231ps\t%zmm") >= kernel.blocking.mr * kernel.blocking.nv
    assert "vbroadcastss" in inner_loop
    assert "(%rsp)" not in inner_loop


def _functions(asm):
    """Assembly text per function label."""
    bodies, name = {}, None
    for line in asm.splitlines():
        if line and not line[0].isspace() and line.endswith(":") and not line.startswith("."):
            name = line[:-1]
        elif name:
            bodies[name] = bodies.get(name, "") + line + "\n"
    return bodies


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batched(dtype):
    check_gemm(19, 37, 41, dtype, trans_b=True, batch=3)


def test_batched_with_shared_b():
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (4, 30, 20)).astype(np.float32)
    b = rng.uniform(-1, 1, (20, 50)).astype(np.float32)
    kernel = compile_gemm(30, 50, 20, batch=4, batch_strides=(600, 0))
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert_matches(kernel(a, b), expected, np.abs(a) @ np.abs(b), 20, np.float32)


EPILOGUE_CASES = {
    "bias": (BIAS, lambda c, extra: c + extra[0]),
    "relu": (RELU, lambda c, extra: np.maximum(c, 0)),
    "scale": (SCALE, lambda c, extra: c * extra[0]),
    "residual": (RESIDUAL, lambda c, extra: c + extra[0]),
    "bias+relu+residual+scale": (chain(BIAS, RELU, RESIDUAL, SCALE),
                                 lambda c, e: (np.maximum(c + e[0], 0) + e[1]) * e[2]),
}


def epilogue_arguments(rng, epilogue, n, out_shape, dtype):
    shapes = {"columns": (n,), "tile": out_shape, "scalar": ()}
    return [np.asarray(rng.uniform(-1, 1, shapes[kind]), dtype=dtype) for kind in epilogue.arg_kinds]


@pytest.mark.parametrize("name", sorted(EPILOGUE_CASES))
@pytest.mark.parametrize("m,n,k,batch", [(23, 45, 17, 1), (40, 70, 600, 2)])
def test_epilogues(name, m, n, k, batch):
    epilogue, numpy_epilogue = EPILOGUE_CASES[name]
    rng = np.random.default_rng(2)
    a, b = operands(rng, m, n, k, "float32", batch=batch)
    out_shape = (batch, m, n) if batch > 1 else (m, n)
    extra = epilogue_arguments(rng, epilogue, n, out_shape, np.float32)
    result = compile_gemm(m, n, k, batch=batch, epilogue=epilogue)(a, b, *extra)
    product = a.astype(np.float64) @ b.astype(np.float64)
    expected = numpy_epilogue(product, [e.astype(np.float64) for e in extra])
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=4 * k * np.finfo(np.float32).eps)


def test_custom_epilogue_sees_row_and_column_indices():
    def add_row_times_1000_plus_col(ctx, acc):
        builder = ctx.builder
        lanes = acc.type.count
        row = gemm.splat(builder, builder.sitofp(ctx.row, acc.type.element), acc.type)
        col = gemm.splat(builder, builder.sitofp(ctx.col, acc.type.element), acc.type)
        lane = gemm.ir.Constant(acc.type, [float(i) for i in range(lanes)])
        thousand = gemm.ir.Constant(acc.type, [1000.0] * lanes)
        index = builder.fadd(builder.fmul(row, thousand), builder.fadd(col, lane))
        return builder.fadd(acc, index)

    epilogue = gemm.Epilogue("indices", (), add_row_times_1000_plus_col)
    m, n, k = 17, 35, 600
    a, b = operands(np.random.default_rng(3), m, n, k, "float64")
    result = compile_gemm(m, n, k, "float64", epilogue=epilogue)(a, b)
    rows, cols = np.indices((m, n))
    np.testing.assert_allclose(result, a @ b + 1000 * rows + cols, rtol=0, atol=1e-9)


def test_two_thread_split_matches_single_thread(monkeypatch):
    monkeypatch.setattr(gemm, "_MIN_FLOPS_PER_THREAD", 1)
    a, b = operands(np.random.default_rng(4), 333, 200, 300, "float32")
    kernel = compile_gemm(333, 200, 300)
    np.testing.assert_array_equal(kernel.run(a, b, threads=2), kernel(a, b))


def test_concurrent_calls_from_two_python_threads():
    rng = np.random.default_rng(5)
    cases = [(compile_gemm(m, n, k), *operands(rng, m, n, k, "float32"))
             for m, n, k in [(100, 90, 300), (61, 33, 47)]]
    expected = [kernel(a, b) for kernel, a, b in cases]
    failures = []

    def hammer(index):
        kernel, a, b = cases[index % 2]
        for _ in range(30):
            if not np.array_equal(kernel(a, b), expected[index % 2]):
                failures.append(index)

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_a_plan_built_by_two_threads_at_once_keeps_the_first_table(monkeypatch):
    """Compiled job lists hold the raw address of a plan's unit table: a second thread that
    built the same plan at the same moment must not replace (and so free) the table the
    first one was handed."""
    kernel = compile_gemm(97, 64, 48)
    plan = gemm.GemmPlan(2, "columns", 2)
    kernel._units.pop((plan.split, plan.units), None)
    both_building = threading.Barrier(2)
    build = kernel._build_units

    def build_together(plan):
        both_building.wait(timeout=10)
        return build(plan)

    monkeypatch.setattr(kernel, "_build_units", build_together)
    handed = [None, None]

    def first_call(index):
        handed[index] = kernel.plan_units(plan)[1]

    threads = [threading.Thread(target=first_call, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = kernel.plan_units(plan)[1]
    assert handed[0] is kept and handed[1] is kept


def test_out_of_range_tile_bounds_are_clamped():
    a, b = operands(np.random.default_rng(6), 30, 40, 300, "float32")
    kernel = compile_gemm(30, 40, 300)
    c = np.zeros((30, 40), np.float32)
    workspace = np.empty(kernel.workspace_bytes, np.uint8)
    kernel.native.function(a.ctypes.data, b.ctypes.data, c.ctypes.data, workspace.ctypes.data, -5, 10**9,
                           kernel.sizes)
    np.testing.assert_array_equal(c, kernel(a, b))


def test_subnormals_are_flushed_and_the_callers_mode_restored():
    tiny = np.float32(1e-40)  # subnormal
    a = np.full((5, 3), tiny, np.float32)
    b = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(compile_gemm(5, 4, 3)(a, b), np.zeros((5, 4), np.float32))
    assert np.float32(1e-38) / np.float32(100) != 0, "the calling thread must keep subnormals"


def test_kernels_are_cached():
    assert compile_gemm(8, 8, 8) is compile_gemm(8, 8, 8, np.float32)
    assert chain(BIAS, RELU) is chain(BIAS, RELU)


def test_operand_checks():
    kernel = compile_gemm(4, 5, 6)
    a, b = np.ones((4, 6), np.float32), np.ones((6, 5), np.float32)
    with pytest.raises(ValueError):
        kernel(a.T.copy(), b)
    with pytest.raises(TypeError):
        kernel(a.astype(np.float64), b)
    with pytest.raises(TypeError):
        kernel(a, b, np.ones(5, np.float32))
    with pytest.raises(TypeError):
        compile_gemm(2, 2, 2, "int32")


def test_one_native_kernel_per_family():
    shapes = [(1, 1, 1), (13, 61, 97), (256, 10, 512), (300, 257, 513)]
    kernels = [compile_gemm(m, n, k, trans_b=True) for m, n, k in shapes]
    assert len({id(kernel.native) for kernel in kernels}) == 1
    for (m, n, k), kernel in zip(shapes, kernels):
        a, b = operands(np.random.default_rng(m), m, n, k, "float32", trans_b=True)
        x, y = as_product_operands(a, b, False, True)
        assert_matches(kernel(a, b), x @ y, np.abs(x) @ np.abs(y), k, "float32")


def _page_end_array(rng, shape, dtype):
    """A random array whose last byte sits right before an inaccessible page."""
    import ctypes
    import mmap
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    page = mmap.PAGESIZE
    total = -(-size // page) * page + page
    memory = mmap.mmap(-1, total)
    address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    prot_none = 0
    assert ctypes.CDLL(None).mprotect(ctypes.c_void_p(address + total - page), page, prot_none) == 0
    array = np.frombuffer(memory, dtype, count=int(np.prod(shape)), offset=total - page - size).reshape(shape)
    array[...] = rng.uniform(-1, 1, shape)
    return array


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", [(13, 61, 97, False, False), (9, 10, 300, True, False),
                                                   (17, 50, 33, False, True), (3, 97, 5, True, True)])
def test_edge_tiles_stay_inside_operands(m, n, k, trans_a, trans_b):
    # Every operand ends at a page that faults when touched: masked edge loads and
    # stores, clamped packing and the epilogue's loads must all stay inside.
    rng = np.random.default_rng(7)
    a = _page_end_array(rng, (k, m) if trans_a else (m, k), "float32")
    b = _page_end_array(rng, (n, k) if trans_b else (k, n), "float32")
    bias, residual = _page_end_array(rng, (n,), "float32"), _page_end_array(rng, (m, n), "float32")
    out = _page_end_array(rng, (m, n), "float32")
    kernel = compile_gemm(m, n, k, trans_a=trans_a, trans_b=trans_b, epilogue=chain(BIAS, RESIDUAL))
    kernel(a, b, bias, residual, out=out)
    x, y = as_product_operands(a, b, trans_a, trans_b)
    bias, residual = bias.astype(np.float64), residual.astype(np.float64)
    assert_matches(out, x @ y + bias + residual, np.abs(x) @ np.abs(y) + np.abs(bias) + np.abs(residual),
                   k, "float32")


def test_relu_derivative_epilogue_keeps_the_half_at_zero():
    rng = np.random.default_rng(9)
    m, n, k = 21, 37, 50
    a, b = operands(rng, m, n, k, "float32")
    x = rng.choice(np.array([-1.5, 0.0, 2.0], np.float32), (m, n))
    result = compile_gemm(m, n, k, epilogue=gemm.RELU_GRAD)(a, b, x)
    mask = np.where(x > 0, 1.0, np.where(x == 0, 0.5, 0.0))
    np.testing.assert_allclose(result, (a.astype(np.float64) @ b) * mask, rtol=1e-5, atol=1e-5)
