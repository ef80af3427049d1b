"""scaled_dot: a product of block-scaled operands (microscaling formats such as MXFP8).

Each operand is multiplied by its scale, repeated along the contracting dimensions in blocks,
before the contraction. As XLA's CPU expansion does, operands and scales are first rounded to
bfloat16 and multiplied there, and the contraction accumulates in float32 and rounds once to
the result type. It is a composition of primitives, so jit fuses it and vmap batches it
(JAX's own scaled_dot has no derivative rules; this one is differentiable as its parts are).
"""
from jaxlite.core import dtypes
from jaxlite.lax.base import as_operand
from jaxlite.lax.dot import dot_general
from jaxlite.lax.elementwise import convert_element_type, mul
from jaxlite.lax.shapes import broadcast_in_dim, reshape

__all__ = ["scaled_dot"]


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
    """(lhs * lhs_scale) @ (rhs * rhs_scale) by lax.dot_general's dimension_numbers, in
    preferred_element_type (bfloat16 by default). A scale has its operand's shape except along
    the contracting dimensions, which it divides into blocks of at least two elements."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    if dimension_numbers is None:
        dimension_numbers = _default_dimension_numbers(lhs.ndim)
    (lc, rc), (lb, rb) = dimension_numbers
    dimension_numbers = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    lhs_scale = None if lhs_scale is None else as_operand(lhs_scale)
    rhs_scale = None if rhs_scale is None else as_operand(rhs_scale)
    _check_shapes(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers)
    out_dtype = dtypes.canonicalize_dtype(
        dtypes.bfloat16 if preferred_element_type is None else preferred_element_type)
    return dot_general(_scaled(lhs, lhs_scale, lc), _scaled(rhs, rhs_scale, rc), dimension_numbers,
                       preferred_element_type=out_dtype)


def _default_dimension_numbers(ndim):
    """The trailing matrix product, every leading axis a batch axis (JAX's default)."""
    if ndim < 2:
        raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
    batch = tuple(range(ndim - 2))
    return ((ndim - 1,), (ndim - 2,)), (batch, batch)


def _scaled(operand, scale, contracting):
    operand = convert_element_type(operand, dtypes.bfloat16)
    if scale is None:
        return operand
    return mul(operand, _repeat_blocks(convert_element_type(scale, dtypes.bfloat16),
                                       operand.shape, contracting))


def _repeat_blocks(scale, shape, contracting):
    """scale repeated blockwise along the contracting axes up to the operand's shape."""
    expanded, dims = [], []
    for axis, size in enumerate(scale.shape):
        if axis in contracting and size != shape[axis]:
            expanded += [size, shape[axis] // size]
            dims.append(len(expanded) - 2)
        else:
            expanded.append(size)
            dims.append(len(expanded) - 1)
    return reshape(broadcast_in_dim(scale, tuple(expanded), tuple(dims)), tuple(shape))


def _check_shapes(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    scales = [s for s in (lhs_scale, rhs_scale) if s is not None]
    ranks = [lhs.ndim, rhs.ndim] + [s.ndim for s in scales]
    if len(set(ranks)) != 1:
        raise TypeError(f"scaled_dot needs operands and scales of one rank, got lhs rank {lhs.ndim}, "
                        f"rhs rank {rhs.ndim} and scale ranks {[s.ndim for s in scales]}")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise TypeError(f"scaled_dot: dimension_numbers {dimension_numbers} pair up unequal numbers of axes")
    for side, operand, scale, contracting in (("LHS", lhs, lhs_scale, lc), ("RHS", rhs, rhs_scale, rc)):
        if scale is not None:
            _check_scale(side, operand, scale, contracting)


def _check_scale(side, operand, scale, contracting):
    for axis, (size, scale_size) in enumerate(zip(operand.shape, scale.shape)):
        if axis not in contracting:
            if size != scale_size:
                raise TypeError(f"scaled_dot: {side} dim {axis} of size {size} does not match its "
                                f"scale's dim size {scale_size}")
        elif scale_size == 0 or size % scale_size or size // scale_size < 2:
            raise TypeError(f"scaled_dot: {side} contracting dim {axis} of size {size} must be a "
                            f"multiple, at least twice, of its scale's dim size {scale_size}")
