"""Fusion decisions: how many kernels and passes over memory common programs take."""
import numpy as np
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.lower import fusion, pipeline
from jaxlite.lower.kernel_ir import Reduce


def lowered(fun, *args):
    return pipeline.lower_jaxpr(jaxlite.make_jaxpr(fun)(*args))


def kernels(program):
    return [step.kernel for step in program.steps if isinstance(step, fusion.KernelStep)]


def softmax(x):
    m = lax.reduce_max(x, (1,))
    e = jnp.exp(x - m[:, None])
    return e / lax.reduce_sum(e, (1,))[:, None]


def layernorm(x):
    mean = lax.reduce_sum(x, (1,))[:, None] / x.shape[1]
    centered = x - mean
    var = lax.reduce_sum(centered * centered, (1,))[:, None] / x.shape[1]
    return centered * lax.rsqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


X = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)


def test_elementwise_chain_is_one_kernel():
    program = lowered(gelu, X)
    assert program.kernel_count() == 1
    assert kernels(program)[0].outer == []


def test_a_chain_deeper_than_the_inlining_depth_is_cut_into_kernels():
    """3000 chained equations used to exhaust Python's stack while the kernel was built."""
    def chain(x):
        for _ in range(1000):
            x = jnp.sin(x) * 1.5 + x
        return x
    x = np.linspace(-1, 1, 37, dtype=np.float32)
    program = lowered(chain, x)
    assert program.kernel_count() >= 3000 // fusion.MAX_INLINED_DEPTH
    np.testing.assert_allclose(jaxlite.jit(chain)(x), chain(jnp.asarray(x)), rtol=1e-5, atol=1e-5)


def test_softmax_is_one_kernel_reading_rows_from_cache():
    (kernel,) = kernels(lowered(softmax, X))
    assert [type(s).__name__ for s in kernel.stages] == ["Reduce", "Reduce", "Store"]
    assert len(kernel.outer) == 1 and kernel.outer[0].extent == 16
    np.testing.assert_allclose(jaxlite.jit(softmax)(X), softmax(X), rtol=1e-5, atol=1e-7)


def test_layernorm_is_one_kernel_with_two_reductions():
    (kernel,) = kernels(lowered(layernorm, X))
    assert sum(isinstance(s, Reduce) for s in kernel.stages) == 2
    np.testing.assert_allclose(jaxlite.jit(layernorm)(X), layernorm(X), rtol=1e-4, atol=1e-5)


def test_siblings_share_a_kernel():
    program = lowered(lambda x: (jnp.sin(x), jnp.cos(x) * 2), X)
    assert program.kernel_count() == 1
    assert len(kernels(program)[0].outputs) == 2


def test_reduction_and_elementwise_output_share_a_kernel():
    def f(x):
        e = jnp.exp(x)
        return lax.reduce_sum(e, (0,)), e * 2       # column sum and an elementwise output
    program = lowered(f, X)
    assert program.kernel_count() == 1
    got, want = jaxlite.jit(f)(X), f(X)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_value_reused_by_two_kernels_goes_to_memory():
    def f(x):
        e = jnp.exp(x)
        return lax.reduce_sum(e, (0,)), lax.reduce_sum(e, (1,))
    program = lowered(f, X)
    assert program.kernel_count() == 3      # e, then each sum reads it
    got, want = jaxlite.jit(f)(X), f(X)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


def test_column_reduction_then_broadcast():
    def f(x):
        return x - lax.reduce_max(x, (0,))[None, :]
    np.testing.assert_allclose(jaxlite.jit(f)(X), f(X))


def test_dot_is_its_own_kernel():
    program = lowered(lambda a, b: jnp.exp(a @ b), X.astype(np.int32), X.T.astype(np.int32))
    assert program.kernel_count() == 2


# ---------------------------------------------------------------- a random program fuzzer

UNARY = [jnp.exp, jnp.tanh, jnp.sin, lambda x: x * x, jnp.abs, lambda x: -x, lambda x: x * 0.5 + 1,
         lambda x: lax.select_n(x > 0, x, -x),
         lambda x: lax.convert_element_type(lax.convert_element_type(x * 4, np.int32), np.float32)]
BINARY = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum, jnp.minimum]


def _reshaped(a):
    return lax.reshape(a, (a.size,))


