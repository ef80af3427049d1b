"""The differential fuzzer (tests/fuzz_programs.py) on fixed seeds, and the failures it found,
each reduced to a regression test.

More seeds: JAXLITE_FUZZ_SEEDS=2000 python -m pytest tests/test_fuzz.py (or run
tests/fuzz_programs.py from the command line, which prints every failing program).
"""
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp

import fuzz_programs

SEEDS = range(int(os.environ.get("JAXLITE_FUZZ_SEEDS", "40")))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program(seed):
    report = fuzz_programs.run(seed)
    assert report is None, report


def test_fuzzer_programs_are_broad():
    """The drawn programs cover what the fuzzer is for: many ops, all dtypes, empty axes."""
    programs = [fuzz_programs.random_program(seed) for seed in range(40)]
    ops = {op for p in programs for op, _, _ in p.steps}
    assert len(ops) >= 15, ops
    seen_dtypes = {np.dtype(x.dtype) for p in programs for x in p.inputs}
    assert seen_dtypes == set(fuzz_programs.DTYPES)
    assert any(0 in x.shape for p in programs for x in p.inputs)
    assert all(3 <= len(p.steps) <= 25 for p in programs if len(p.steps) >= 3)


def test_a_mismatch_is_caught():
    with pytest.raises(fuzz_programs.Mismatch, match="values differ"):
        fuzz_programs.assert_close([np.float32([1.0, 2.0])], [np.float32([1.0, 2.5])], "check")


# ---------------------------------------------------------------- regressions found by the fuzzer

@pytest.mark.parametrize("shape, axis", [((0,), 0), ((2, 0, 3), 1), ((2, 0, 3), 2)])
def test_grad_of_sort_of_an_empty_array(shape, axis):
    """seed 30: the sort JVP's take_along_axis built a gather that cannot collapse an empty axis."""
    loss = lambda x: jnp.sort(x, axis=axis).sum()
    for fun in (jaxlite.grad(loss), jaxlite.jit(jaxlite.grad(loss))):
        out = fun(jnp.zeros(shape))
        assert out.shape == shape and out.dtype == np.float32


def test_take_along_axis_of_an_empty_operand_is_zeros():
    out = jnp.take_along_axis(jnp.zeros(0), jnp.array([0, 1]), 0)
    np.testing.assert_array_equal(out, np.zeros(2, np.float32))


def test_scan_over_a_gathered_empty_axis_compiles():
    """seed 132: gather's output shape held numpy integers, which reached LLVM as a loop bound."""
    x = np.zeros((2, 0, 3), np.float32)

    def f(x):
        rows = x[jnp.array([1], dtype=jnp.int32)]
        assert all(type(d) is int for d in rows.shape)
        return jaxlite.lax.scan(lambda c, r: (c + r * r, c * r), jnp.zeros_like(rows[0]), rows)[1]
    assert jaxlite.jit(f)(x).shape == f(x).shape == (1, 0, 3)


def test_grad_of_remainder_of_a_scalar_by_a_vector():
    """seed 187: rem's JVP returned the scalar operand's tangent unbroadcast."""
    a = np.arange(1, 6, dtype=np.float32)
    loss = lambda a: jnp.remainder(jnp.dot(a, a), a).sum()
    grad = np.asarray(jaxlite.grad(loss)(a))
    np.testing.assert_array_equal(grad, jaxlite.jit(jaxlite.grad(loss))(a))
    np.testing.assert_array_equal(grad, [-45, -7, 12, 27, 39])          # JAX's values


