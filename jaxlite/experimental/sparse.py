"""jaxlite.experimental.sparse: BCOO, a sparse array of coordinates and values (a subset of
jax.experimental.sparse: construction, conversion to and from dense, products with dense arrays).

Products go through the dense form; this is for code that accepts sparse inputs,
not for large sparse computations.
"""
import numpy as np

from jaxlite import numpy as jnp
from jaxlite.core.tree_util import register_pytree_node


class BCOO:
    """A sparse array: `data[i]` is the value at `indices[i]` (one row of coordinates per stored value)."""

    def __init__(self, args, *, shape):
        self.data, self.indices = jnp.asarray(args[0]), jnp.asarray(args[1])
        self.shape = tuple(shape)

    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    nse = property(lambda self: self.data.shape[0])

    @classmethod
    def fromdense(cls, mat):
        mat = np.asarray(mat)
        indices = np.argwhere(mat != 0).astype(np.int32)
        return cls((jnp.asarray(mat[tuple(indices.T)]), jnp.asarray(indices)), shape=mat.shape)

    @classmethod
    def from_scipy_sparse(cls, mat):
        coo = mat.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1).astype(np.int32)
        return cls((jnp.asarray(coo.data), jnp.asarray(indices)), shape=coo.shape)

    def todense(self):
        coords = tuple(self.indices[:, axis] for axis in range(self.ndim))
        return jnp.zeros(self.shape, self.dtype).at[coords].add(self.data)

    def __matmul__(self, other):
        return self.todense() @ other

    def __rmatmul__(self, other):
        return other @ self.todense()

    def __repr__(self):
        return f"BCOO({self.dtype}{list(self.shape)}, nse={self.nse})"


register_pytree_node(BCOO, lambda m: ((m.data, m.indices), m.shape),
                     lambda shape, children: BCOO(children, shape=shape))


def todense(mat):
    return mat.todense() if isinstance(mat, BCOO) else jnp.asarray(mat)