def _strided(a):
    return lax.slice(a, (0,) * a.ndim, a.shape, (2,) * a.ndim)


def _padded(a):
    return lax.pad(a, np.float32(0.5), ((1, -1, 1),) * a.ndim)


def _row_centered(a):
    return a - lax.reduce_sum(a, (a.ndim - 1,))[..., None] / a.shape[-1]


def _column_shifted(a):
    return a - lax.reduce_max(a, (0,))[None] if a.ndim == 2 else a


def _argmax_rows(a):
    return lax.convert_element_type(lax.argmax(a, 0, np.int32), np.float32)


def _with_iota(a):
    return a + lax.broadcasted_iota(np.float32, a.shape, a.ndim - 1)


SHAPED = {"transpose": lambda a: a.T, "reshape": _reshaped, "slice": _strided, "pad": _padded,
          "concatenate": lambda a: lax.concatenate([a, a * 2], 0), "rev": lambda a: lax.rev(a, (0,)),
          "rowsum": _row_centered, "colmax": _column_shifted, "argmax": _argmax_rows, "iota": _with_iota}


@st.composite
def programs(draw):
    """A list of instructions over a list of values, each reading earlier values."""
    kinds = st.sampled_from(["unary", "binary"] + sorted(SHAPED))
    return draw(st.lists(st.tuples(kinds, st.integers(0, 100)), min_size=1, max_size=8))


