"""ml_dtypes' narrow types (float8/6/4, int4/2/1) against JAX: promotion, casting, eager
arithmetic, jit and vmap (tests/data/record_jax_narrow_dtypes.py recorded the values)."""
import json
import pathlib

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core import dtypes

REF = json.loads((pathlib.Path(__file__).parent / "data" / "jax_narrow_dtypes.json").read_text())


def promoted(a, b):
    try:
        if b in ("int", "float"):
            return jnp.result_type(jnp.zeros((), a), 1 if b == "int" else 1.0).name
        return jnp.promote_types(a, b).name
    except dtypes.TypePromotionError as err:
        assert "no available implicit dtype promotion path" in str(err)
        return "TypePromotionError"


def test_promotion_is_jaxs():
    # JaxRuntimeError: XLA on CPU cannot make a float6 array to combine with a scalar.
    recorded = {pair: want for pair, want in REF["promotion"].items() if want != "JaxRuntimeError"}
    got = {pair: promoted(*pair.split(",")) for pair in recorded}
    wrong = {pair: (got[pair], want) for pair, want in recorded.items() if got[pair] != want}
    assert not wrong, f"(jaxlite, jax): {wrong}"


def inputs(name):
    values = REF["floats"] if name.startswith("float") else REF["ints"]
    x = jnp.asarray(values, jnp.float32).astype(name)
    return x, x[::-1]


def operations(x, y):
    ops = {"astype_f32": x.astype(jnp.float32), "add": (x + y).astype(jnp.float32),
           "mul": (x * y).astype(jnp.float32), "mul_scalar": (x * 3).astype(jnp.float32)}
    if dtypes.is_float(x.dtype):
        ops.update(div=(x / (jnp.abs(y) + 1)).astype(jnp.float32), exp=jnp.exp(x).astype(jnp.float32),
                   sqrt=jnp.sqrt(jnp.abs(x)).astype(jnp.float32))
    return ops


# XLA on CPU does not keep int1 values in ml_dtypes' range [-1, 0] (it shows 1s): not compared.
@pytest.mark.parametrize("name", sorted(set(REF["arithmetic"]) - {"int1"}))
def test_eager_and_jit_arithmetic_is_jaxs(name):
    x, y = inputs(name)
    assert x.dtype == np.dtype(getattr(jnp, name)) and (x + y).dtype == x.dtype
    for got in (operations(x, y), jaxlite.jit(operations)(x, y)):
        for op, want in REF["arithmetic"][name].items():
            np.testing.assert_array_equal(np.asarray(got[op], np.float64), want, err_msg=f"{name} {op}")


def test_jaxpr_names_vmap_and_gradient():
    x = jnp.asarray([0.5, 1.5, -2.0], jnp.float8_e4m3fn)
    assert "f8_e4m3fn[3]" in str(jaxlite.make_jaxpr(lambda a: a * a)(x))
    assert "i4[2]" in str(jaxlite.make_jaxpr(lambda a: a + a)(jnp.asarray([1, 2], jnp.int4)))
    rows = jnp.stack([x, x * 2])
    np.testing.assert_array_equal(jaxlite.vmap(lambda r: r * r)(rows).astype(np.float32),
                                  np.stack([(r * r).astype(np.float32) for r in rows]))
    grad = jaxlite.grad(lambda a: (a * a).sum().astype(jnp.float32))(x)
    assert grad.dtype == x.dtype
    np.testing.assert_array_equal(grad.astype(np.float32), [1.0, 3.0, -4.0])


def test_dtype_queries():
    assert jnp.finfo(jnp.float8_e4m3fn).max == 448
    assert (jnp.iinfo(jnp.int4).min, jnp.iinfo(jnp.uint4).max) == (-8, 15)
    assert jnp.issubdtype(jnp.float8_e5m2, jnp.floating) and jnp.issubdtype(jnp.int4, jnp.signedinteger)
    assert jnp.issubdtype(jnp.uint2, jnp.unsignedinteger) and not jnp.issubdtype(jnp.int4, jnp.floating)
    assert jnp.int4(9).dtype == np.dtype(jnp.int4) and int(jnp.int4(9)) == -7
