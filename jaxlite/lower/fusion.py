"""Fusion: partition an optimized jaxpr into kernels and lower each to kernel IR.

Every variable is either *materialized* (it lives in a buffer: arguments, outputs,
values crossing kernels) or *inlined* (recomputed inside each consumer's loop nest
as part of its scalar expression). A kernel computes one or more materialized
"roots" over a common iteration domain; everything the roots need that is not
materialized is inlined, with broadcasts, transposes, reshapes, slices and pads
turned into index arithmetic on the loads.

Reductions inside a kernel become stages computed once per outer point (the kept
axes): softmax is one kernel `for row: max-stage, sum-stage, store-stage` that reads
each row from memory once and twice more from cache. reduce_window is such a stage
over the window loops; gather is an indexed load (its indices loaded in the same
loop, clamped so no index value reads outside the operand).

Choosing what to materialize, greedily:
  1. jaxpr outputs, operands and results of equations without a fused lowering,
     and dot_general, cumulative and scatter results (each its own kernel);
  2. a value needed by roots of different kernels, unless those roots can share
     one kernel (same domain, compatible reductions, independent of each other)
     or it is a broadcast literal or an iota (recomputed in each);
  3. a reduction whose result would have to be recomputed per inner point
     (its kept index does not cover exactly the kernel's outer loops).
Rule 3 is discovered while lowering, which then restarts with the larger set.
"""
import functools
import itertools
import math

from jaxlite.core import dtypes
from jaxlite.core.ir import Literal, Var
from jaxlite.lower import kernel_ir, llvm_math
from jaxlite.lower.kernel_ir import INDEX, Buffer, ExprBuilder, Kernel, Reduce, Store

LOWERINGS = {}          # primitive name -> rule(lowering, eqn, index) -> Expr


# How many distinct indices one value may be computed at inside a kernel (_count_index).
MAX_INDICES_PER_VALUE = 16


class Materialize(Exception):
    """Raised during lowering when `var` cannot be inlined where it is used."""

    def __init__(self, var):
        super().__init__(var)
        self.var = var


# ---------------------------------------------------------------- the plan

class KernelStep:
    """Run a fused kernel: reads `inputs`, writes `outputs` (jaxpr variables)."""

    def __init__(self, kernel, inputs, outputs):
        self.kernel, self.inputs, self.outputs = kernel, inputs, outputs

    def describe(self):
        return str(self.kernel)


class EqnStep:
    """An equation run outside the fused kernels (dot_general via GEMM, or a fallback)."""

    def __init__(self, eqn, kind):
        self.eqn, self.kind = eqn, kind
        self.inputs = [v for v in eqn.inputs if isinstance(v, Var)]
        self.outputs = list(eqn.outputs)

    def describe(self):
        from jaxlite.core.ir import _Namer, pretty_print_eqn
        return f"{self.kind}: {pretty_print_eqn(self.eqn, _Namer())}"


def is_fusible(eqn):
    rule = LOWERINGS.get(eqn.primitive.name)
    if rule is None or not all(_supported_dtype(v.aval.dtype) for v in eqn.inputs + eqn.outputs):
        return False
    constraint = _CONSTRAINTS.get(eqn.primitive.name)
    return constraint is None or constraint(eqn)


# Cases a lowering does not cover (they run as logged fallbacks).
_CONSTRAINTS = {
    "polygamma": lambda eqn: eqn.params["m"] <= llvm_math.POLYGAMMA_MAX_ORDER,
}


def _supported_dtype(dtype):
    return dtype.kind in "biuf" or dtype == dtypes.bfloat16


def partition(jaxpr, eqn_step_kind):
    """Steps (KernelStep/EqnStep) in execution order for a flat jaxpr.

    `eqn_step_kind(eqn)` names how a non-fused equation runs ("gemm", "fallback"), or
    returns None when the equation should be fused.
    """
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outputs}
    external = {v for eqn in jaxpr.eqns if eqn_step_kind(eqn) for v in eqn.outputs}
    roots = _initial_roots(jaxpr, producers, eqn_step_kind) | external
    allow_merging = True
    while True:
        groups = _group_roots(jaxpr, producers, roots, external, allow_merging)
        try:
            steps = [_lower_group(group, producers, roots) for group in groups]
        except Materialize as request:
            if request.var in roots:
                raise RuntimeError(f"fusion cannot lower {request.var}") from None
            roots.add(request.var)
            continue
        steps += [EqnStep(eqn, eqn_step_kind(eqn)) for eqn in jaxpr.eqns if eqn_step_kind(eqn)]
        ordered = _topological_order(steps, producers)
        if ordered is not None:
            return ordered
        allow_merging = False   # merged siblings formed a cycle between kernels