def run_program(steps, x):
    values = [x]
    for kind, choice in steps:
        a = values[choice % len(values)]
        if kind == "unary":
            values.append(UNARY[choice % len(UNARY)](a))
        elif kind == "binary":
            b = values[(choice // 7) % len(values)]
            if b.shape != a.shape:
                b = b.T if b.T.shape == a.shape else b
            if b.shape == a.shape:
                values.append(BINARY[choice % len(BINARY)](a, b))
        elif a.ndim:
            values.append(SHAPED[kind](a))
    return values[-1], values[len(values) // 2]


@settings(deadline=None, max_examples=40)
@given(programs(), st.integers(0, 1000))
def test_random_programs_agree_with_eager(steps, seed):
    x = np.random.default_rng(seed).uniform(-1, 1, (5, 7)).astype(np.float32)
    fun = lambda a: run_program(steps, a)
    want = fun(jnp.asarray(x))
    got = jaxlite.jit(fun)(x)
    for w, g in zip(want, got):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-4)


def test_column_reduction_accumulates_in_memory_order():
    (kernel,) = kernels(lowered(lambda x: lax.reduce_sum(x, (0,)), X))
    assert kernel.outer == [] and [len(s.loops) for s in kernel.stages] == [1, 2]
    np.testing.assert_allclose(jaxlite.jit(lambda x: lax.reduce_sum(x, (0,)))(X), X.sum(0), rtol=1e-5)


def test_gemm_epilogues_absorb_bias_relu_and_residual():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((80, 96)).astype(np.float32)
    b, r = rng.standard_normal(80).astype(np.float32), rng.standard_normal((64, 80)).astype(np.float32)

    def layer(x, w, b, r):
        return jnp.maximum(x @ w.T + b, 0.0) + r
    program = lowered(layer, x, w, b, r)
    assert program.kernel_count() == 0
    (step,) = program.steps
    assert step.eqn.params["epilogue"] == ("bias", "relu", "residual")
    np.testing.assert_allclose(jaxlite.jit(layer)(x, w, b, r), layer(x, w, b, r), rtol=1e-4, atol=1e-4)


def test_two_products_summed_fuse_the_sum_once():
    """x @ w + y @ v: the add is one product's residual; the other product stays a GEMM of
    its own (both claiming it dropped a product and read an undefined value)."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 80)).astype(np.float32)
    f = lambda x, w: x @ w + (2.0 * x) @ w
    names = [step.eqn.primitive.name for step in lowered(f, x, w).steps if isinstance(step, fusion.EqnStep)]
    assert sorted(names) == ["dot_epilogue", "dot_general"]
    np.testing.assert_allclose(jaxlite.jit(f)(x, w), f(x, w), rtol=1e-4, atol=1e-4)


def test_gemm_epilogue_stops_at_a_shared_value():
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 80)).astype(np.float32)

    def f(x, w):
        y = x @ w
        return jnp.maximum(y, 0.0), y * 2
    program = lowered(f, x, w)
    assert all(step.eqn.primitive.name == "dot_general" for step in program.steps
               if isinstance(step, fusion.EqnStep))
    got, want = jaxlite.jit(f)(x, w), f(x, w)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)


def test_sgd_step_on_a_weight_gradient_is_one_gemm():
    # grad gives transpose(dot(g, x)); the GEMM computes dot(x, g) and writes w - lr * grad.
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 80)).astype(np.float32)

    def step(w, x):
        grad = jaxlite.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
        return w - 0.1 * grad
    program = lowered(step, w, x)
    gemms = [step.eqn for step in program.steps if isinstance(step, fusion.EqnStep)]
    assert [e.params.get("epilogue") for e in gemms] == [None, ("scale", "subtract_from")]
    assert not any(e.primitive.name == "transpose" for e in program.closed.jaxpr.eqns)
    np.testing.assert_allclose(jaxlite.jit(step)(w, x), step(w, x), rtol=1e-4, atol=1e-4)


def test_broadcast_literals_are_recomputed_by_each_kernel():
    # Each relu's derivative selects among broadcast 1.0, 0.5 and 0.0 (shared by both
    # layers' backward kernels, which a GEMM separates): no kernel fills a buffer with them.
    rng = np.random.default_rng(8)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((32, 48), (48, 64), (64, 64)))

    def loss(w1, w2):
        return jnp.sum(jnp.maximum(jnp.maximum(x @ w1, 0.0) @ w2, 0.0) ** 2)
    grads = jaxlite.grad(loss, argnums=(0, 1))
    assert all(kernel.inputs for kernel in kernels(lowered(grads, w1, w2)))
    for got, want in zip(jaxlite.jit(grads)(w1, w2), grads(w1, w2)):
        # Entries reach ~6e3 as sums of products that cancel: float32 rounding of the two
        # products' summation orders differs by ~1e-3 absolute at the small entries.
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_relu_derivative_is_a_gemm_epilogue_of_the_backward_product():
    # The pre-activation is exactly 0 in w1's zero column: JAX's derivative of max there is 0.5.
    rng = np.random.default_rng(10)     # (64 rows: the backward products are GEMMs, not fused loops)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((64, 48), (48, 64), (64, 16)))
    w1[:, 3] = 0.0

    def loss(w1, w2):
        return jnp.sum(jnp.tanh(jnp.maximum(x @ w1, 0.0) @ w2))
    grads = jaxlite.grad(loss, argnums=(0, 1))
    program = lowered(grads, w1, w2)
    epilogues = [step.eqn.params.get("epilogue") for step in program.steps if isinstance(step, fusion.EqnStep)]
    assert ("relu_grad",) in epilogues
    assert not any(e.primitive.name == "select_n" for e in program.closed.jaxpr.eqns)
    for got, want in zip(jaxlite.jit(grads)(w1, w2), grads(w1, w2)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_concatenate_stores_each_piece_over_its_own_range():
    p, q = np.ones((8, 16), np.float32), np.full((8, 4), 2.0, np.float32)
    (kernel,) = kernels(lowered(lambda p, q: jnp.concatenate([p, q], axis=1).reshape(-1), p, q))
    assert [loop.extent for loop in kernel.outer] == [8]
    assert [[loop.extent for loop in stage.loops] for stage in kernel.stages] == [[16], [4]]
    assert all(len(fusion.kernel_ir.loads([stage.writes[0][2]])) == 1 for stage in kernel.stages)


@settings(deadline=None, max_examples=15)
@given(widths=st.lists(st.integers(0, 9), min_size=1, max_size=4), rows=st.integers(1, 4),
       then=st.sampled_from(["none", "scale", "reverse"]), seed=st.integers(0, 2 ** 16))
def test_concatenates_along_the_last_axis_agree_with_numpy(widths, rows, then, seed):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(size=(rows, 2, w)).astype(np.float32) for w in widths]
    after = {"none": lambda y: y, "scale": lambda y: y * 2.0 + 1.0, "reverse": lambda y: y[..., ::-1]}[then]
    got = jaxlite.jit(lambda *xs: after(jnp.concatenate(xs, axis=-1)))(*parts)
    np.testing.assert_array_equal(np.asarray(got), after(np.concatenate(parts, axis=-1)))
