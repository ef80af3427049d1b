"""jit agrees with eager evaluation; the API (pytrees, static args, closures), the cache, errors."""
import ctypes
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes, errors
from jaxlite.core.config import config
from jaxlite.core.primitive import Primitive, call_primitives, compiler_rewrites
from jaxlite.lower import fusion
from jaxlite.transforms import jit as jit_module

FLOATS = [np.float32, np.float64, np.float16, dtypes.bfloat16]
INTS = [np.int8, np.int16, np.int32, np.uint8, np.uint32]
shapes = st.lists(st.integers(1, 5), min_size=0, max_size=3).map(tuple)
seeds = st.integers(0, 2 ** 16)


def random_array(rng, shape, dtype, low=-3.0, high=3.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtypes.is_float(dtype):
        # Away from subnormals: kernels run with flush-to-zero.
        return rng.uniform(low, high, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -60), min(info.max, 60), shape, endpoint=True).astype(dtype)


def assert_agree(fun, *args, rtol=0.0, atol=0.0):
    want = fun(*args)
    got = jaxlite.jit(fun)(*args)
    want_leaves, got_leaves = jaxlite.tree_util.tree_leaves(want), jaxlite.tree_util.tree_leaves(got)
    for w, g in zip(want_leaves, got_leaves):
        assert g.dtype == w.dtype and g.shape == w.shape and g.weak_type == w.weak_type
        w64, g64 = np.asarray(w).astype(np.float64), np.asarray(g).astype(np.float64)
        np.testing.assert_allclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)


def _tolerance(dtype):
    return {np.dtype(np.float16): 2e-3, dtypes.bfloat16: 1e-2,
            np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}.get(dtypes.canonicalize_dtype(dtype), 0.0)


EXACT_BINARY = [lax.add, lax.sub, lax.mul, lax.max, lax.min, lax.eq, lax.ne, lax.lt, lax.le, lax.gt,
                lax.ge]


@settings(deadline=None, max_examples=25)
@given(shapes, seeds, st.sampled_from(FLOATS + INTS), st.sampled_from(EXACT_BINARY))
def test_exact_binary_ops(shape, seed, dtype, op):
    rng = np.random.default_rng(seed)
    x, y = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    if x.ndim:
        y[..., :1] = x[..., :1]     # ties exercise max/min/eq
    assert_agree(op, x, y)


@settings(deadline=None, max_examples=20)
@given(shapes, seeds, st.sampled_from(INTS), st.sampled_from([lax.div, lax.rem]))
def test_integer_division(shape, seed, dtype, op):
    rng = np.random.default_rng(seed)
    x, y = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    if y.size:
        y.flat[0] = 0           # division by zero has a defined result
    assert_agree(op, x, y)


@settings(deadline=None, max_examples=20)
@given(shapes, seeds, st.sampled_from(FLOATS), st.sampled_from([lax.div, lax.rem, lax.atan2, lax.pow]))
def test_float_binary_ops(shape, seed, dtype, op):
    rng = np.random.default_rng(seed)
    x, y = random_array(rng, shape, dtype, 0.5, 3.0), random_array(rng, shape, dtype, 0.5, 3.0)
    tol = _tolerance(dtype) * (4 if op is lax.pow else 1)
    assert_agree(op, x, y, rtol=tol, atol=tol)


UNARY_FLOAT = {
    "exp": lax.exp, "exp2": lax.exp2, "log": lax.log, "log1p": lax.log1p, "expm1": lax.expm1,
    "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "cbrt": lax.cbrt, "tanh": lax.tanh,
    "logistic": lax.logistic, "sin": lax.sin, "cos": lax.cos, "floor": lax.floor, "ceil": lax.ceil,
    "round": lax.round, "round_even": lambda x: lax.round(x, 1), "is_finite": lax.is_finite,
    "neg": lax.neg, "abs": lax.abs, "sign": lax.sign, "square": lax.square,
    "integer_pow3": lambda x: lax.integer_pow(x, 3), "integer_pow-2": lambda x: lax.integer_pow(x, -2),
    "nextafter": lambda x: lax.nextafter(x, x * 2),
}