def _initial_roots(jaxpr, producers, eqn_step_kind):
    roots = {v for v in jaxpr.outvars if isinstance(v, Var) and v in producers}
    for eqn in jaxpr.eqns:
        if eqn_step_kind(eqn) or eqn.primitive.name == "dot_general":
            roots.update(v for v in eqn.inputs if isinstance(v, Var) and v in producers)
            roots.update(eqn.outputs)
        if eqn.primitive.name in CUMULATIVE or eqn.primitive.name in SCATTERS:   # it reads back its own output
            roots.update(eqn.outputs)
    return {v for v in roots if not eqn_step_kind(producers[v])}


# ---------------------------------------------------------------- grouping roots into kernels

def _domain(var, producers):
    """(iteration shape, reduced axes or None) of the kernel computing root `var`."""
    eqn = producers[var]
    if eqn.primitive.name in REDUCTIONS and eqn.params["axes"]:
        return eqn.inputs[0].aval.shape, tuple(sorted(eqn.params["axes"]))
    if eqn.primitive.name == "dot_general":
        return var.aval.shape, "dot"
    if eqn.primitive.name in CUMULATIVE:
        return var.aval.shape, "scan"
    if eqn.primitive.name in SCATTERS:
        return var.aval.shape, "scatter"
    return var.aval.shape, None


def _compatible(domains):
    shapes = {shape for shape, _ in domains}
    reduced = {axes for _, axes in domains if axes is not None}
    return len(shapes) == 1 and len(reduced) <= 1 and not reduced & {"dot", "scan", "scatter"}


class _UnionFind:
    def __init__(self):
        self.parent = {}

    def find(self, x):
        while self.parent.get(x, x) is not x:
            x = self.parent[x]
        return x

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)


def _root_ancestors(jaxpr, producers, roots):
    """For each variable, the roots it depends on (to avoid merging dependent roots)."""
    ancestors = {}
    for eqn in jaxpr.eqns:
        found = set()
        for v in eqn.inputs:
            if isinstance(v, Var) and v in producers:
                found |= ancestors[v] | ({v} if v in roots else set())
        for out in eqn.outputs:
            ancestors[out] = found
    return ancestors


def _group_roots(jaxpr, producers, roots, external, allow_merging):
    """Groups of roots sharing a kernel; may add roots (values shared across kernels)."""
    while True:
        users = _root_users(jaxpr, producers, roots)
        ancestors = _root_ancestors(jaxpr, producers, roots)
        groups = _UnionFind()
        shared = None
        for var, var_users in users.items():
            if len(var_users) > 1 and not _free_to_recompute(var, producers) and \
                    not _merge(groups, var_users, producers, ancestors, allow_merging):
                shared = var
                break
        if shared is None:
            break
        roots.add(shared)
    kernel_roots = roots - external
    if allow_merging:
        _merge_siblings(producers, roots, kernel_roots, groups, ancestors)
    members = {}
    for root in sorted(kernel_roots, key=lambda v: _eqn_position(jaxpr, producers, v)):
        members.setdefault(groups.find(root), []).append(root)
    return list(members.values())


def _free_to_recompute(var, producers):
    """A broadcast literal or an iota: cheaper inlined in every kernel than read from memory."""
    eqn = producers[var]
    return eqn.primitive.name in ("broadcast_in_dim", "iota") and not any(isinstance(v, Var) for v in eqn.inputs)


def _merge(groups, roots, producers, ancestors, allow_merging):
    roots = list(roots)
    if not allow_merging or not _compatible([_domain(r, producers) for r in roots]):
        return False
    if any(a in ancestors[b] for a in roots for b in roots):
        return False
    for other in roots[1:]:
        groups.union(other, roots[0])
    return True


