"""Records jax.lax.reduce_precision on edge-case values into jax_reduce_precision.npz (run
with /work/jaxref/bin/python; the cases are shared with tests/test_lax_composites.py)."""
import sys

import numpy as np

# (exponent bits, mantissa bits): float16, bfloat16, fp8 e4m3 and e5m2 shapes, no-ops, extremes.
CASES = [(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (3, 0), (8, 0)]


def values():
    rng = np.random.default_rng(0)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65520.0, 6e-5, 6e-8, 1e-40, 3.4e38,
             1.0009765625, 1.00048828125]   # the last two: ties of the float16 rounding
    return np.concatenate([rng.normal(size=20) * 10.0 ** rng.integers(-8, 8, 20), edges]).astype(np.float32)


def cases(lax, bfloat16):
    x = values()
    calls = {f"float32 to e{e}m{m}": (lambda e=e, m=m: lax.reduce_precision(x, e, m)) for e, m in CASES}
    calls["bfloat16 to e5m4"] = lambda: lax.reduce_precision(x.astype(bfloat16), 5, 4)
    with np.errstate(over="ignore"):
        as_half = x.astype(np.float16)
    calls["float16 to e4m3"] = lambda: lax.reduce_precision(as_half, 4, 3)
    return calls


if __name__ == "__main__":
    import jax
    results = {name: np.asarray(call()).astype(np.float32) for name, call in cases(jax.lax, jax.numpy.bfloat16).items()}
    np.savez(sys.argv[1], **results)