@settings(deadline=None, max_examples=40)
@given(shapes, seeds, st.sampled_from(FLOATS), st.sampled_from(sorted(UNARY_FLOAT)))
def test_unary_float_ops(shape, seed, dtype, name):
    rng = np.random.default_rng(seed)
    x = random_array(rng, shape, dtype, 0.25, 4.0) * random_array(rng, shape, np.int8).clip(-1, 1).astype(dtype)
    x = np.where(x == 0, 0.5, x).astype(dtype)
    if name in ("log", "sqrt", "rsqrt", "log1p"):
        x = np.abs(x)
    tol = 8 * _tolerance(dtype)
    assert_agree(UNARY_FLOAT[name], x, rtol=tol, atol=tol)


@settings(deadline=None, max_examples=20)
@given(shapes, seeds, st.sampled_from(INTS + [np.bool_]),
       st.sampled_from(["not", "and", "or", "xor", "neg", "abs", "sign", "square"]))
def test_integer_and_bitwise_ops(shape, seed, dtype, name):
    rng = np.random.default_rng(seed)
    x, y = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    ops = {"not": lambda a, b: lax.bitwise_not(a), "and": lax.bitwise_and, "or": lax.bitwise_or,
           "xor": lax.bitwise_xor, "neg": lambda a, b: lax.neg(a), "abs": lambda a, b: lax.abs(a),
           "sign": lambda a, b: lax.sign(a), "square": lambda a, b: lax.square(a)}
    if dtype == np.bool_ and name not in ("not", "and", "or", "xor"):
        return
    assert_agree(ops[name], x, y)


ALL_DTYPES = FLOATS + INTS + [np.bool_, np.int64, np.uint16]


@settings(deadline=None, max_examples=40)
@given(shapes, seeds, st.sampled_from(ALL_DTYPES), st.sampled_from(ALL_DTYPES))
def test_convert_element_type(shape, seed, source, target):
    with_x64 = np.dtype(source).itemsize == 8 or np.dtype(target).itemsize == 8
    config.update("jax_enable_x64", with_x64)
    try:
        x = random_array(np.random.default_rng(seed), shape, source)
        assert_agree(lambda a: lax.convert_element_type(a, target), x)
    finally:
        config.update("jax_enable_x64", False)


@settings(deadline=None, max_examples=20)
@given(shapes, seeds, st.sampled_from([(np.float32, np.int32), (np.int32, np.float32),
                                       (dtypes.bfloat16, np.uint16), (np.int16, dtypes.bfloat16),
                                       (np.float16, np.int16), (np.uint8, np.int8)]))
def test_bitcast_convert_type(shape, seed, pair):
    source, target = pair
    x = random_array(np.random.default_rng(seed), shape, source)
    assert_agree(lambda a: lax.bitcast_convert_type(a, target), x)