def _merge_siblings(producers, roots, kernel_roots, groups, ancestors):
    """Roots reading the same buffer over the same domain share a loop (one read of it)."""
    readers = {}
    for root in kernel_roots:
        for var in _materialized_inputs(root, producers, roots):
            readers.setdefault(var, []).append(root)
    for siblings in readers.values():
        leaders = {groups.find(r): r for r in siblings}
        candidates = list(leaders.values())
        if len(candidates) > 1:
            members = [r for r in kernel_roots if groups.find(r) in leaders]
            if _compatible([_domain(r, producers) for r in members]) and \
                    not any(a in ancestors[b] for a in members for b in members):
                for other in candidates[1:]:
                    groups.union(other, candidates[0])


def _materialized_inputs(root, producers, roots):
    seen, stack, found = set(), [root], set()
    while stack:
        var = stack.pop()
        for v in producers[var].inputs:
            if not isinstance(v, Var) or v in seen:
                continue
            seen.add(v)
            if v in roots or v not in producers:
                found.add(v)
            else:
                stack.append(v)
    return found


def _root_users(jaxpr, producers, roots):
    """For each inlined variable, the roots whose expressions contain it."""
    users = {}
    for eqn in reversed(jaxpr.eqns):
        targets = set()
        for out in eqn.outputs:
            targets |= {out} if out in roots else users.get(out, set())
        for v in eqn.inputs:
            if isinstance(v, Var) and v in producers and v not in roots:
                users.setdefault(v, set()).update(targets)
    return users


def _eqn_position(jaxpr, producers, var):
    return jaxpr.eqns.index(producers[var])


def _topological_order(steps, producers):
    """Steps ordered so every input is computed before use; None if they form a cycle."""
    made_by = {v: step for step in steps for v in step.outputs}
    pending = {id(step): {made_by[v] for v in step.inputs if v in made_by} for step in steps}
    _chain_effects(steps, pending)
    ordered, done = [], set()
    while len(ordered) < len(steps):
        ready = [s for s in steps if id(s) not in done and all(id(d) in done for d in pending[id(s)])]
        if not ready:
            return None
        ordered.extend(ready)
        done.update(id(s) for s in ready)
    return ordered


def _chain_effects(steps, pending):
    """Effectful equations (debug callbacks) run in program order: each waits for the
    previous one. The EqnSteps come in jaxpr order, so the chain follows the program."""
    from jaxlite.core.ir import has_effects
    previous = None
    for step in steps:
        if isinstance(step, EqnStep) and has_effects(step.eqn):
            if previous is not None:
                pending[id(step)].add(previous)
            previous = step


# ---------------------------------------------------------------- lowering a group to kernel IR

_kernel_counter = [0]


def _lower_group(group, producers, roots):
    shape, reduced = _compatible_domain(group, producers)
    if reduced == "scan":       # every axis but the scanned one is independent
        axis = producers[group[0]].params["axis"]
        outer = [a for a in range(len(shape)) if a != axis]
    elif reduced == "scatter":  # the updates land one after another
        outer = []
    else:
        first = _GroupLowering(producers, roots, shape, reduced, outer=None)
        first.build(group)
        outer = first.required_outer()
    lowering = _GroupLowering(producers, roots, shape, reduced, outer=outer)
    stages = lowering.build(group)
    lowering.check_reductions()
    _kernel_counter[0] += 1
    outputs = [lowering.buffer(v) for v in group]
    kernel = Kernel(f"fused_{_kernel_counter[0]}", [lowering.loops[a] for a in outer], stages,
                    list(lowering.inputs.values()), outputs, owned=lowering.owned)
    kernel = _accumulate_in_place(kernel, lowering.eb)
    kernel = _store_reduced_values(kernel, lowering.eb)
    return KernelStep(kernel, list(lowering.inputs), list(group))


def _operand_order(kept_index, reduce_loops, operand_axes):
    """The loops in the operand's memory order, when every kept index is a plain loop."""
    if operand_axes is None or any(i.op != "loop" for i in kept_index):
        return None
    kept = iter(i.attr for i in kept_index)
    return [next(kept) if position is None else reduce_loops[position] for position in operand_axes]


