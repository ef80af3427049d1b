"""dir() for the public packages: Python binds every imported submodule as an attribute of its
package, so implementation modules (jaxlite.numpy.creation, jaxlite.lower, ...) would show up in
dir() and tab completion, some only after first use. A package's module-level __dir__ (PEP 562)
built here shows its API and its public subpackages only; the modules stay importable by path."""
from types import ModuleType


def dir_hiding_submodules(namespace, public_submodules, lazy_names=(), unlisted=()):
    """`lazy_names` (submodules, ml_dtypes' scalar types) are shown before their first use (the
    package's __getattr__ makes them then);
    `unlisted` names stay usable but out of dir(): jaxlite's own helpers in a JAX namespace."""
    package = namespace["__name__"]

    def is_implementation_module(name, value):
        return (isinstance(value, ModuleType) and value.__name__ == f"{package}.{name}"
                and name not in public_submodules)

    def __dir__():
        return sorted({name for name, value in namespace.items()
                       if not is_implementation_module(name, value) and name not in unlisted}
                      | set(lazy_names))
    return __dir__


def dir_of_all(namespace):
    """__dir__ for a public module that is one file: its __all__ and dunders, not its imports."""
    def __dir__():
        return sorted(set(namespace["__all__"]) | {name for name in namespace
                                                    if name.startswith("__")})
    return __dir__