@settings(deadline=None, max_examples=20)
@given(shapes, seeds, st.sampled_from(FLOATS + INTS))
def test_select_n_and_clamp(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    which = random_array(rng, shape, np.bool_)
    x, y = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    assert_agree(lambda w, a, b: lax.select_n(w, a, b), which, x, y)
    index = rng.integers(0, 3, shape).astype(np.int32)
    assert_agree(lambda w, a, b: lax.select_n(w, a, b, a), index, x, y)
    low = np.array(1).astype(dtype)[()]
    assert_agree(lambda a, b: lax.clamp(low, a, b), x, y)


REDUCTIONS = {"sum": lax.reduce_sum, "prod": lax.reduce_prod, "max": lax.reduce_max,
              "min": lax.reduce_min}


@st.composite
def shape_and_axes(draw, min_rank=1):
    shape = draw(st.lists(st.integers(1, 6), min_size=min_rank, max_size=3).map(tuple))
    axes = draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    return shape, tuple(axes)


@settings(deadline=None, max_examples=40)
@given(shape_and_axes(), seeds, st.sampled_from(FLOATS + INTS), st.sampled_from(sorted(REDUCTIONS)))
def test_reductions(shape_axes, seed, dtype, name):
    shape, axes = shape_axes
    rng = np.random.default_rng(seed)
    low = 0.5 if name == "prod" else -3.0
    x = random_array(rng, shape, dtype, low, 1.5 if name == "prod" else 3.0)
    if name == "prod" and not dtypes.is_float(dtype):
        x = x.clip(-2, 2).astype(dtype)
    tol = 4 * _tolerance(dtype) * max(1, x.size)
    assert_agree(lambda a: REDUCTIONS[name](a, axes), x, rtol=tol, atol=tol)


@settings(deadline=None, max_examples=20)
@given(shape_and_axes(), seeds, st.sampled_from([lax.reduce_and, lax.reduce_or]))
def test_boolean_reductions(shape_axes, seed, op):
    shape, axes = shape_axes
    x = random_array(np.random.default_rng(seed), shape, np.bool_)
    assert_agree(lambda a: op(a, axes), x)


@settings(deadline=None, max_examples=30)
@given(shape_and_axes(), seeds, st.sampled_from(FLOATS + INTS + [np.bool_]),
       st.sampled_from([lax.argmax, lax.argmin]))
def test_argmax_argmin(shape_axes, seed, dtype, op):
    shape, _ = shape_axes
    rng = np.random.default_rng(seed)
    x = random_array(rng, shape, dtype)
    axis = int(rng.integers(0, len(shape)))
    if dtypes.is_float(dtype) and x.size > 2:
        x.flat[1] = np.nan
    assert_agree(lambda a: op(a, axis, np.int32), x)


SHAPE_OPS = {
    "transpose": lambda x: lax.transpose(x, tuple(reversed(range(x.ndim)))),
    "reshape": lambda x: lax.reshape(x, (x.size,)),
    "reshape_dims": lambda x: lax.reshape(x, (x.size,), tuple(reversed(range(x.ndim)))),
    "rev": lambda x: lax.rev(x, tuple(range(x.ndim))),
    "slice": lambda x: lax.slice(x, (0,) * x.ndim, x.shape, (2,) * x.ndim),
    "pad": lambda x: lax.pad(x, lax.convert_element_type(7, x.dtype), ((1, -1, 1),) * x.ndim),
    "concatenate": lambda x: lax.concatenate([x, x * 2, x], max(x.ndim - 1, 0)) if x.ndim else x,
    "broadcast": lambda x: lax.broadcast(x, (2, 3)),
    "broadcast_in_dim": lambda x: lax.broadcast_in_dim(x, (2,) + x.shape, tuple(range(1, x.ndim + 1))),
    "expand_squeeze": lambda x: lax.squeeze(lax.expand_dims(x, (0,)), (0,)) + 1,
    "index_in_dim": lambda x: lax.index_in_dim(x, 0, 0, False) if x.ndim else x,
    "iota": lambda x: lax.broadcasted_iota(x.dtype, x.shape, 0) + x if x.ndim else x,
    "full": lambda x: lax.full(x.shape, 3, x.dtype) * x,
}


@settings(deadline=None, max_examples=40)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), seeds,
       st.sampled_from([np.float32, np.int32, dtypes.bfloat16, np.uint8]), st.sampled_from(sorted(SHAPE_OPS)))
def test_shape_ops(shape, seed, dtype, name):
    x = random_array(np.random.default_rng(seed), shape, dtype)
    assert_agree(SHAPE_OPS[name], x)


@settings(deadline=None, max_examples=15)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), seeds,
       st.sampled_from([np.float32, np.float64, np.int32, dtypes.bfloat16]), st.booleans())
def test_dot_general(m, n, k, seed, dtype, transposed):
    config.update("jax_enable_x64", np.dtype(dtype) == np.float64)
    try:
        rng = np.random.default_rng(seed)
        a = random_array(rng, (k, m) if transposed else (m, k), dtype)
        b = random_array(rng, (k, n), dtype)
        dims = (((0,) if transposed else (1,), (0,)), ((), ()))
        tol = 10 * k * _tolerance(dtype)
        assert_agree(lambda x, y: lax.dot_general(x, y, dims), a, b, rtol=tol, atol=tol)
        batched = random_array(rng, (2, m, k), dtype), random_array(rng, (2, k, n), dtype)
        assert_agree(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))), *batched,
                     rtol=tol, atol=tol)
    finally:
        config.update("jax_enable_x64", False)


def test_large_matmul_uses_gemm():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 80)).astype(np.float32)
    lowered = jaxlite.jit(lambda x, y: jnp.tanh(x @ y)).lower(a, b)
    assert "gemm:" in lowered.as_text()
    assert_agree(lambda x, y: jnp.tanh(x @ y), a, b, rtol=1e-4, atol=1e-4)


