"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin, cumlogsumexp.

Eagerly each runs numpy's accumulate, except cumsum of 16-bit floats, which eager and jit
compute as XLA:CPU does for JAX, rounding as it rounds (_cumsum_as_xla). cumsum is linear, and its transpose is the
cumsum running the other way. The other JVPs are those of the same scan written
with lax operations (log2(n) rounds of shift-and-combine, as in a Hillis-Steele
parallel prefix), so ties in cummax and infinities in cumlogsumexp get exactly
the derivatives that max and logaddexp give them, with no separate rule to
keep consistent.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.core.primitive import Primitive, compiler_rewrites
from jaxlite.lax.base import FLOAT, NUMBER, as_operand, check_dtype, flushing_subnormals
from jaxlite.lax.elementwise import (add, convert_element_type, eq, exp, ge, le, log1p, max, min, mul,
                                     reduce_precision, select_n, sub)
from jaxlite.lax.shapes import (broadcast_in_dim, broadcasted_iota, concatenate, full, pad, reshape, rev, slice_in_dim, squeeze,
                                transpose)
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching


def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow; equal infinities give that infinity.

    Where both are the same infinity, a - b is NaN: the correction term is then
    taken as 0, so the value and the derivative (shared by max) stay finite.
    """
    high, low = max(a, b), min(a, b)
    gap = sub(low, high)
    gap = select_n(eq(gap, gap), full(gap.shape, -np.inf, gap.dtype), gap)
    return add(high, log1p(exp(gap)))


def _accumulate_in(ufunc, x, axis, reverse):
    """ufunc.accumulate, in float32 for 16-bit floats (numpy would round every step), and a
    float32 sum in float64 (a sequential sum of n terms loses digits like n eps; compiled code
    does the same)."""
    wide = x.astype(np.float32) if dtypes.is_float(x.dtype) and x.dtype.itemsize < 4 else x
    if ufunc is np.add and x.dtype == np.float32:
        wide = x.astype(np.float64)
    if reverse:
        wide = np.flip(wide, axis)
    out = ufunc.accumulate(wide, axis=axis, dtype=wide.dtype)
    return (np.flip(out, axis) if reverse else out).astype(x.dtype)


def prefix_scan(combine, identities, operands, axis, reverse):
    """Inclusive scan along `axis` of `operands` (arrays of one shape, combined together by an
    associative combine(earlier list, later list) -> list) in lax operations: log2(n) rounds,
    each combining every element with the one `shift` before it (Hillis-Steele; the first
    `shift` take `identities`). Used for JVPs, and under jit for complex cumulative products
    and extrema (lower/complex_split.py): each round is one contiguous elementwise kernel."""
    operands = [rev(x, (axis,)) for x in operands] if reverse else list(operands)
    n, shift = operands[0].shape[axis], 1
    while shift < n:
        config = [(0, 0, 0)] * operands[0].ndim
        config[axis] = (shift, 0, 0)
        earlier = [pad(slice_in_dim(x, 0, n - shift, axis=axis), convert_element_type(fill, x.dtype), config)
                   for x, fill in zip(operands, identities)]
        operands = combine(earlier, operands)
        shift *= 2
    return [rev(x, (axis,)) for x in operands] if reverse else operands


# ---------------------------------------------------------------- 16-bit cumsum as XLA's

# XLA:CPU computes JAX's cumsum as a reduce-window whose rewriter cuts the axis into blocks
# of 16: each output sums its window within its block from left to right, the blocks' totals
# are scanned the same way (recursively), and each block adds the total before it. Every
# addition of 16-bit floats is rounded to 16 bits, so these roundings are the result (a
# float32 accumulator disagreed with JAX in two thirds of a bfloat16 cumsum's outputs).
_XLA_SCAN_BLOCK = 16


def _is_16bit_float(dtype):
    return dtypes.is_float(dtype) and np.dtype(dtype).itemsize == 2


def _cumsum_as_xla(x, axis, reverse):
    info = dtypes.finfo(x.dtype)
    rounded = lambda v: reduce_precision(v, info.nexp, info.nmant)
    order = [d for d in range(x.ndim) if d != axis] + [axis]
    wide = transpose(convert_element_type(x, np.float32), order)
    out = transpose(_blocked_sums(wide, rounded, reverse), tuple(int(d) for d in np.argsort(order)))
    return convert_element_type(out, x.dtype)


def _blocked_sums(v, rounded, reverse):
    """XLA's blocked scan along v's last axis (see above)."""
    n, last = v.shape[-1], v.ndim - 1
    if n <= _XLA_SCAN_BLOCK:
        return _sums_within_block(v, rounded, reverse)
    blocks = -(-n // _XLA_SCAN_BLOCK)
    padded = pad(v, np.float32(0), [(0, 0, 0)] * last + [(0, blocks * _XLA_SCAN_BLOCK - n, 0)])
    partial = _sums_within_block(reshape(padded, v.shape[:-1] + (blocks, _XLA_SCAN_BLOCK)), rounded, reverse)
    total_at = 0 if reverse else _XLA_SCAN_BLOCK - 1
    totals = squeeze(slice_in_dim(partial, total_at, total_at + 1, axis=last + 1), (last + 1,))
    scanned = _blocked_sums(totals, rounded, reverse)
    zero = full(v.shape[:-1] + (1,), 0, np.float32)
    before = ([slice_in_dim(scanned, 1, blocks, axis=last), zero] if reverse
              else [zero, slice_in_dim(scanned, 0, blocks - 1, axis=last)])
    offsets = broadcast_in_dim(concatenate(before, last), partial.shape, tuple(range(last + 1)))
    out = rounded(add(partial, offsets))
    return slice_in_dim(reshape(out, v.shape[:-1] + (blocks * _XLA_SCAN_BLOCK,)), 0, n, axis=last)


def _sums_within_block(v, rounded, reverse):
    """Output j sums v[..., :j+1] (reverse: v[..., j:]) from left to right, rounding each step:
    all outputs at once, adding column k where it is in their window and 0 elsewhere (as the
    reduce-window adds its padding), so compiled code is one small elementwise kernel."""
    n, last = v.shape[-1], v.ndim - 1
    position = broadcasted_iota(np.int32, v.shape, last)
    zero = full(v.shape, 0, np.float32)
    total = zero
    for k in range(n):
        column = broadcast_in_dim(slice_in_dim(v, k, k + 1, axis=last), v.shape, tuple(range(v.ndim)))
        k_in_window = (le if reverse else ge)(position, full(v.shape, k, np.int32))
        total = rounded(add(total, select_n(k_in_window, zero, column)))
    return total


def _cumsum_impl(x, axis, reverse):
    if _is_16bit_float(x.dtype) and x.size:
        return np.asarray(_cumsum_as_xla(x, axis, reverse))
    return _accumulate_in(np.add, x, axis, reverse)


def _cumsum_rewrite(x, memory_orders, axis, reverse):
    """Under jit, 16-bit cumsums become XLA's blocked sums; others stay cumsums."""
    if _is_16bit_float(x.dtype) and 0 not in x.shape:
        return _cumsum_as_xla(x, axis, reverse)
    return cumsum_p.bind(x, axis=axis, reverse=reverse)


