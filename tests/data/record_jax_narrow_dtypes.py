"""Record JAX 0.10.2's promotion and arithmetic for ml_dtypes' narrow types (run with
/work/jaxref/bin/python). Writes tests/data/jax_narrow_dtypes.json."""
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

NARROW = ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
          "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
          "int1", "int2", "int4", "uint1", "uint2", "uint4"]
OTHERS = ["bool", "int8", "uint8", "int32", "bfloat16", "float16", "float32"]

promotion = {}
for a in NARROW:
    for b in NARROW + OTHERS:
        try:
            promotion[f"{a},{b}"] = jnp.promote_types(a, b).name
        except Exception as err:          # TypePromotionError
            promotion[f"{a},{b}"] = type(err).__name__
    for scalar, name in [(1, "int"), (1.0, "float")]:
        try:
            promotion[f"{a},{name}"] = jnp.result_type(jnp.zeros((), a), scalar).name
        except Exception as err:
            promotion[f"{a},{name}"] = type(err).__name__

FLOATS = [0.0, 0.3, -1.7, 2.5, 3.0, 100.0, 1e-3, 7.9]
INTS = [0, 1, -1, 3, 7, -8, 5, 2]
arithmetic = {}
for name in NARROW:
    try:
        x = jnp.asarray(FLOATS if name.startswith("float") else INTS, jnp.float32).astype(name)
        y = x[::-1]
    except Exception as err:              # JAX on CPU cannot hold float4/float6 arrays
        continue
    ops = {"astype_f32": x.astype(jnp.float32), "add": (x + y).astype(jnp.float32),
           "mul": (x * y).astype(jnp.float32), "mul_scalar": (x * 3).astype(jnp.float32)}
    if name.startswith("float"):
        ops.update(div=(x / (jnp.abs(y) + 1)).astype(jnp.float32), exp=jnp.exp(x).astype(jnp.float32),
                   sqrt=jnp.sqrt(jnp.abs(x)).astype(jnp.float32))
    arithmetic[name] = {op: np.asarray(v, np.float64).tolist() for op, v in ops.items()}
path = pathlib.Path(__file__).parent / "jax_narrow_dtypes.json"
path.write_text(json.dumps({"jax_version": jax.__version__, "floats": FLOATS, "ints": INTS,
                            "promotion": promotion, "arithmetic": arithmetic}, indent=0))
print(len(promotion), sorted(arithmetic))