@pytest.mark.parametrize("fun, expected", [(jnp.maximum, [0, 2, 1, 1, 1]), (jnp.minimum, [1, 4, 0, 0, 0])])
def test_grad_of_max_min_against_a_rank0_array(fun, expected):
    """seed 331: max/min's JVP built its tie-sharing masks at the scalar operand's shape."""
    a = np.arange(1, 6, dtype=np.float32)
    for loss in (lambda a: fun(a, a[1]).sum(), lambda a: fun(a[1], a).sum()):
        grad = np.asarray(jaxlite.grad(loss)(a))
        np.testing.assert_array_equal(grad, jaxlite.jit(jaxlite.grad(loss))(a))
        np.testing.assert_array_equal(grad, expected)                   # JAX's values


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_16bit_logistic_rounds_each_step_as_xla(dtype):
    """seed 165: XLA expands 16-bit logistic to 1 / (1 + exp(-x)) with each step rounded to the
    16-bit format (checked in JAX on every 16-bit value); jit rounded once, eager differently."""
    dtype = np.dtype(dtype)
    x = np.arange(-2 ** 15, 2 ** 15).astype(np.int16).view(np.float16 if dtype == np.float16 else dtype)
    x = x[np.isfinite(x.astype(np.float32))]
    with np.errstate(over="ignore"):
        stepwise = (1 / (1 + np.exp(-x))).astype(dtype)
    stepwise[np.abs(stepwise.astype(np.float32)) < np.finfo(np.float32).tiny] = 0   # FTZ: JAX's 0 at bfloat16 -88
    eager = np.asarray(jaxlite.nn.sigmoid(x))
    compiled = np.asarray(jaxlite.jit(jaxlite.nn.sigmoid)(x))
    np.testing.assert_array_equal(eager, stepwise)
    mismatched = np.sum(compiled.astype(np.float32) != stepwise.astype(np.float32))
    assert mismatched <= 8        # jit's exp is a polynomial: a few last-place ties differ


def test_a_step_reading_one_value_twice_frees_its_buffer_once():
    """seed 3042: the memory plan freed a value a step read twice (the JVP of argsort sorts
    (x, iota, iota) after CSE) twice, so the next step's two outputs got the same offset."""
    x = np.float32([[[0.49, 1.42, 3.23]]])

    def f(a):
        iota = jaxlite.lax.broadcasted_iota(np.int32, (1, 1, 3), 2)
        _, order, _ = jaxlite.lax.sort((a, iota, iota), dimension=2, num_keys=1)
        product = jnp.prod(a, axis=2)
        smallest, _ = jaxlite.lax.sort((product, jaxlite.lax.broadcasted_iota(np.int32, (1, 1), 0)),
                                       dimension=0, num_keys=1)
        return jnp.any(order.astype(np.float32) < smallest[:, :, None])
    assert bool(jaxlite.jit(f)(x)) == bool(f(x)) is True


def test_scatter_into_zeros_of_a_value_an_earlier_reduction_read():
    """seed 3593: fusion parked cos(x) (which a max reduction read) in the scatter's output
    buffer to read it back, where the scatter-add accumulates: the result came out cos(x) + k."""
    x = np.linspace(0.3, 0.9, 3).astype(np.float32)

    def f(a):
        c = jnp.cos(a)
        return jnp.zeros(3).at[jnp.array([0, 1, 2])].add(c * jnp.max(c))
    np.testing.assert_allclose(jaxlite.jit(f)(x), np.cos(x) * np.cos(x).max(), rtol=1e-6)
    loss = lambda a: jnp.max(jnp.cos(jnp.sort(a)))
    np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(loss))(x), [-np.sin(0.3), 0, 0], rtol=1e-6)


def _kernel_ir_nodes(executable):
    """Distinct expression nodes over every fused kernel of a compiled program."""
    from jaxlite.lower.fusion import KernelStep
    seen, stack = set(), []
    for step in executable.steps:
        if isinstance(step, KernelStep):
            for stage in step.kernel.stages:
                stack.extend(value for *_, value in stage.writes)
                stack.extend([stage.value] if hasattr(stage, "value") else [])
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(node.args)
    return len(seen)


