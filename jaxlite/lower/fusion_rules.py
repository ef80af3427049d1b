"""How fusion computes each primitive inside a kernel: the rules, and the table that the
primitives' lax blocks register them in.

A rule `rule(lw, eqn, index)` gives the kernel-IR expression of the equation's result at
the output `index` (a list of index expressions), reading operands through
`lw.value(var, index)` (fusion._GroupLowering); a rule of a multiple-result primitive gives
a list, one expression per result. The lax block of a primitive declares its rule in one
line next to its other rules (JVP, transpose, batching), keyed by the primitive object:

    sin_p = unary_primitive("sin", np.sin, FLOAT)
    ...
    fusion_rules.elementwise(sin_p, "sin")                 # one kernel-IR op per element
    fusion_rules.reduction(reduce_sum_p, "sum")            # a reduction stage
    fusion_rules.fused(transpose_p, fusion_rules.transpose_rule)   # an index map

Partitioning (fusion.py) reads the declaration's `domain` (how the primitive's kernel
iterates) and `recomputed` (cheaper to recompute in every kernel than to read); the graph
passes read `elementwise` and `kernel_op`. This module imports only core and kernel_ir,
so lax may import it without loading llvmlite.
"""
import functools
import itertools
import math
from typing import Callable, NamedTuple, Optional

from jaxlite.core import dtypes
from jaxlite.core.powers import power_by_squaring
from jaxlite.lower import kernel_ir
from jaxlite.lower.kernel_ir import INDEX, Store


# A NamedTuple, not a frozen dataclass: defining one of those compiles its methods (~1.4 ms
# of every process's first jit).
class FusedLowering(NamedTuple):
    """How fusion computes one primitive."""
    rule: Callable                      # rule(lw, eqn, index) -> Expr (a list for several results)
    domain: Optional[str] = None        # its kernel's iteration: None (a map of the output index),
    #                                     "reduction", "dot", "scan" or "scatter"
    fusible: Optional[Callable] = None  # eqn -> False for the cases the rule does not cover
    elementwise: bool = False           # result[i] depends on operands[i] only (same layout)
    kernel_op: Optional[str] = None     # the kernel-IR op of an elementwise primitive
    recomputed: bool = False            # with no variable operand, recomputed in each kernel
    layout_operand: Optional[Callable] = None   # eqn -> the operand whose row-major order the
    #                                     result keeps (a plain reshape), else None


LOWERINGS = {}      # primitive -> FusedLowering


def fused(primitive, rule, **declaration):
    """Declare `rule` as the way fusion computes `primitive` (see FusedLowering for the rest)."""
    LOWERINGS[primitive] = FusedLowering(rule, **declaration)


def elementwise(primitive, kernel_op, fusible=None):
    """An elementwise primitive computed by one kernel-IR op (kernel_ir.OPS) on its operands;
    the equation's params become the op's attribute."""
    fused(primitive, _elementwise_rule(kernel_op), fusible=fusible, elementwise=True, kernel_op=kernel_op)


def reduction(primitive, kind):
    """A reduction over params["axes"] of kind `kind` (kernel_ir.REDUCTION_KINDS)."""
    fused(primitive, functools.partial(_reduction_rule, kind=kind), domain="reduction")


def window_reduction(primitive, kind):
    fused(primitive, functools.partial(_reduce_window_rule, kind=kind))


def cumulative(primitive, combine):
    """A scan along params["axis"]; `combine(eb, dtype, previous, value)` (see combine_with)."""
    fused(primitive, functools.partial(_cumulative_rule, combine=combine), domain="scan")


def scatter(primitive, combine_op):
    """A scatter whose updates combine with kernel-IR op `combine_op` (None: replace)."""
    fused(primitive, functools.partial(_scatter_stages, combine=combine_op), domain="scatter")


def lowering_of(eqn):
    """The equation's declaration when its rule covers it, else None."""
    found = LOWERINGS.get(eqn.primitive)
    if found is None or found.fusible is not None and not found.fusible(eqn):
        return None
    return found


def layout_operand(eqn):
    """The operand whose elements the result holds in the same row-major order, or None."""
    found = LOWERINGS.get(eqn.primitive)
    return found.layout_operand(eqn) if found is not None and found.layout_operand else None


def domain_of(eqn):
    found = LOWERINGS.get(eqn.primitive)
    return found.domain if found is not None else None