# Primitives the compiler never meets as equations, and why.
NEVER_LOWERED = {
    "straight_through": "passes._identity replaces it by its value, its quantized operand",
    "custom_lin": "linearize's stand-in for a custom_vjp call: transposed away, else the eager error",
    "pvary": "passes._identity replaces it by its operand (only its transpose does something)",
    "replicated_output": "passes._identity replaces it by its operand (only its transpose does something)",
    "fft": "its operands or results are complex: complex_split makes it fft_pairs (the native routine, fft_kernels)",
    "dce_sink": "it has no results, so the compiler's dead-code elimination removes it",
}


def _every_primitive():
    """The primitives of every jaxlite module (lax, transforms, lower, ...)."""
    import importlib
    import pkgutil
    modules = [importlib.import_module(info.name) for info in pkgutil.walk_packages(jaxlite.__path__, "jaxlite.")]
    return {value.name for module in modules for value in vars(module).values() if isinstance(value, Primitive)}


def test_every_primitive_has_a_lowering_or_an_explained_fallback():
    from jaxlite.core.extended import physical_rules
    from jaxlite.lower import fusion_rules, step_policy
    primitives = _every_primitive()
    assert len(primitives) > 50, "found too few primitives"
    declared = (set(fusion_rules.LOWERINGS) | set(step_policy.FALLBACKS) | set(step_policy.CONTROL_FLOW)
                | set(step_policy.NATIVE_ROUTINES) | set(step_policy.GEMM_PRIMITIVES)
                | set(compiler_rewrites)            # computed with simpler primitives
                | set(physical_rules)               # typed keys: rewritten to their words first
                | set(call_primitives))             # inlined
    handled = {p.name for p in declared} | set(NEVER_LOWERED)
    missing = sorted(primitives - handled)
    assert not missing, f"primitives with neither a jit lowering nor a FALLBACKS entry: {missing}"


def test_calls_are_inlined():
    """custom_jvp, custom_vjp and checkpoint bodies compile with the rest, derivatives too."""
    @jaxlite.custom_jvp
    def doubled_slope(x):
        return jnp.sin(x)
    doubled_slope.defjvp(lambda primals, tangents: (doubled_slope(primals[0]), 2 * tangents[0]))

    @jaxlite.custom_vjp
    def tripled_slope(x):
        return jnp.exp(x)
    tripled_slope.defvjp(lambda x: (tripled_slope(x), None), lambda _, ct: (3 * ct,))

    def fun(x):
        return jnp.sum(doubled_slope(x) * tripled_slope(x) + jaxlite.checkpoint(jnp.cos)(x))
    x = np.linspace(-1, 1, 7).astype(np.float32)
    for f in (fun, jaxlite.grad(fun), lambda a: lax.fori_loop(0, 2, lambda i, c: c + jaxlite.grad(fun)(c), a)):
        assert _fallback_names(jaxlite.jit(f).lower(x).program) == []
        assert_agree(f, x, rtol=1e-6, atol=1e-6)


def _fallback_names(program):
    """The primitives run as fallbacks, in the program and its loop and branch bodies."""
    names = []
    for step in program.steps:
        if isinstance(step, fusion.EqnStep) and step.kind == "fallback":
            names.append(step.eqn.primitive.name)
        for body in getattr(step, "programs", ()):
            names += _fallback_names(body)
    return names


MORE_UNARY = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf",
              "erfc", "erf_inv", "lgamma", "digamma"]


@settings(deadline=None, max_examples=25)
@given(shapes, seeds, st.sampled_from([np.float32, np.float16, dtypes.bfloat16]), st.sampled_from(MORE_UNARY))
def test_more_transcendentals(shape, seed, dtype, name):
    rng = np.random.default_rng(seed)
    low, high = {"acosh": (1.1, 3.0), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9),
                 "erf_inv": (-0.9, 0.9), "lgamma": (0.3, 4.0), "digamma": (0.3, 4.0)}.get(name, (-1.5, 1.5))
    x = random_array(rng, shape, dtype, low, high)
    tol = 16 * _tolerance(dtype)
    assert_agree(getattr(lax, name), x, rtol=tol, atol=tol)


@settings(deadline=None, max_examples=25)
@given(shapes, seeds, st.sampled_from(INTS + [np.int64]),
       st.sampled_from(["shift_left", "shift_right_logical", "shift_right_arithmetic", "clz", "population_count"]))
