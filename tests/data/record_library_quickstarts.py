"""Record the quickstarts' numbers under real JAX (run with a Python that has JAX and the libraries):

    /path/to/jax-python tests/data/record_library_quickstarts.py

writes tests/data/library_quickstarts.json, with the versions it used.
"""
import importlib.metadata
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from library_quickstarts import QUICKSTARTS  # noqa: E402

LIBRARIES = ["jax", "optax", "equinox", "flax", "chex", "distrax", "numpyro", "blackjax", "jaxtyping"]

if __name__ == "__main__":
    record = {"versions": {name: importlib.metadata.version(name) for name in LIBRARIES},
              "results": {name: run() for name, run in QUICKSTARTS.items()}}
    (HERE / "library_quickstarts.json").write_text(json.dumps(record, indent=1) + "\n")
