"""Semantics JAX's documentation relies on: jitted methods, vjp functions as pytrees, lax's
dtype strictness, weak-typed gradients, clamped static indices, XLA's simplifications."""
from functools import partial

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax


class _Scaler:
    def __init__(self, k):
        self.k = k

    @partial(jaxlite.jit, static_argnums=0)
    def scale(self, x):
        return x * self.k

    def __hash__(self):
        return hash(self.k)

    def __eq__(self, other):
        return isinstance(other, _Scaler) and other.k == self.k


def test_jitted_method_binds_a_static_self():
    np.testing.assert_array_equal(_Scaler(2.0).scale(jnp.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(_Scaler(3.0).scale(jnp.ones(2)), [3.0, 3.0])


def test_the_vjp_function_is_a_pytree_that_crosses_jit():
    x = jnp.array([0.5, 1.0])
    _, pullback = jaxlite.vjp(jnp.sin, x)
    assert [np.shape(leaf) for leaf in jaxlite.tree_util.tree_leaves(pullback)] == [(2,)]
    (ct,) = jaxlite.jit(lambda f, c: f(c))(pullback, jnp.ones(2))
    np.testing.assert_allclose(ct, np.cos([0.5, 1.0]), rtol=1e-6)


def _layer(w, x):
    return jnp.tanh(x @ w)


def test_vjp_keeps_the_primal_inputs_it_reads_in_args_res():
    """As JAX's VJP object: args_res holds the arguments the backward pass reads (NotNeeded()
    for the others), opaque_residuals what else it saved; an argument taken out of args_res
    and put back (or replaced) is what the backward pass uses."""
    w, x = jnp.ones((3, 3)), jnp.ones((2, 3))
    y, f_vjp = jaxlite.vjp(_layer, w, x)
    assert f_vjp.args_res[0] is w and f_vjp.args_res[1] is x
    assert [np.shape(r) for r in f_vjp.opaque_residuals] == [(2, 3)]
    assert str(f_vjp.in_tree) == "PyTreeDef((*, *))" and str(f_vjp.out_tree) == "PyTreeDef(*)"
    assert "dot_general" in str(f_vjp.jaxpr)
    _, only_x = jaxlite.vjp(lambda w, x: x * 2.0, w, x)
    assert repr(only_x.args_res) == "[NotNeeded(), NotNeeded()]"
    f_vjp.args_res[0] = 2 * w            # JAX's recorded cotangents for this replacement
    dw, dx = f_vjp(jnp.ones_like(y))
    np.testing.assert_allclose(dw, np.full((3, 3), 0.0197322), rtol=5e-5)
    np.testing.assert_allclose(dx, np.full((2, 3), 0.05919661), rtol=5e-5)
    f_vjp.args_res[0] = type(only_x.args_res[0])()        # NotNeeded(): w dropped
    with pytest.raises(ValueError, match="args_res holds NotNeeded"):
        f_vjp(jnp.ones_like(y))
    with pytest.raises(TypeError, match="called with 2 arguments"):
        only_x(jnp.ones_like(y), 1.0)


def test_a_vjp_with_args_res_restored_inside_jit_matches_grad():
    w, x = jnp.ones((3, 3)), jnp.ones((2, 3))

    def backward(f_vjp, w, ct):
        f_vjp.args_res[0] = w
        return f_vjp(ct)
    _, f_vjp = jaxlite.jit(lambda w, x: jaxlite.vjp(_layer, w, x))(w, x)
    dw, dx = jaxlite.jit(backward)(f_vjp, w, jnp.ones((2, 3)))
    want = jaxlite.grad(lambda w, x: jnp.sum(_layer(w, x)), argnums=(0, 1))(w, x)
    np.testing.assert_allclose(dw, want[0], rtol=1e-5)
    np.testing.assert_allclose(dx, want[1], rtol=1e-5)


@pytest.mark.parametrize("a, b", [(1, 1.0), (np.int32(1), 1.0), (np.ones(2, np.float32), np.ones(2, np.int32)),
                                  (np.ones(3, np.float32), 1), (np.ones(3, np.float16), 1.0),
                                  (np.ones(3, np.int8), 1), (np.ones(3, np.int32), 1.0),
                                  (np.ones(3, np.complex64), 1.0), (1.0, np.ones(3, np.complex64)),
                                  (np.ones(3, np.complex64), 1), (np.ones(3, np.float32), 1j)])
def test_lax_refuses_mixed_dtypes(a, b):
    """A Python scalar is weakly typed but of its own default dtype (int32, float32): lax takes it
    only with an operand of that dtype, as JAX's lax does."""
    for op in (lax.add, lax.mul, lax.max):
        with pytest.raises(TypeError, match=f"lax.{op.__name__} requires arguments to have the same dtypes"):
            op(jnp.asarray(a) if isinstance(a, np.ndarray) else a, b)


@pytest.mark.parametrize("jitted", [True, False])
def test_fwd_and_bwd_split_vjp_into_two_reusable_functions(jitted):
    layer = lambda w, x: jnp.tanh(w @ x)
    w, x = jnp.linspace(-1.0, 1.0, 6).reshape(2, 3), jnp.arange(3.0)
    fwd, bwd = jaxlite.fwd_and_bwd(layer, argnums=(0, 1), jitted=jitted)
    y, residuals = fwd(w, x)
    np.testing.assert_allclose(y, np.tanh(np.asarray(w) @ np.asarray(x)), rtol=2e-5)
    expected = jaxlite.grad(lambda w, x: jnp.sum(layer(w, x)), argnums=(0, 1))(w, x)
    for got, want in zip(bwd(residuals, jnp.ones_like(y)), expected):
        np.testing.assert_allclose(got, want, rtol=2e-5)
    fwd_x, bwd_x = jaxlite.fwd_and_bwd(layer, argnums=1, jitted=jitted)
    np.testing.assert_allclose(bwd_x(fwd_x(w, x)[1], jnp.ones(2)), expected[1], rtol=2e-5)


def test_a_real_scalar_with_a_complex_array_raises_in_lax_and_promotes_in_jnp():
    z = jnp.ones(3, np.complex64)
    with pytest.raises(TypeError, match=r"lax.mul requires .* got complex64, float32. \(Tip: jnp.multiply"):
        jaxlite.jit(lambda z: lax.mul(z, 2.0))(z)
    with pytest.raises(TypeError, match="lax.pow requires"):
        lax.pow(z, 2.0)
    for f in (lambda z: jnp.multiply(z, 2.0) + 1, lambda z: lax.add(z, 1j) * lax.pow(z, 2)):
        assert f(z).dtype == np.complex64
        np.testing.assert_allclose(jaxlite.jit(f)(z), f(z), rtol=1e-6)


def test_lax_takes_python_scalars_of_the_operands_dtype():
    x = jnp.ones(3)
    for out in (lax.add(x, 1.0), lax.mul(2.0, x), jaxlite.jit(lambda x: lax.sub(x, 1.0))(x)):
        assert out.dtype == np.float32 and not out.weak_type
    assert lax.add(jnp.ones(2, np.int32), 1).dtype == np.int32
    assert lax.add(2, 1).weak_type and lax.pow(x, 2).dtype == np.float32


def test_gradients_keep_the_inputs_weak_type():
    assert jaxlite.grad(lambda x: x * 2.0)(3.0).weak_type
    assert not jaxlite.grad(lambda x: x * 2.0)(jnp.float32(3.0)).weak_type
    assert jaxlite.jit(jaxlite.grad(lambda x: x * 2.0))(3.0).weak_type
    _, g = jaxlite.value_and_grad(lambda x: x * x)(3.0)
    assert g.weak_type and float(g) == 6.0
    assert jaxlite.jacfwd(lambda x: x * 2.0)(3.0).weak_type and jaxlite.hessian(lambda x: x ** 3)(3.0).weak_type
    assert jaxlite.jacfwd(lambda x: {"a": x * 2.0})(3.0)["a"].weak_type
    assert not jaxlite.jacfwd(lambda x: x * 2.0)(jnp.float32(3.0)).weak_type


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_static_indices_past_the_end_clamp(jit):
    wrap = jaxlite.jit if jit else (lambda f: f)
    assert int(wrap(lambda x: x[11])(jnp.arange(10))) == 9
    assert int(wrap(lambda x: x[-11])(jnp.arange(10))) == 0
    assert int(wrap(lambda x: x[5, 1])(jnp.arange(6).reshape(2, 3))) == 4
    assert int(jnp.arange(3).at[5].get()) == 2
    np.testing.assert_array_equal(jnp.arange(3).at[5].set(9), [0, 1, 2])
    with pytest.raises(IndexError, match="size 0"):
        jnp.zeros(0)[0]


def test_inverse_pairs_cancel_under_jit():
    assert float(jaxlite.jit(lambda x: jnp.log(jnp.exp(x)))(100.0)) == 100.0
    assert float(jaxlite.jit(jaxlite.grad(lambda x: jnp.log(jnp.exp(x))))(100.0)) == 1.0
    np.testing.assert_allclose(jaxlite.jit(lambda a, b: (a / b) * b)(jnp.arange(3.0), 2.0), [0.0, 1.0, 2.0])


def test_jacobian_and_conv_names():
    assert jaxlite.jacobian is jaxlite.jacrev
    lhs = np.random.RandomState(0).randn(1, 5, 5, 2).astype(np.float32)
    rhs = np.random.RandomState(1).randn(3, 3, 2, 4).astype(np.float32)
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    by_numbers = lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME", dimension_numbers=dn)
    by_strings = lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_array_equal(by_numbers, by_strings)
    nchw = lax.conv(lhs.transpose(0, 3, 1, 2), rhs.transpose(3, 2, 0, 1), (1, 1), "SAME")
    np.testing.assert_allclose(nchw, np.asarray(by_strings).transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)


def test_custom_rules_call_the_primal_as_often_as_jax():
    calls = []

    @jaxlite.custom_jvp
    def f(x):
        calls.append("f")
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("jvp")
        return f(primals[0]), jnp.cos(primals[0]) * tangents[0]

    @jaxlite.custom_vjp
    def h(x):
        calls.append("h")
        return jnp.sin(x)
    h.defvjp(lambda x: (calls.append("fwd"), (h(x), x))[1], lambda r, g: (calls.append("bwd"), (jnp.cos(r) * g,))[1])
    # The counts JAX 0.10 gives.
    for run, expected in [(lambda: f(1.0), ["f"]), (lambda: jaxlite.grad(f)(1.0), ["jvp", "f"]),
                          (lambda: jaxlite.jit(jaxlite.grad(f))(2.0), ["jvp", "f"]),
                          (lambda: jaxlite.jvp(f, (1.0,), (1.0,)), ["jvp", "f"]),
                          (lambda: jaxlite.grad(h)(1.0), ["fwd", "h", "bwd"]),
                          (lambda: jaxlite.jit(jaxlite.grad(h))(2.0), ["fwd", "h", "bwd"])]:
        calls.clear()
        run()
        assert calls == expected


def test_a_custom_jvp_function_may_branch_on_concrete_values():
    @jaxlite.custom_jvp
    def f(x):
        return jnp.sin(x) if x > 0 else jnp.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return f(x), (2.0 if x > 0 else 3.0) * x_dot
    assert float(jaxlite.grad(f)(1.0)) == 2.0 and float(jaxlite.grad(f)(-1.0)) == 3.0
    assert float(f(-1.0)) == pytest.approx(np.cos(-1.0))


def test_linear_transpose_and_effects_barrier():
    transposed = jaxlite.linear_transpose(lambda x, y: 2 * x + y.sum(), 1.0, jnp.ones(3))
    x_ct, y_ct = transposed(1.0)
    assert float(x_ct) == 2.0 and x_ct.weak_type
    np.testing.assert_array_equal(y_ct, [1.0, 1.0, 1.0])
    (ct,) = jaxlite.linear_transpose(lambda x: 2 * x, jaxlite.ShapeDtypeStruct((2,), np.float32))(jnp.ones(2))
    np.testing.assert_array_equal(ct, [2.0, 2.0])
    with pytest.raises(ValueError, match="is it linear"):
        jaxlite.linear_transpose(lambda x: x * x, 1.0)(1.0)
    jaxlite.effects_barrier()


def test_a_primitive_defined_as_jaxs_primitives_tutorial_defines_one():
    """impl only: it runs eagerly; a lowering rule written with jax._src.lib.mlir's hlo
    operations compiles under jit; a rule that builds real MLIR falls back to the impl."""
    from jaxlite._src.lib.mlir.dialects import hlo
    from jaxlite.extend import core
    from jaxlite.interpreters import mlir

    multiply_add_p = core.Primitive("multiply_add_doc")
    multiply_add_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    assert float(multiply_add_p.bind(2.0, 2.0, 10.0)) == 14.0
    multiply_add_p.def_abstract_eval(lambda x, y, z: jaxlite.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(multiply_add_p, lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result],
                           platform="cpu")
    x = jnp.arange(4.0)
    f = jaxlite.jit(lambda x: multiply_add_p.bind(x, x, x))
    np.testing.assert_array_equal(f(x), np.arange(4.0) ** 2 + np.arange(4.0))
    assert "multiply_add_doc" not in f.lower(x).as_text()     # compiled from lax, not the impl

    mlir_only_p = core.Primitive("mlir_only_doc")
    mlir_only_p.def_impl(lambda x: np.asarray(x) * 3)
    mlir_only_p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(mlir_only_p, lambda ctx, x: [ctx.module_context.builder.op(x)])
    np.testing.assert_array_equal(jaxlite.jit(mlir_only_p.bind)(x), 3 * np.arange(4.0))


def test_jax_internal_helpers_the_docs_import():
    from jaxlite._src import api, util
    from jaxlite._src.lax import lax as internal_lax
    assert api.grad is jaxlite.grad and internal_lax.add is lax.add
    assert util.safe_map(lambda a, b: a + b, [1, 2], [3, 4]) == [4, 6]
    assert util.safe_zip("ab", [1, 2]) == [("a", 1), ("b", 2)]
    with pytest.raises(ValueError, match="different lengths"):
        util.safe_map(lambda a, b: a, [1], [1, 2])


def test_jnp_broadcasting_errors_are_jaxs():
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(100,\), \(100, 10\)\]"):
        jnp.multiply(np.ones(100), np.ones((100, 10)))
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)\."):
        jnp.ones(3) + jnp.ones(4)


def test_buffer_pointers_of_arrays_and_refs():
    x = jnp.arange(3.0)
    assert x.unsafe_buffer_pointer() == np.asarray(x).ctypes.data
    ref = jaxlite.new_ref(x)
    assert ref.unsafe_buffer_pointer() == ref[...].unsafe_buffer_pointer()


def test_a_large_eager_normal_draw_runs_compiled_and_equals_the_jitted_one():
    key, shape = jaxlite.random.key(3), (1 << 10, 1 << 10)
    eager = jaxlite.random.normal(key, shape)
    np.testing.assert_array_equal(eager, jaxlite.jit(lambda k: jaxlite.random.normal(k, shape))(key))
    assert abs(float(jnp.std(eager)) - 1.0) < 0.01