def test_bit_operations(shape, seed, dtype, name):
    config.update("jax_enable_x64", np.dtype(dtype).itemsize == 8)
    try:
        rng = np.random.default_rng(seed)
        x = random_array(rng, shape, dtype)
        amount = rng.integers(0, 8 * np.dtype(dtype).itemsize + 3, shape).astype(dtype)
        op = getattr(lax, name)
        if name.startswith("shift"):
            assert_agree(op, x, amount)
        else:
            assert_agree(op, x)
    finally:
        config.update("jax_enable_x64", False)


def test_fma_and_stop_gradient():
    rng = np.random.default_rng(3)
    for dtype in [np.float32, np.float16, dtypes.bfloat16]:
        a, b, c = (random_array(rng, (9,), dtype) for _ in range(3))
        assert_agree(lambda x, y, z: lax.fma(x, y, z) + lax.stop_gradient(z), a, b, c,
                     rtol=_tolerance(dtype), atol=_tolerance(dtype))


def _fused_multiply_add(x, y, z):
    """x * y + z rounded once (the float64 product of two float32 values is exact)."""
    return (x.astype(np.float64) * y + z).astype(np.float32)


def test_multiply_adds_contract_where_xlas_do():
    """XLA:CPU lets LLVM contract every fused multiply-add (FPOpFusion::Fast); of a*b + c*d its
    first product, a*b, is rounded once (checked in JAX). jaxlite emitted the operands right to
    left, LLVM then fused c*d, and jit(det) of 3x3 matrices differed from JAX in the last bits."""
    rng = np.random.default_rng(5)
    a, b, c, d = (rng.standard_normal(1000).astype(np.float32) for _ in range(4))
    got = np.asarray(jaxlite.jit(lambda a, b, c, d: a * b + c * d)(a, b, c, d))
    np.testing.assert_array_equal(got, _fused_multiply_add(a, b, c * d))
    got = np.asarray(jaxlite.jit(lambda a, b, c, d: a * b - c * d)(a, b, c, d))
    np.testing.assert_array_equal(got, _fused_multiply_add(a, b, -(c * d)))
    product_twice = np.asarray(jaxlite.jit(lambda a, b, c: (a * b + c) * (a * b))(a, b, c))
    np.testing.assert_array_equal(product_twice, (a * b + c) * (a * b))      # a product read twice stays rounded
    recorded = json.loads((Path(__file__).parent / "data" / "jax_det3x3_jit.json").read_text())
    matrices = np.array(recorded["matrices_bits"], np.uint32).view(np.float32)
    det = np.asarray(jaxlite.jit(jnp.linalg.det)(matrices))
    np.testing.assert_array_equal(det.view(np.uint32), np.array(recorded["det_bits"], np.uint32))


def test_fallback_primitives_agree_with_eager():
    x = np.random.default_rng(4).standard_normal((4, 6)).astype(np.float32)
    index = np.array([3, 0, 2], np.int32)
    assert_agree(lambda a: lax.cumsum(jnp.exp(a), axis=1, reverse=True) * 2, x, rtol=1e-6)
    assert_agree(lambda a: lax.cumlogsumexp(a, axis=0) + 1, x, rtol=1e-6)
    assert_agree(lambda a: lax.sort(a * 2, dimension=1) + 1, x)
    assert_agree(lambda a: lax.top_k(a + 1, 2)[0] * 2, x)
    assert_agree(lambda a, i: jnp.exp(a)[i] * 2, x, index, rtol=1e-6)
    assert_agree(lambda a, i: jnp.asarray(a).at[i].add(1.0) * 2, x, index)
    assert_agree(lambda a: jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(4)) * 2, x, rtol=1e-5, atol=1e-5)


@settings(deadline=None, max_examples=25)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), seeds,
       st.sampled_from([np.float32, np.int32, dtypes.bfloat16]))
def test_dynamic_slice_and_update(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    x = random_array(rng, shape, dtype)
    sizes = tuple(int(rng.integers(0, n + 1)) for n in shape)
    starts = [np.int32(s) for s in rng.integers(-2, 6, len(shape))]    # out of range: clamped
    update = random_array(rng, sizes, dtype)
    assert_agree(lambda a, *s: lax.dynamic_slice(a, s, sizes), x, *starts)
    assert_agree(lambda a, u, *s: lax.dynamic_update_slice(a, u, s) * 2, x, update, *starts)


@settings(deadline=None, max_examples=25)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), seeds,
       st.sampled_from([np.float32, np.int32, np.uint8, np.float16]),
       st.sampled_from(["cumsum", "cumprod", "cummax", "cummin"]), st.booleans())
