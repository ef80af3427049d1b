"""Records jax.extend.random's implementations' outputs (run with /work/jaxref/bin/python)."""
import json

import jax
import jax.extend.random as xr
import jax.numpy as jnp
import numpy as np

R = jax.random
record = {"source": f"jax {jax.__version__}: jax.extend.random"}
for impl in ("rbg", "unsafe_rbg"):
    key = R.key(3, impl=impl)
    record[impl] = {
        "seed_3": R.key_data(key).tolist(),
        "split_3": R.key_data(R.split(key, 3)).tolist(),
        "fold_in_5": R.key_data(R.fold_in(key, 5)).tolist(),
        "bits_2x3": R.bits(key, (2, 3)).tolist(),
        "uniform_4": np.asarray(R.uniform(key, (4,))).view(np.uint32).tolist(),
        "randint_5": R.randint(R.split(key)[1], (5,), 0, 100).tolist(),
        "seeds_0_1_2": R.key_data(xr.random_seed(jnp.arange(3), getattr(xr, f"{impl}_prng_impl"))).tolist(),
    }
counts = jnp.arange(7, dtype=jnp.uint32).reshape(7, 1) * jnp.uint32(2654435761)
record["threefry_2x32"] = {"key": [5, 3], "counts": counts.tolist(),
                           "out": xr.threefry_2x32(jnp.array([5, 3], jnp.uint32), counts).tolist()}
record["threefry_seed_3"] = xr.threefry_prng_impl.seed(jnp.int32(3)).tolist()
with open(__file__.replace("generate_", "").replace(".py", ".json"), "w") as f:
    json.dump(record, f)