# Old seed 36 (before take and dynamic_slice joined the generator), whose grad blew up.
_SEED_36_STEPS = [
    ("sort", [1], {"axis": 0, "arg": False}), ("binary_scalar", [1], {"name": "hypot", "scalar": -1.5, "left": False}),
    ("binary_scalar", [3], {"name": "add", "scalar": 2.0, "left": True}),
    ("slice", [3], {"axis": 0, "start": -7, "stop": -2, "step": 3}),
    ("reduce", [5], {"name": "max", "axis": 0, "keepdims": False}), ("sort", [0], {"axis": 0, "arg": True}),
    ("binary", [1, 3], {"name": "floordiv"}), ("unary", [1], {"name": "round"}),
    ("cumulative", [0], {"name": "cumprod", "axis": 0, "reverse": False}),
    ("slice", [2], {"axis": 0, "start": 5, "stop": 7, "step": -1}),
    ("reduce", [10], {"name": "mean", "axis": 0, "keepdims": True}), ("unary", [0], {"name": "square"}),
    ("slice", [9], {"axis": 0, "start": 4, "stop": 13, "step": 1}), ("unary", [0], {"name": "reciprocal"}),
    ("broadcast", [6], {"shape": (3,)}), ("unary", [15], {"name": "neg"}), ("gather", [16], {"indices": (1, -1, 0, -2)}),
    ("cumulative", [17], {"name": "cummax", "axis": 0, "reverse": False}), ("unary", [7], {"name": "invert"}),
    ("binary", [3, 9], {"name": "atan2"}), ("reduce", [10], {"name": "max", "axis": 0, "keepdims": False}),
    ("binary_scalar", [20], {"name": "eq", "scalar": 0, "left": True}), ("index", [10], {"index": -7}),
]


def _grad_programs():
    rng = np.random.default_rng(36)
    yield fuzz_programs.Program([rng.standard_normal(17).astype(np.float32) * 2 for _ in range(2)], _SEED_36_STEPS)
    for seed in range(12):
        program = fuzz_programs.random_program(seed)
        if fuzz_programs.gradient_applies(program):
            yield program


@pytest.mark.parametrize("program", list(_grad_programs()), ids=lambda p: f"{len(p.steps)} steps")
def test_kernel_ir_of_a_grad_program_stays_proportional_to_it(program):
    """Guard on compile work: a value read at many shifted indices (the pads of a cumprod's
    JVP) was recomputed at each, so old seed 36's grad (428 equations) built 15836 kernel-IR
    nodes and compiled for 9 s under load; past 16 indices fusion materializes it (1906)."""
    with np.errstate(all="ignore"):
        outs = program(*program.inputs)
    weights = [np.ones(np.shape(o), np.float32) if o.dtype == np.float32 else None for o in outs]
    grad = jaxlite.grad(fuzz_programs._loss(program, weights), argnums=tuple(range(len(program.inputs))))
    equations = len(jaxlite.make_jaxpr(grad)(*program.inputs).jaxpr.eqns)
    compiled = jaxlite.jit(grad).lower(*program.inputs).compile()
    assert _kernel_ir_nodes(compiled.executable) <= 6 * equations + 200


def test_float_to_int_conversion_saturates_at_the_top_eagerly():
    """seed 20079: eager clipped inf to float32(2**31 - 1), which is 2**31, and astype wrapped
    it to INT_MIN (jit and JAX give INT_MAX)."""
    x = np.float32([np.inf, 3e9, np.nan])
    for fun in (lambda v: jnp.asarray(v).astype(jnp.int32), jaxlite.jit(lambda v: v.astype(jnp.int32))):
        np.testing.assert_array_equal(fun(x), [2 ** 31 - 1, 2 ** 31 - 1, 0])
    np.testing.assert_array_equal(jnp.asarray(x).astype(jnp.uint32), [2 ** 32 - 1, 3000000000, 0])


