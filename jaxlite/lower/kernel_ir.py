"""The low-level IR: loop nests over static shapes with scalar expression DAGs.

A `Kernel` is one loop nest the code generator turns into one LLVM function:

    for outer point (loops `outer`, static extents):
        stage 1: reduce over its own inner loops -> one scalar per outer point
        stage 2: ...                               (may read earlier stages' results)
        stage k: store values over its inner loops (or at the outer point)

This shape covers elementwise chains (no outer loops, one store stage), row and
column reductions (the kept axes are outer), and softmax/layernorm-style kernels
where per-row reductions feed an elementwise store, all reading each row of the
input from cache. Control flow (while/scan) can later become another kind of stage
whose body is a list of stages; nothing here assumes stages are only reduce/store.

Expressions are hash-consed: building the same node twice returns the same object,
so a value used many times is computed once (CSE inside a kernel for free).
Index arithmetic uses the same nodes with dtype int64; the builder folds constants
and the identities x+0, x*1, x*0 so index expressions stay small.
"""
import math

import numpy as np

from jaxlite.core import dtypes

INDEX = np.dtype(np.int64)


# ---------------------------------------------------------------- the op vocabulary
# Every op an Expr may carry, declared once with its group. Fusion rules build Exprs of
# these ops; codegen has one emitter per op (codegen.OPS) and takes the groups' properties
# from here. The MATH group (transcendental functions) is declared by llvm_math, which
# emits them: a new polynomial there is a new kernel op.

STRUCTURE = "structure"      # const, loop index, load, accumulator, thread ownership
CONVERSION = "conversion"
ARITHMETIC = "arithmetic"
COMPARISON = "comparison"
BITWISE = "bitwise"          # logical ops on bool, bit ops on integers
SELECTION = "selection"
MATH = "math"


class KernelOp:
    """`exact_in_bf16`: its bfloat16 result needs no rounding (exact, or not a bf16 value);
    `flop`: counted by cost analysis (structure, conversions and selection are free)."""

    __slots__ = ("name", "group", "exact_in_bf16", "flop")

    def __init__(self, name, group, exact_in_bf16, flop):
        self.name, self.group, self.exact_in_bf16, self.flop = name, group, exact_in_bf16, flop


OPS = {}        # op name -> KernelOp


def declare_ops(group, names, exact_in_bf16=False):
    for name in names:
        if name in OPS:
            raise ValueError(f"kernel op {name!r} is declared twice")
        OPS[name] = KernelOp(name, group, exact_in_bf16, flop=group not in (STRUCTURE, CONVERSION, SELECTION))


def ops_in(group):
    return frozenset(name for name, op in OPS.items() if op.group == group)


declare_ops(STRUCTURE, ("const", "loop", "load", "acc", "owns"))
declare_ops(CONVERSION, ("convert",))
declare_ops(CONVERSION, ("bitcast",), exact_in_bf16=True)
declare_ops(ARITHMETIC, ("add", "sub", "mul", "div", "rem", "sqrt", "rsqrt", "square"))
declare_ops(ARITHMETIC, ("neg", "abs", "sign", "floor", "ceil", "round", "max", "min", "is_finite", "fma",
                         "nextafter"), exact_in_bf16=True)
declare_ops(COMPARISON, ("eq", "ne", "lt", "le", "gt", "ge"), exact_in_bf16=True)
declare_ops(BITWISE, ("not", "and", "or", "xor", "shift_left", "shift_right_logical", "shift_right_arithmetic",
                      "clz", "population_count"))
declare_ops(SELECTION, ("select_n",), exact_in_bf16=True)

# The kinds of a Reduce stage.
REDUCTION_KINDS = ("sum", "prod", "max", "min", "and", "or", "xor", "argmax", "argmin")


class Expr:
    """One scalar operation. `attr` holds the static part (a constant's value, a loop, ...)."""

    __slots__ = ("op", "dtype", "args", "attr")

    def __init__(self, op, dtype, args, attr):
        self.op, self.dtype, self.args, self.attr = op, dtype, args, attr

    def __repr__(self):
        return ExprPrinter().name(self)


