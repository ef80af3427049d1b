"""Run code written for JAX on jaxlite: `jaxlite.install_as_jax()` makes `import jax` give jaxlite.

The opt-in is explicit and process-wide. After it, `import jax` and `import jax.X.Y`
resolve to jaxlite's modules of the same name (jax.numpy is jaxlite.numpy, ...), so
libraries that import jax themselves (optax, flax, equinox, ...) run on jaxlite,
unmodified. The few JAX modules whose names jaxlite uses for something else are
mapped explicitly (`jax.core` is the public core API, not jaxlite's internal IR
package). A `jax.X` jaxlite does not provide raises ModuleNotFoundError naming it.

It refuses when real JAX is already imported: two frameworks would then share one
name and arrays from one would reach the other.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
import types

# The JAX release whose public API jaxlite follows; `jax.__version__` reports it.
JAX_API_VERSION = "0.10.2"

# JAX module names that map to a jaxlite module of another name.
_RENAMED = {
    "jax": "jaxlite.compat.jax_module",
    "jax.core": "jaxlite.compat.core",
}


def _target_name(fullname):
    if fullname in _RENAMED:
        return _RENAMED[fullname]
    if fullname.startswith("jax._src.") or fullname == "jax._src":
        return "jaxlite.compat._src" + fullname[len("jax._src"):]
    return "jaxlite" + fullname[len("jax"):]


class _ExistingModuleLoader(importlib.abc.Loader):
    """Hands importlib an already-imported jaxlite module and leaves its own __spec__ alone."""

    def __init__(self, module):
        self.module = module
        self.original_spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.original_spec


class _JaxAliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jax" and not fullname.startswith("jax."):
            return None
        target_name = _target_name(fullname)
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as error:
            if error.name != target_name:
                raise
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: jaxlite (installed as jax by jaxlite.install_as_jax) "
                f"does not provide it", name=fullname) from None
        return importlib.machinery.ModuleSpec(fullname, _ExistingModuleLoader(module),
                                              is_package=hasattr(module, "__path__"))


_FINDER = _JaxAliasFinder()


def install_as_jax():
    """Make `import jax` (and every `jax.*` submodule) import jaxlite, for this process.

    Call it before anything imports jax. Raises RuntimeError if real JAX is already
    imported. Calling it again is harmless. `jax.__version__` then gives the JAX API
    version jaxlite follows (JAX_API_VERSION); `jax.__jaxlite_version__` says it is jaxlite.
    """
    if _FINDER in sys.meta_path:
        return sys.modules["jax"]
    real_jax = [name for name in ("jax", "jaxlib") if name in sys.modules]
    if real_jax:
        raise RuntimeError(
            f"jaxlite.install_as_jax(): {' and '.join(real_jax)} (the real JAX) is already imported in "
            f"this process, from {getattr(sys.modules[real_jax[0]], '__file__', '?')}. Call "
            "install_as_jax() before anything imports jax, or use real JAX alone.")
    sys.meta_path.insert(0, _FINDER)
    return importlib.import_module("jax")


def is_installed_as_jax():
    """Whether install_as_jax() has been called in this process."""
    return _FINDER in sys.meta_path
