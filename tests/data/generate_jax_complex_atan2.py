"""Records JAX's complex atan2 (run with the reference venv: /work/jaxref/bin/python)."""
import json, numpy as np, jax, jax.numpy as jnp
from jax import lax
rng = np.random.default_rng(7)
y = (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(np.complex64)
x = (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(np.complex64)
y[:4] = [1, 0, 1j, 1 + 1j]; x[:4] = [0, -1, 1j, 1 - 1j]
out = np.asarray(lax.atan2(y, x))
t_y = (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(np.complex64)
t_x = (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(np.complex64)
_, tan = jax.jvp(lax.atan2, (jnp.asarray(y), jnp.asarray(x)), (jnp.asarray(t_y), jnp.asarray(t_x)))
pairs = lambda z: [[float(v.real), float(v.imag)] for v in np.asarray(z)]
json.dump({"source": f"jax {jax.__version__}: lax.atan2(y, x) of complex64 and its jvp",
           "y": pairs(y), "x": pairs(x), "t_y": pairs(t_y), "t_x": pairs(t_x),
           "out": pairs(out), "jvp": pairs(tan)}, open(__file__.replace("generate_", "").replace(".py", ".json"), "w"), indent=0)