_IN_PLACE_OPS = {"sum": "add", "prod": "mul", "max": "max", "min": "min", "and": "and", "or": "or",
                 "xor": "xor"}


def _is_column_reduction(stage, outer):
    """A reduction whose operand's contiguous axis is kept: computed inside another kernel
    it would read memory with a stride, so it gets a kernel of its own that accumulates
    in memory order (`_accumulate_in_place`)."""
    order = stage.operand_order
    return bool(order) and order[-1] in outer and stage.kind in _IN_PLACE_OPS


def _accumulate_in_place(kernel, eb):
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


def _store_reduced_values(kernel, eb):
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
    from jaxlite.lower.llvm_math import EMITTERS
    return (isinstance(stage, Reduce) and not stage.kind.startswith("arg") and not stage.writes
            and [loop.extent for loop in stage.loops] == [loop.extent for loop in store.loops]
            and stage.value.dtype == buffer.dtype and _contains(stage.value, None, set(EMITTERS)))


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


def _compatible_domain(group, producers):
    domains = [_domain(v, producers) for v in group]
    reduced = next((axes for _, axes in domains if axes is not None), None)
    return domains[0][0], reduced


class _GroupLowering:
    """Builds the stages of one kernel; `value(var, index)` is the heart of it."""

    def __init__(self, producers, roots, shape, reduced, outer):
        self.producers, self.roots = producers, roots
        self.eb = ExprBuilder()
        self.loops = [self.eb.new_loop(n) for n in shape]
        self.reduced = reduced
        if outer is None:   # first pass: find which loops the reductions need outside
            outer = [a for a in range(len(shape)) if not isinstance(reduced, tuple) or a not in reduced]
        self.outer_axes = outer
        self.allowed = {self.loops[a] for a in outer}
        self.stages, self.inputs, self.hoisted = [], {}, []
        self._memo, self._buffers, self._indices_seen = {}, {}, {}
        self.owned = None   # the loop threads split when each owns a share of it (scatters)

    def buffer(self, var):
        found = self._buffers.get(var)
        if found is None:
            found = self._buffers[var] = Buffer(f"b{len(self._buffers)}", var.aval.shape, var.aval.dtype)
        return found

    # -- building the stages
    def build(self, group):
        index = [self.eb.loop_var(loop) for loop in self.loops]
        if self.reduced == "scatter":
            self._apply_rule(group[0], index)
            return self.stages
        per_point, per_element = [], []
        for root in group:
            if _domain(root, self.producers)[1] in (None, "scan"):
                per_element.append((root, index))
            else:
                kept = self._kept_index(root, index)
                per_point.append((root, kept))
        writes = [(self.buffer(v), self.eb.linearize(i, v.aval.shape), self._compute(v, i))
                  for v, i in per_point]
        if writes:
            self.stages.append(Store([], writes))
        per_element = [(v, _scan_index(self.producers[v], i, self.eb) if self.reduced == "scan" else i)
                       for v, i in per_element]
        writes = [(self.buffer(v), self.eb.linearize(i, v.aval.shape), self._compute(v, i))
                  for v, i in per_element]
        if writes:
            inner = [l for a, l in enumerate(self.loops) if a not in self.outer_axes]
            self.stages.append(Store(inner, writes, ordered=self.reduced == "scan"))
        return self.stages

    def _kept_index(self, root, index):
        eqn = self.producers[root]
        if eqn.primitive.name == "dot_general":
            return index
        axes = eqn.params["axes"]
        return [i for a, i in enumerate(index) if a not in axes]

    def required_outer(self):
        """Axes every hoisted reduction needs as outer loops (natural order)."""
        needed = set()
        for _, kept_loops in self.hoisted:
            needed |= kept_loops
        if isinstance(self.reduced, tuple):
            needed |= {l for a, l in enumerate(self.loops) if a not in self.reduced}
        if self.reduced == "dot":
            needed = set(self.loops)
        return [a for a, l in enumerate(self.loops) if l in needed]

    def check_reductions(self):
        outer = {self.loops[a] for a in self.outer_axes}
        stages = [stage for stage in self.stages if isinstance(stage, Reduce)]
        for (var, kept_loops), stage in zip(self.hoisted, stages):
            if kept_loops != outer or (_is_column_reduction(stage, outer) and var not in self.roots):
                raise Materialize(var)

    # -- values
    def _compute(self, var, index):
        """The root's own value (its equation inlined even though it is materialized)."""
        return self._apply_rule(var, list(index))

    def _apply_rule(self, var, index):
        """The rule of var's equation at `index`; rules of multiple-result primitives give
        every result (built once: the expression builder shares them)."""
        eqn = self.producers[var]
        result = LOWERINGS[eqn.primitive.name](self, eqn, index)
        return result[eqn.outputs.index(var)] if eqn.primitive.multiple_results else result

    def value(self, var, index):
        if isinstance(var, Literal):
            return self.eb.const(var.val, var.aval.dtype)
        key = (var, tuple(id(i) for i in index))
        found = self._memo.get(key)
        if found is None:
            self._count_index(var)
            found = self._memo[key] = self._value(var, list(index))
        return found

    def _count_index(self, var):
        """Each further index a value is read at recomputes its whole expression: chains of
        shifted reads (the pads of a prefix scan, a cumprod's JVP) double it at every level, so
        a 30-op grad program built 16000 expression nodes and took LLVM 9 s. Past
        MAX_INDICES_PER_VALUE the value is materialized instead (read back from memory)."""
        seen = self._indices_seen[var] = self._indices_seen.get(var, 0) + 1
        if seen > MAX_INDICES_PER_VALUE and var in self.producers and var not in self.roots:
            raise Materialize(var)

    def _value(self, var, index):
        if var in self.roots or var not in self.producers:
            buffer = self.inputs.setdefault(var, self.buffer(var))
            return self.eb.node("load", var.aval.dtype, (self.eb.linearize(index, var.aval.shape),), buffer)
        return self._apply_rule(var, index)

    def operand(self, var, index):
        """An elementwise operand: rank-0 operands broadcast against the rest."""
        return self.value(var, [] if var.aval.ndim == 0 else index)

    def hoist(self, var, kept_index, kind, reduced_extents, body, operand_axes=None):
        """A reduction computed once per outer point; `body(new_loop_vars)` -> (value, position).

        operand_axes, for a plain reduction, gives for each operand axis its position
        among the reduced axes, or None for a kept axis (in kept order).
        """
        kept_loops = set()
        memo = {}
        for i in kept_index:
            kept_loops |= kernel_ir.free_loops(i, memo)
        if not kept_loops <= self.allowed:
            raise Materialize(var)
        loops = [self.eb.new_loop(n) for n in reduced_extents]
        value, position = body([self.eb.loop_var(l) for l in loops])
        dtype = INDEX if kind.startswith("arg") else value.dtype
        result = self.eb.node("acc", dtype, (), len(self.hoisted))
        self.hoisted.append((var, kept_loops))
        order = _operand_order(kept_index, loops, operand_axes)
        self.stages.append(Reduce(result, kind, loops, value, position, order))
        return result


