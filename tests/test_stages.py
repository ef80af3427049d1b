"""Ahead-of-time stages: jit(f).trace -> Traced, .lower() -> Lowered, .compile() -> Compiled."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import ShapeDtypeStruct


def _scale(x, y):
    return {"out": jnp.sin(x) * y}


def test_trace_lower_compile_call_matches_jit():
    x = jnp.arange(3.0)
    traced = jaxlite.jit(_scale).trace(x, 2.0)
    assert isinstance(traced, jaxlite.stages.Traced)
    assert [str(a) for a in traced.jaxpr.in_avals] == ["float32[3]", "~float32[]"]
    assert traced.out_info == {"out": ShapeDtypeStruct((3,), np.float32)}
    lowered = traced.lower()
    assert isinstance(lowered, jaxlite.stages.Lowered) and "sin" in lowered.as_text()
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(x, 3.0)["out"], jaxlite.jit(_scale)(x, 3.0)["out"])
    args, kwargs = compiled.input_shardings
    assert len(args) == 2 and kwargs == {} and args[0] == compiled.output_shardings["out"]


def test_cost_analysis_counts_the_planned_steps():
    a = ShapeDtypeStruct((8, 16), np.float32)
    b = ShapeDtypeStruct((16, 4), np.float32)
    cost = jaxlite.jit(lambda a, b: a @ b).lower(a, b).cost_analysis()
    assert cost["flops"] == 2 * 8 * 16 * 4
    assert cost["bytes accessed"] == 4 * (8 * 16 + 16 * 4 + 8 * 4)
    memory = jaxlite.jit(lambda a, b: a @ b).lower(a, b).compile().memory_analysis()
    assert (memory.argument_size_in_bytes, memory.output_size_in_bytes) == (4 * (8 * 16 + 16 * 4), 4 * 8 * 4)


def test_compiled_refuses_other_argument_types():
    compiled = jaxlite.jit(lambda v: v + 1).lower(ShapeDtypeStruct((2,), np.float32)).compile()
    np.testing.assert_array_equal(compiled(jnp.ones(2)), [2.0, 2.0])
    with pytest.raises(TypeError, match="compiled with f32\\[2\\] and called with f32\\[4\\]"):
        compiled(jnp.ones(4))


def test_static_arguments_are_baked_in():
    traced = jaxlite.jit(lambda x, n: x * n, static_argnums=1).trace(jnp.ones(2), 3)
    np.testing.assert_array_equal(traced.lower().compile()(jnp.ones(2)), [3.0, 3.0])


def test_shape_dtype_struct_like_and_typeof():
    x = jnp.arange(4.0).reshape(2, 2)
    assert ShapeDtypeStruct.like(x) == ShapeDtypeStruct((2, 2), np.float32)
    assert str(jaxlite.typeof(2.0)) == "~float32[]" and repr(jaxlite.typeof(x)) == "ShapedArray(float32[2,2])"
    shapes = jaxlite.eval_shape(lambda a: a.sum(0), ShapeDtypeStruct((5, 3), np.int32))
    assert shapes == ShapeDtypeStruct((3,), np.int32)
