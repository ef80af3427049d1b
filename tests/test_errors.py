"""Each tracer-misuse error, triggered the way a user would trigger it."""
import os

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core.errors import (ConcretizationTypeError, TracerArrayConversionError,
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)


def relu_with_python_if(x):
    if x > 0:  # the user's line the message must point at
        return x
    return 0.0 * x


def test_python_if_on_traced_value():
    with pytest.raises(TracerBoolConversionError) as info:
        jaxlite.make_jaxpr(relu_with_python_if)(1.0)
    message = str(info.value)
    assert "test_errors.py" in message and "relu_with_python_if" in message
    assert "lax.cond" in message and "jnp.where" in message and "static_argnums" in message


def test_python_if_works_under_eager_jvp():
    assert float(jaxlite.jvp(relu_with_python_if, (2.0,), (1.0,))[1]) == 1.0


def test_traced_value_as_python_int():
    def make_range(n):
        return jnp.zeros(3)[: int(n)]
    with pytest.raises(TracerIntegerConversionError, match="(?s)integer conversion.*an input.*static_argnums"):
        jaxlite.make_jaxpr(make_range)(2)


def test_traced_value_as_float():
    with pytest.raises(ConcretizationTypeError, match="f32\\[\\]"):
        jaxlite.make_jaxpr(lambda x: float(x) + 1)(1.0)


def test_arange_with_traced_length():
    with pytest.raises(ConcretizationTypeError, match="stop argument of arange"):
        jaxlite.make_jaxpr(lambda n: jnp.arange(0, n))(5)


def test_numpy_function_on_tracer():
    with pytest.raises(TracerArrayConversionError, match="jaxlite.numpy"):
        jaxlite.make_jaxpr(lambda x: np.sin(x))(np.ones(3, np.float32))


def test_leaked_tracer_used_later():
    leaked = []

    def remember(x):
        y = x * 2
        leaked.append(y)
        return y

    jaxlite.make_jaxpr(remember)(1.0)
    with pytest.raises(UnexpectedTracerError, match="(?s)test_errors.py.*escaped its transformation"):
        leaked[0] + 1


def test_leaked_tracer_used_in_another_trace():
    leaked = []
    jaxlite.vmap(lambda x: leaked.append(x) or x)(jnp.ones(3))
    with pytest.raises(UnexpectedTracerError, match="vmap"):
        jaxlite.make_jaxpr(lambda y: y + leaked[0])(1.0)


def test_tracers_are_not_hashable():
    with pytest.raises(TypeError, match="unhashable"):
        jaxlite.make_jaxpr(lambda x: {x: 1})(1.0)


def test_shape_mismatch_names_the_operation_and_both_shapes():
    # JAX raises TypeError here (numpy's ValueError is for np.broadcast_shapes itself).
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)"):
        jnp.ones(3) + jnp.ones(4)
    with pytest.raises(TypeError, match=r"multiply got incompatible shapes.*\(2, 3\), \(4, 5\)"):
        jaxlite.jit(lambda a, b: a * b)(jnp.ones((2, 3)), jnp.ones((4, 5)))


def test_wrong_axis_is_named():
    with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
        jnp.ones((2, 3)).sum(axis=2)


def test_invalid_argument_type():
    with pytest.raises(TypeError, match="not a valid jaxlite type"):
        jaxlite.make_jaxpr(lambda s: s)("text")


def test_item_assignment_points_to_at_set():
    def set_first(x):
        x[0] = 1.0
        return x
    for fn in (set_first, jaxlite.jit(set_first)):
        with pytest.raises(TypeError, match=r"immutable.*x = x\.at\[idx\]\.set\(y\)"):
            fn(jnp.ones(3))


def test_item_of_a_traced_value():
    with pytest.raises(ConcretizationTypeError, match=r"jit\(<lambda>\)"):
        jaxlite.jit(lambda x: x * x.item())(2.0)


def test_reshape_to_a_wrong_size_names_both_shapes():
    with pytest.raises(TypeError, match=r"shape \(2, 3\) \(size 6\) into shape \(4, 4\) \(size 16\)"):
        jaxlite.jit(lambda x: x.reshape(4, 4))(jnp.ones((2, 3)))
    with pytest.raises(TypeError, match=r"into shape \(4, -1\) because .* \(4\) does not evenly divide 6"):
        jnp.ones((2, 3)).reshape(4, -1)


def returns_a_string(x):
    return "done"


def test_invalid_output_names_the_users_function():
    with pytest.raises(TypeError, match=r"returns_a_string at .*test_errors.py:\d+ returned a value of type str"):
        jaxlite.jit(returns_a_string)(1.0)


def test_vmap_out_axes_out_of_bounds():
    with pytest.raises(ValueError, match=r"out_axes=3 is out of bounds for an output of rank 2"):
        jaxlite.vmap(lambda x: x, out_axes=3)(jnp.ones((3, 4)))
    assert jaxlite.vmap(lambda x: x, out_axes=-1)(jnp.ones((3, 4))).shape == (4, 3)


def test_errors_namespace_matches_jax():
    with pytest.raises(jaxlite.errors.TracerBoolConversionError):
        jaxlite.jit(relu_with_python_if)(1.0)


