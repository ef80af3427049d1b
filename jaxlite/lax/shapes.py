"""Shape primitives: broadcasting, reshaping, transposing, slicing, padding, joining."""
import builtins

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray, canonicalize_axes, canonicalize_axis
from jaxlite.core.ir import pp_params_rules, print_params_jaxlite_omits
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, as_operand, as_operands, check_dtype, shape_tuple
from jaxlite.lax.elementwise import convert_element_type
from jaxlite.lax.reductions import reduce_sum
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching
from jaxlite.transforms import physical
from jaxlite.transforms.batching import bdim_at_front, move_dim


def _primitive(name, impl, abstract_eval):
    primitive = Primitive(name)
    primitive.def_impl(impl)
    primitive.def_abstract_eval(abstract_eval)
    return primitive


# ---------------------------------------------------------------- broadcast_in_dim

def _broadcast_in_dim_aval(x, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} "
                        f"broadcast_dimensions, got {broadcast_dimensions}")
    if any(not 0 <= d < len(shape) for d in broadcast_dimensions) or \
            list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be "
                        f"strictly increasing axes of the result shape {shape}")
    for operand_dim, d in zip(x.shape, broadcast_dimensions):
        if operand_dim not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim: operand shape {x.shape} cannot be broadcast to "
                            f"{shape} along dimensions {broadcast_dimensions}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for operand_dim, d in zip(x.shape, broadcast_dimensions):
        expanded[d] = operand_dim
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = _primitive("broadcast_in_dim", _broadcast_in_dim_impl, _broadcast_in_dim_aval)
# Printed as JAX does: the shape is the output's; no dimensions to map shows none.
pp_params_rules[broadcast_in_dim_p] = lambda eqn: (
    [("broadcast_dimensions", eqn.params["broadcast_dimensions"])] if eqn.params["broadcast_dimensions"] else [])
fusion_rules.fused(broadcast_in_dim_p, fusion_rules.broadcast_in_dim_rule, recomputed=True)
physical.structural(broadcast_in_dim_p)


def broadcast_in_dim(x, shape, broadcast_dimensions):
    x = as_operand(x)
    shape, dims = shape_tuple(shape), tuple(int(d) for d in broadcast_dimensions)
    if x.shape == shape and dims == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def _sum_to_operand(ct, operand_shape, broadcast_dimensions):
    """The transpose of broadcast_in_dim: sum the broadcast axes away."""
    kept = set(broadcast_dimensions)
    summed = [d for d in range(ct.ndim) if d not in kept]
    summed += [d for operand_dim, d in zip(operand_shape, broadcast_dimensions)
               if operand_dim == 1 and ct.shape[d] != 1]
    out = reduce_sum(ct, tuple(sorted(summed))) if summed else ct
    return reshape(out, operand_shape)


