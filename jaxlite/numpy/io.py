"""Saving, loading and printing: numpy's functions on the concrete values of arrays.

As in JAX, fromfile and fromiter raise: reading a file or consuming an iterator is a side
effect that jit would run once at trace time, silently, so users call numpy and convert.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.numpy.creation import asarray

save = np.save
savez = np.savez
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions


def load(file, *args, **kwargs):
    """np.load, with arrays of a dtype jaxlite holds returned as jaxlite arrays."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype != object:
        return asarray(out)
    return out


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    return asarray(np.frombuffer(buffer, dtype=dtypes.as_dtype(dtype), count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    return asarray(np.fromstring(string, dtype=dtypes.as_dtype(dtype), count=count, sep=sep))


def _impure(name, source):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe for use "
            f"with jit and other transformations. Use jnp.asarray(np.{name}(...)) instead, "
            f"outside transformed functions: under jit np.{name} would consume the {source} "
            "once, while tracing.")
    fn.__name__ = name
    return fn


fromfile = _impure("fromfile", "file")
fromiter = _impure("fromiter", "iterable")


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    return repr(asarray(arr))


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    return np.array2string(np.asarray(a), max_line_width=max_line_width, precision=precision,
                           suppress_small=suppress_small)
