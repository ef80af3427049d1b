"""ragged_dot and ragged_dot_general: products whose rows (or contraction) split into groups.

The ragged dimension of lhs is cut into consecutive groups of `group_sizes` rows; group g
meets its own slice of rhs (rhs's group dimension) or, when the ragged dimension is
contracted, makes its own output slice. Computed as one batched dot_general of the lhs
masked to each group in turn (the groups' rows zeroed elsewhere), then summed over the
groups where each row belongs to one: the cost of g dense products, as XLA's CPU rewrite.
"""
from typing import NamedTuple, Sequence

import numpy as np

from jaxlite.core import dtypes
from jaxlite.lax.base import as_operand, composite_primitive
from jaxlite.lax.cumulative import cumsum
from jaxlite.lax.dot import dot_general
from jaxlite.lax.elementwise import bitwise_and, ge, lt, select_n, sub
from jaxlite.lax.reductions import reduce_sum
from jaxlite.lax.shapes import broadcast_in_dim, broadcasted_iota, transpose


class RaggedDotDimensionNumbers(NamedTuple):
    """dot_dimension_numbers ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), the
    lhs dimension that is ragged, and the rhs dimension indexing the groups (none when the
    ragged dimension is contracted or a batch dimension)."""
    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]


def _canonical(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers.dot_dimension_numbers
    as_ints = lambda dims: tuple(int(d) for d in dims)
    return RaggedDotDimensionNumbers(((as_ints(lc), as_ints(rc)), (as_ints(lb), as_ints(rb))),
                                     as_ints(dimension_numbers.lhs_ragged_dimensions),
                                     as_ints(dimension_numbers.rhs_group_dimensions))


def _group_masks(group_sizes, length):
    """masks[g, r]: row r of the ragged dimension lies in group g."""
    ends = cumsum(group_sizes, 0)
    starts = sub(ends, group_sizes)
    count = group_sizes.shape[0]
    rows = broadcasted_iota(group_sizes.dtype, (count, length), 1)
    return bitwise_and(ge(rows, broadcast_in_dim(starts, (count, length), (0,))),
                       lt(rows, broadcast_in_dim(ends, (count, length), (0,))))


def _masked_per_group(lhs, group_sizes, ragged):
    """lhs repeated along a new leading group axis, zero outside each group's rows."""
    count = group_sizes.shape[0]
    shape = (count,) + lhs.shape
    masks = broadcast_in_dim(_group_masks(group_sizes, lhs.shape[ragged]), shape, (0, ragged + 1))
    zeros = broadcast_in_dim(np.zeros((), lhs.dtype), shape, ())
    return select_n(masks, zeros, broadcast_in_dim(lhs, shape, tuple(range(1, lhs.ndim + 1))))


def _shift(dims):
    return tuple(d + 1 for d in dims)


def _ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                        preferred_element_type=None, group_offset=None):
    (lc, rc), (lb, rb) = ragged_dot_dimension_numbers.dot_dimension_numbers
    (ragged,) = ragged_dot_dimension_numbers.lhs_ragged_dimensions
    dot = lambda a, b, dims: dot_general(a, b, dims, preferred_element_type=preferred_element_type)
    if ragged in lb:
        return dot(lhs, rhs, ((lc, rc), (lb, rb)))
    masked = _masked_per_group(lhs, group_sizes, ragged)
    if ragged in lc:     # each group's partial contraction is its own output slice, groups first
        out = dot(masked, rhs, ((_shift(lc), rc), (_shift(lb), rb)))
        order = (len(lb),) + tuple(d for d in range(out.ndim) if d != len(lb))
        return transpose(out, order)
    (group,) = ragged_dot_dimension_numbers.rhs_group_dimensions
    out = dot(masked, rhs, ((_shift(lc), rc), ((0,) + _shift(lb), (group,) + rb)))
    return reduce_sum(out, (0,))


ragged_dot_general_p = composite_primitive("ragged_dot_general", _ragged_dot_general)


def _check(lhs, rhs, group_sizes, dimension_numbers):
    if not dtypes.is_int(group_sizes.dtype):
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of np.integer.")
    if len(dimension_numbers.lhs_ragged_dimensions) != 1:
        raise TypeError(f"ragged_dot_general takes one lhs ragged dimension, got "
                        f"{dimension_numbers.lhs_ragged_dimensions}")
    (ragged,) = dimension_numbers.lhs_ragged_dimensions
    (lc, _), (lb, _) = dimension_numbers.dot_dimension_numbers
    groups = dimension_numbers.rhs_group_dimensions
    if not 0 <= ragged < lhs.ndim:
        raise TypeError(f"ragged_dot_general: lhs ragged dimension {ragged} is out of range for a "
                        f"lhs of rank {lhs.ndim}")
    in_contraction_or_batch = ragged in lc or ragged in lb
    if len(groups) != (0 if in_contraction_or_batch else 1):
        raise TypeError("ragged_dot_general: rhs_group_dimensions must name one rhs dimension when the "
                        "ragged dimension is not contracted or batched, and none otherwise, got "
                        f"{tuple(groups)}")
    count = rhs.shape[groups[0]] if groups else group_sizes.shape[-1]
    if group_sizes.shape != (count,):
        raise TypeError(f"expected group_sizes to have shape ({count},), got {group_sizes.shape}.")


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """dot_general whose lhs ragged dimension is cut into groups of group_sizes (see the module)."""
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported (as in JAX on CPU)")
    lhs, rhs, group_sizes = as_operand(lhs), as_operand(rhs), as_operand(group_sizes)
    dimension_numbers = _canonical(ragged_dot_dimension_numbers)
    _check(lhs, rhs, group_sizes, dimension_numbers)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
    return ragged_dot_general_p.bind(lhs, rhs, group_sizes, ragged_dot_dimension_numbers=dimension_numbers,
                                     precision=precision, preferred_element_type=preferred_element_type,
                                     group_offset=None)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None, group_offset=None,
               out_sharding=None):
    """lhs[m, k] rows in consecutive groups of group_sizes[g], each times its rhs[g, k, n]."""
    dimension_numbers = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    return ragged_dot_general(lhs, rhs, group_sizes, dimension_numbers, precision,
                              preferred_element_type, group_offset, out_sharding)