# ---------------------------------------------------------------- lowering rules

def _elementwise(op):
    def rule(lw, eqn, index):
        args = [lw.operand(v, index) for v in eqn.inputs]
        return lw.eb.node(op, eqn.outputs[0].aval.dtype, args, _param_attr(eqn))
    return rule


def _param_attr(eqn):
    return tuple(sorted(eqn.params.items())) or None


_ELEMENTWISE = ("add", "add_any", "sub", "mul", "div", "rem", "pow", "max", "min", "nextafter",
                "atan2", "neg", "sign", "floor", "ceil", "round", "is_finite", "abs", "exp",
                "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "cbrt", "tanh", "logistic",
                "sin", "cos", "not", "and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge",
                "select_n", "square", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                "acosh", "atanh", "erf", "erfc", "erf_inv", "lgamma", "digamma", "fma", "clz",
                "population_count", "shift_left", "shift_right_logical", "shift_right_arithmetic", "polygamma")
for _name in _ELEMENTWISE:
    LOWERINGS[_name] = _elementwise("add" if _name == "add_any" else _name)


def _convert_rule(lw, eqn, index):
    x = lw.operand(eqn.inputs[0], index)
    return lw.eb.node("convert", eqn.params["new_dtype"], (x,))


def _bitcast_rule(lw, eqn, index):
    x = lw.operand(eqn.inputs[0], index)
    return lw.eb.node("bitcast", eqn.params["new_dtype"], (x,))