class Loop:
    __slots__ = ("name", "extent")

    def __init__(self, name, extent):
        self.name, self.extent = name, int(extent)

    def __repr__(self):
        return f"{self.name}<{self.extent}"


class Buffer:
    """A kernel parameter: a contiguous array in memory (row-major)."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)

    def strides(self):
        strides, step = [], 1
        for extent in reversed(self.shape):
            strides.append(step if extent != 1 else 0)
            step *= extent
        return strides[::-1]

    def __repr__(self):
        return f"{self.name}:{dtypes.short_name(self.dtype)}{list(self.shape)}"


class Reduce:
    """acc = kind-reduction of `value` over `loops`; for arg kinds, `index` is the position.

    `operand_order` lists the loops in the memory order of the reduced operand (kept
    and reduced axes interleaved) when that is known; it lets a column reduction be
    rewritten to accumulate in place in memory order. `writes`, like a Store's, are
    stored at every point of the loops too (a later stage reads them back).
    """

    __slots__ = ("result", "kind", "loops", "value", "index", "operand_order", "writes")

    def __init__(self, result, kind, loops, value, index=None, operand_order=None, writes=()):
        self.result, self.kind, self.loops, self.value, self.index = result, kind, loops, value, index
        self.operand_order, self.writes = operand_order, list(writes)


class Store:
    """buffer[index] = value for every point of `loops` (inside the current outer point).

    `ordered`: the points must run in loop order, because they read what earlier points
    wrote (a scan reads the previous output, a scatter the element it updates).
    `guard`: a bool expression; the writes happen only at points where it holds.
    """

    __slots__ = ("loops", "writes", "ordered", "guard")

    def __init__(self, loops, writes, ordered=False, guard=None):
        self.loops, self.writes = loops, writes   # writes: list of (Buffer, index Expr, value Expr)
        self.ordered, self.guard = ordered, guard


class Kernel:
    """`owned`: a loop of the first stage that threads split into shares; every thread
    runs all the stages, the first one over its share, and the later ones write only
    where their guard says the share owns the point (an `owns` expression). A scatter
    so splits its output's rows: exact and in order, as each row has one writer."""

    __slots__ = ("name", "outer", "stages", "inputs", "outputs", "owned")

    def __init__(self, name, outer, stages, inputs, outputs, owned=None):
        self.name, self.outer, self.stages = name, outer, stages
        self.inputs, self.outputs, self.owned = inputs, outputs, owned

    @property
    def params(self):
        return self.inputs + self.outputs

    def parallel_loop(self):
        """A loop whose iterations are independent (split across threads), or None.

        The first outer loop qualifies (each outer point has its own stages), and so
        does the first loop of a lone store stage whose points are independent, and an
        owned loop.
        """
        if self.owned is not None:
            return self.owned
        if self.outer:
            return self.outer[0]
        lone = self.stages[0] if len(self.stages) == 1 else None
        if isinstance(lone, Store) and lone.loops and not lone.ordered:
            return lone.loops[0]
        return None

    def points(self):
        """Iterations of the innermost bodies, summed over the stages (a work estimate)."""
        outer = math.prod(loop.extent for loop in self.outer)
        return outer * sum(math.prod(loop.extent for loop in stage.loops) for stage in self.stages)

    def __str__(self):
        return print_kernel(self)


