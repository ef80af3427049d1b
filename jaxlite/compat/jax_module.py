"""The module `import jax` gives after jaxlite.install_as_jax(): jaxlite's API under JAX's names.

Attributes come from jaxlite itself, except the modules JAX names differently
(`jax.core`), and the version, which is the JAX API version jaxlite follows, so
libraries' version checks compare against the API they will find.
"""
import importlib as _importlib

import jaxlite as _jaxlite
from jaxlite.compat import JAX_API_VERSION as _JAX_API_VERSION
from jaxlite.compat import _RENAMED

__version__ = _JAX_API_VERSION
__version_info__ = tuple(int(part) for part in _JAX_API_VERSION.split("."))
__jaxlite_version__ = _jaxlite.__version__
# A package, so that `import jax.numpy` looks for submodules (the alias finder supplies them).
__path__ = []


def __getattr__(name):
    if f"jax.{name}" in _RENAMED:
        return _importlib.import_module(f"jax.{name}")
    try:
        return getattr(_jaxlite, name)
    except AttributeError:
        raise AttributeError(f"module 'jax' (jaxlite) has no attribute {name!r}") from None


def __dir__():
    return sorted(set(dir(_jaxlite)) | {"__version__", "__version_info__", "__jaxlite_version__"})