def identity_rule(lw, eqn, index):
    """The operand itself (stop_gradient: its value is its operand's)."""
    return lw.operand(eqn.inputs[0], index)


def _elementwise_rule(op):
    def rule(lw, eqn, index):
        args = [lw.operand(v, index) for v in eqn.inputs]
        return lw.eb.node(op, eqn.outputs[0].aval.dtype, args, _param_attr(eqn))
    return rule


def _param_attr(eqn):
    return tuple(sorted(eqn.params.items())) or None


def convert_rule(lw, eqn, index):
    x = lw.operand(eqn.inputs[0], index)
    return lw.eb.node("convert", eqn.params["new_dtype"], (x,))


def bitcast_rule(lw, eqn, index):
    x = lw.operand(eqn.inputs[0], index)
    return lw.eb.node("bitcast", eqn.params["new_dtype"], (x,))


def integer_pow_rule(lw, eqn, index):
    """x**y by repeated squaring, as exact as numpy's (which also multiplies)."""
    x = lw.operand(eqn.inputs[0], index)
    y, dtype = eqn.params["y"], x.dtype
    if y == 0:
        return lw.eb.const(1, dtype)
    result = power_by_squaring(x, abs(y), lambda a, b: lw.eb.node("mul", dtype, (a, b)))
    return lw.eb.node("div", dtype, (lw.eb.const(1, dtype), result)) if y < 0 else result


# Indexing primitives: each maps the output index to the operand index.

def broadcast_in_dim_rule(lw, eqn, index):
    x = eqn.inputs[0]
    operand_index = [lw.eb.index(0) if size == 1 else index[d]
                     for size, d in zip(x.aval.shape, eqn.params["broadcast_dimensions"])]
    return lw.value(x, operand_index)


def transpose_rule(lw, eqn, index):
    permutation = eqn.params["permutation"]
    operand_index = [None] * len(index)
    for out_axis, in_axis in enumerate(permutation):
        operand_index[in_axis] = index[out_axis]
    return lw.value(eqn.inputs[0], operand_index)


def reshape_layout_operand(eqn):
    """A reshape without `dimensions` keeps its operand's order: as a kernel's root it
    iterates the operand's shape and stores at the same linear offsets (no division of
    its index per element)."""
    return eqn.inputs[0] if eqn.params.get("dimensions") is None else None


def reshape_rule(lw, eqn, index):
    x = eqn.inputs[0]
    dimensions = eqn.params.get("dimensions")
    in_shape = x.aval.shape if dimensions is None else tuple(x.aval.shape[d] for d in dimensions)
    offset = lw.eb.linearize(index, eqn.outputs[0].aval.shape)
    permuted_index = lw.eb.delinearize(offset, in_shape) if in_shape else []
    if dimensions is None:
        return lw.value(x, permuted_index)
    operand_index = [None] * len(dimensions)
    for position, axis in enumerate(dimensions):
        operand_index[axis] = permuted_index[position]
    return lw.value(x, operand_index)


def squeeze_rule(lw, eqn, index):
    rest = iter(index)
    dims = eqn.params["dimensions"]
    operand_index = [lw.eb.index(0) if a in dims else next(rest) for a in range(eqn.inputs[0].aval.ndim)]
    return lw.value(eqn.inputs[0], operand_index)


def rev_rule(lw, eqn, index):
    shape, dims = eqn.inputs[0].aval.shape, eqn.params["dimensions"]
    operand_index = [lw.eb.node("sub", INDEX, (lw.eb.index(shape[a] - 1), i)) if a in dims else i
                     for a, i in enumerate(index)]
    return lw.value(eqn.inputs[0], operand_index)


def slice_rule(lw, eqn, index):
    starts, strides = eqn.params["start_indices"], eqn.params["strides"] or (1,) * len(index)
    operand_index = [lw.eb.add(lw.eb.index(lo), lw.eb.mul(i, lw.eb.index(step)))
                     for i, lo, step in zip(index, starts, strides)]
    return lw.value(eqn.inputs[0], operand_index)


