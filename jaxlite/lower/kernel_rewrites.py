"""Rewrites of finished kernels (kernel IR to kernel IR), applied by fusion to each kernel
it lowers: they trade a second pass over memory, a second transcendental or a computation
thrown away for a cheaper form of the same loop nest."""
import operator

from jaxlite.core import dtypes
from jaxlite.lower import kernel_ir
from jaxlite.lower.kernel_ir import Kernel, Reduce, Store

_IN_PLACE_OPS = {"sum": "add", "prod": "mul", "max": "max", "min": "min", "and": "and", "or": "or",
                 "xor": "xor"}


def is_column_reduction(stage, outer):
    """A reduction whose operand's contiguous axis is kept: computed inside another kernel
    it would read memory with a stride, so it gets a kernel of its own that accumulates
    in memory order (`accumulate_in_place`)."""
    order = stage.operand_order
    return bool(order) and order[-1] in outer and stage.kind in _IN_PLACE_OPS


def accumulate_in_place(kernel, eb):
    """A lone reduction whose innermost operand axis is kept (a column reduction) becomes
    out = identity; for all points in memory order: out[kept] = out[kept] op x[...]

    so the input is read contiguously and the update vectorizes along the kept axis,
    instead of a strided inner loop per output element.
    """
    if len(kernel.stages) != 2 or not kernel.outer:
        return kernel
    reduce, store = kernel.stages
    if not (isinstance(reduce, Reduce) and isinstance(store, Store)) or store.loops \
            or len(store.writes) != 1 or reduce.kind not in _IN_PLACE_OPS:
        return kernel
    buffer, index, value = store.writes[0]
    order = reduce.operand_order
    if value is not reduce.result or not order or order[-1] not in kernel.outer or not reduce.loops:
        return kernel
    from jaxlite.lower.codegen import reduction_identity
    dtype = reduce.value.dtype
    identity = eb.const(reduction_identity(reduce.kind, dtype), dtype)
    stages = [Store(list(kernel.outer), [(buffer, index, identity)]), *_row_updates(eb, reduce, order, buffer, index)]
    return Kernel(kernel.name, [], stages, kernel.inputs, kernel.outputs)


# Points of the reduced loop next to the kept contiguous ones combined per update of the
# output row: each update is a load, the op and a store that the next one waits for
# (store forwarding + the op, ~9 cycles), so one point per update leaves the FMA units
# idle on short rows; 8 at a time, a 16x64x64 product took 4.8 -> 3.2 us, 64x64x64 19 -> 8,
# a column sum of 1000x3 6.1 -> 1.1 us, of 256x512 10 -> 6.9 us.
ROW_UPDATE_POINTS = 8


def _row_updates(eb, reduce, order, buffer, index):
    """out[kept] = out[kept] op (x[p] op x[p + 1] op ... ) over ROW_UPDATE_POINTS points p of
    the innermost reduced loop at a time, then one at a time over the points left."""
    op, dtype = _IN_PLACE_OPS[reduce.kind], reduce.value.dtype
    position = max(p for p, loop in enumerate(order) if loop in reduce.loops)
    reduced = order[position]
    groups, rest = divmod(reduced.extent, ROW_UPDATE_POINTS)

    def update(loop, points):
        terms = [_substitute(eb, reduce.value, {eb.loop_var(reduced): point}) for point in points]
        while len(terms) > 1:       # pairwise: the terms' sum waits for 3 ops, not 7
            pairs = [eb.node(op, dtype, tuple(terms[i:i + 2])) for i in range(0, len(terms) - 1, 2)]
            terms = pairs + terms[len(terms) - len(terms) % 2:]
        total = terms[0]
        current = eb.node("load", dtype, (index,), buffer)
        loops = order[:position] + [loop] + order[position + 1:]
        return Store(loops, [(buffer, index, eb.node(op, dtype, (current, total)))])

    stages = []
    if groups:
        group = eb.new_loop(groups)
        first = eb.mul(eb.loop_var(group), eb.index(ROW_UPDATE_POINTS))
        stages.append(update(group, [eb.add(first, eb.index(u)) for u in range(ROW_UPDATE_POINTS)]))
    if rest:
        left = eb.new_loop(rest)
        stages.append(update(left, [eb.add(eb.loop_var(left), eb.index(groups * ROW_UPDATE_POINTS))]))
    return stages


