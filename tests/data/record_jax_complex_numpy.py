"""Record jnp on complex values (run with /work/jaxref/bin/python) -> jax_complex_numpy.json:
the functions of tests/complex_numpy_cases.py, whose results the test compares with jaxlite's."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from complex_numpy_cases import CASES  # noqa: E402
from record_jax_complex_autodiff import encode  # noqa: E402


def main():
    import jax
    import jax.numpy as jnp
    from jax import random
    record = {"source": f"jax {jax.__version__}, x64 off", "cases": {}}
    for name, case in CASES.items():
        leaves = jax.tree_util.tree_leaves(case(jnp, random))
        record["cases"][name] = {"values": [encode(leaf) for leaf in leaves]}
    path = pathlib.Path(__file__).parent / "jax_complex_numpy.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