def conv_patches_rule(lw, eqn, index):
    """out[..., o, k, ...] = x[..., o * stride + k * dilation, ...] per spatial axis."""
    first, n_spatial, eb = eqn.params["first_axis"], len(eqn.params["window_shape"]), lw.eb
    out, taps = index[first:first + n_spatial], index[first + n_spatial:first + 2 * n_spatial]
    spatial = [eb.add(eb.mul(o, eb.index(s)), eb.mul(k, eb.index(d)))
               for o, k, s, d in zip(out, taps, eqn.params["window_strides"], eqn.params["window_dilation"])]
    return lw.value(eqn.inputs[0], index[:first] + spatial + index[first + 2 * n_spatial:])


def iota_rule(lw, eqn, index):
    return lw.eb.node("convert", eqn.params["dtype"], (index[eqn.params["dimension"]],))


def _padded_load(lw, x, index, padding_config, fill):
    """x padded per (low, high, interior) at `index`: inside the operand, x loaded at a
    clamped, always valid index; elsewhere `fill`."""
    eb = lw.eb
    inside, operand_index = None, []
    for i, n, (lo, _, interior) in zip(index, x.aval.shape, padding_config):
        if lo == interior == 0 and kernel_ir.upper_bound(i) < n:    # never in the padding
            operand_index.append(i)
            continue
        shifted = eb.node("sub", INDEX, (i, eb.index(lo)))
        step = interior + 1
        position = eb.node("div", INDEX, (shifted, eb.index(step))) if step > 1 else shifted
        conditions = [eb.node("ge", dtypes.bool_, (shifted, eb.index(0))),
                      eb.node("lt", dtypes.bool_, (position, eb.index(n)))]
        if step > 1:
            conditions.append(eb.node("eq", dtypes.bool_, (eb.node("rem", INDEX, (shifted, eb.index(step))), eb.index(0))))
        for condition in conditions:
            inside = condition if inside is None else eb.node("and", dtypes.bool_, (inside, condition))
        operand_index.append(_clamp_index(eb, position, n))
    if inside is None or x.aval.size == 0:
        return fill if x.aval.size == 0 else lw.value(x, operand_index)
    return eb.node("select_n", x.aval.dtype, (inside, fill, lw.value(x, operand_index)))


def pad_rule(lw, eqn, index):
    x, pad_value = eqn.inputs
    return _padded_load(lw, x, index, eqn.params["padding_config"], lw.value(pad_value, []))


def _clamp_index(eb, i, n):
    upper = eb.index(max(n - 1, 0))
    low = eb.node("select_n", INDEX, (eb.node("lt", dtypes.bool_, (i, eb.index(0))), i, eb.index(0)))
    return eb.node("select_n", INDEX, (eb.node("gt", dtypes.bool_, (low, upper)), low, upper))


def concatenate_rule(lw, eqn, index):
    dim, eb = eqn.params["dimension"], lw.eb
    offsets, offset = [], 0
    for x in eqn.inputs:
        offsets.append(offset)
        offset += x.aval.shape[dim]
    result = None
    for x, start in zip(eqn.inputs, offsets):
        if x.aval.shape[dim] == 0:
            continue
        local = list(index)
        local[dim] = _clamp_index(eb, eb.node("sub", INDEX, (index[dim], eb.index(start))), x.aval.shape[dim])
        piece = lw.value(x, local)
        if result is None:
            result = piece
        else:
            before = eb.node("lt", dtypes.bool_, (index[dim], eb.index(start)))
            result = eb.node("select_n", piece.dtype, (before, piece, result))
    if result is None:      # every piece is empty, and so is the output: nothing is stored
        return eb.const(0, eqn.outputs[0].aval.dtype)
    return result


def _dynamic_starts(lw, starts, operand_shape, sizes):
    """Start indices read at run time, clamped so the window fits (as the eager impl does)."""
    eb = lw.eb
    return [_clamp_index(eb, eb.node("convert", INDEX, (lw.value(s, []),)), max(n - k, 0) + 1)
            for s, n, k in zip(starts, operand_shape, sizes)]


def dynamic_slice_rule(lw, eqn, index):
    x, *starts = eqn.inputs
    begin = _dynamic_starts(lw, starts, x.aval.shape, eqn.params["slice_sizes"])
    return lw.value(x, [lw.eb.add(b, i) for b, i in zip(begin, index)])