def _integer_pow_rule(lw, eqn, index):
    """x**y by repeated squaring, as exact as numpy's (which also multiplies)."""
    x = lw.operand(eqn.inputs[0], index)
    y, dtype = eqn.params["y"], x.dtype
    result, base, n = lw.eb.const(1, dtype), x, abs(y)
    while n:
        if n & 1:
            result = base if result.op == "const" and result.attr[1] == 1 else lw.eb.node("mul", dtype, (result, base))
        n >>= 1
        if n:
            base = lw.eb.node("mul", dtype, (base, base))
    return lw.eb.node("div", dtype, (lw.eb.const(1, dtype), result)) if y < 0 else result


LOWERINGS["convert_element_type"] = _convert_rule
LOWERINGS["stop_gradient"] = lambda lw, eqn, index: lw.operand(eqn.inputs[0], index)
LOWERINGS["bitcast_convert_type"] = _bitcast_rule
LOWERINGS["integer_pow"] = _integer_pow_rule


# Indexing primitives: each maps the output index to the operand index.

def _broadcast_in_dim_rule(lw, eqn, index):
    x = eqn.inputs[0]
    operand_index = [lw.eb.index(0) if size == 1 else index[d]
                     for size, d in zip(x.aval.shape, eqn.params["broadcast_dimensions"])]
    return lw.value(x, operand_index)


def _transpose_rule(lw, eqn, index):
    permutation = eqn.params["permutation"]
    operand_index = [None] * len(index)
    for out_axis, in_axis in enumerate(permutation):
        operand_index[in_axis] = index[out_axis]
    return lw.value(eqn.inputs[0], operand_index)


def _reshape_rule(lw, eqn, index):
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


def _squeeze_rule(lw, eqn, index):
    rest = iter(index)
    dims = eqn.params["dimensions"]
    operand_index = [lw.eb.index(0) if a in dims else next(rest) for a in range(eqn.inputs[0].aval.ndim)]
    return lw.value(eqn.inputs[0], operand_index)


def _rev_rule(lw, eqn, index):
    shape, dims = eqn.inputs[0].aval.shape, eqn.params["dimensions"]
    operand_index = [lw.eb.node("sub", INDEX, (lw.eb.index(shape[a] - 1), i)) if a in dims else i
                     for a, i in enumerate(index)]
    return lw.value(eqn.inputs[0], operand_index)


def _slice_rule(lw, eqn, index):
    starts, strides = eqn.params["start_indices"], eqn.params["strides"] or (1,) * len(index)
    operand_index = [lw.eb.add(lw.eb.index(lo), lw.eb.mul(i, lw.eb.index(step)))
                     for i, lo, step in zip(index, starts, strides)]
    return lw.value(eqn.inputs[0], operand_index)


def _conv_patches_rule(lw, eqn, index):
    """out[..., o, k, ...] = x[..., o * stride + k * dilation, ...] per spatial axis."""
    first, n_spatial, eb = eqn.params["first_axis"], len(eqn.params["window_shape"]), lw.eb
    out, taps = index[first:first + n_spatial], index[first + n_spatial:first + 2 * n_spatial]
    spatial = [eb.add(eb.mul(o, eb.index(s)), eb.mul(k, eb.index(d)))
               for o, k, s, d in zip(out, taps, eqn.params["window_strides"], eqn.params["window_dilation"])]
    return lw.value(eqn.inputs[0], index[:first] + spatial + index[first + 2 * n_spatial:])


def _iota_rule(lw, eqn, index):
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


def _pad_rule(lw, eqn, index):
    x, pad_value = eqn.inputs
    return _padded_load(lw, x, index, eqn.params["padding_config"], lw.value(pad_value, []))


def _clamp_index(eb, i, n):
    upper = eb.index(max(n - 1, 0))
    low = eb.node("select_n", INDEX, (eb.node("lt", dtypes.bool_, (i, eb.index(0))), i, eb.index(0)))
    return eb.node("select_n", INDEX, (eb.node("gt", dtypes.bool_, (low, upper)), low, upper))


