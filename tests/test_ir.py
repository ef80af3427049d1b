import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import ShapeDtypeStruct, eval_jaxpr, typecheck
from jaxlite.core.errors import JaxprTypeError
from jaxlite.core.ir import Eqn, Jaxpr, Var


def test_make_jaxpr_single_equation():
    text = str(jaxlite.make_jaxpr(jnp.sin)(np.ones(3, np.float32)))
    assert text == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"


def test_make_jaxpr_python_scalar_becomes_literal():
    text = str(jaxlite.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(np.ones(3, np.float32)))
    # As JAX prints it: short jaxprs on one line, equations separated by "; ".
    assert text == "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }"


def test_make_jaxpr_reduction_params_and_multiple_outputs():
    text = str(jaxlite.make_jaxpr(lambda x: (x.sum(axis=0), -x, x * 3.0))(np.ones((2, 3), np.float32)))
    assert text == ("{ lambda ; a:f32[2,3]. let\n"
                    "    b:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a\n"
                    "    c:f32[2,3] = neg a\n"
                    "    d:f32[2,3] = mul a 3.0:f32[]\n"
                    "  in (b, c, d) }")


def test_closed_over_array_becomes_constvar():
    w = jnp.ones((2,), jnp.float32)
    closed = jaxlite.make_jaxpr(lambda x: x + w)(np.ones(2, np.float32))
    assert str(closed) == "{ lambda a:f32[2]; b:f32[2]. let c:f32[2] = add b a in (c,) }"
    assert closed.consts[0] is w


def test_static_argnums():
    closed = jaxlite.make_jaxpr(lambda x, n: x * n, static_argnums=1)(np.ones(2, np.float32), 3)
    assert "mul a 3.0:f32[]" in str(closed)


def test_eval_jaxpr_reproduces_the_function():
    f = lambda x, y: jnp.exp(x) @ y + 1.0
    x, y = np.ones((2, 3), np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    closed = jaxlite.make_jaxpr(f)(x, y)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x, y)
    np.testing.assert_allclose(out, f(x, y), rtol=1e-6)
    typecheck(closed)


def test_eval_shape():
    out = jaxlite.eval_shape(lambda x: {"s": x.sum(1), "t": x.T},
                             ShapeDtypeStruct((4, 5), np.float32))
    assert out["s"] == ShapeDtypeStruct((4,), np.float32)
    assert out["t"].shape == (5, 4)


def test_typecheck_names_the_broken_equation():
    closed = jaxlite.make_jaxpr(lambda x: jnp.sin(x) + 1.0)(np.ones(3, np.float32))
    jaxpr = closed.jaxpr
    sin_eqn = jaxpr.eqns[0]
    wrong = Var(sin_eqn.outputs[0].aval.update(shape=(4,)))
    broken = Jaxpr(jaxpr.constvars, jaxpr.invars,
                   [sin_eqn.replace(outputs=[wrong])] + jaxpr.eqns[1:], jaxpr.outvars)
    with pytest.raises(JaxprTypeError, match=r"equation 0 `b:f32\[4\] = sin a`.*f32\[3\]"):
        typecheck(broken)


def test_typecheck_catches_use_before_definition():
    closed = jaxlite.make_jaxpr(lambda x: jnp.cos(jnp.sin(x)))(np.ones(3, np.float32))
    jaxpr = closed.jaxpr
    swapped = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.eqns[::-1], jaxpr.outvars)
    with pytest.raises(JaxprTypeError, match="equation 0.*used before it is defined"):
        typecheck(swapped)


def test_typecheck_rejects_wrong_input_dtype():
    closed = jaxlite.make_jaxpr(lambda x: lax.sin(x))(np.ones(3, np.float32))
    jaxpr = closed.jaxpr
    int_var = Var(jaxlite.core.ShapedArray((3,), np.int32))
    eqn = Eqn(jaxpr.eqns[0].primitive, [int_var], {}, jaxpr.eqns[0].outputs)
    with pytest.raises(JaxprTypeError, match="sin does not accept dtype int32"):
        typecheck(Jaxpr([], [int_var], [eqn], jaxpr.outvars))


def test_many_variables_get_distinct_names():
    def chain(x):
        for _ in range(30):
            x = jnp.sin(x)
        return x
    text = str(jaxlite.make_jaxpr(chain)(1.0))
    assert "ba:f32[] = sin z" in text and "be:f32[] = sin bd" in text