def test_cumulative_reductions(shape, seed, dtype, name, reverse):
    rng = np.random.default_rng(seed)
    x = random_array(rng, shape, dtype, 0.5, 1.5)
    axis = int(rng.integers(0, len(shape)))
    if dtypes.is_float(dtype) and x.size > 1:
        x.flat[1] = np.nan
    op = getattr(lax, name)
    assert_agree(lambda a: op(jnp.abs(a) + a, axis=axis, reverse=reverse) * 2, x, rtol=1e-5)


@settings(deadline=None, max_examples=15)
@given(shapes, seeds)
def test_threefry_and_random_draws(shape, seed):
    rng = np.random.default_rng(seed)
    words = [rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32) for _ in range(4)]
    assert_agree(lambda *w: lax.threefry2x32(*w), *words)
    assert_agree(lambda *w: lax.threefry2x32(np.uint32(7), w[1], w[2], w[3])[1], *words)
    key = jaxlite.random.PRNGKey(seed)
    assert_agree(lambda k: jaxlite.random.uniform(k, shape) * 2, key, rtol=1e-7)


def test_control_flow_runs_compiled_bodies():
    x = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float32)
    assert_agree(lambda a: lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * 2 + a, a), x, rtol=1e-6, atol=1e-6)
    assert_agree(lambda a: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, a)), x,
                 rtol=1e-6)
    assert_agree(lambda a: lax.scan(lambda c, row: (c + row, jnp.exp(c)), jnp.zeros(6), a, reverse=True), x,
                 rtol=1e-6, atol=1e-6)
    assert_agree(lambda a: lax.cond(a[0, 0] > 0, jnp.sin, jnp.cos, a), x, rtol=1e-6, atol=1e-6)
    nested = lambda a: lax.fori_loop(0, 2, lambda i, v: lax.fori_loop(0, 2, lambda j, w: w * 0.5 + 1, v), a)
    assert_agree(nested, x)
    steps = jaxlite.jit(lambda a: lax.fori_loop(0, 3, lambda i, v: v + 1, a)).lower(x).program.steps
    assert [s.kind for s in steps if isinstance(s, fusion.EqnStep)] in (["control"], [])


# ---------------------------------------------------------------- zero-size arrays

def test_zero_size_arrays():
    x = np.zeros((0, 3), np.float32)
    assert_agree(lambda a: jnp.exp(a) + 1, x)
    assert_agree(lambda a: lax.reduce_sum(a, (0,)), x)
    assert_agree(lambda a: lax.reduce_max(a, (1,)), x)
    assert_agree(lambda a: lax.concatenate([a, a], 0), x)


# ---------------------------------------------------------------- API

def test_pytrees_kwargs_and_closures():
    offset = jnp.asarray(np.arange(3, dtype=np.float32))

    def f(params, x, *, scale):
        return {"out": params["w"] * x + offset * scale, "aux": (x, params["b"] - 1)}

    params = {"w": np.ones(3, np.float32) * 2, "b": np.float32(5)}
    x = np.arange(3, dtype=np.float32)
    got = jaxlite.jit(f)(params, x, scale=3.0)
    want = f(params, x, scale=3.0)
    np.testing.assert_allclose(got["out"], want["out"])
    np.testing.assert_allclose(got["aux"][1], want["aux"][1])
    assert got["aux"][1].shape == ()


def test_static_argnums_and_argnames():
    def f(x, n, mode="add"):
        return x + n if mode == "add" else x * n
    jitted = jaxlite.jit(f, static_argnums=1, static_argnames="mode")
    x = np.ones(4, np.float32)
    np.testing.assert_allclose(jitted(x, 3), x + 3)
    np.testing.assert_allclose(jitted(x, 3, mode="mul"), x * 3)


def test_static_names_and_positions_the_function_lacks_are_errors_at_once():
    """As JAX 0.10.2: ValueError when jit is applied, before any call."""
    with pytest.raises(ValueError, match=r"invalid argnames \{'nope'\} in static_argnames"):
        jaxlite.jit(lambda a: a, static_argnames=["nope"])
    with pytest.raises(ValueError, match=r"static_argnums=\(3,\), but only accepts 1 positional"):
        jaxlite.jit(lambda a: a, static_argnums=(3,))
    jaxlite.jit(lambda a, **options: a, static_argnames=["nope"])          # **kwargs may take it