def test_16bit_nan_converts_to_integer_zero_eagerly():
    """seed 20815: numpy's NaN test did not see a bfloat16 NaN, so log(-1.77).astype(int32)
    wrapped to INT_MIN eagerly (jit and JAX give 0)."""
    for dtype in (jnp.bfloat16, jnp.float16):
        x = jnp.asarray([np.nan, -np.inf, np.inf, 2.5], dtype)
        for convert in (lambda v: v.astype(jnp.int32), jaxlite.jit(lambda v: v.astype(jnp.int32))):
            np.testing.assert_array_equal(convert(x), [0, -2 ** 31, 2 ** 31 - 1, 2])


@pytest.mark.parametrize("reduce, expected", [(jnp.sum, 0.0546875), (jnp.prod, -0.435546875)])
def test_16bit_sum_and_prod_accumulate_in_float32_eagerly(reduce, expected):
    """seeds 22465, 22556, 22610: eager summed and multiplied bfloat16 in bfloat16, rounding
    every partial result (0.078125 here); jit, like JAX, accumulates in float32 and rounds once."""
    x = jnp.asarray([-2.25, 0.09375, -1.1328125, -1.3125, 0.3359375, 1.4296875, 2.890625], jnp.bfloat16)
    for fun in (reduce, jaxlite.jit(reduce)):
        out = fun(x)
        assert out.dtype == jnp.bfloat16 and float(out) == expected     # JAX's values
    np.testing.assert_array_equal(jnp.sum(x.astype(jnp.float16).reshape(1, 7), axis=1),
                                  jaxlite.jit(lambda v: jnp.sum(v, axis=1))(x.astype(jnp.float16).reshape(1, 7)))


def test_float32_power_is_rounded_as_compiled_code_rounds_it():
    """seed 22500: numpy's float32 power is an ulp off for about a fifth of its inputs
    (10.452957 ** 10.452957 gave 45088251904, the nearest float32 is 45088247808, which JAX
    and jit give), so cos of it differed completely. seed 25918: float64's pow rounded to
    float32 is not libm's powf near a tie (13.116132 ** 13.116132 is 458445597705924.75, a
    hair above the midpoint; powf, jit and JAX give the float below): eager calls powf too."""
    x = np.float32([10.452957, 1.7175673 ** 2, np.uint32(1095883693).view(np.float32)])
    np.testing.assert_array_equal(jnp.power(x, x), jaxlite.jit(jnp.power)(x, x))
    np.testing.assert_array_equal(jnp.power(x, x)[[0, 2]], [45088247808.0, 458445580926976.0])  # JAX's
    assert jnp.power(x[0], x[1]).shape == () == jnp.power(jnp.asarray(x[0], jnp.bfloat16), 2.0).shape   # seeds 27732, 27856
    rng = np.random.default_rng(0)
    a, b = np.abs(rng.standard_normal(4000)).astype(np.float32) * 4, (rng.standard_normal(4000) * 6).astype(np.float32)
    for dtype in (np.float32, jnp.bfloat16, np.float16):
        np.testing.assert_array_equal(jnp.power(a.astype(dtype), b.astype(dtype)),
                                      jaxlite.jit(jnp.power)(a.astype(dtype), b.astype(dtype)))


