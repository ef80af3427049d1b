"""Errors of the differentiation API: same classes and messages as JAX."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp


def test_grad_of_non_scalar_output():
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions. "
                                        r"Output had shape: \(3,\)"):
        jaxlite.grad(lambda x: x * 2)(jnp.ones(3))


def test_grad_of_integer_output():
    with pytest.raises(TypeError, match="grad requires real-valued outputs .* but got int32"):
        jaxlite.grad(lambda x: jnp.asarray(1))(1.0)


def test_grad_of_integer_input():
    message = ("grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
               "np.inexact), but got int32. If you want to use Boolean- or integer-valued inputs, "
               "use vjp or set allow_int to True.")
    with pytest.raises(TypeError) as info:
        jaxlite.grad(lambda x: x * 2.0)(jnp.asarray(np.int32(3)))
    assert str(info.value) == message


def test_allow_int_gives_zero_gradient_of_the_input_dtype():
    g = jaxlite.grad(lambda x, n: x * n.astype(np.float32), argnums=(0, 1), allow_int=True)(
        2.0, jnp.asarray(np.int32(3)))
    assert float(g[0]) == 3.0 and g[1].dtype == np.int32 and int(g[1]) == 0


@pytest.mark.parametrize("argnums", [2, (0, 3), -3])
def test_argnums_out_of_range(argnums):
    with pytest.raises(ValueError, match=f"argnums={argnums}".replace("(", r"\(").replace(")", r"\)")):
        jaxlite.grad(lambda x, y: x * y, argnums=argnums)(1.0, 2.0)
    with pytest.raises(TypeError, match="positional arguments"):   # JAX's class, too
        jaxlite.value_and_grad(lambda x, y: x * y, argnums=argnums)(1.0, 2.0)


def test_argnums_must_be_ints():
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        jaxlite.grad(lambda x: x, argnums="x")


def test_has_aux_requires_a_pair():
    # TypeError, as JAX; the message says what came back instead of naming a tracer class.
    with pytest.raises(TypeError, match=r"return a pair \(output, aux\), but it returned a single array f32\[\]"):
        jaxlite.grad(lambda x: x, has_aux=True)(1.0)


def test_vjp_cotangent_mismatches():
    _, vjp_fun = jaxlite.vjp(lambda x: (x, x), jnp.ones(2))
    with pytest.raises(TypeError, match="Tree structure of cotangent input"):
        vjp_fun(jnp.ones(2))
    with pytest.raises(ValueError, match=r"cotangent f32\[3\] does not match the primal output f32\[2\]"):
        vjp_fun((jnp.ones(3), jnp.ones(2)))


def test_missing_transpose_rule_names_the_primitive():
    from jaxlite.core.primitive import Primitive
    from jaxlite.transforms import ad
    double_p = Primitive("double_without_transpose")
    double_p.def_impl(lambda x: 2 * x)
    double_p.def_abstract_eval(lambda x: x)
    ad.jvp_rules[double_p] = lambda primals, tangents: (double_p.bind(*primals), double_p.bind(*tangents))
    assert float(jaxlite.jvp(double_p.bind, (1.0,), (1.0,))[1]) == 2.0
    with pytest.raises(NotImplementedError, match="Transpose rule .* for 'double_without_transpose'"):
        jaxlite.grad(double_p.bind)(1.0)


def test_jacobians_require_float_inputs():
    # As JAX: jacrev also takes complex inputs (a real function's rows are conjugate covectors).
    for jacobian, kinds in ((jaxlite.jacfwd, "real-valued"), (jaxlite.jacrev, "real- or complex-valued")):
        with pytest.raises(TypeError, match=f"requires {kinds} inputs"):
            jacobian(lambda x: x)(jnp.asarray(np.int32(1)))


def test_escaped_linearize_tracer_is_reported():
    leaked = []

    def leak(x):
        leaked.append(x)
        return x * 2.0

    jaxlite.grad(leak)(1.0)
    with pytest.raises(jaxlite.core.errors.UnexpectedTracerError):
        leaked[0] + 1.0


def test_python_scalar_outputs_and_constant_functions():
    assert float(jaxlite.grad(lambda x: 2.0)(1.0)) == 0.0
    assert float(jaxlite.grad(lambda x: x)(1.0)) == 1.0
    out, vjp_fun = jaxlite.vjp(lambda x: (x, 3.0), 1.0)
    assert float(out[1]) == 3.0 and float(vjp_fun((2.0, 1.0))[0]) == 2.0


def test_grad_of_a_tuple_output_suggests_has_aux():
    with pytest.raises(TypeError, match=r"Output was a tuple.*has_aux=True"):
        jaxlite.grad(lambda x: (x * 2, x))(1.0)
    with pytest.raises(TypeError, match=r"Output was a list.*has_aux=True"):
        jaxlite.jit(jaxlite.value_and_grad(lambda x: [x * 2]))(1.0)


def test_float_of_a_differentiated_value_is_refused():
    # float() would drop the derivative silently (gradient 0 instead of 2x); JAX refuses it.
    for transform in (jaxlite.grad, lambda f: jaxlite.vmap(jaxlite.grad(f))):
        with pytest.raises(jaxlite.errors.ConcretizationTypeError, match="stop_gradient"):
            transform(lambda x: x * float(x))(jnp.ones(()) if transform is jaxlite.grad else jnp.ones(2))
    with pytest.raises(jaxlite.errors.ConcretizationTypeError, match="differentiated"):
        jaxlite.jvp(lambda x: x * float(x), (2.0,), (1.0,))


def test_constant_conversions_under_grad_still_work():
    # bool/int/item lose no derivative, and stop_gradient marks a float as a constant.
    assert float(jaxlite.grad(lambda x: x * float(jaxlite.lax.stop_gradient(x)))(3.0)) == 3.0
    assert float(jaxlite.grad(lambda x: x * int(x) * bool(x))(2.0)) == 2.0
    assert float(jaxlite.grad(lambda x: x * x.item())(3.0)) == 3.0