def dynamic_update_slice_rule(lw, eqn, index):
    """Inside the window: the update (at a clamped, always valid index); else the operand."""
    x, update, *starts = eqn.inputs
    eb = lw.eb
    if update.aval.size == 0:
        return lw.value(x, index)
    begin = _dynamic_starts(lw, starts, x.aval.shape, update.aval.shape)
    inside, update_index = None, []
    for i, b, k in zip(index, begin, update.aval.shape):
        relative = eb.node("sub", INDEX, (i, b))
        within = eb.node("and", dtypes.bool_, (eb.node("ge", dtypes.bool_, (relative, eb.index(0))),
                                                eb.node("lt", dtypes.bool_, (relative, eb.index(k)))))
        inside = within if inside is None else eb.node("and", dtypes.bool_, (inside, within))
        update_index.append(_clamp_index(eb, relative, k))
    if inside is None:
        return lw.value(update, [])
    return eb.node("select_n", x.aval.dtype, (inside, lw.value(x, index), lw.value(update, update_index)))


def _as_index(eb, value):
    return eb.node("convert", INDEX, (value,))


def _window_starts(lw, indices, batch_index, operand_shape, sizes, index_map, batching_dims, mode):
    """Per operand axis, the start of the window a gather or scatter index vector selects,
    clamped so the window fits (every load and store stays in bounds whatever the index);
    and, for FILL_OR_DROP, whether the unclamped window was in bounds (else None)."""
    from jaxlite.lax.slicing import GatherScatterMode
    eb = lw.eb
    starts = [eb.index(0)] * len(operand_shape)
    for k, axis in enumerate(index_map):
        starts[axis] = _as_index(eb, lw.value(indices, list(batch_index) + [eb.index(k)]))
    for axis, index_axis in batching_dims:
        starts[axis] = batch_index[index_axis]
    inside = None
    if mode is GatherScatterMode.FILL_OR_DROP:
        for axis in index_map:
            last = eb.index(operand_shape[axis] - sizes[axis])
            fits = eb.node("and", dtypes.bool_, (eb.node("ge", dtypes.bool_, (starts[axis], eb.index(0))),
                                                  eb.node("le", dtypes.bool_, (starts[axis], last))))
            inside = fits if inside is None else eb.node("and", dtypes.bool_, (inside, fits))
    clamped = [_clamp_index(eb, s, max(n - k, 0) + 1) for s, n, k in zip(starts, operand_shape, sizes)]
    return clamped, inside


def gather_rule(lw, eqn, index):
    """An indexed load: the start indices are read inside the kernel, then the operand."""
    x, indices = eqn.inputs
    d, sizes, eb = eqn.params["dimension_numbers"], eqn.params["slice_sizes"], lw.eb
    dtype = x.aval.dtype
    dropped = set(d.collapsed_slice_dims) | set(d.operand_batching_dims)
    windows = [a for a in range(x.aval.ndim) if a not in dropped]
    batch_index = [i for p, i in enumerate(index) if p not in d.offset_dims]
    starts, inside = _window_starts(lw, indices, batch_index, x.aval.shape, sizes, d.start_index_map,
                                    zip(d.operand_batching_dims, d.start_indices_batching_dims),
                                    eqn.params["mode"])
    offsets = {a: index[p] for a, p in zip(windows, d.offset_dims)}
    operand_index = [eb.add(s, offsets.get(a, eb.index(0))) for a, s in enumerate(starts)]
    loaded = lw.value(x, operand_index) if x.aval.size else eb.const(0, dtype)
    if inside is None:
        return loaded
    return eb.node("select_n", dtype, (inside, eb.const(eqn.params["fill_value"], dtype), loaded))


# Reductions: hoisted to a stage per outer point.

def _reduction_rule(lw, eqn, kept_index, kind):
    x, axes = eqn.inputs[0], eqn.params["axes"]
    if not axes:
        return lw.value(x, kept_index)

    def body(reduce_vars):
        kept = iter(kept_index)
        operand_index = [reduce_vars[axes.index(a)] if a in axes else next(kept) for a in range(x.aval.ndim)]
        return lw.value(x, operand_index), (reduce_vars[0] if kind.startswith("arg") else None)

    operand_axes = [axes.index(a) if a in axes else None for a in range(x.aval.ndim)]
    result = lw.hoist(eqn.outputs[0], kept_index, kind, [x.aval.shape[a] for a in axes], body, operand_axes)
    if kind.startswith("arg"):
        return lw.eb.node("convert", eqn.params["index_dtype"], (result,))
    return result