def _concatenate_rule(lw, eqn, index):
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


def _dynamic_slice_rule(lw, eqn, index):
    x, *starts = eqn.inputs
    begin = _dynamic_starts(lw, starts, x.aval.shape, eqn.params["slice_sizes"])
    return lw.value(x, [lw.eb.add(b, i) for b, i in zip(begin, index)])


def _dynamic_update_slice_rule(lw, eqn, index):
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


def _gather_rule(lw, eqn, index):
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


LOWERINGS.update({
    "gather": _gather_rule,
    "dynamic_slice": _dynamic_slice_rule, "dynamic_update_slice": _dynamic_update_slice_rule,
    "broadcast_in_dim": _broadcast_in_dim_rule, "transpose": _transpose_rule,
    "reshape": _reshape_rule, "squeeze": _squeeze_rule, "rev": _rev_rule, "slice": _slice_rule,
    "iota": _iota_rule, "pad": _pad_rule, "concatenate": _concatenate_rule,
    "conv_patches": _conv_patches_rule,
})


# Reductions: hoisted to a stage per outer point.

REDUCTIONS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max",
              "reduce_min": "min", "reduce_and": "and", "reduce_or": "or",
              "reduce_xor": "xor",
              "argmax": "argmax", "argmin": "argmin"}


def _reduction_rule(lw, eqn, kept_index):
    x, axes = eqn.inputs[0], eqn.params["axes"]
    if not axes:
        return lw.value(x, kept_index)
    kind = REDUCTIONS[eqn.primitive.name]

    def body(reduce_vars):
        kept = iter(kept_index)
        operand_index = [reduce_vars[axes.index(a)] if a in axes else next(kept) for a in range(x.aval.ndim)]
        return lw.value(x, operand_index), (reduce_vars[0] if kind.startswith("arg") else None)

    operand_axes = [axes.index(a) if a in axes else None for a in range(x.aval.ndim)]
    result = lw.hoist(eqn.outputs[0], kept_index, kind, [x.aval.shape[a] for a in axes], body, operand_axes)
    if kind.startswith("arg"):
        return lw.eb.node("convert", eqn.params["index_dtype"], (result,))
    return result


for _name in REDUCTIONS:
    LOWERINGS[_name] = _reduction_rule


WINDOW_REDUCTIONS = {"reduce_window_sum": "sum", "reduce_window_max": "max", "reduce_window_min": "min"}


def _reduce_window_rule(lw, eqn, out_index):
    """A reduction over the window loops, hoisted per output point; positions in the
    padding or between base-dilated elements read the reduction's identity."""
    from jaxlite.lower.codegen import reduction_identity
    x, p = eqn.inputs[0], eqn.params
    kind, dtype, eb = WINDOW_REDUCTIONS[eqn.primitive.name], x.aval.dtype, lw.eb
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


for _name in WINDOW_REDUCTIONS:
    LOWERINGS[_name] = _reduce_window_rule


# Cumulative reductions: one kernel per result, its scanned axis the innermost loop, each
# element combining the previous output element (read back from memory) with the next input.
# A reversed scan runs its loop over the mirrored index (`_scan_index`), so "previous" is
# the element after. (16-bit floats are widened to float32 around the scan by a graph
# pass, pipeline._widen_narrow_floats, as the eager implementation accumulates.)

def _combine_with(op):
    return lambda eb, dtype, previous, value: eb.node(op, dtype, (previous, value))


def _logaddexp(eb, dtype, a, b):
    """log(exp(a) + exp(b)) from the larger: equal infinities give that infinity, not NaN."""
    high, low = eb.node("max", dtype, (a, b)), eb.node("min", dtype, (a, b))
    gap = eb.node("sub", dtype, (low, high))
    gap = eb.node("select_n", dtype, (eb.node("eq", dtypes.bool_, (gap, gap)), eb.const(float("-inf"), dtype), gap))
    return eb.node("add", dtype, (high, eb.node("log1p", dtype, (eb.node("exp", dtype, (gap,)),))))


CUMULATIVE = {"cumsum": _combine_with("add"), "cumprod": _combine_with("mul"),
              "cummax": _combine_with("max"), "cummin": _combine_with("min"),
              "cumlogsumexp": _logaddexp}


