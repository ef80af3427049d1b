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
    current = eb.node("load", dtype, (index,), buffer)
    updated = eb.node(_IN_PLACE_OPS[reduce.kind], dtype, (current, reduce.value))
    stages = [Store(list(kernel.outer), [(buffer, index, identity)]), Store(order, [(buffer, index, updated)])]
    return Kernel(kernel.name, [], stages, kernel.inputs, kernel.outputs)


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
