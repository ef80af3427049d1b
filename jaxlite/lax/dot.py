"""dot_general: contraction with batch dimensions, the one matrix-product primitive."""
import enum

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.ir import pp_params_rules
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import (NUMBER, as_operand, check_dtype, flushed_below, smallest_nonzero_magnitude,
                              subnormals_flushed)
from jaxlite.lax.elementwise import convert_element_type
from jaxlite.lax.shapes import transpose
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import move_dim


def _free_dims(ndim, contracting, batch):
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def _dot_general_aval(lhs, rhs, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    for name, aval, contracting, batch in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
        check_dtype("dot_general", aval, NUMBER, name)
        axes = tuple(contracting) + tuple(batch)
        if len(set(axes)) != len(axes) or not all(0 <= d < aval.ndim for d in axes):
            raise TypeError(f"dot_general requires {name} dimension numbers to be distinct, "
                            f"nonnegative and less than the rank of the {name} ({aval.ndim}), got "
                            f"{name}_contracting {tuple(contracting)} and {name}_batch {tuple(batch)} "
                            f"for a {name} of shape {aval.shape}")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general requires operands of the same dtype, got {lhs.dtype} and {rhs.dtype}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: dimension_numbers {dimension_numbers} pair up unequal numbers of axes")
    for l, r, kind in [(a, b, "contracting") for a, b in zip(lc, rc)] + [(a, b, "batch") for a, b in zip(lb, rb)]:
        if lhs.shape[l] != rhs.shape[r]:
            raise TypeError(f"dot_general {kind} dimensions must match: lhs axis {l} has size "
                            f"{lhs.shape[l]}, rhs axis {r} has size {rhs.shape[r]} "
                            f"(shapes {lhs.shape} and {rhs.shape})")
    shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb)]
             + [rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)])
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _dot_general_impl(lhs, rhs, dimension_numbers, preferred_element_type=None):
    """numpy's BLAS, unless a subnormal may enter or arise: BLAS threads do not run with
    compiled code's FTZ/DAZ (XLA:CPU's too), so those products run jit's own GEMM."""
    if _may_meet_subnormals(lhs, rhs):
        return _compiled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type)
    return subnormals_flushed(_numpy_dot_general(lhs, rhs, dimension_numbers, preferred_element_type))


def _may_meet_subnormals(lhs, rhs):
    """A subnormal operand, or two nonzero entries whose product is below the smallest normal.
    (A sum cancelling to a subnormal is flushed afterwards.)"""
    tiny = flushed_below(np.promote_types(lhs.dtype, rhs.dtype))
    if tiny is None or not lhs.size or not rhs.size:
        return False
    smallest_lhs, smallest_rhs = smallest_nonzero_magnitude(lhs), smallest_nonzero_magnitude(rhs)
    return min(smallest_lhs, smallest_rhs) < tiny or smallest_lhs * smallest_rhs < tiny


def _compiled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type):
    from jaxlite.transforms.jit import jit
    if not _compiled:
        _compiled.append(jit(dot_general, static_argnames=("dimension_numbers", "preferred_element_type")))
    out = _compiled[0](lhs, rhs, dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type)
    return np.asarray(out)


_compiled = []


def _numpy_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_perm = list(lb) + _free_dims(lhs.ndim, lc, lb) + list(lc)
    rhs_perm = list(rb) + list(rc) + _free_dims(rhs.ndim, rc, rb)
    a, b = np.transpose(lhs, lhs_perm), np.transpose(rhs, rhs_perm)
    nb, nc = len(lb), len(lc)
    batch_shape = a.shape[:nb]
    m_shape, n_shape = a.shape[nb:a.ndim - nc], b.shape[nb + nc:]
    k = int(np.prod(a.shape[a.ndim - nc:]))
    out_dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    compute = np.promote_types(out_dtype, lhs.dtype)
    if dtypes.is_16bit_float(compute):
        compute = np.float32
    elif _exact_in_float64(lhs.dtype, rhs.dtype, out_dtype, k):
        compute = np.float64    # numpy's integer matmul has no BLAS: ~100x slower
    a2 = a.reshape(batch_shape + (int(np.prod(m_shape)), k)).astype(compute, copy=False)
    b2 = b.reshape(batch_shape + (k, int(np.prod(n_shape)))).astype(compute, copy=False)
    product = _matmul_in_blocks(a2, b2) if compute == np.float32 and k > _LONG_FLOAT32_SUM else np.matmul(a2, b2)
    return product.reshape(batch_shape + m_shape + n_shape).astype(out_dtype, copy=False)


