"""Records JAX 0.10.2's float8 arithmetic under jit, as bit patterns, for tests/test_float8_native.py
(run with /work/jaxref/bin/python; writes jax_float8_jit.json). The cases are shared with the test."""
import json
import pathlib

import numpy as np


def inputs(dtype_name):
    import ml_dtypes
    dtype = getattr(ml_dtypes, dtype_name)
    rng = np.random.default_rng(1)
    x = rng.uniform(-6, 6, 512).astype(np.float32)
    wide = np.concatenate([rng.normal(size=256) * 10.0 ** rng.integers(-5, 6, 256),
                           [0.0, -0.0, np.inf, -np.inf, np.nan, 1e9, -1e9, 460.0, 464.0, 57344.0, 61440.0]])
    return x.astype(dtype), x[::-1].copy().astype(dtype), wide.astype(np.float32)


def cases(xp, dtype_name):
    """Each case by its name: a function of (x, y, wide) in the namespace xp."""
    dtype = getattr(xp, dtype_name)
    return {
        "add": lambda x, y, w: x + y,
        "mul": lambda x, y, w: x * y,
        "div": lambda x, y, w: x / (xp.abs(y) + 1),
        "chain": lambda x, y, w: xp.tanh(x) * y + x * 0.5,
        "exp_sqrt": lambda x, y, w: xp.exp(x) + xp.sqrt(xp.abs(y)),
        "max_where": lambda x, y, w: xp.where(x > y, xp.maximum(x, -y), -x),
        "from_float32": lambda x, y, w: w.astype(dtype),
        "to_bfloat16": lambda x, y, w: (x * y).astype(xp.bfloat16),
    }


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint8 if a.dtype.itemsize == 1 else np.uint16).tolist()


if __name__ == "__main__":
    import jax
    import jax.numpy as jnp
    results = {}
    for name in ("float8_e4m3fn", "float8_e5m2"):
        x, y, w = inputs(name)
        results[name] = {case: _bits(jax.jit(f)(x, y, w)) for case, f in cases(jnp, name).items()}
    path = pathlib.Path(__file__).parent / "jax_float8_jit.json"
    path.write_text(json.dumps({"jax_version": jax.__version__, "results": results}))
    print({k: len(v) for k, v in results.items()})
