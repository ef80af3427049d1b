"""Record jax.lax.reduce_precision on fixed inputs (their bit patterns) for tests/test_reduce_precision.py.

Run with the reference JAX: /work/jaxref/bin/python tests/data/record_jax_reduce_precision_bits.py
"""
import json
from pathlib import Path
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from jax import lax
import ml_dtypes

rng = np.random.default_rng(15)
CASES = [(1, 0), (2, 1), (3, 2), (4, 3), (5, 2), (5, 10), (8, 7), (8, 23), (11, 52), (6, 20), (11, 10), (4, 30)]
out = {}
for name, bits_dtype in (("float16", np.uint16), ("bfloat16", np.uint16), ("float32", np.uint32), ("float64", np.uint64)):
    dtype = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    info = ml_dtypes.finfo(dtype) if name == "bfloat16" else np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(info.max), float(info.tiny), float(info.tiny) / 2,
               float(info.smallest_subnormal), 2.5, 3.5, -2.5, 1.5, 65504.0, 65520.0, 1e-5, 6.1e-5, 3.0e38]
    with np.errstate(over="ignore"):
        values = np.array(special + list(rng.standard_normal(40) * 10.0 ** rng.integers(-12, 12, 40)), dtype)
    bits = values.view(bits_dtype)
    cases = []
    for e, m in CASES:
        result = np.asarray(lax.reduce_precision(jnp.asarray(values), exponent_bits=e, mantissa_bits=m))
        assert result.dtype == values.dtype
        cases.append({"exponent_bits": e, "mantissa_bits": m, "bits": [int(b) for b in result.view(bits_dtype)]})
    out[name] = {"input_bits": [int(b) for b in bits], "cases": cases}
json.dump({"jax_version": jax.__version__, "reduce_precision": out},
          open(Path(__file__).with_name("jax_reduce_precision_bits.json"), "w"))
print("ok", {k: len(v["input_bits"]) for k, v in out.items()})