# Contractions longer than this are summed in blocks of this many terms.
_LONG_FLOAT32_SUM = 1 << 16


def _matmul_in_blocks(a2, b2):
    """a2 @ b2 over a long float32 contraction: BLAS sums each block in float32 lanes, the
    blocks' sums add in float64. 1e7 terms in one BLAS call lost 0.9 eps * sum|x| (JAX 0.45),
    in blocks 0.02; float64 copies of both operands (as before) cost 10x the product."""
    total = np.zeros(a2.shape[:-1] + b2.shape[-1:], np.float64)
    for start in range(0, a2.shape[-1], _LONG_FLOAT32_SUM):
        stop = start + _LONG_FLOAT32_SUM
        total += np.matmul(a2[..., start:stop], b2[..., start:stop, :])
    return total


def _exact_in_float64(lhs_dtype, rhs_dtype, out_dtype, k):
    """Whether every sum of k integer products (int8 x int8, ...) is exact in float64 and
    fits out_dtype, so that a float64 matmul gives the integer result."""
    if not all(dtypes.is_int(d) for d in (lhs_dtype, rhs_dtype, out_dtype)):
        return False
    magnitude = lambda dtype: max(-int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(dtype).max))
    bound = k * magnitude(lhs_dtype) * magnitude(rhs_dtype)
    return bound < min(2 ** 53, int(dtypes.iinfo(out_dtype).max))


dot_general_p = Primitive("dot_general")
fusion_rules.fused(dot_general_p, fusion_rules.dot_general_rule, domain="dot")
dot_general_p.def_impl(_dot_general_impl)
dot_general_p.def_abstract_eval(_dot_general_aval)


def _dot_general_pp_params(eqn):
    """As JAX prints them: dimension lists, and the output type resolved."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    preferred = eqn.params["preferred_element_type"] or eqn.outputs[0].aval.dtype
    return [("dimension_numbers", ((list(lc), list(rc)), (list(lb), list(rb)))),
            ("preferred_element_type", preferred)]


pp_params_rules[dot_general_p] = _dot_general_pp_params


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """Contract lhs and rhs: dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).

    `out_sharding` is accepted as JAX does: on one device every sharding is the same."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    dims = ((tuple(map(int, lc)), tuple(map(int, rc))), (tuple(map(int, lb)), tuple(map(int, rb))))
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dims,
                              preferred_element_type=preferred_element_type)


class Precision(enum.Enum):
    """The precision JAX lets a product ask for. On a CPU every float32 product is computed at full
    float32 precision whatever is asked, as JAX's CPU backend does, so it changes no result here."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        names = {"default": cls.DEFAULT, "bfloat16": cls.DEFAULT, "fastest": cls.DEFAULT,
                 "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
                 "highest": cls.HIGHEST, "float32": cls.HIGHEST}
        return names.get(value.lower()) if isinstance(value, str) else None

    def __str__(self):
        return self.name

    def __repr__(self):     # as JAX's: how a jaxpr param holding a tuple of them reads
        return f"Precision.{self.name}"


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, out_sharding=None):
    """Vector/matrix product of rank-1 or rank-2 operands."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    if not (1 <= lhs.ndim <= 2 and 1 <= rhs.ndim <= 2):
        raise TypeError(f"lax.dot needs rank-1 or rank-2 operands, got shapes {lhs.shape} and {rhs.shape}")
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (0,)), ((), ())),
                       preferred_element_type=preferred_element_type)


def _ranks_after(perm):
    return tuple(int(i) for i in np.argsort(perm))