def _scan_index(eqn, index, eb):
    """The element a scan kernel's loop point computes: mirrored along a reversed axis."""
    if not eqn.params["reverse"]:
        return index
    axis = eqn.params["axis"]
    mirrored = list(index)
    mirrored[axis] = eb.node("sub", INDEX, (eb.index(eqn.inputs[0].aval.shape[axis] - 1), index[axis]))
    return mirrored


def _cumulative_rule(lw, eqn, index):
    x, out = eqn.inputs[0], eqn.outputs[0]
    axis, eb, n = eqn.params["axis"], lw.eb, x.aval.shape[eqn.params["axis"]]
    position = index[axis]
    step, first = (1, n - 1) if eqn.params["reverse"] else (-1, 0)
    previous_index = list(index)
    previous_index[axis] = _clamp_index(eb, eb.node("add", INDEX, (position, eb.index(step))), n)
    previous = eb.node("load", out.aval.dtype, (eb.linearize(previous_index, out.aval.shape),), lw.buffer(out))
    value = lw.value(x, index)
    combined = CUMULATIVE[eqn.primitive.name](eb, out.aval.dtype, previous, value)
    is_first = eb.node("eq", dtypes.bool_, (position, eb.index(first)))
    return eb.node("select_n", out.aval.dtype, (is_first, combined, value))


for _name in CUMULATIVE:
    LOWERINGS[_name] = _cumulative_rule


# Scatters: a kernel of two sequential stages, out = operand, then for each update entry
# in order out[target] = combine(out[target], update). Targets are clamped into the buffer
# and the entries of a dropped window (mode FILL_OR_DROP) are not written, so no store
# ever leaves the buffer.
SCATTERS = {"scatter": None, "scatter-add": "add", "scatter-mul": "mul", "scatter-min": "min",
            "scatter-max": "max"}


def _scatter_stages(lw, eqn, index):
    """Appends the scatter's stages to its kernel (it is no map of the output index)."""
    from jaxlite.lax.slicing import _scatter_slice_sizes
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
    sizes = _scatter_slice_sizes(x.aval.shape, updates.aval.shape, d)
    starts, inside = _window_starts(lw, indices, [update_index[p] for p in batch_positions], x.aval.shape,
                                    sizes, d.scatter_dims_to_operand_dims,
                                    zip(d.operand_batching_dims, d.scatter_indices_batching_dims),
                                    eqn.params["mode"])
    dropped = set(d.inserted_window_dims) | set(d.operand_batching_dims)
    offsets = iter(update_index[p] for p in windows)
    target = [s if a in dropped else eb.add(s, next(offsets)) for a, s in enumerate(starts)]
    offset = eb.linearize(target, out.aval.shape)
    current = eb.node("load", out.aval.dtype, (offset,), out_buffer)
    updated = _scatter_combine(eb, SCATTERS[eqn.primitive.name], current, lw.value(updates, update_index))
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


for _name in SCATTERS:
    LOWERINGS[_name] = _scatter_stages


def _threefry2x32_rule(lw, eqn, index):
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


LOWERINGS["threefry2x32"] = _threefry2x32_rule


def dot_compute_dtype(lhs_dtype, out_dtype):
    """The accumulation dtype, as the numpy implementation chooses it."""
    import numpy as np
    compute = np.promote_types(out_dtype, lhs_dtype)
    if compute in (dtypes.bfloat16, dtypes.float16):
        return np.dtype(np.float32)
    return compute


def _dot_general_rule(lw, eqn, out_index):
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
    else:
        result = lw.hoist(eqn.outputs[0], out_index, "sum", extents, body)
    return lw.eb.node("convert", out_dtype, (result,))


# A product contracting over a few elements (the first layer of a network on 2-D points)
# is a sum of products per output element, vectorized along the output's innermost axis:
# the GEMM would pack, tile and store for so little arithmetic (a 1000x2 by 2x64 product:
# ~95 us on the GEMM, ~10 us fused). runtime._gemm_applies leaves these to fusion.
UNROLLED_CONTRACTION = 8


LOWERINGS["dot_general"] = _dot_general_rule