def store_reduced_values(kernel, eb):
    """When the final store recomputes a transcendental value that an earlier reduction
    reduced (softmax: sum exp(x - max), then store exp(x - max) / sum), the reduction
    also writes the value into the store's output and the store reads it back:

        acc = sum-reduce v(i), out[i] = v(i)   then   out[i] = f(out[i], acc)

    One transcendental per element instead of two; the input is still read twice (the
    max and the sum pass) and the output row stays in cache between the passes.
    Measured on softmax 4096x1024: see benchmarks/run.py (README table).
    """
    *earlier, store = kernel.stages or [None]
    # An ordered store (a scatter, a scan) reads its own buffer: values parked there would be
    # read back as what it accumulates.
    if not isinstance(store, Store) or len(store.writes) != 1 or store.ordered:
        return kernel
    buffer, index, value = store.writes[0]
    for position, stage in enumerate(earlier):
        if not _reused_by_store(stage, store, buffer):
            continue
        to_store_loops = {eb.loop_var(a): eb.loop_var(b) for a, b in zip(stage.loops, store.loops)}
        recomputed = _substitute(eb, stage.value, to_store_loops)
        if not _contains(value, recomputed):
            continue
        to_reduce_loops = {new: old for old, new in to_store_loops.items()}
        read_back = eb.node("load", buffer.dtype, (index,), buffer)
        reduce = Reduce(stage.result, stage.kind, stage.loops, stage.value, stage.index, stage.operand_order,
                        [(buffer, _substitute(eb, index, to_reduce_loops), stage.value)])
        store = Store(store.loops, [(buffer, index, _substitute(eb, value, {recomputed: read_back}))])
        stages = earlier[:position] + [reduce] + earlier[position + 1:] + [store]
        return Kernel(kernel.name, kernel.outer, stages, kernel.inputs, kernel.outputs)
    return kernel


def _reused_by_store(stage, store, buffer):
    """A plain reduction over loops shaped like the store's, of a transcendental value
    the store's buffer holds exactly."""
    return (isinstance(stage, Reduce) and not stage.kind.startswith("arg") and not stage.writes
            and [loop.extent for loop in stage.loops] == [loop.extent for loop in store.loops]
            and stage.value.dtype == buffer.dtype and _contains(stage.value, None, kernel_ir.ops_in(kernel_ir.MATH)))


def _contains(root, node, ops=frozenset()):
    """Whether the DAG under `root` holds `node` (or, with `ops`, a node doing one of them)."""
    seen, stack = set(), [root]
    while stack:
        e = stack.pop()
        if e is node or e.op in ops:
            return True
        if id(e) not in seen:
            seen.add(id(e))
            stack.extend(e.args)
    return False


def _substitute(eb, root, replacements, rebuild=None):
    """`root` rebuilt with the nodes in `replacements` (keyed by node) replaced; a node whose
    arguments changed is made by `rebuild(eb, node, new_args)` when given."""
    replacements = {id(old): new for old, new in replacements.items()}
    stack = [(root, False)]
    while stack:
        e, args_done = stack.pop()
        if id(e) in replacements:
            continue
        if not args_done:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args)
            continue
        args = tuple(replacements[id(a)] for a in e.args)
        same = all(new is old for new, old in zip(args, e.args))
        if same:
            replacements[id(e)] = e
        else:
            replacements[id(e)] = rebuild(eb, e, args) if rebuild else eb.node(e.op, e.dtype, args, e.attr)
    return replacements[id(root)]


def unroll_pair_loops(kernel, eb):
    """A store whose innermost loop has extent 2 -- writing the interleaved parts of complex
    values (complex_split.py), whose value is `select_n(i < 1, im, re)` -- stores both points
    of that loop at each point of the others: the select folds away, so each part is computed
    once (not both parts twice, one thrown away), and the loop vectorizer sees two stores
    of stride 2 (an interleaved group) in the loop above."""
    stages = [_unrolled_pair(stage, eb) for stage in kernel.stages]
    if all(new is old for new, old in zip(stages, kernel.stages)):
        return kernel
    return Kernel(kernel.name, kernel.outer, stages, kernel.inputs, kernel.outputs, kernel.owned)


def _unrolled_pair(stage, eb):
    if not isinstance(stage, Store) or stage.ordered or stage.guard is not None or len(stage.loops) < 2 \
            or stage.loops[-1].extent != 2:
        return stage
    pair = eb.loop_var(stage.loops[-1])
    writes = [(buffer, _folded(eb, index, pair, k), _folded(eb, value, pair, k))
              for k in (0, 1) for buffer, index, value in stage.writes]
    return Store(stage.loops[:-1], writes)


_COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
                "eq": operator.eq, "ne": operator.ne}
_INDEX_ARITHMETIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}


def _folded(eb, root, loop_var, value):
    """`root` at `loop_var` = value, with what that makes constant folded: index arithmetic,
    comparisons of constants and selects by a constant."""
    return _substitute(eb, root, {loop_var: eb.index(value)}, _fold_node)


