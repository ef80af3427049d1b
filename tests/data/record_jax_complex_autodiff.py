"""Record JAX's complex differentiation convention (run with /work/jaxref/bin/python): the
examples of the autodiff cookbook's "Complex numbers and differentiation" section at fixed
points, and grad/jacfwd/jacrev/hessian/vjp/jvp of non-holomorphic and holomorphic functions,
with the errors JAX raises -> jax_complex_autodiff.json. The functions are shared with the test
(tests/complex_autodiff_cases.py), which calls them with jaxlite."""
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
from complex_autodiff_cases import CASES  # noqa: E402


def encode(value):
    value = np.asarray(value)
    return {"dtype": value.dtype.name, "shape": list(value.shape),
            "real": np.real(value).ravel().tolist(), "imag": np.imag(value).ravel().tolist()}


def main():
    import jax
    import jax.numpy as jnp
    record = {"source": f"jax {jax.__version__}, x64 off", "cases": {}}
    for name, case in CASES.items():
        try:
            out = case(jax, jnp)
            leaves = jax.tree_util.tree_leaves(out)
            record["cases"][name] = {"values": [encode(leaf) for leaf in leaves]}
        except Exception as err:       # the error JAX raises is part of the convention
            record["cases"][name] = {"error": type(err).__name__, "message": str(err)}
    path = pathlib.Path(__file__).parent / "jax_complex_autodiff.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