def _broadcast_in_dim_batch(args, dims, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    x = move_dim(x, d, 0)
    new_dims = (0,) + tuple(b + 1 for b in broadcast_dimensions)
    return broadcast_in_dim(x, (x.shape[0],) + tuple(shape), new_dims), 0


ad.deflinear(broadcast_in_dim_p, lambda ct, x, shape, broadcast_dimensions: [
    _sum_to_operand(ct, x.aval.shape, broadcast_dimensions)])
batching.batch_rules[broadcast_in_dim_p] = _broadcast_in_dim_batch


def broadcast(x, sizes):
    """Add leading dimensions of the given sizes."""
    x = as_operand(x)
    sizes = shape_tuple(sizes, "sizes")
    return broadcast_in_dim(x, sizes + x.shape, tuple(range(len(sizes), len(sizes) + x.ndim)))


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with a scalar, built by broadcasting (never a big constant)."""
    shape = shape_tuple(shape)
    if dtype is None:
        fill = as_operand(fill_value)
    else:
        fill = convert_element_type(fill_value, dtype)
    if np.ndim(fill) != 0:
        raise TypeError(f"full: fill_value must be a scalar, got shape {np.shape(fill)}")
    return broadcast_in_dim(fill, shape, ())


def expand_dims(x, dimensions):
    x = as_operand(x)
    ndim = x.ndim + len(dimensions)
    dims = canonicalize_axes(dimensions, ndim, "dimensions")
    shape = list(x.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = tuple(i for i in range(ndim) if i not in dims)
    return broadcast_in_dim(x, tuple(shape), kept)


# ---------------------------------------------------------------- reshape

def _reshape_aval(x, new_sizes, dimensions=None):
    if int(np.prod(new_sizes)) != x.size:
        raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} "
                        f"for shape {x.shape}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, new_sizes, dimensions=None):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return x.reshape(new_sizes)


reshape_p = _primitive("reshape", _reshape_impl, _reshape_aval)
print_params_jaxlite_omits(reshape_p, sharding=None)
fusion_rules.fused(reshape_p, fusion_rules.reshape_rule, layout_operand=fusion_rules.reshape_layout_operand)
physical.structural(reshape_p)


def reshape(x, new_sizes, dimensions=None):
    """Reshape in row-major order, after transposing by `dimensions` if given."""
    x = as_operand(x)
    new_sizes = shape_tuple(new_sizes, "new_sizes")
    if dimensions is not None:
        dimensions = tuple(int(d) for d in dimensions)
        if dimensions == tuple(range(x.ndim)):
            dimensions = None
    if new_sizes == x.shape and dimensions is None:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=dimensions)


def _reshape_transpose(ct, x, new_sizes, dimensions=None):
    if dimensions is None:
        return [reshape(ct, x.aval.shape)]
    permuted = tuple(x.aval.shape[d] for d in dimensions)
    return [transpose(reshape(ct, permuted), tuple(np.argsort(dimensions)))]


def _reshape_batch(args, dims, new_sizes, dimensions=None):
    (x,), (d,) = args, dims
    x = move_dim(x, d, 0)
    if dimensions is not None:
        x = transpose(x, (0,) + tuple(p + 1 for p in dimensions))
    return reshape(x, (x.shape[0],) + tuple(new_sizes)), 0


ad.deflinear(reshape_p, _reshape_transpose)
batching.batch_rules[reshape_p] = _reshape_batch

# ---------------------------------------------------------------- transpose


def _transpose_aval(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation {permutation} is not a permutation of the "
                        f"axes of an array of rank {x.ndim}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = _primitive("transpose", lambda x, permutation: np.transpose(x, permutation), _transpose_aval)
fusion_rules.fused(transpose_p, fusion_rules.transpose_rule)
physical.structural(transpose_p)


def transpose(x, permutation):
    x = as_operand(x)
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(x.ndim)):
        return x
    return transpose_p.bind(x, permutation=permutation)


def _transpose_batch(args, dims, permutation):
    (x,), (d,) = args, dims
    x = move_dim(x, d, 0)
    return transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


ad.deflinear(transpose_p, lambda ct, x, permutation: [transpose(ct, tuple(np.argsort(permutation)))])
batching.batch_rules[transpose_p] = _transpose_batch

# ---------------------------------------------------------------- squeeze


def _squeeze_aval(x, dimensions):
    for d in dimensions:
        if x.shape[d] != 1:
            raise ValueError(f"squeeze: cannot remove axis {d} of size {x.shape[d]} "
                             f"from shape {x.shape}; only size-1 axes can be squeezed")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


squeeze_p = _primitive("squeeze", lambda x, dimensions: np.squeeze(x, dimensions), _squeeze_aval)
fusion_rules.fused(squeeze_p, fusion_rules.squeeze_rule)
physical.structural(squeeze_p)


def squeeze(x, dimensions):
    x = as_operand(x)
    dimensions = canonicalize_axes(dimensions, x.ndim, "dimensions")
    if not dimensions:
        return x
    return squeeze_p.bind(x, dimensions=tuple(sorted(dimensions)))


def _squeeze_batch(args, dims, dimensions):
    (x,), (d,) = args, dims
    x = move_dim(x, d, 0)
    return squeeze(x, tuple(a + 1 for a in dimensions)), 0


ad.deflinear(squeeze_p, lambda ct, x, dimensions: [reshape(ct, x.aval.shape)])
batching.batch_rules[squeeze_p] = _squeeze_batch

# ---------------------------------------------------------------- rev


def _rev_aval(x, dimensions):
    canonicalize_axes(dimensions, x.ndim, "dimensions")
    return x


rev_p = _primitive("rev", lambda x, dimensions: np.flip(x, dimensions), _rev_aval)
fusion_rules.fused(rev_p, fusion_rules.rev_rule)
physical.structural(rev_p)


def rev(x, dimensions):
    x = as_operand(x)
    dimensions = canonicalize_axes(dimensions, x.ndim, "dimensions")
    return rev_p.bind(x, dimensions=tuple(sorted(dimensions))) if dimensions else x


def _rev_batch(args, dims, dimensions):
    (x,), (d,) = args, dims
    return rev(x, tuple(a + (a >= d) for a in dimensions)), d


ad.deflinear(rev_p, lambda ct, x, dimensions: [rev(ct, dimensions)])
batching.batch_rules[rev_p] = _rev_batch

# ---------------------------------------------------------------- slice


def _slice_aval(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise TypeError(f"slice: start_indices, limit_indices and strides need one entry per "
                        f"axis of shape {x.shape}")
    for axis, (lo, hi, size, step) in enumerate(zip(start_indices, limit_indices, x.shape, strides)):
        if not 0 <= lo <= hi <= size or step < 1:
            raise IndexError(f"slice: indices [{lo}:{hi}:{step}] are out of range for axis {axis} "
                             f"of size {size} in shape {x.shape}")
    shape = tuple(max(0, -(-(hi - lo) // step))
                  for lo, hi, step in zip(start_indices, limit_indices, strides))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    return x[tuple(builtins.slice(lo, hi, step) for lo, hi, step in zip(start_indices, limit_indices, strides))]


slice_p = _primitive("slice", _slice_impl, _slice_aval)
fusion_rules.fused(slice_p, fusion_rules.slice_rule)
physical.structural(slice_p)


def slice(x, start_indices, limit_indices, strides=None):
    x = as_operand(x)
    start, limit = tuple(map(int, start_indices)), tuple(map(int, limit_indices))
    strides = None if strides is None or all(s == 1 for s in strides) else tuple(map(int, strides))
    if start == (0,) * x.ndim and limit == x.shape and strides is None:
        return x
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides)


def slice_in_dim(x, start, limit, stride=1, axis=0):
    x = as_operand(x)
    axis = canonicalize_axis(axis, x.ndim)
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, stride
    return slice(x, starts, limits, strides)


def index_in_dim(x, index, axis=0, keepdims=True):
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def _slice_transpose(ct, x, start_indices, limit_indices, strides=None):
    """Pad the cotangent back to the operand's shape: zeros outside the slice and
    (step - 1) zeros between the elements a strided slice kept."""
    shape = x.aval.shape
    if any(n == 0 for n in ct.shape):
        return [full(shape, 0, ct.dtype)]
    strides = strides or (1,) * len(start_indices)
    config = [(lo, size - lo - (n - 1) * step - 1, step - 1)
              for lo, size, step, n in zip(start_indices, shape, strides, ct.shape)]
    return [pad(ct, convert_element_type(0, ct.dtype), config)]


def _slice_batch(args, dims, start_indices, limit_indices, strides=None):
    (x,), (d,) = args, dims
    start = start_indices[:d] + (0,) + start_indices[d:]
    limit = limit_indices[:d] + (x.shape[d],) + limit_indices[d:]
    step = None if strides is None else strides[:d] + (1,) + strides[d:]
    return slice(x, start, limit, step), d


ad.deflinear(slice_p, _slice_transpose)
batching.batch_rules[slice_p] = _slice_batch

# ---------------------------------------------------------------- pad


def _padded_size(size, lo, hi, interior):
    return lo + hi + size + max(size - 1, 0) * interior


def _pad_aval(x, padding_value, padding_config):
    if padding_value.ndim != 0 or padding_value.dtype != x.dtype:
        raise TypeError(f"pad: padding_value must be a scalar of the operand's dtype {x.dtype}, "
                        f"got {padding_value.str_short()}")
    if len(padding_config) != x.ndim:
        raise TypeError(f"pad: padding_config needs one (low, high, interior) per axis of {x.shape}")
    shape = tuple(_padded_size(n, lo, hi, interior) for n, (lo, hi, interior) in zip(x.shape, padding_config))
    if any(interior < 0 for _, _, interior in padding_config) or any(s < 0 for s in shape):
        raise ValueError(f"pad: invalid padding_config {padding_config} for shape {x.shape}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, padding_value, padding_config):
    shape = [_padded_size(n, max(lo, 0), max(hi, 0), interior)
             for n, (lo, hi, interior) in zip(x.shape, padding_config)]
    out = np.full(shape, padding_value, dtype=x.dtype)
    out[tuple(np.s_[max(lo, 0):max(lo, 0) + _padded_size(n, 0, 0, interior):interior + 1]
              for n, (lo, hi, interior) in zip(x.shape, padding_config))] = x
    crop = tuple(np.s_[max(-lo, 0):s - max(-hi, 0)]
                 for s, (lo, hi, _) in zip(shape, padding_config))
    return out[crop]


pad_p = _primitive("pad", _pad_impl, _pad_aval)
fusion_rules.fused(pad_p, fusion_rules.pad_rule)


def pad(x, padding_value, padding_config):
    """Pad with (low, high, interior) per axis; negative low/high crop."""
    x, padding_value = as_operands(x, padding_value)
    config = tuple((int(lo), int(hi), int(interior)) for lo, hi, interior in padding_config)
    return pad_p.bind(x, padding_value, padding_config=config)


def _pad_transpose(ct, x, padding_value, padding_config):
    if ad.is_zero(ct):
        return [None, None]
    unpadded = pad(ct, convert_element_type(0, ct.dtype),
                   tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
    operand_ct = slice(unpadded, (0,) * ct.ndim, unpadded.shape,
                       tuple(interior + 1 for _, _, interior in padding_config))
    x_ct = operand_ct if ad.is_undefined(x) else None
    value_ct = None
    if ad.is_undefined(padding_value):
        all_axes = tuple(range(ct.ndim))
        from jaxlite.lax.elementwise import sub
        value_ct = sub(reduce_sum(ct, all_axes), reduce_sum(operand_ct, all_axes))
    return [x_ct, value_ct]


def _pad_batch(args, dims, padding_config):
    (x, value), (dx, dvalue) = args, dims
    size = batching.batch_size(args, dims)
    x = bdim_at_front(x, dx, size)
    config = ((0, 0, 0),) + tuple(padding_config)
    if dvalue is None:
        return pad(x, value, config), 0
    # A padding value per batch element: pad with anything, then select it in.
    from jaxlite.lax.elementwise import select_n
    zero = convert_element_type(0, x.dtype)
    inside = pad(full(x.shape, True, dtypes.bool_), convert_element_type(False, dtypes.bool_), config)
    padded = pad(x, zero, config)
    fill = broadcast_in_dim(value, padded.shape, (0,))
    return select_n(inside, fill, padded), 0


ad.deflinear(pad_p, _pad_transpose)
batching.batch_rules[pad_p] = _pad_batch

# ---------------------------------------------------------------- concatenate


def _concatenate_aval(*xs, dimension):
    first = xs[0]
    for x in xs[1:]:
        if x.dtype != first.dtype:
            raise TypeError(f"concatenate requires equal dtypes, got {first.dtype} and {x.dtype}")
        if x.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if i != dimension):
            raise TypeError(f"concatenate: shapes {first.shape} and {x.shape} differ outside "
                            f"dimension {dimension}")
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, first.dtype, all(x.weak_type for x in xs))


concatenate_p = _primitive("concatenate", lambda *xs, dimension: np.concatenate(xs, dimension),
                           _concatenate_aval)
fusion_rules.fused(concatenate_p, fusion_rules.concatenate_rule)
physical.structural(concatenate_p)


def concatenate(operands, dimension):
    operands = as_operands(*operands)
    if not operands:
        raise ValueError("concatenate needs at least one array")
    dimension = canonicalize_axis(dimension, operands[0].ndim, "dimension")
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=dimension)


def _concatenate_transpose(ct, *xs, dimension):
    cts, offset = [], 0
    for x in xs:
        size = x.aval.shape[dimension]
        if ad.is_undefined(x):
            cts.append(slice_in_dim(ct, offset, offset + size, axis=dimension))
        else:
            cts.append(None)
        offset += size
    return cts


def _concatenate_batch(args, dims, dimension):
    size = batching.batch_size(args, dims)
    moved = [bdim_at_front(x, d, size) for x, d in zip(args, dims)]
    return concatenate(moved, dimension + 1), 0


ad.deflinear(concatenate_p, _concatenate_transpose)
batching.batch_rules[concatenate_p] = _concatenate_batch

# ---------------------------------------------------------------- iota


def _iota_aval(dtype, shape, dimension):
    check_dtype("iota", ShapedArray((), dtype), ANY, "dtype")
    canonicalize_axis(dimension, len(shape), "dimension")
    return ShapedArray(shape, dtype)


def _iota_impl(dtype, shape, dimension):
    counts = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(counts.reshape(view), shape)


iota_p = _primitive("iota", _iota_impl, _iota_aval)
print_params_jaxlite_omits(iota_p, sharding=None)
fusion_rules.fused(iota_p, fusion_rules.iota_rule, recomputed=True)


def iota(dtype, size):
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension):
    shape = shape_tuple(shape)
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=shape,
                       dimension=canonicalize_axis(dimension, len(shape), "dimension"))