def test_unhashable_static_argument_is_a_clear_error():
    jitted = jaxlite.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments.*position 1.*list"):
        jitted(np.ones(4, np.float32), [2, 2])


def test_weak_types_survive_jit():
    out = jaxlite.jit(lambda x: x * 2)(3.0)
    assert out.weak_type and out.dtype == np.float32
    out = jaxlite.jit(lambda x: x * 2)(np.float32(3))
    assert not out.weak_type


def test_cache_hits_do_not_recompile():
    @jaxlite.jit
    def f(x):
        return jnp.sin(x) + 1
    x = np.ones(5, np.float32)
    f(x)
    count = jit_module.compile_count()
    for _ in range(3):
        f(x)
    f(np.zeros(5, np.float32))
    assert jit_module.compile_count() == count
    f(np.ones(6, np.float32))
    assert jit_module.compile_count() == count + 1
    f(np.ones(6, np.int32))
    assert jit_module.compile_count() == count + 2


def test_log_compiles_and_explain_cache_misses(caplog):
    @jaxlite.jit
    def g(x):
        return x * 3
    config.update("jax_log_compiles", True)
    config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
            g(np.ones(2, np.float32))
            g(np.ones(3, np.float32))
            g(1.0)
    finally:
        config.update("jax_log_compiles", False)
        config.update("jax_explain_cache_misses", False)
    text = caplog.text
    assert "Compiling jit(g)" in text
    assert "new shape (3,)" in text
    assert "weak type" in text or "new shape ()" in text


def test_tracer_bool_conversion_names_the_line():
    @jaxlite.jit
    def f(x):
        if x > 0:   # the offending line
            return x
        return -x
    with pytest.raises(errors.TracerBoolConversionError, match="test_jit.py"):
        f(np.float32(1))


def test_disable_jit_runs_python():
    calls = []

    @jaxlite.jit
    def f(x):
        calls.append(type(x))
        return x + 1
    with jaxlite.disable_jit():
        f(np.ones(2, np.float32))
    assert calls[-1] is np.ndarray


def test_nested_jit_is_inlined():
    inner = jaxlite.jit(lambda x: jnp.exp(x) * 2)
    outer = jaxlite.jit(lambda x: inner(x) + inner(x + 1))
    x = np.linspace(0, 1, 7).astype(np.float32)
    jaxpr = jaxlite.make_jaxpr(outer)(x)
    assert "jit" in str(jaxpr)
    assert "jit[" not in outer.lower(x).as_text()
    np.testing.assert_allclose(outer(x), np.exp(x) * 2 + np.exp(x + 1) * 2, rtol=1e-5)


def test_jvp_of_jit():
    f = jaxlite.jit(lambda x, y: jnp.sin(x) * y)
    x, y = np.float32(0.5), np.float32(2.0)
    out, tangent = jaxlite.jvp(f, (x, y), (np.float32(1.0), np.float32(0.0)))
    np.testing.assert_allclose(out, np.sin(0.5) * 2, rtol=1e-6)
    np.testing.assert_allclose(tangent, np.cos(0.5) * 2, rtol=1e-6)


def test_vmap_of_jit_and_jit_of_vmap():
    f = jaxlite.jit(lambda x, y: jnp.exp(x) + y)
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.float32(1)
    np.testing.assert_allclose(jaxlite.vmap(f, (0, None))(xs, y), np.exp(xs) + 1, rtol=1e-6)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.vmap(f, (1, None)))(xs, y), (np.exp(xs) + 1).T, rtol=1e-6)


def test_jit_under_jvp_closing_over_tracer():
    def outer(y):
        return jaxlite.jit(lambda x: x * y)(np.float32(3))
    _, tangent = jaxlite.jvp(outer, (np.float32(2),), (np.float32(1),))
    np.testing.assert_allclose(tangent, 3.0)


def test_lowered_and_compiled_text_and_cost():
    x = np.ones((8, 16), np.float32)
    lowered = jaxlite.jit(lambda a: jnp.exp(a) * 2).lower(x)
    assert "kernel fused" in lowered.as_text()
    compiled = lowered.compile()
    assert '"prefer-vector-width"="512"' in compiled.as_text() or "prefer-vector-width" in compiled.as_text()
    assert "ret" in compiled.asm()
    cost = compiled.cost_analysis()
    assert cost["flops"] >= 2 * x.size and cost["bytes accessed"] == 2 * x.nbytes
    np.testing.assert_allclose(compiled(x), np.exp(x) * 2, rtol=1e-6)


