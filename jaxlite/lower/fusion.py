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
Rule 3 is discovered while lowering, which then restarts with the larger set: the
rules build expressions by recursion (`_GroupLowering.value` through the fusion rules of
every inlined equation), and the reduction that cannot stay inline is found deep in it,
where `hoist` (or `check_reductions`, once the kernel's outer loops are known) raises
`Materialize(var)`. `partition` adds var to the roots and regroups. An exception is the
clearest way out of that recursion: a returned "cannot" would have to be checked by every
rule. The restarts are few (each adds a root, and a root is never requested twice), and
each lowering is cheap next to code generation. Within one attempt a reducing group is
lowered twice: once to learn which loops its reductions need outside, then for real.

The rules computing each primitive are in fusion_rules.py (declared by the primitives'
lax blocks); the rewrites of finished kernels (column reductions accumulated in place,
transcendentals stored by the reduction that computed them) in kernel_rewrites.py.
"""
from jaxlite.core import dtypes
from jaxlite.core.ir import Literal, Var
from jaxlite.lower import float8, kernel_ir, kernel_rewrites
from jaxlite.lower.fusion_rules import LOWERINGS, domain_of, layout_operand, lowering_of, scan_index
from jaxlite.lower.kernel_ir import INDEX, Buffer, ExprBuilder, Kernel, Reduce, Store


# How many distinct indices one value may be computed at inside a kernel (_count_index).
MAX_INDICES_PER_VALUE = 16
# Expressions are built by recursion, six Python frames per inlined equation: a chain of
# more equations than this (3000 sins; Philox's rounds, rewritten into 32-bit limbs) would
# exhaust Python's 1000 frames, so the value this deep is materialized instead (480 frames,
# leaving the rest to the caller's own stack: a notebook, a library's layers).
MAX_INLINED_DEPTH = 80


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
    avals = [v.aval for v in eqn.inputs + eqn.outputs]
    if lowering_of(eqn) is None or not all(_supported_dtype(a.dtype) for a in avals):
        return False
    return not (eqn.primitive.name in _NOT_ON_FLOAT8 and any(float8.format_of(a.dtype) for a in avals))


# Their float8 results need more than float32 arithmetic rounded once: nextafter steps the
# format's bit patterns, XLA rounds each step of logistic's expansion, and sums and products
# round every partial result, so their values depend on the order (eager's numpy kernels
# give the order jit keeps by running them).
_NOT_ON_FLOAT8 = {"nextafter", "logistic", "reduce_precision", "reduce_sum", "reduce_prod", "cumsum",
                  "cumprod", "cumlogsumexp"}


def _supported_dtype(dtype):
    # ml_dtypes' other narrow types (float6/4, the other float8s, int4/2/1; one of which numpy
    # calls kind "f") run on its numpy kernels.
    native = dtype.kind in "biuf" or dtypes.is_bfloat16(dtype) or float8.format_of(dtype) is not None
    return native and (not dtypes.is_narrow(dtype) or float8.format_of(dtype) is not None)


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
            steps = [_lower_group(group, producers, roots, number) for number, group in enumerate(groups, 1)]
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
        if eqn_step_kind(eqn) or domain_of(eqn) == "dot":
            roots.update(v for v in eqn.inputs if isinstance(v, Var) and v in producers)
            roots.update(eqn.outputs)
        if domain_of(eqn) in ("scan", "scatter"):   # it reads back its own output
            roots.update(eqn.outputs)
    return {v for v in roots if not eqn_step_kind(producers[v])}


# ---------------------------------------------------------------- grouping roots into kernels

def _domain(var, producers):
    """(iteration shape, reduced axes or None) of the kernel computing root `var`."""
    eqn = producers[var]
    source = layout_operand(eqn)
    if source is not None:
        return source.aval.shape, None
    domain = domain_of(eqn)
    if domain == "reduction":
        axes = eqn.params["axes"]
        return (eqn.inputs[0].aval.shape, tuple(sorted(axes))) if axes else (var.aval.shape, None)
    return var.aval.shape, domain


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
                    not _merge(groups, var_users, roots, producers, ancestors, allow_merging):
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
    lowering = LOWERINGS.get(eqn.primitive)
    return lowering is not None and lowering.recomputed and not any(isinstance(v, Var) for v in eqn.inputs)


def _merge(groups, users, roots, producers, ancestors, allow_merging):
    """Put the users of a shared value into one kernel, if the kernels they are in already
    (two users may have joined others through other values) can be one."""
    users = list(users)
    leaders = {groups.find(r) for r in users}
    members = [r for r in roots if groups.find(r) in leaders]
    if not allow_merging or not _compatible([_domain(r, producers) for r in members]):
        return False
    if any(a in ancestors[b] for a in members for b in members):
        return False
    for other in users[1:]:
        groups.union(other, users[0])
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

def _lower_group(group, producers, roots, number):
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
    outputs = [lowering.buffer(v) for v in group]
    kernel = Kernel(f"fused_{number}", [lowering.loops[a] for a in outer], stages,
                    list(lowering.inputs.values()), outputs, owned=lowering.owned)
    kernel = kernel_rewrites.accumulate_in_place(kernel, lowering.eb)
    kernel = kernel_rewrites.store_reduced_values(kernel, lowering.eb)
    kernel = kernel_rewrites.unroll_pair_loops(kernel, lowering.eb)
    kernel = kernel_rewrites.split_at_pieces(kernel, lowering.eb)
    return KernelStep(kernel, list(lowering.inputs), list(group))


def _operand_order(kept_index, reduce_loops, operand_axes):
    """The loops in the operand's memory order, when every kept index is a plain loop."""
    if operand_axes is None or any(i.op != "loop" for i in kept_index):
        return None
    kept = iter(i.attr for i in kept_index)
    return [next(kept) if position is None else reduce_loops[position] for position in operand_axes]


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
        self._depth = 0     # of value() calls in progress
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
        per_element = [(v, scan_index(self.producers[v], i, self.eb) if self.reduced == "scan" else i)
                       for v, i in per_element]
        writes = [self._element_write(v, i) for v, i in per_element]
        if writes:
            inner = [l for a, l in enumerate(self.loops) if a not in self.outer_axes]
            self.stages.append(Store(inner, writes, ordered=self.reduced == "scan"))
        return self.stages

    def _element_write(self, root, index):
        """(buffer, offset, value) of the root at a point of the kernel's domain: a root keeping
        its operand's order (a reshape) is the operand at the same point and offset."""
        source = layout_operand(self.producers[root])
        if source is not None:
            return self.buffer(root), self.eb.linearize(index, source.aval.shape), self.value(source, index)
        return self.buffer(root), self.eb.linearize(index, root.aval.shape), self._compute(root, index)

    def _kept_index(self, root, index):
        eqn = self.producers[root]
        if domain_of(eqn) == "dot":
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
            if kept_loops != outer or (kernel_rewrites.is_column_reduction(stage, outer) and var not in self.roots):
                raise Materialize(var)

    # -- values
    def _compute(self, var, index):
        """The root's own value (its equation inlined even though it is materialized)."""
        return self._apply_rule(var, list(index))

    def _apply_rule(self, var, index):
        """The rule of var's equation at `index`; rules of multiple-result primitives give
        every result (built once: the expression builder shares them)."""
        eqn = self.producers[var]
        result = LOWERINGS[eqn.primitive].rule(self, eqn, index)
        return result[eqn.outputs.index(var)] if eqn.primitive.multiple_results else result

    def value(self, var, index):
        if isinstance(var, Literal):
            return self.eb.const(var.val, var.aval.dtype)
        key = (var, tuple(id(i) for i in index))
        found = self._memo.get(key)
        if found is None:
            self._count_index(var)
            if self._depth >= MAX_INLINED_DEPTH and var in self.producers and var not in self.roots:
                raise Materialize(var)
            self._depth += 1
            try:
                found = self._memo[key] = self._value(var, list(index))
            finally:
                self._depth -= 1
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