class ExprBuilder:
    """Makes hash-consed expressions for one kernel."""

    def __init__(self):
        self._memo = {}
        self._loops = 0

    def node(self, op, dtype, args=(), attr=None):
        key = (op, dtype, tuple(id(a) for a in args), attr)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = Expr(op, np.dtype(dtype), tuple(args), attr)
        return found

    def const(self, value, dtype):
        dtype = np.dtype(dtype)
        value = np.array(value).astype(dtype)[()]
        python_value = float(value) if dtypes.is_float(dtype) else int(value)
        # Keyed by bits too, so 0.0 and -0.0 stay distinct constants.
        return self.node("const", dtype, (), (value.tobytes(), python_value))

    def index(self, value):
        return self.const(int(value), INDEX)

    def new_loop(self, extent):
        self._loops += 1
        return Loop(f"i{self._loops}", extent)

    def loop_var(self, loop):
        return self.node("loop", INDEX, (), loop)

    def owns(self, loop, position):
        """Whether `position` along `loop` lies in the running thread's share of it."""
        return self.node("owns", dtypes.bool_, (position,), loop)

    # Index arithmetic with the simplifications that keep indices readable.
    def add(self, a, b):
        if _is_const(a, 0):
            return b
        if _is_const(b, 0):
            return a
        if a.op == b.op == "const":
            return self.index(a.attr[1] + b.attr[1])
        return self.node("add", INDEX, (a, b))

    def mul(self, a, b):
        if _is_const(a, 0) or _is_const(b, 1):
            return a
        if _is_const(b, 0) or _is_const(a, 1):
            return b
        if a.op == b.op == "const":
            return self.index(a.attr[1] * b.attr[1])
        return self.node("mul", INDEX, (a, b))

    def floordiv(self, a, divisor):
        if divisor == 1:
            return a
        if upper_bound(a) < divisor:
            return self.index(0)
        split = self._split_multiple(a, divisor)
        if split is not None:
            return split[0]
        return self.node("div", INDEX, (a, self.index(divisor)))

    def mod(self, a, divisor):
        if divisor == 1:
            return self.index(0)
        if upper_bound(a) < divisor:
            return a
        split = self._split_multiple(a, divisor)
        if split is not None:
            return split[1]
        return self.node("rem", INDEX, (a, self.index(divisor)))

    def _split_multiple(self, a, divisor):
        """(q, r) for a = r + q*divisor with 0 <= r < divisor, when a is a sum whose terms
        are multiples of divisor (constant factors) but for some whose sum stays below it."""
        if a.op != "add":
            return None
        high, low = [], []
        for term in _summands(a):
            multiple = term.op == "mul" and term.args[1].op == "const" and term.args[1].attr[1] % divisor == 0
            (high if multiple else low).append(term)
        if not high or not all(map(_non_negative, low)) or sum(map(upper_bound, low)) >= divisor:
            return None
        quotient, remainder = self.index(0), self.index(0)
        for term in high:
            quotient = self.add(quotient, self.mul(term.args[0], self.index(term.args[1].attr[1] // divisor)))
        for term in low:
            remainder = self.add(remainder, term)
        return quotient, remainder

    def linearize(self, index, shape):
        """Row-major linear offset of a multi-index; axes of extent 1 contribute nothing."""
        offset = self.index(0)
        step = 1
        for i, extent in reversed(list(zip(index, shape))):
            if extent != 1:
                offset = self.add(offset, self.mul(i, self.index(step)))
            step *= extent
        return offset

    def delinearize(self, offset, shape):
        if 0 in shape:      # an empty array: no element is ever addressed (and steps would be 0)
            return [self.index(0)] * len(shape)
        index, step = [], 1
        for extent in reversed(shape):
            index.append(self.index(0) if extent == 1 else self.mod(self.floordiv(offset, step), extent))
            step *= extent
        return index[::-1]


def _summands(e):
    """The terms of a tree of index additions."""
    terms, stack = [], [e]
    while stack:
        e = stack.pop()
        if e.op == "add":
            stack.extend(reversed(e.args))
        else:
            terms.append(e)
    return terms


def _non_negative(e):
    if e.op == "const":
        return e.attr[1] >= 0
    return e.op == "loop" or (e.op in ("add", "mul", "div", "rem") and all(map(_non_negative, e.args)))


def _is_const(e, value):
    return e.op == "const" and e.attr[1] == value


def upper_bound(e):
    """The largest value a non-negative index expression can take (inf when unknown)."""
    if e.op == "const":
        return e.attr[1]
    if e.op == "loop":
        return e.attr.extent - 1
    if e.op == "add":
        return upper_bound(e.args[0]) + upper_bound(e.args[1])
    if e.op == "mul":
        return upper_bound(e.args[0]) * upper_bound(e.args[1])
    if e.op == "div":
        return upper_bound(e.args[0]) // e.args[1].attr[1]
    if e.op == "rem":
        return min(upper_bound(e.args[0]), e.args[1].attr[1] - 1)
    return float("inf")


def free_loops(expr, memo=None):
    """The loops an expression depends on (stage results count as depending on nothing)."""
    memo = {} if memo is None else memo
    found = memo.get(id(expr))
    if found is None:
        found = {expr.attr} if expr.op == "loop" else set()
        for arg in expr.args:
            found = found | free_loops(arg, memo)
        memo[id(expr)] = found
    return found


def loads(roots):
    """The load nodes of the expression DAGs under `roots`, each once, in a stable order
    (a root may be None: a value no point needs)."""
    seen, found, stack = set(), [], [root for root in reversed(roots) if root is not None]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if e.op == "load":
            found.append(e)
        stack.extend(reversed(e.args))
    return found


# ---------------------------------------------------------------- printing

class ExprPrinter:
    """Prints a DAG as numbered lines, each shared node once."""

    def __init__(self, typed_constants=False):
        self.names, self.lines = {}, []
        self.typed_constants = typed_constants

    def name(self, e):
        if e is None:       # a value no point needs (written over zero-size loops)
            return "none"
        if id(e) in self.names:
            return self.names[id(e)]
        if e.op == "const":
            text = f"{e.attr[1]}:{dtypes.short_name(e.dtype)}" if self.typed_constants else f"{e.attr[1]}"
        elif e.op == "loop":
            text = e.attr.name
        else:
            args = ", ".join(self.name(a) for a in e.args)
            attr = "" if e.attr is None else f"[{_attr_text(e.attr)}]"
            text = f"t{len(self.names)}"
            self.lines.append(f"{text}:{dtypes.short_name(e.dtype)} = {e.op}{attr}({args})")
        self.names[id(e)] = text
        return text


def _attr_text(attr):
    return attr.name if isinstance(attr, (Buffer, np.dtype)) else str(attr)


def structure_key(kernel):
    """Equal for kernels that differ in name only (buffer and loop names restart in each
    kernel): they compile to the same function."""
    return print_kernel(kernel, name="", typed_constants=True)


def print_kernel(kernel, name=None, typed_constants=False):
    printer = ExprPrinter(typed_constants)
    out = [f"kernel {kernel.name if name is None else name}({', '.join(map(repr, kernel.inputs))}) -> "
           f"({', '.join(map(repr, kernel.outputs))})"]
    indent = "  "
    if kernel.owned is not None:
        out.append(f"{indent}threads own shares of {kernel.owned!r}")
    if kernel.outer:
        out.append(f"{indent}for {', '.join(map(repr, kernel.outer))}:")
        indent += "  "
    for stage in kernel.stages:
        body = []
        writes = [f"{buffer.name}[{printer.name(index)}] = {printer.name(value)}"
                  for buffer, index, value in stage.writes]
        if isinstance(stage, Reduce):
            value = printer.name(stage.value)
            body.append(", ".join([f"{printer.name(stage.result)} = {stage.kind}-reduce {value}"] + writes))
        else:
            guard = f"if {printer.name(stage.guard)}: " if stage.guard is not None else ""
            body.extend(guard + write for write in writes)
        loops = f"for {', '.join(map(repr, stage.loops))}: " if stage.loops else ""
        out.extend(f"{indent}  {line}" for line in printer.lines)
        printer.lines.clear()
        out.extend(f"{indent}{loops}{line}" for line in body)
    return "\n".join(out)
