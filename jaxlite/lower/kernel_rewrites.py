"""Rewrites of finished kernels (kernel IR to kernel IR), applied by fusion to each kernel
it lowers: both trade a second pass over memory or a second transcendental for a cheaper
form of the same loop nest."""
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


def _substitute(eb, root, replacements):
    """`root` rebuilt with the nodes in `replacements` (keyed by node) replaced."""
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
        replacements[id(e)] = e if same else eb.node(e.op, e.dtype, args, e.attr)
    return replacements[id(root)]
