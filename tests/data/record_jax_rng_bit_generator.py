"""Record lax.rng_bit_generator's outputs from JAX 0.10.2 (run with /work/jaxref/bin/python).

Writes tests/data/jax_rng_bit_generator.json: per case the key, shape, dtype and algorithm,
and JAX's new key and bits (as Python ints)."""
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)
KEYS = [[1, 2, 3, 4], [0x9E3779B9, 7, 0xFFFFFFFF, 5], [3, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFF], [0, 0, 0, 0]]
SHAPES = [(), (1,), (5,), (2, 3), (3, 5), (4, 1, 2), (3, 3, 1)]
DTYPES = ["uint32", "uint8", "uint16", "uint64"]

cases = []
for key in KEYS:
    for shape in SHAPES:
        for dtype in DTYPES:
            for algorithm in lax.RandomAlgorithm:
                new_key, bits = lax.rng_bit_generator(jnp.array(key, jnp.uint32), shape, getattr(jnp, dtype), algorithm)
                cases.append({"key": key, "shape": list(shape), "dtype": dtype, "algorithm": algorithm.name,
                              "new_key": np.asarray(new_key).tolist(), "bits": np.asarray(bits).ravel().tolist()})
path = pathlib.Path(__file__).parent / "jax_rng_bit_generator.json"
path.write_text(json.dumps({"jax_version": jax.__version__, "cases": cases}))
print(len(cases), "cases")
