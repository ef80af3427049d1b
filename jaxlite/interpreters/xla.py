"""jax.interpreters.xla's registries, which TensorFlow Probability (under distrax) extends for its
ndarray subclass. jaxlite reads no such registry: it takes every ndarray subclass as an ndarray."""
import numpy as _np

from jaxlite.core import dtypes as _dtypes

# type -> function giving the canonical (32-bit unless x64) array for a value of that type.
canonicalize_dtype_handlers = {_np.ndarray: lambda x: _np.asarray(x, _dtypes.canonicalize_dtype(x.dtype))}