def _reduce_window_rule(lw, eqn, out_index, kind):
    """A reduction over the window loops, hoisted per output point; positions in the
    padding or between base-dilated elements read the reduction's identity."""
    from jaxlite.lower.codegen import reduction_identity
    x, p = eqn.inputs[0], eqn.params
    dtype, eb = x.aval.dtype, lw.eb
    padding_config = [(lo, hi, d - 1) for (lo, hi), d in zip(p["padding"], p["base_dilation"])]
    reduced_axes = [a for a, size in enumerate(p["window_dimensions"]) if size > 1]

    def body(reduce_vars):
        window = dict(zip(reduced_axes, reduce_vars))
        padded_index = [eb.add(eb.mul(o, eb.index(stride)), eb.mul(window.get(a, eb.index(0)), eb.index(dilation)))
                        for a, (o, stride, dilation) in enumerate(zip(out_index, p["window_strides"],
                                                                      p["window_dilation"]))]
        identity = eb.const(reduction_identity(kind, dtype), dtype)
        return _padded_load(lw, x, padded_index, padding_config, identity), None

    extents = [p["window_dimensions"][a] for a in reduced_axes]
    if math.prod(extents) <= UNROLLED_WINDOW and dtype.itemsize >= 4:
        return _unrolled_window(eb, kind, dtype, extents, body)
    return lw.hoist(eqn.outputs[0], out_index, kind, extents, body)


# A small window (a 2x2 or 3x3 pool) is combined as one expression per output point, so
# the kernel vectorizes along the output's innermost axis; a reduction stage per point
# would run its few steps scalar (a 2x2 max pool on 64x56x56x32: 4.8 -> 1.0 ms). 16-bit
# floats keep the stage, which accumulates in float32 as eager does.
UNROLLED_WINDOW = 16
_WINDOW_COMBINE = {"sum": "add", "max": "max", "min": "min"}


def _unrolled_window(eb, kind, dtype, extents, body):
    from jaxlite.lower.codegen import reduction_identity
    result = eb.const(reduction_identity(kind, dtype), dtype)
    for offsets in itertools.product(*map(range, extents)):
        value, _ = body([eb.index(k) for k in offsets])
        result = eb.node(_WINDOW_COMBINE[kind], dtype, (result, value))
    return result


# Cumulative reductions: one kernel per result, its scanned axis the innermost loop, each
# element combining the previous output element (read back from memory) with the next input.
# A reversed scan runs its loop over the mirrored index (`_scan_index`), so "previous" is
# the element after. (16-bit floats are widened to float32 around the scan by a graph
# pass, pipeline._widen_narrow_floats, as the eager implementation accumulates.)

def combine_with(op):
    """A cumulative reduction's combining step: one kernel-IR op."""
    return lambda eb, dtype, previous, value: eb.node(op, dtype, (previous, value))


def logaddexp(eb, dtype, a, b):
    """log(exp(a) + exp(b)) from the larger: equal infinities give that infinity, not NaN."""
    high, low = eb.node("max", dtype, (a, b)), eb.node("min", dtype, (a, b))
    gap = eb.node("sub", dtype, (low, high))
    gap = eb.node("select_n", dtype, (eb.node("eq", dtypes.bool_, (gap, gap)), eb.const(float("-inf"), dtype), gap))
    return eb.node("add", dtype, (high, eb.node("log1p", dtype, (eb.node("exp", dtype, (gap,)),))))


def scan_index(eqn, index, eb):
    """The element a scan kernel's loop point computes: mirrored along a reversed axis."""
    if not eqn.params["reverse"]:
        return index
    axis = eqn.params["axis"]
    mirrored = list(index)
    mirrored[axis] = eb.node("sub", INDEX, (eb.index(eqn.inputs[0].aval.shape[axis] - 1), index[axis]))
    return mirrored


