"""jaxlite.experimental.hijax: primitives defined by their rules (VJPHiPrimitive, HiPrimitive).

The rules below are deliberately not the true derivative (reverse mode doubles, forward mode
triples) so each test sees which rule a transformation used, as JAX chooses it: grad/vjp the
vjp rule, jvp/jacfwd the jvp rule.
"""
import dataclasses

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental.hijax import (HiPrimitive, HiType, ShapedArray, VJPHiPrimitive, is_undefined_primal,
                                        register_hitype)


class SinTimesY(VJPHiPrimitive):
    def __init__(self, x_aval, y_aval):
        self.in_avals, self.out_aval, self.params = (x_aval, y_aval), x_aval, {}
        super().__init__()

    def expand(self, x, y):
        return jnp.sin(x) * y

    def vjp_fwd(self, nzs_in, x, y):
        return self(x, y), (jnp.cos(x), jnp.sin(x), y)

    def vjp_bwd_retval(self, res, g):
        cos_x, sin_x, y = res
        return (2 * cos_x * g * y, 2 * sin_x * g)

    def jvp(self, primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return self(x, y), 3 * (jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot)

    def batch_dim_rule(self, axis_data, in_dims):
        return in_dims[0] if in_dims[0] is not None else in_dims[1]


def f(x, y):
    return SinTimesY(jax.typeof(x), jax.typeof(y))(x, y)


def true_grads(x, y):
    return 2 * np.cos(x) * y, 2 * np.sin(x)


def test_eager_and_jit_run_expand():
    np.testing.assert_allclose(f(2.0, 3.0), np.sin(2.0) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(f)(2.0, 3.0), np.sin(2.0) * 3.0, rtol=1e-6)
    text = str(jax.make_jaxpr(f)(2.0, 3.0))
    assert "call_hi_primitive[_prim=SinTimesY[{}]] a b" in text


def test_reverse_mode_uses_the_vjp_rule_and_forward_mode_the_jvp_rule():
    expected = true_grads(2.0, 3.0)
    for grad in (jax.grad(f, argnums=(0, 1)), jax.jit(jax.grad(f, argnums=(0, 1)))):
        np.testing.assert_allclose(grad(2.0, 3.0), expected, rtol=1e-6)
    _, y_dot = jax.jvp(f, (2.0, 3.0), (1.0, 0.0))
    np.testing.assert_allclose(y_dot, 3 * np.cos(2.0) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(jax.jacfwd(f)(2.0, 3.0), 3 * np.cos(2.0) * 3.0, rtol=1e-6)


def test_vmap_matches_a_loop_with_its_rules():
    xs, ys = jnp.arange(4.0), jnp.linspace(1.0, 2.0, 4)
    looped = [f(x, y) for x, y in zip(xs, ys)]
    np.testing.assert_allclose(jax.vmap(f)(xs, ys), looped, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(f, in_axes=(0, None))(xs, 2.0), [f(x, 2.0) for x in xs], rtol=1e-6)
    grads = jax.vmap(jax.grad(f, argnums=(0, 1)))(xs, ys)
    np.testing.assert_allclose(np.stack(grads), np.stack(true_grads(np.asarray(xs), np.asarray(ys))), rtol=1e-5)
    # Differentiating the vmapped primitive: the unbatched y's cotangent is summed over the batch.
    gy = jax.grad(lambda y: jnp.sum(jax.vmap(f, in_axes=(0, None))(xs, y)))(2.0)
    np.testing.assert_allclose(gy, np.sum(2 * np.sin(np.asarray(xs))), rtol=1e-5)


def test_lin_and_linearized_serve_linearize():
    class Sin(VJPHiPrimitive):
        def __init__(self, x_aval):
            self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, {}
            super().__init__()

        def expand(self, x):
            return jnp.sin(x)

        def lin(self, nzs_in, x):
            return self(x), jnp.cos(x)

        def linearized(self, cos_x, x_dot):
            return 5 * cos_x * x_dot

    y, f_lin = jax.linearize(lambda x: Sin(jax.typeof(x))(x), 3.0)
    np.testing.assert_allclose(y, np.sin(3.0), rtol=1e-6)
    np.testing.assert_allclose(f_lin(1.0), 5 * np.cos(3.0), rtol=1e-6)


def test_missing_declarations_and_rules_raise_as_jax():
    class NoParams(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals, self.out_aval = (aval,), aval
            super().__init__()

    with pytest.raises(AttributeError, match="params"):
        NoParams(jax.typeof(1.0))

    class ExpandOnly(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals, self.out_aval, self.params = (aval,), aval, {}
            super().__init__()

        def expand(self, x):
            return x * 2

    g = lambda x: ExpandOnly(jax.typeof(x))(x)
    assert float(g(2.0)) == 4.0
    with pytest.raises(NotImplementedError, match="must implement `jvp`"):
        jax.jvp(g, (2.0,), (1.0,))
    with pytest.raises(NotImplementedError, match="batch_dim_rule"):
        jax.vmap(g)(jnp.ones(3))
    with pytest.raises(TypeError, match="input type mismatch"):
        ExpandOnly(jax.typeof(1.0))(jnp.ones(3))


class Cube(HiPrimitive):
    def abstract_eval(self, x_aval):
        return x_aval, set()

    def to_lojax(self, x):
        return x * x * x

    def jvp(self, primals, tangents):
        (x,), (t,) = primals, tangents
        return self.bind(x), 3 * x * x * t


cube_p = Cube("cube")


def test_hi_primitive_runs_eagerly_under_jit_and_jvp():
    x = jnp.arange(3.0)
    np.testing.assert_allclose(cube_p.bind(x), np.arange(3.0) ** 3)
    np.testing.assert_allclose(jax.jit(cube_p.bind)(x), np.arange(3.0) ** 3)
    _, t = jax.jvp(cube_p.bind, (x,), (jnp.ones(3),))
    np.testing.assert_allclose(t, 3 * np.arange(3.0) ** 2)
    assert "cube" in str(jax.make_jaxpr(cube_p.bind)(x))


# ---------------------------------------------------------------- hi types (values of user-defined types)

@dataclasses.dataclass(frozen=True)
class RowQuantized:
    """int8 values with one float32 scale per row."""
    values: object
    scales: object


@dataclasses.dataclass(frozen=True)
class RowQuantizedType(HiType):
    shape: tuple

    def lo_ty(self):
        return [ShapedArray(self.shape, np.dtype("int8")), ShapedArray(self.shape[:-1], np.dtype("float32"))]

    def lower_val(self, q):
        return [q.values, q.scales]

    def raise_val(self, values, scales):
        return RowQuantized(values, scales)

    def to_tangent_aval(self):              # tangents are dense float arrays, not quantized ones
        return ShapedArray(self.shape, np.dtype("float32"))

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return f"q8[{','.join(map(str, self.shape))}]"


register_hitype(RowQuantized, lambda q: RowQuantizedType(q.values.shape))


class Quantize(VJPHiPrimitive):
    def __init__(self, x_aval):
        self.in_avals, self.out_aval, self.params = (x_aval,), RowQuantizedType(x_aval.shape), {}
        super().__init__()

    def expand(self, x):
        scales = jnp.max(jnp.abs(x), axis=-1) / 127.0
        return RowQuantized(jnp.round(x / scales[..., None]).astype(jnp.int8), scales)

    def vjp_fwd(self, nzs_in, x):           # straight through: differentiated as the identity
        return self(x), None

    def vjp_bwd_retval(self, _, g):
        return (g,)


class Dequantize(VJPHiPrimitive):
    def __init__(self, q_aval):
        self.in_avals, self.out_aval, self.params = (q_aval,), ShapedArray(q_aval.shape, np.dtype("float32")), {}
        super().__init__()

    def expand(self, q):
        return q.values.astype(jnp.float32) * q.scales[..., None]

    def vjp_fwd(self, nzs_in, q):
        return self(q), None

    def vjp_bwd_retval(self, _, g):
        return (g,)


class MatmulQuantized(VJPHiPrimitive):
    """dense x @ quantized w, with w's scales folded into x."""

    def __init__(self, x_aval, w_aval):
        self.in_avals = (x_aval, w_aval)
        self.out_aval = ShapedArray((x_aval.shape[0], w_aval.shape[1]), np.dtype("float32"))
        self.params = {}
        super().__init__()

    def expand(self, x, w):
        return (x * w.scales) @ w.values.astype(jnp.float32)

    def vjp_fwd(self, nzs_in, x, w):
        return self(x, w), (x, w)

    def vjp_bwd_retval(self, res, g):
        x, w = res
        return g @ dequantize(w).T, x.T @ g


def quantize(x):
    return Quantize(jax.typeof(x))(x)


def dequantize(q):
    return Dequantize(jax.typeof(q))(q)


def matmul_quantized(x, w):
    return MatmulQuantized(jax.typeof(x), jax.typeof(w))(x, w)


X = np.array([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0]], np.float32)


def _assert_same_quantized(a, b):
    assert isinstance(a, RowQuantized) and isinstance(b, RowQuantized)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_allclose(a.scales, b.scales, rtol=1e-6)


def test_hi_values_cross_jit_as_arguments_results_and_intermediates():
    q = quantize(X)
    assert jax.typeof(q) == RowQuantizedType((2, 3)) and q.values.dtype == np.int8
    np.testing.assert_array_equal(q.values, [[42, 85, 127], [85, -106, 127]])   # JAX's values
    roundtrip = dequantize(q)
    for jitted in (jax.jit(lambda x: dequantize(quantize(x)))(X), jax.jit(dequantize)(q),
                   jax.jit(dequantize)(jax.jit(quantize)(X))):
        np.testing.assert_allclose(jitted, roundtrip, rtol=1e-6)
    _assert_same_quantized(jax.jit(quantize)(X), q)
    _assert_same_quantized(jax.jit(lambda q: quantize(dequantize(q)))(q), q)
    _assert_same_quantized(jax.jit(lambda: q)(), q)              # a hi value closed over
    assert jax.eval_shape(quantize, X) == RowQuantizedType((2, 3))


def test_hi_types_print_in_jaxprs_as_jax_prints_them():
    """The texts JAX 0.10.2 prints for these programs."""
    assert str(jax.jit(lambda x: dequantize(quantize(x))).trace(X).jaxpr) == (
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:q8[2,3] = call_hi_primitive[_prim=Quantize[{}]] a\n"
        "    c:f32[2,3] = call_hi_primitive[_prim=Dequantize[{}]] b\n"
        "  in (c,) }")
    w = quantize(np.arange(12.0, dtype=np.float32).reshape(3, 4) / 12)
    assert str(jax.make_jaxpr(matmul_quantized)(X, w)) == (
        "{ lambda ; a:f32[2,3] b:q8[3,4]. let\n"
        "    c:f32[2,4] = call_hi_primitive[_prim=MatmulQuantized[{}]] a b\n"
        "  in (c,) }")


def test_traced_code_sees_a_hi_value_as_one_opaque_value():
    with pytest.raises(AttributeError, match="values"):
        jax.jit(lambda q: q.values)(quantize(X))

    def constructed_outside_a_primitive(x):
        scales = jnp.max(jnp.abs(x), axis=-1)
        return RowQuantized(jnp.round(x / scales[..., None]).astype(jnp.int8), scales)
    with pytest.raises(TypeError, match="RowQuantized .* holding traced arrays"):     # JAX: a TypeError too
        jax.jit(constructed_outside_a_primitive)(X)


def test_gradients_of_hi_values_are_of_their_tangent_type():
    w = quantize(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4))
    loss = lambda x, w: jnp.sum(matmul_quantized(x, w) ** 2)
    for grad in (jax.grad(loss, argnums=(0, 1)), jax.jit(jax.grad(loss, argnums=(0, 1)))):
        g_x, g_w = grad(X, w)
        assert jax.typeof(g_w) == ShapedArray((3, 4), np.dtype("float32"))
        dense = np.asarray(dequantize(w))       # the same loss on the dense weights
        np.testing.assert_allclose(g_x, 2 * (X @ dense) @ dense.T, rtol=2e-5)
        np.testing.assert_allclose(g_w, 2 * X.T @ (X @ dense), rtol=2e-5)
    # Straight through quantization: the identity's gradient, eager and jitted.
    for grad in (jax.grad(lambda x: jnp.sum(dequantize(quantize(x)))), jax.jit(jax.grad(lambda x: jnp.sum(dequantize(quantize(x)))))):
        np.testing.assert_array_equal(grad(X), np.ones((2, 3)))
    g_q = jax.grad(lambda q: jnp.sum(dequantize(q) ** 2))(quantize(X))
    np.testing.assert_allclose(g_q, 2 * np.asarray(dequantize(quantize(X))), rtol=1e-6)


def test_the_jax_test_suites_custom_type_with_its_own_tangent_type():
    """A type that is its own tangent type (vspace_zero/vspace_add): jvp through jit, and
    vjp's cotangent a value of the type, as in JAX's hijax tests."""

    @dataclasses.dataclass(frozen=True)
    class Boxed:
        arr: object

    @dataclasses.dataclass(frozen=True)
    class BoxedType(HiType):
        def to_tangent_aval(self):
            return BoxedType()

        def lo_ty(self):
            return [ShapedArray((), np.dtype("float32"))]

        def lower_val(self, v):
            return [v.arr]

        def raise_val(self, arr):
            return Boxed(arr)

        def vspace_zero(self):
            return Boxed(jnp.zeros((), "float32"))

        def vspace_add(self, a, b):
            return add_p.bind(a, b)

    register_hitype(Boxed, lambda _: BoxedType())

    class Box(HiPrimitive):
        def abstract_eval(self, aval):
            return BoxedType(), set()

        def to_lojax(self, x):
            return Boxed(x)

        def jvp(self, primals, tangents):
            return self.bind(*primals), self.bind(*tangents)

        def transpose(self, ct, _):
            return (unbox_p.bind(ct),)

    class Unbox(HiPrimitive):
        def abstract_eval(self, aval):
            return aval.lo_ty()[0], set()

        def to_lojax(self, v):
            return v.arr

        def jvp(self, primals, tangents):
            return self.bind(*primals), self.bind(*tangents)

        def transpose(self, ct, _):
            return (box_p.bind(ct),)

    class Mul(HiPrimitive):
        def abstract_eval(self, a, b):
            return a, set()

        def to_lojax(self, a, b):
            return Boxed(a.arr * b.arr)

        def jvp(self, primals, tangents):
            (a, b), (a_dot, b_dot) = primals, tangents
            return self.bind(a, b), add_p.bind(self.bind(a, b_dot), self.bind(a_dot, b))

        def transpose(self, ct, a, b):
            return (self.bind(ct, b), None) if is_undefined_primal(a) else (None, self.bind(a, ct))

    class Add(HiPrimitive):
        def abstract_eval(self, a, b):
            return a, set()

        def to_lojax(self, a, b):
            return Boxed(a.arr + b.arr)

        def transpose(self, ct, a, b):
            return ct, ct

    box_p, unbox_p, mul_p, add_p = Box("box"), Unbox("unbox"), Mul("my_mul"), Add("my_add")
    one = Boxed(jnp.ones(()))
    roundtrip = jax.jit(lambda v: box_p.bind(unbox_p.bind(v)))
    assert isinstance(roundtrip(one), Boxed) and float(roundtrip(one).arr) == 1.0
    out, out_dot = jax.jvp(roundtrip, (one,), (Boxed(jnp.full((), 3.0)),))
    assert float(out.arr) == 1.0 and isinstance(out_dot, Boxed) and float(out_dot.arr) == 3.0
    y, f_vjp = jax.vjp(jax.jit(lambda v: mul_p.bind(v, v)), Boxed(jnp.full((), 3.0)))
    assert "BoxedType" in str(f_vjp)
    (ct,) = f_vjp(Boxed(jnp.ones(())))
    assert isinstance(ct, Boxed) and float(ct.arr) == 6.0       # d(v*v) = 2v
    assert "box" in str(jax.make_jaxpr(lambda v: mul_p.bind(box_p.bind(unbox_p.bind(v)), v))(one))


def test_compiled_stages_take_and_return_hi_values():
    @dataclasses.dataclass(frozen=True)
    class Pair:
        first: object
        second: object

    @dataclasses.dataclass(frozen=True)
    class PairType(HiType):
        first: ShapedArray
        second: ShapedArray

        def lo_ty(self):
            return [self.first, self.second]

        def lower_val(self, p):
            return [p.first, p.second]

        def raise_val(self, first, second):
            return Pair(first, second)

    register_hitype(Pair, lambda p: PairType(jax.typeof(p.first), jax.typeof(p.second)))
    p = Pair(jnp.zeros((4, 4), "int8"), jnp.ones(4, "float32"))
    lowered = jax.jit(lambda p: p).lower(p)
    assert lowered.as_text()
    out = lowered.compile()(p)
    assert isinstance(out, Pair)
    np.testing.assert_array_equal(out.first, p.first)
    np.testing.assert_array_equal(out.second, p.second)
    assert "PairType(first=ShapedArray(int8[4,4])" in str(jax.jit(lambda p: p).trace(p).jaxpr)
