"""Regenerates jax_public_names.json: the public names of JAX's namespaces.

Run only where jax is installed (the reference venv), never from the test suite:
    /work/jaxref/bin/python tests/data/generate_jax_public_names.py
"""
import importlib
import json
import pathlib
import pkgutil

import jax

NAMESPACES = ["jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.random",
              "jax.tree_util", "jax.tree", "jax.nn", "jax.nn.initializers", "jax.scipy", "jax.ops",
              "jax.image", "jax.dtypes", "jax.flatten_util", "jax.sharding", "jax.debug",
              "jax.typing", "jax.extend.random"]


def scipy_submodules():
    import jax.scipy
    return [info.name for info in pkgutil.walk_packages(jax.scipy.__path__, "jax.scipy.")]


def public_names(module_name):
    module = importlib.import_module(module_name)
    return sorted(name for name in dir(module) if not name.startswith("_"))


def main():
    names = {name: public_names(name) for name in NAMESPACES + scipy_submodules()}
    record = {"jax_version": jax.__version__, "namespaces": names}
    out = pathlib.Path(__file__).with_name("jax_public_names.json")
    out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