def _cumulative_rule(lw, eqn, index, combine):
    x, out = eqn.inputs[0], eqn.outputs[0]
    axis, eb, n = eqn.params["axis"], lw.eb, x.aval.shape[eqn.params["axis"]]
    position = index[axis]
    step, first = (1, n - 1) if eqn.params["reverse"] else (-1, 0)
    previous_index = list(index)
    previous_index[axis] = _clamp_index(eb, eb.node("add", INDEX, (position, eb.index(step))), n)
    previous = eb.node("load", out.aval.dtype, (eb.linearize(previous_index, out.aval.shape),), lw.buffer(out))
    value = lw.value(x, index)
    combined = combine(eb, out.aval.dtype, previous, value)
    is_first = eb.node("eq", dtypes.bool_, (position, eb.index(first)))
    return eb.node("select_n", out.aval.dtype, (is_first, combined, value))


# Scatters: a kernel of two sequential stages, out = operand, then for each update entry
# in order out[target] = combine(out[target], update). Targets are clamped into the buffer
# and the entries of a dropped window (mode FILL_OR_DROP) are not written, so no store
# ever leaves the buffer.
def _scatter_stages(lw, eqn, index, combine):
    """Appends the scatter's stages to its kernel (it is no map of the output index)."""
    from jaxlite.lax.slicing import scatter_slice_sizes
    x, indices, updates = eqn.inputs
    out, eb = eqn.outputs[0], lw.eb
    d = eqn.params["dimension_numbers"]
    out_buffer = lw.buffer(out)
    operand = lw.value(x, index)
    lw.stages.append(Store(list(lw.loops), [(out_buffer, eb.linearize(index, out.aval.shape), operand)]))
    if x.aval.size == 0:
        return
    loops = [eb.new_loop(n) for n in updates.aval.shape]
    update_index = [eb.loop_var(loop) for loop in loops]
    windows = d.update_window_dims
    batch_positions = [p for p in range(updates.aval.ndim) if p not in windows]
    sizes = scatter_slice_sizes(x.aval.shape, updates.aval.shape, d)
    starts, inside = _window_starts(lw, indices, [update_index[p] for p in batch_positions], x.aval.shape,
                                    sizes, d.scatter_dims_to_operand_dims,
                                    zip(d.operand_batching_dims, d.scatter_indices_batching_dims),
                                    eqn.params["mode"])
    dropped = set(d.inserted_window_dims) | set(d.operand_batching_dims)
    offsets = iter(update_index[p] for p in windows)
    target = [s if a in dropped else eb.add(s, next(offsets)) for a, s in enumerate(starts)]
    offset = eb.linearize(target, out.aval.shape)
    current = eb.node("load", out.aval.dtype, (offset,), out_buffer)
    updated = _scatter_combine(eb, combine, current, lw.value(updates, update_index))
    if _rows_owned(x.aval, updates.aval):
        lw.owned = lw.loops[0]
        owned = eb.owns(lw.owned, target[0])
        inside = owned if inside is None else eb.node("and", dtypes.bool_, (inside, owned))
    in_order = [loops[p] for p in batch_positions] + [loops[p] for p in windows]   # as the eager impl
    lw.stages.append(Store(in_order, [(out_buffer, offset, updated)], ordered=True, guard=inside))


def _rows_owned(operand, updates):
    """Whether threads split the scatter's output rows, each thread copying its rows of
    the operand and then scanning every update for those that land in its rows. Worth it
    when the copy outweighs the updates (an embedding's gradient: a big zero fill, few
    rows updated): each thread reads all the updates' indices."""
    return operand.ndim >= 1 and operand.shape[0] > 1 and operand.size >= updates.size


def _scatter_combine(eb, op, current, update):
    if op is None:
        return update
    if op == "add" and current.dtype == dtypes.bool_:     # numpy adds booleans as "or"
        op = "or"
    return eb.node(op, current.dtype, (current, update))


def threefry2x32_rule(lw, eqn, index):
    """The cipher's 20 add-rotate-xor rounds as one expression per output word."""
    from jaxlite.lax.random_bits import KEY_PARITY, ROTATIONS   # the constants' one home
    eb, word = lw.eb, dtypes.uint32

    def add(a, b):
        return eb.node("add", word, (a, b))

    def xor(a, b):
        return eb.node("xor", word, (a, b))

    def rotate_left(x, distance):
        high = eb.node("shift_left", word, (x, eb.const(distance, word)))
        low = eb.node("shift_right_logical", word, (x, eb.const(32 - distance, word)))
        return eb.node("or", word, (high, low))

    key1, key2, x1, x2 = (lw.operand(v, index) for v in eqn.inputs)
    schedule = (key1, key2, xor(xor(key1, key2), eb.const(KEY_PARITY, word)))
    x1, x2 = add(x1, schedule[0]), add(x2, schedule[1])
    for group in range(5):
        for distance in ROTATIONS[group % 2]:
            x1 = add(x1, x2)
            x2 = xor(rotate_left(x2, distance), x1)
        x1 = add(x1, schedule[(group + 1) % 3])
        x2 = add(x2, add(schedule[(group + 2) % 3], eb.const(group + 1, word)))
    return [x1, x2]