def _transpose_lhs(ct, x, y, dimension_numbers, preferred_element_type=None):
    """Cotangent of lhs: contract ct with rhs over rhs's free dims, then reorder."""
    x_aval = x.aval
    (lc, rc), (lb, rb) = dimension_numbers
    x_ndim, y_ndim = x_aval.ndim, y.ndim
    x_kept = _free_dims(x_ndim, lc, lb)
    y_kept = _free_dims(y_ndim, rc, rb)
    nb = len(lb)
    ct_y_free = tuple(range(nb + len(x_kept), ct.ndim))
    dims = ((ct_y_free, tuple(y_kept)), (tuple(range(nb)), tuple(rb)))
    if ct.dtype != y.dtype:
        # A product with a wider preferred_element_type (bf16 operands, float32 result):
        # widening the narrow side is exact, and keeps the float32 cotangent unrounded.
        wide = dtypes.promote_types(ct.dtype, y.dtype)
        ct, y = convert_element_type(ct, wide), convert_element_type(y, wide)
    out = dot_general(ct, y, dims, preferred_element_type=x_aval.dtype)
    # out axes: batch, x's free dims, then y's contracting dims in rhs order (== lc order).
    out_order = list(lb) + x_kept + [lc[list(rc).index(r)] for r in sorted(rc)]
    out = transpose(out, _ranks_after(out_order))
    return convert_element_type(out, x_aval.dtype)


def _transpose_rhs(ct, x, y, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    swapped = ((rc, lc), (rb, lb))
    y_undefined = ad.UndefinedPrimal(y.aval)
    ct_swapped = _swap_ct_free_dims(ct, x.ndim, y.aval.ndim, dimension_numbers)
    return _transpose_lhs(ct_swapped, y_undefined, x, swapped, preferred_element_type)


def _swap_ct_free_dims(ct, x_ndim, y_ndim, dimension_numbers):
    """Reorder ct from (batch, lhs free, rhs free) to (batch, rhs free, lhs free)."""
    (lc, rc), (lb, rb) = dimension_numbers
    nb = len(lb)
    n_x_free = x_ndim - len(lc) - nb
    n_y_free = y_ndim - len(rc) - nb
    perm = (list(range(nb)) + list(range(nb + n_x_free, nb + n_x_free + n_y_free))
            + list(range(nb, nb + n_x_free)))
    return transpose(ct, tuple(perm))


ad.defbilinear(dot_general_p, _transpose_lhs, _transpose_rhs)


def _dot_general_batch(args, dims, dimension_numbers, preferred_element_type=None):
    (lhs, rhs), (dl, dr) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers
    shift = lambda axes, d: tuple(a + (d is not None and a >= d) for a in axes)
    if dl is not None and dr is not None:
        lhs, rhs = move_dim(lhs, dl, 0), move_dim(rhs, dr, 0)
        new_dims = ((shift(lc, 0), shift(rc, 0)), ((0,) + shift(lb, 0), (0,) + shift(rb, 0)))
        out = dot_general(lhs, rhs, new_dims, preferred_element_type=preferred_element_type)
        return out, 0
    if dl is not None:
        # lhs's batch axis becomes a free axis; it lands after the batch dims in the output.
        new_dims = ((shift(lc, dl), rc), (shift(lb, dl), rb))
        out = dot_general(lhs, rhs, new_dims, preferred_element_type=preferred_element_type)
        free_before = sum(1 for d in _free_dims(lhs.ndim, shift(lc, dl), shift(lb, dl)) if d < dl)
        return out, len(lb) + free_before
    new_dims = ((lc, shift(rc, dr)), (lb, shift(rb, dr)))
    out = dot_general(lhs, rhs, new_dims, preferred_element_type=preferred_element_type)
    lhs_free = lhs.ndim - len(lc) - len(lb)
    free_before = sum(1 for d in _free_dims(rhs.ndim, shift(rc, dr), shift(rb, dr)) if d < dr)
    return out, len(lb) + lhs_free + free_before


batching.batch_rules[dot_general_p] = _dot_general_batch