def _fold_node(eb, e, args):
    constant = [a.attr[1] if a.op == "const" else None for a in args]
    if e.op == "select_n" and constant[0] is not None:
        return args[1 + int(constant[0])]
    if None not in constant and e.op in _COMPARISONS:
        return eb.const(_COMPARISONS[e.op](*constant), dtypes.bool_)
    if None not in constant and e.op in _INDEX_ARITHMETIC and e.dtype == kernel_ir.INDEX:
        return eb.index(_INDEX_ARITHMETIC[e.op](*constant))
    return eb.node(e.op, e.dtype, args, e.attr)


_MAX_PIECES = 8


def split_at_pieces(kernel, eb):
    """A lone store whose value picks among pieces by comparing its innermost loop index with
    constants -- a concatenate: select_n(i < 256, q[i - 256], p[i]), each operand read at a
    clamped index -- stores each piece over its own range of that loop. In each range the
    comparisons and the clamps are decided, so a piece is one load at a plain index (a copy
    the vectorizer makes of whole vectors) instead of a load of every operand and two
    selects per element. The loops above become the kernel's outer loops (threads still
    split the first)."""
    if kernel.outer or kernel.owned is not None or len(kernel.stages) != 1:
        return kernel
    (store,) = kernel.stages
    if not isinstance(store, Store) or store.ordered or store.guard is not None or len(store.loops) < 2:
        return kernel
    loop = store.loops[-1]
    position = eb.loop_var(loop)
    cuts = sorted({cut for cut in _cuts_along(store, position) if 0 < cut < loop.extent})
    if not cuts or len(cuts) >= _MAX_PIECES:
        return kernel
    bounds = [0, *cuts, loop.extent]
    stages = [_piece(eb, store, position, start, stop) for start, stop in zip(bounds, bounds[1:])]
    return Kernel(kernel.name, store.loops[:-1], stages, kernel.inputs, kernel.outputs)


_CUT_AT = {"lt": 0, "ge": 0, "le": 1, "gt": 1}     # cmp(i, c) changes value between c + this - 1 and c + this


def _cuts_along(store, position):
    roots = [e for _, index, value in store.writes for e in (index, value) if e is not None]
    seen, stack = set(), roots
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if e.op in _CUT_AT and e.args[0] is position and e.args[1].op == "const":
            yield e.args[1].attr[1] + _CUT_AT[e.op]
        stack.extend(e.args)


def _piece(eb, store, position, start, stop):
    """The store over positions [start, stop) of its innermost loop, with what that decides folded."""
    loop = eb.new_loop(stop - start)
    moved = eb.add(eb.loop_var(loop), eb.index(start))
    ranges = {id(moved): (start, stop - 1)}
    fold = lambda eb, e, args: _fold_in_range(eb, e, args, ranges)
    writes = [(buffer, _substitute(eb, index, {position: moved}, fold), _substitute(eb, value, {position: moved}, fold))
              for buffer, index, value in store.writes]
    return Store([loop], writes)


def _fold_in_range(eb, e, args, ranges):
    """_fold_node, and comparisons of index expressions whose ranges decide them."""
    folded = _fold_node(eb, e, args)
    if folded.op in _COMPARISONS and folded.op not in ("eq", "ne"):
        low, high = (_index_range(a, ranges) for a in folded.args)
        if low is not None and high is not None:
            if _COMPARISONS[folded.op](low[1], high[0]) and _COMPARISONS[folded.op](low[0], high[1]):
                return eb.const(True, dtypes.bool_)          # holds at both extremes: everywhere
            if not _COMPARISONS[folded.op](low[0], high[1]) and not _COMPARISONS[folded.op](low[1], high[0]):
                return eb.const(False, dtypes.bool_)
    return folded


def _index_range(e, ranges):
    """(lowest, highest) an index expression takes, or None when unknown."""
    if e.dtype != kernel_ir.INDEX:
        return None
    if id(e) in ranges:
        return ranges[id(e)]
    found = None
    if e.op == "const":
        found = (e.attr[1], e.attr[1])
    elif e.op == "loop":
        found = (0, e.attr.extent - 1)
    elif e.op in _INDEX_ARITHMETIC or e.op == "select_n":
        parts = [_index_range(a, ranges) for a in e.args[e.op == "select_n":]]
        if None not in parts:
            found = _combined(e.op, parts)
    ranges[id(e)] = found
    return found


def _combined(op, parts):
    if op == "select_n":
        return min(p[0] for p in parts), max(p[1] for p in parts)
    (a0, a1), (b0, b1) = parts
    if op == "add":
        return a0 + b0, a1 + b1
    if op == "sub":
        return a0 - b1, a1 - b0
    products = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
    return min(products), max(products)