@pytest.mark.parametrize("name", ["jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian"])
def test_transform_of_a_value_instead_of_a_function(name):
    # The usual slip: grad(f(x)) for grad(f)(x). JAX raises this TypeError at once.
    with pytest.raises(TypeError, match=rf"Expected a callable value, got 1.0: {name} takes .* {name}\(f\)\(x\)"):
        getattr(jaxlite, name)(1.0)


def test_precision_is_a_submodule():
    from jaxlite.precision import bf16, int8
    for transform in (bf16, int8):
        with pytest.raises(TypeError, match="Expected a callable value"):
            transform(jnp.ones((2, 2)))


def loss_with_a_shape_bug(w, x):
    return jnp.sum(x @ w + jnp.ones(5))  # the line the traceback must end on


@pytest.mark.parametrize("filtering", ["auto", "off"])
def test_traceback_ends_on_the_users_line(filtering):
    import traceback
    jaxlite.config.update("jax_traceback_filtering", filtering)
    try:
        with pytest.raises(ValueError, match="Incompatible shapes for broadcasting") as info:   # as JAX
            jaxlite.jit(jaxlite.grad(loss_with_a_shape_bug))(jnp.ones((3, 4)), jnp.ones((2, 3)))
    finally:
        jaxlite.config.update("jax_traceback_filtering", "off")
    frames = traceback.extract_tb(info.value.__traceback__)
    package = os.path.dirname(jaxlite.__file__) + os.sep
    internal = [f for f in frames if f.filename.startswith(package)]
    if filtering == "off":
        assert frames[-1].filename.endswith("util.py") and len(internal) > 5
        return
    assert frames[-1].name == "loss_with_a_shape_bug" and frames[-1].filename.endswith("test_errors.py")
    assert len(internal) <= 2  # the call into jit and the one frame that re-raises
    assert "JAX_TRACEBACK_FILTERING=off" in info.value.__notes__[0]


def test_vmap_size_mismatch_names_each_argument():
    with pytest.raises(ValueError, match=r"\* axis 0 of argument x\['a'\] of type f32\[3\] has size 3\n"
                                         r"  \* axis 0 of argument y of type f32\[4\] has size 4"):
        jaxlite.vmap(lambda x, y: x["a"] + y)({"a": jnp.ones(3)}, jnp.ones(4))


def test_scan_length_that_disagrees_with_xs():
    with pytest.raises(ValueError, match="`length` argument of 4 which disagrees with the leading axis size 3"):
        jaxlite.lax.scan(lambda c, x: (c, x), 0.0, jnp.ones(3), length=4)


def test_static_argnums_past_the_parameters():
    # Silently ignored before: the argument stayed traced and failed later, elsewhere.
    with pytest.raises(ValueError, match=r"static_argnums=\(3,\), but only accepts 1 positional"):
        jaxlite.jit(lambda x: x, static_argnums=3)
    assert float(jaxlite.jit(lambda x, *rest: x * rest[-1], static_argnums=2)(2.0, 1.0, 3)) == 6.0


def test_dot_general_axes_out_of_range():
    # Was an IndexError from inside the shape rule.
    with pytest.raises(TypeError, match=r"lhs dimension numbers .* got lhs_contracting \(2,\) and lhs_batch \(\)"):
        jaxlite.lax.dot_general(jnp.ones((2, 3)), jnp.ones((3, 4)), (((2,), (0,)), ((), ())))
    with pytest.raises(TypeError, match=r"rhs dimension numbers to be distinct"):
        jaxlite.lax.dot_general(jnp.ones((2, 3)), jnp.ones((3, 3)), (((1,), (0,)), ((0,), (0,))))


# ---------------------------------------------------------------- allocations the machine cannot hold

@pytest.mark.parametrize("program", [
    lambda: jnp.zeros((10 ** 6, 10 ** 6)).sum(),
    lambda: jnp.ones((10 ** 5, 10 ** 5), jnp.int32) + 1,
    lambda: jaxlite.jit(lambda x: jnp.outer(x, x))(jnp.ones(10 ** 6)),
    # A product's result is materialized (jnp.outer, a broadcast multiply, fuses into the sum
    # and then really runs 10^12 steps, in JAX too).
    lambda: jaxlite.jit(lambda x: (jnp.matmul(x[:, None], x[None, :]) + 1).sum())(jnp.ones(10 ** 6)),
    lambda: jaxlite.vmap(lambda x: jnp.outer(x, x))(jnp.ones((10, 10 ** 5))),
], ids=["eager zeros", "eager int32", "jit output", "jit intermediate", "vmap"])
def test_impossible_allocation_raises_resource_exhausted_at_once(program):
    """As JAX: RESOURCE_EXHAUSTED naming the size, at once (the kernel would overcommit the
    allocation and the first pass over it thrash for hours)."""
    import time
    start = time.perf_counter()
    with pytest.raises(jaxlite.errors.JaxRuntimeError, match=r"RESOURCE_EXHAUSTED: Out of memory allocating \d+ bytes"):
        program()
    assert time.perf_counter() - start < 30