def dot_compute_dtype(lhs_dtype, out_dtype):
    """The accumulation dtype, as the numpy implementation chooses it."""
    import numpy as np
    compute = np.promote_types(out_dtype, lhs_dtype)
    if dtypes.is_16bit_float(compute):
        return np.dtype(np.float32)
    return compute


def dot_general_rule(lw, eqn, out_index):
    lhs, rhs = eqn.inputs
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    out_dtype = eqn.outputs[0].aval.dtype
    compute = dot_compute_dtype(lhs.aval.dtype, out_dtype)
    n_lhs_free = lhs.aval.ndim - len(lc) - len(lb)
    batch_index = out_index[:len(lb)]
    lhs_free = out_index[len(lb):len(lb) + n_lhs_free]
    rhs_free = out_index[len(lb) + n_lhs_free:]

    def operand_index(ndim, contracting, batch, free, reduce_vars):
        index, free = [], iter(free)
        for axis in range(ndim):
            if axis in contracting:
                index.append(reduce_vars[contracting.index(axis)])
            elif axis in batch:
                index.append(batch_index[batch.index(axis)])
            else:
                index.append(next(free))
        return index

    def body(reduce_vars):
        a = lw.value(lhs, operand_index(lhs.aval.ndim, lc, lb, lhs_free, reduce_vars))
        b = lw.value(rhs, operand_index(rhs.aval.ndim, rc, rb, rhs_free, reduce_vars))
        product = lw.eb.node("mul", compute, (lw.eb.node("convert", compute, (a,)),
                                              lw.eb.node("convert", compute, (b,))))
        return product, None

    extents = [lhs.aval.shape[a] for a in lc]
    if math.prod(extents) <= UNROLLED_CONTRACTION:
        products = [body([lw.eb.index(k) for k in offsets])[0] for offsets in itertools.product(*map(range, extents))]
        result = functools.reduce(lambda total, product: lw.eb.node("add", compute, (total, product)), products,
                                  lw.eb.const(0, compute))
        return lw.eb.node("convert", out_dtype, (result,))
    order = _row_update_order(eqn) if compute == out_dtype else None
    result = lw.hoist(eqn.outputs[0], out_index, "sum", extents, body, operand_axes=order)
    return result if order is not None else lw.eb.node("convert", out_dtype, (result,))


def _row_update_order(eqn):
    """The loop order (as hoist's operand_axes) that makes a product whose right operand is
    contiguous along a free axis a sum of row updates, out[i, :] += a[i, k] * b[k, :]: the
    kernel gets the product alone and kernel_rewrites.accumulate_in_place runs its loops in
    this order, so the innermost loop reads b and writes out contiguously and vectorizes
    along the output's rows (a dot product per output element instead reads b with a stride
    of a row: 16x32x64 took 15.6 us so, 2.1 us in row updates; 64x64x64 80 -> 8). None
    where b's contiguous axis is contracted: then the sum over k reads both operands
    contiguously."""
    rhs = eqn.inputs[1]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    if rhs.aval.ndim - 1 in tuple(rc) + tuple(rb) or eqn.outputs[0].aval.dtype == dtypes.bool_:
        return None
    free = [None] * (eqn.outputs[0].aval.ndim - (rhs.aval.ndim - len(rc) - len(rb)))
    contracted = sorted(range(len(rc)), key=lambda position: rc[position])
    return free + contracted + [None] * (rhs.aval.ndim - len(rc) - len(rb))


# A product contracting over a few elements (the first layer of a network on 2-D points)
# is a sum of products per output element, vectorized along the output's innermost axis:
# the GEMM would pack, tile and store for so little arithmetic (a 1000x2 by 2x64 product:
# ~95 us on the GEMM, ~10 us fused). step_policy.gemm_applies leaves these to fusion.
UNROLLED_CONTRACTION = 8

