"""Jacobians and Hessians: vmap of jvp over the input basis, or of vjp over the output basis.

The Jacobian of a pytree function is a pytree of pytrees: for each output leaf
of shape S, a tree shaped like the differentiated arguments whose leaf of shape
T holds the block of shape S + T.
"""
import numpy as np

from jaxlite.core import dtypes, errors
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.transforms import ad
from jaxlite.transforms.batching import vmap


def _standard_basis(leaves):
    """One batch of unit vectors spanning all leaves: leaf j gets shape (N,) + its shape, and
    its weak type, so a Jacobian keeps the weak type of its input as JAX's does."""
    sizes = [int(np.prod(x.shape)) for x in leaves]
    identity = np.eye(sum(sizes))
    offsets = np.cumsum([0] + sizes)
    return [Array(identity[:, lo:lo + size].reshape((len(identity),) + tuple(x.shape)).astype(x.dtype), x.weak_type)
            for x, lo, size in zip(leaves, offsets, sizes)]


def _chunks(x, leaves, axis):
    """Consecutive slices of x along `axis`, one per leaf, as long as the leaf's size."""
    from jaxlite import lax
    chunks, offset = [], 0
    for leaf in leaves:
        size = int(np.prod(leaf.shape))
        chunks.append(lax.slice_in_dim(x, offset, offset + size, axis=axis))
        offset += size
    return chunks


def _reshape(x, shape):
    from jaxlite import lax
    return lax.reshape(x, shape)


def _assemble(blocks, out_tree, in_tree):
    """blocks[i][j]: the block of output leaf i and input leaf j."""
    return tree_unflatten(out_tree, [tree_unflatten(in_tree, row) for row in blocks])


def _dynamic_args(fun, argnums, args, kwargs):
    """fun of one value (the argument, or the tuple of arguments for tuple argnums)."""
    partial, chosen = ad.select_args(fun, argnums, args, kwargs)
    if isinstance(argnums, int):
        return partial, chosen[0]
    return lambda dyn: partial(*dyn), chosen


def _check_jacfwd_inputs(leaves, holomorphic):
    if holomorphic:
        ad.check_holomorphic_dtypes("jacfwd", leaves, "inputs")
        return
    for leaf in leaves:
        if not dtypes.is_float(leaf.dtype):
            raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                            f"np.floating), but got {leaf.dtype.name}. For holomorphic differentiation, "
                            f"pass holomorphic=True. For differentiation of non-holomorphic functions "
                            f"involving complex inputs or integer inputs, use jaxlite.jvp directly.")


def _check_jacrev_inputs(leaves, holomorphic, allow_int):
    if holomorphic:
        ad.check_holomorphic_dtypes("jacrev", leaves, "inputs")
        return
    for leaf in leaves:
        if not allow_int and not dtypes.is_inexact(leaf.dtype):
            raise TypeError(f"jacrev requires real- or complex-valued inputs (input dtype that is a "
                            f"sub-dtype of np.inexact), but got {leaf.dtype.name}. If you want to use "
                            f"Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def _check_jacrev_outputs(leaves, holomorphic):
    if holomorphic:
        ad.check_holomorphic_dtypes("jacrev", leaves, "outputs")
        return
    for leaf in leaves:
        if not dtypes.is_float(leaf.dtype):
            raise ad.real_output_error("jacrev", leaf.dtype)


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by forward mode: one JVP per input element, vectorized with vmap."""
    errors.check_callable(fun, "jacfwd")
    def jacobian(*args, **kwargs):
        partial, dyn = _dynamic_args(fun, argnums, args, kwargs)
        flat_in, in_tree = tree_flatten(dyn)
        flat_in = [as_array_argument(x) for x in flat_in]
        _check_jacfwd_inputs(flat_in, holomorphic)

        def pushforward(*basis):
            out, out_dot = ad.jvp(partial, (dyn,), (tree_unflatten(in_tree, basis),))
            return (out_dot[0], out[1]) if has_aux else (out_dot, None)

        columns, aux = vmap(pushforward, out_axes=(-1, None))(*_standard_basis(flat_in))
        flat_columns, out_tree = tree_flatten(columns)
        blocks = [[_reshape(chunk, column.shape[:-1] + tuple(x.shape))
                   for chunk, x in zip(_chunks(column, flat_in, column.ndim - 1), flat_in)]
                  for column in flat_columns]
        jac = _assemble(blocks, out_tree, in_tree)
        return (jac, aux) if has_aux else jac
    return jacobian


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian by reverse mode: one VJP per output element, vectorized with vmap. For a
    real function of complex inputs its rows are JAX's conjugate covectors, as grad's."""
    errors.check_callable(fun, "jacrev")
    def jacobian(*args, **kwargs):
        partial, dyn = _dynamic_args(fun, argnums, args, kwargs)
        flat_in, in_tree = tree_flatten(dyn)
        _check_jacrev_inputs([as_array_argument(x) for x in flat_in], holomorphic, allow_int)
        out, vjp_fun, *aux = ad.vjp(partial, dyn, has_aux=has_aux)
        flat_out, out_tree = tree_flatten(out)
        _check_jacrev_outputs(flat_out, holomorphic)
        basis = tree_unflatten(out_tree, _standard_basis(flat_out))
        rows = tree_flatten(vmap(vjp_fun)(basis)[0])[0]
        per_input = [[_reshape(chunk, tuple(y.shape) + tuple(row.shape[1:]))
                      for chunk, y in zip(_chunks(row, flat_out, 0), flat_out)] for row in rows]
        blocks = [[per_input[j][i] for j in range(len(rows))] for i in range(len(flat_out))]
        jac = _assemble(blocks, out_tree, in_tree)
        return (jac, aux[0]) if has_aux else jac
    return jacobian


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Forward-over-reverse: jacfwd of jacrev."""
    errors.check_callable(fun, "hessian")
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)
