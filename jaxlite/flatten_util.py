"""jaxlite.flatten_util: a pytree of arrays as one flat vector, and back (as jax.flatten_util)."""
import numpy as _np

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.core import dtypes as _dtypes
from jaxlite.core.tree_util import tree_flatten as _tree_flatten
from jaxlite.core.tree_util import tree_unflatten as _tree_unflatten


def ravel_pytree(pytree):
    """(flat 1-D array of every leaf, in tree order, promoted to one dtype; function that rebuilds the tree).

    The rebuilding function casts each piece back to its leaf's dtype and shape;
    it is linear, so grad and vmap pass through it.
    """
    leaves, treedef = _tree_flatten(pytree)
    leaves = [_jnp.asarray(x) for x in leaves]
    shapes = [x.shape for x in leaves]
    leaf_dtypes = [x.dtype for x in leaves]
    dtype = _dtypes.result_type(*leaf_dtypes) if leaves else _dtypes.default_float_dtype()
    flat = _jnp.concatenate([_jnp.ravel(x).astype(dtype) for x in leaves]) if leaves else _jnp.zeros(0, dtype)
    sizes = [int(_np.prod(s, dtype=int)) for s in shapes]
    offsets = _np.cumsum([0] + sizes)

    def unravel(vector):
        vector = _jnp.asarray(vector)
        if vector.shape != flat.shape:
            raise ValueError(f"the unravel function expects an array of shape {flat.shape}, got {vector.shape}")
        pieces = [_lax.slice(vector, (int(start),), (int(start) + size,)).reshape(shape).astype(leaf_dtype)
                  for start, size, shape, leaf_dtype in zip(offsets, sizes, shapes, leaf_dtypes)]
        return _tree_unflatten(treedef, pieces)

    return flat, unravel
