"""Sorting primitives: sort (several operands ordered by the first num_keys) and top_k.

Both are permutations of their inputs, so their JVPs gather the tangents with
the permutation, which the primal computation yields when an iota is sorted along.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray, canonicalize_axis
from jaxlite.core.ir import pp_params_rules
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, NUMBER, as_operand, check_dtype
from jaxlite.lax.shapes import broadcasted_iota
from jaxlite.lax.slicing import take_along_axis
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import move_dim


def _sortable(key):
    """Keys numpy orders as XLA:CPU does: ml_dtypes' bfloat16 sorts NaN wrongly, so as float32;
    subnormals of float32, bfloat16 and float64 compare as zeros (XLA:CPU runs with DAZ; float16's
    are float32 normals once widened)."""
    if not dtypes.is_float(key.dtype):
        return key
    wide = key.astype(np.float32) if dtypes.is_bfloat16(key.dtype) else key
    if key.dtype == np.float16:
        return wide
    return np.where(np.abs(wide) < dtypes.finfo(wide.dtype).tiny, wide.dtype.type(0), wide)


def _sort_impl(*operands, dimension, is_stable, num_keys):
    """A stable sort (which satisfies both settings of is_stable); NaNs go last, as in XLA."""
    keys = [_sortable(k) for k in operands[:num_keys]]
    if num_keys == 1:
        order = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        # lexsort sorts by its last key first, along the last axis.
        keys = [np.moveaxis(k, dimension, -1) for k in reversed(keys)]
        order = np.moveaxis(np.lexsort(keys, axis=-1), -1, dimension)
    return [np.take_along_axis(x, order, dimension) for x in operands]


def _sort_aval(*operands, dimension, is_stable, num_keys):
    shapes = {x.shape for x in operands}
    if len(shapes) != 1:
        raise TypeError(f"sort: operands must all have the same shape, got {sorted(shapes)}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands {len(operands)}")
    for position, x in enumerate(operands):
        check_dtype("sort", x, ANY, f"operand {position}")
    canonicalize_axis(dimension, operands[0].ndim, "dimension")
    return list(operands)


sort_p = Primitive("sort", multiple_results=True)
sort_p.def_impl(_sort_impl)
sort_p.def_abstract_eval(_sort_aval)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sort one array, or a sequence of arrays ordered lexicographically by the first num_keys."""
    single = not isinstance(operand, (tuple, list))
    operands = [as_operand(x) for x in ([operand] if single else operand)]
    dimension = canonicalize_axis(dimension, operands[0].ndim, "dimension")
    out = sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable), num_keys=int(num_keys))
    return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    return sort((keys, values), dimension, is_stable, num_keys=1)


def _sort_jvp(primals, tangents, dimension, is_stable, num_keys):
    shape = primals[0].shape
    iota = broadcasted_iota(dtypes.int32, shape, dimension)
    *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                              num_keys=num_keys)
    tangents_out = [t if ad.is_zero(t) else take_along_axis(t, perm, dimension, mode="clip")
                    for t in tangents]
    return outs, tangents_out


def _sort_batch(args, dims, dimension, is_stable, num_keys):
    size = batching.batch_size(args, dims)
    moved = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
    out = sort_p.bind(*moved, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return out, [0] * len(out)


ad.jvp_rules[sort_p] = _sort_jvp
batching.batch_rules[sort_p] = _sort_batch


# ---------------------------------------------------------------- top_k

def _top_k_impl(operand, k):
    # A stable sort of the negated keys keeps the lower index first among ties, as XLA does.
    order = np.lexsort(_descending_keys(operand), axis=-1)[..., :k]
    return [np.take_along_axis(operand, order, -1), order.astype(np.int32)]


def _descending_keys(x):
    """lexsort keys, the most significant last."""
    if dtypes.is_bool(x.dtype):
        return [~x]
    if dtypes.is_unsigned(x.dtype):
        return [dtypes.iinfo(x.dtype).max - x]
    if dtypes.is_int(x.dtype):
        return [-x.astype(np.int64)]
    # NaN ranks above +inf in top_k (as in XLA); bfloat16 and float16 sort as float32.
    nan = np.isnan(x)
    return [np.where(nan, 0, -x.astype(np.float32 if x.itemsize < 4 else x.dtype)), ~nan]


def _top_k_aval(operand, k):
    check_dtype("top_k", operand, NUMBER)
    if operand.ndim == 0 or not 0 <= k <= operand.shape[-1]:
        raise ValueError(f"top_k: k={k} must be between 0 and the size of the last axis of an "
                         f"operand of shape {operand.shape}")
    shape = operand.shape[:-1] + (k,)
    return [ShapedArray(shape, operand.dtype, operand.weak_type), ShapedArray(shape, dtypes.int32)]


top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.def_impl(_top_k_impl)
top_k_p.def_abstract_eval(_top_k_aval)
# As JAX prints it: jaxlite's top_k works on the last axis, JAX's names it.
pp_params_rules[top_k_p] = lambda eqn: [("axis", eqn.inputs[0].aval.ndim - 1), ("k", eqn.params["k"])]


def top_k(operand, k, *, axis=-1):
    """The k largest entries along `axis` (the last by default), and their indices,
    largest first."""
    from jaxlite.lax.shapes import transpose
    operand = as_operand(operand)
    axis = canonicalize_axis(axis, operand.ndim)
    last = operand.ndim - 1
    if axis == last:
        return tuple(top_k_p.bind(operand, k=int(k)))
    order = tuple(d for d in range(operand.ndim) if d != axis) + (axis,)
    inverse = tuple(int(i) for i in np.argsort(order))
    return tuple(transpose(x, inverse) for x in top_k_p.bind(transpose(operand, order), k=int(k)))


def _top_k_jvp(primals, tangents, k):
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k)
    t_values = take_along_axis(t, indices, x.ndim - 1, mode="clip")
    return [values, indices], [t_values, ad.Zero(ad.tangent_aval(indices.aval))]


def _top_k_batch(args, dims, k):
    (x,), (d,) = args, dims
    return top_k_p.bind(move_dim(x, d, 0), k=k), [0, 0]


ad.jvp_rules[top_k_p] = _top_k_jvp
batching.batch_rules[top_k_p] = _top_k_batch