def _cumulative_aval(name, accepts):
    def abstract_eval(x, axis, reverse):
        check_dtype(name, x, accepts)
        canonicalize_axis(axis, x.ndim)
        return x
    return abstract_eval


def _batch_rule(primitive):
    def rule(args, dims, axis, reverse):
        (x,), (d,) = args, dims
        return primitive.bind(x, axis=axis + (axis >= d), reverse=reverse), d
    batching.batch_rules[primitive] = rule


def _scan_jvp(primitive, combine, identity):
    def rule(primals, tangents, axis, reverse):
        out = primitive.bind(*primals, axis=axis, reverse=reverse)

        def scan(x):
            return prefix_scan(lambda a, b: [combine(a[0], b[0])], [identity(x.dtype)], [x], axis, reverse)
        _, (tangent_out,) = ad.jvp_flat(scan, primals, tangents)
        return out, tangent_out
    ad.jvp_rules[primitive] = rule


def _cumulative_primitive(name, ufunc, accepts):
    primitive = Primitive(name)
    # Partial sums and products that are subnormal are zeros, as compiled code and XLA give.
    primitive.def_impl(flushing_subnormals(lambda x, axis, reverse: _accumulate_in(ufunc, x, axis, reverse)))
    primitive.def_abstract_eval(_cumulative_aval(name, accepts))
    _batch_rule(primitive)

    def bind(operand, axis=0, reverse=False):
        operand = as_operand(operand)
        return primitive.bind(operand, axis=canonicalize_axis(axis, operand.ndim),
                              reverse=bool(reverse))
    bind.__name__ = name
    return primitive, bind


def _lowest(dtype):
    return -np.inf if dtypes.is_inexact(dtype) else dtypes.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtypes.is_inexact(dtype) else dtypes.iinfo(dtype).max


cumsum_p, cumsum = _cumulative_primitive("cumsum", np.add, NUMBER)
cumsum_p.def_impl(flushing_subnormals(_cumsum_impl))
compiler_rewrites[cumsum_p] = _cumsum_rewrite
fusion_rules.cumulative(cumsum_p, fusion_rules.combine_with("add"))
ad.deflinear(cumsum_p, lambda ct, x, axis, reverse: [cumsum(ct, axis, not reverse)])

cumprod_p, cumprod = _cumulative_primitive("cumprod", np.multiply, NUMBER)
fusion_rules.cumulative(cumprod_p, fusion_rules.combine_with("mul"))
_scan_jvp(cumprod_p, mul, lambda dtype: 1)

cummax_p, cummax = _cumulative_primitive("cummax", np.maximum, NUMBER)
fusion_rules.cumulative(cummax_p, fusion_rules.combine_with("max"))
_scan_jvp(cummax_p, max, _lowest)

cummin_p, cummin = _cumulative_primitive("cummin", np.minimum, NUMBER)
fusion_rules.cumulative(cummin_p, fusion_rules.combine_with("min"))
_scan_jvp(cummin_p, min, _highest)

cumlogsumexp_p, cumlogsumexp = _cumulative_primitive("cumlogsumexp", np.logaddexp, FLOAT)
fusion_rules.cumulative(cumlogsumexp_p, fusion_rules.logaddexp)
_scan_jvp(cumlogsumexp_p, logaddexp, lambda dtype: -np.inf)
