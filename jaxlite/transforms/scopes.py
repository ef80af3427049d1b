"""named_scope and named_call: JAX's names for parts of a program.

JAX attaches them to the compiled program's metadata, for profilers; jaxlite's
compiled code has no such metadata, so they change nothing but are checked as
JAX checks them, and code that uses them runs unchanged.
"""
import contextlib
import functools


@contextlib.contextmanager
def named_scope(name):
    """A context that names the operations inside it (for profilers)."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


def named_call(fun, *, name=None):
    """fun, with its operations named `name` (default: fun's name) for profilers."""
    if name is not None and not isinstance(name, str):
        raise TypeError("named_call name argument must be a string.")

    @functools.wraps(fun)
    def named(*args, **kwargs):
        return fun(*args, **kwargs)
    return named