def test_eager_power_calls_libm_without_loading_llvm():
    """The eager loop over powf/pow is machine code written by lower/libm_loops.py on x86-64
    Linux (before, the first eager float pow compiled it with LLVM, ~50 ms CPU)."""
    program = ("import sys, numpy as np, jaxlite.numpy as jnp\n"
               "x = jnp.power(np.float32([10.452957, 2.0]), np.float32([10.452957, 0.5]))\n"
               "import jaxlite; jaxlite.config.update('jax_enable_x64', True)\n"
               "y = jnp.power(np.float64([1.5]), np.float64([2.0]))\n"
               "assert y.dtype == np.float64\n"
               "print(float(x[0]), float(y[0]), 'llvmlite' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)))
    llvm_loaded = platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    assert done.stdout.split() == ["45088247808.0", "2.25", str(llvm_loaded)]


def test_tanh_saturates_where_jaxs_does_eager_and_jit():
    """seed 25904: tanh(9.77) was 1 - 2**-24 eagerly (numpy's float32 tanh stays below 1 up to
    10) and 1 under jit, so .astype(int32) gave 0 and 1. Both now give +-1 from |x| = 7.9988117,
    where JAX's tanh does."""
    edge = np.float32(7.9988117)
    x = np.float32([9.770831, -9.770831, edge, np.nextafter(edge, np.float32(0)), 8.5, np.nan])
    for fun in (jnp.tanh, jaxlite.jit(jnp.tanh)):
        out = np.asarray(fun(x))
        np.testing.assert_array_equal(out[[0, 1, 2, 4]], [1, -1, 1, 1])                   # JAX's values
        assert out[3] < 1 and np.isnan(out[5])
    for fun in (lambda v: jnp.tanh(v).astype(jnp.int32), jaxlite.jit(lambda v: jnp.tanh(v).astype(jnp.int32))):
        np.testing.assert_array_equal(fun(x[:3]), [1, -1, 1])


@pytest.mark.parametrize("fun", [jaxlite.lax.erf, jaxlite.lax.erfc, jaxlite.lax.erf_inv])
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_grad_of_erf_family_in_16bit_floats(fun, dtype):
    """seed 27519: erf's derivative multiplied by a Python float, which lax refuses beside a
    16-bit operand (as JAX's lax does), so grad of erf on bfloat16 raised TypeError."""
    loss = lambda v: fun(v.astype(dtype)).astype(jnp.float32)
    x = np.float32(0.3)
    expected = float(jaxlite.grad(lambda v: fun(v))(x))
    for g in (jaxlite.grad(loss), jaxlite.jit(jaxlite.grad(loss))):
        out = g(x)
        assert out.dtype == np.float32 and abs(float(out) - expected) <= 2e-2 * abs(expected)


def test_sinc_derivatives_at_zero_are_jaxs_bits():
    """seed 26546's neighbourhood: sinc's derivatives at 0 are the series' coefficients of
    pi x times pi per order, rounded in float32 as JAX rounds them (pi**2 / 3 rounded once
    was an ulp away)."""
    derivative, values = jnp.sinc, []
    for _ in range(4):
        derivative = jaxlite.grad(derivative)
        values.append([float(derivative(np.float32(0))), float(jaxlite.jit(derivative)(np.float32(0)))])
    np.testing.assert_array_equal(values, [[0, 0], [-3.2898683547973633] * 2, [0, 0], [19.481821060180664] * 2])


def test_rounding_envelope_accepts_cancellation_and_catches_a_broken_rule(monkeypatch):
    """seed 26546: near 0, sinc's derivative cos(pi x) / x - sin(pi x) / (pi x^2) cancels, so
    jit's FMA and eager's two roundings differ by up to 3e-3 relative. JAX's op-by-op eager and
    jit differ there as much (its jnp.sinc agrees with itself only because JAX compiles it when
    called eagerly). Both lie within float32's rounding envelope of the float64 value (about a
    quarter of the way out); an eager sin off by 1e-5 relative, below the plain tolerance, does not."""
    x = np.float32([-0.0014426551, 0.003, -0.02, 0.05, 0.3, 1.7])
    grad = jaxlite.grad(lambda v: jnp.sum(jnp.sinc(v)))
    compiled = [jaxlite.jit(grad)(x)]
    with pytest.raises(fuzz_programs.Mismatch):
        fuzz_programs.assert_close(compiled, [grad(x)], "grad")
    fuzz_programs.assert_close_or_rounding(grad, [x], compiled, [grad(x)], "grad")
    assert fuzz_programs.run(26546) is None

    sin_p = jaxlite.lax.elementwise.sin_p
    exact_sin = sin_p.impl
    off_in_float32 = lambda v: exact_sin(v) * np.float32(1 + 1e-5) if v.dtype == np.float32 else exact_sin(v)
    monkeypatch.setattr(sin_p, "impl", off_in_float32)
    with pytest.raises(fuzz_programs.Mismatch, match="outside float32's rounding envelope"):
        fuzz_programs.assert_close_or_rounding(grad, [x], compiled, [grad(x)], "grad")
    assert "outside float32's rounding envelope" in fuzz_programs.run(26546)



def test_rounding_envelope_names_primitives_that_exist():
    import gc
    from jaxlite.core.primitive import Primitive
    names = {o.name for o in gc.get_objects() if isinstance(o, Primitive)}
    assert fuzz_programs._ROUNDING <= names and fuzz_programs._ACCUMULATING <= fuzz_programs._ROUNDING


def test_rounding_envelope_replays_casts_to_float32_in_float64():
    """seed 40982: x mod cos(..) of a 17-term dot magnifies the dot's last-bit difference
    (summation order) to 1e-3 relative; the program casts to float32, which pinned float32
    in the float64 replay, so there was no envelope to consult."""
    program = fuzz_programs.random_program(40982)
    assert any(op == "cast" for op, _, _ in program.steps)
    assert fuzz_programs.run(40982) is None


def test_numerical_gradient_skips_casts_to_16bit_floats():
    """seed 42807: a cast to bfloat16 is constant at the central differences' scale (both
    steps agreed on -25.3148), where AD passes the tangent through (-26.88), as JAX's
    convert_element_type does: not a finding. Casts to float32 are replayed as casts to float64 instead of skipped."""
    program = fuzz_programs.random_program(42807)
    assert any(op == "cast" and params["dtype"] == fuzz_programs.BF16 for op, _, params in program.steps)
    assert fuzz_programs.run(42807) is None


def test_kernels_joined_through_two_shared_values_keep_one_reduction_shape():
    """seed 44948: select_n(l, j, j) shares j with a product over axis 1 and l with an all()
    over axis 0; each pair could share a kernel, so fusion joined all three, and the kernel
    could keep neither reduction inline ('fusion cannot lower Var(bool[5])')."""
    x, y = np.float32([0.1, -1.2, 0.7, 0.3, 2.0]), np.float32([0.7])

    def f(x, y):
        same = jnp.broadcast_to(x, (2, 5)) == y
        a = jnp.where(same, y, y)
        b = jnp.where(same, a, y)
        equal = x == a
        return jnp.prod(b, axis=1), jnp.all(equal, axis=0), jnp.where(equal, b, b)
    for got, want in zip(jaxlite.jit(f)(x, y), f(x, y)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_16bit_sum_prod_mean_round_once_under_jit_as_jax(dtype):
    """seed 46624: jit's float16 sum of 17 values accumulated in float16 (-14.25; the float32
    sum -14.253967 rounds to -14.26, JAX's, eager and jit), and cos of it differed by 7%. As
    JAX's jnp, the reductions convert to float32, reduce, and round once (the same jaxpr)."""
    x = jnp.asarray([0.505, -3.707, 1.659, -1.262, -0.03668, -2.12, 1.442, -1.868, -1.184, -1.42, 0.805,
                     -2.941, -1.21, -1.936, -3.57, 1.993, 0.5947], dtype)
    for reduce in (jnp.sum, jnp.prod, jnp.mean):
        eqns = jaxlite.make_jaxpr(reduce)(x).jaxpr.eqns
        assert eqns[0].primitive.name == eqns[-1].primitive.name == "convert_element_type"
        assert eqns[1].outputs[0].aval.dtype == np.float32
        want = np.asarray(reduce(x.astype(np.float32))).astype(dtype)
        for fun in (reduce, jaxlite.jit(reduce)):
            out = fun(x)
            assert out.dtype == dtype and float(out) == float(want)