def test_cache_is_bounded_and_frees_code():
    cache = jit_module._LRUCache(2)

    class Entry:
        freed = False

        def free(self):
            self.freed = True
    entries = [Entry() for _ in range(3)]
    for i, entry in enumerate(entries):
        cache.put(i, entry)
    assert entries[0].freed and not entries[2].freed and cache.get(0) is None


def test_literal_and_argument_outputs():
    f = jaxlite.jit(lambda x: (x, 2.0, x + 1))
    a, b, c = f(np.ones(2, np.float32))
    np.testing.assert_allclose(a, 1)
    assert float(b) == 2.0 and b.weak_type


def test_primitive_without_lowering_falls_back_with_a_warning(caplog):
    cumulative_p = Primitive("test_cumsum")
    cumulative_p.def_impl(lambda x: np.cumsum(x, dtype=x.dtype))
    cumulative_p.def_abstract_eval(lambda x: x)
    f = jaxlite.jit(lambda x: cumulative_p.bind(jnp.exp(x)) * 2)
    x = np.linspace(0, 1, 5).astype(np.float32)
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        out = f(x)
    np.testing.assert_allclose(out, np.cumsum(np.exp(x)) * 2, rtol=1e-6)
    assert "test_cumsum with its numpy implementation" in caplog.text


def test_big_kernels_split_across_threads_agree():
    from jaxlite.lower import entry_points
    rng = np.random.default_rng(1)
    x = rng.standard_normal((700, 512)).astype(np.float32)
    softmax = lambda a: (lambda e: e / lax.reduce_sum(e, (1,))[:, None])(jnp.exp(a - lax.reduce_max(a, (1,))[:, None]))
    assert_agree(softmax, x, rtol=1e-5, atol=1e-7)
    assert_agree(lambda a: jnp.tanh(a) * 2 + a, x, rtol=1e-5, atol=1e-6)
    assert_agree(lambda a: lax.reduce_sum(a * a, (0,)), x, rtol=1e-4)
    assert x.size >= entry_points.PARALLEL_MIN_POINTS


# ---------------------------------------------------------------- double -> half conversions

@pytest.mark.parametrize("name", MORE_UNARY)
def test_half_precision_transcendentals_on_one_element(name):
    # A single float16 element took a scalar path through compiler-rt's __truncdfhf2,
    # which the process lacked (the call jumped to address 0).
    x = np.array([0.5], np.float16)
    assert_agree(getattr(lax, name), x, rtol=16 * _tolerance(np.float16), atol=16 * _tolerance(np.float16))


def test_llvm_double_to_half_rounds_once():
    from jaxlite.lower import llvm_target
    compiled = llvm_target.compile_ir("""
define void @to_half(ptr %x, ptr %y, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %src = getelementptr double, ptr %x, i64 %i
  %dst = getelementptr half, ptr %y, i64 %i
  %v = load double, ptr %src
  %h = fptrunc double %v to half
  store half %h, ptr %dst
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}""", optimize_ir=False)
    # Ties of half, and values a hair above or below them (rounding through float32 first
    # would land on the tie and round to even: the wrong way), overflow, NaN and zeros.
    ties = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 2049.0, 65520.0, 2.0 ** -25])
    values = np.concatenate([ties, np.nextafter(ties, 0), np.nextafter(ties, np.inf), ties + 2.0 ** -40,
                             -ties, [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e300, 5.96e-8, 1e-30]])
    out = np.empty(values.size, np.float16)
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(compiled.address("to_half"))
    run(values.ctypes.data, out.ctypes.data, values.size)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("k, on_gemm", [(2, False), (8, False), (9, True)])
def test_short_contractions_stay_fused(k, on_gemm):
    from jaxlite.lower import fusion
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((300, k)).astype(np.float32), rng.standard_normal((k, 64)).astype(np.float32)
    assert_agree(lambda x, y: jnp.tanh(x @ y), a, b, rtol=1e-5, atol=1e-5)
    steps = jaxlite.jit(lambda x, y: jnp.tanh(x @ y)).lower(a, b).program.steps
    assert any(isinstance(s, fusion.EqnStep) and s.kind == "gemm" for s in steps) == on_gemm
