"""LLVM code generation from kernel IR.

One LLVM module per compiled function: each kernel becomes an internal function
taking its buffers as `noalias` pointers (buffers never overlap, which is what lets
the loop vectorizer widen the loops without runtime checks), and each native
segment of the program becomes an entry point `void entry(ptr buffers)` that loads
the pointers from one array, sets FTZ/DAZ in MXCSR, calls the kernels and restores
MXCSR.

Scalar types in registers: bool is i1, integers iN, float16 `half`, float32/64 as
themselves. bfloat16 and the float8 formats (float8.py) have no LLVM type here: they are
carried as float32 and rounded to their format (integer round-to-nearest-even) after every
operation, which matches eager numpy/ml_dtypes arithmetic; in memory they are their bit
patterns. bool is one byte in memory.

Float arithmetic carries the `contract` flag so FMAs form; reductions add `reassoc`
so the vectorizer may reorder the sum (results differ from numpy's pairwise sum in
the last bits, as XLA's do). Loops are emitted in rotated do-while form over static
extents; a loop of extent 0 is not emitted at all.
"""
import numpy as np
from llvmlite import ir

from jaxlite.core import dtypes
from jaxlite.lower import float8, kernel_ir, llvm_math, llvm_target, transposed_reads
from jaxlite.lower.kernel_ir import Reduce
from jaxlite.lower.llvm_helpers import (F16, F32, F64, I1, I8, I16, I32, I64, PTR, VOID, as_i64, call_intrinsic,
                                        emit_loop, transpose_square)
_FAST = ("contract",)
_REDUCE_FAST = ("reassoc", "contract")


def _is_bf16(dtype):
    return dtypes.is_bfloat16(dtype)


def _in_float32(dtype):
    """A format carried as float32 in registers and rounded to itself after each operation."""
    return _is_bf16(dtype) or float8.format_of(dtype) is not None


def register_type(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return I1
    if dtype == np.float32 or _in_float32(dtype):
        return F32
    if dtype == np.float16:
        return F16
    if dtype == np.float64:
        return F64
    return ir.IntType(dtype.itemsize * 8)


def memory_type(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return I8
    if _is_bf16(dtype):
        return I16
    if float8.format_of(dtype) is not None:
        return I8
    return register_type(dtype)


def _is_float(dtype):
    return dtypes.is_float(dtype)


def _is_signed(dtype):
    return np.dtype(dtype).kind == "i"


def _suffix(ty):
    return ty.intrinsic_name


def _float_intrinsic(builder, name, x):
    return call_intrinsic(builder, f"llvm.{name}.{_suffix(x.type)}", x.type, [x])


# ---------------------------------------------------------------- bfloat16 rounding

def round_to_bf16(builder, x):
    """A float32 value rounded to the nearest bfloat16 (still held as float32)."""
    bits = llvm_math.emit_f32_to_bf16_bits(builder, x)
    return llvm_math.emit_bf16_bits_to_f32(builder, bits)


def round_to(builder, x, dtype):
    """A float32 value rounded to a format carried in float32 (bfloat16, float8)."""
    if _is_bf16(dtype):
        return round_to_bf16(builder, x)
    return float8.emit_round(builder, x, float8.format_of(dtype))


# ---------------------------------------------------------------- scalar expressions

class ExprEmitter:
    """Emits the expressions of one loop body; each DAG node once."""

    def __init__(self, builder, loop_values, buffers, accumulators, shares=None):
        self.b = builder
        self.loop_values, self.buffers, self.accumulators = loop_values, buffers, accumulators
        self.shares = shares or {}     # loop -> (start, stop) of the running thread's share
        self.memo = {}

    def emit(self, root):
        """Post-order without recursion: expression chains can be thousands deep."""
        stack = [(root, False)]
        while stack:
            e, children_done = stack.pop()
            if id(e) in self.memo:
                continue
            if children_done:
                self.memo[id(e)] = self._emit_node(e, [self.memo[id(a)] for a in e.args])
                continue
            stack.append((e, True))
            # Operands are emitted left to right, as XLA emits them: LLVM's optimizer orders a
            # sum's operands by definition and fuses its first product into an FMA, so the order
            # decides which product of a*b + c*d is rounded (XLA: c*d).
            stack.extend((a, False) for a in reversed(e.args) if id(a) not in self.memo)
        return self.memo[id(root)]

    def _emit_node(self, e, args):
        if e.op == "const":
            return _constant(e.dtype, e.attr[1])
        if e.op == "loop":
            return self.loop_values[e.attr]
        if e.op == "load":
            return self._load(e, args[0])
        if e.op == "owns":
            start, stop = self.shares[e.attr]
            return self.b.and_(self.b.icmp_signed(">=", args[0], start), self.b.icmp_signed("<", args[0], stop))
        if e.op == "acc":
            value = self.b.load(self.accumulators[e.attr])
            return round_to(self.b, value, e.dtype) if _in_float32(e.dtype) else value
        value = OPS[e.op](self.b, e, args)
        if _in_float32(e.dtype) and not kernel_ir.OPS[e.op].exact_in_bf16:
            value = round_to(self.b, value, e.dtype)
        return value

    def _load(self, e, offset):
        buffer = e.attr
        pointer = self.b.gep(self.buffers[buffer], [offset], inbounds=True,
                             source_etype=memory_type(buffer.dtype))
        raw = self.b.load(pointer, typ=memory_type(buffer.dtype))
        return from_memory(self.b, raw, buffer.dtype)




def from_memory(builder, raw, dtype):
    if dtype == np.bool_:
        return builder.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if _is_bf16(dtype):
        return llvm_math.emit_bf16_bits_to_f32(builder, raw)
    if float8.format_of(dtype) is not None:
        return float8.emit_bits_to_f32(builder, raw, float8.format_of(dtype))
    return raw


def to_memory(builder, value, dtype):
    if dtype == np.bool_:
        return builder.zext(value, I8)
    if _is_bf16(dtype):
        return llvm_math.emit_f32_to_bf16_bits(builder, value)
    if float8.format_of(dtype) is not None:
        return float8.emit_f32_to_bits(builder, value, float8.format_of(dtype))
    return value


def _constant(dtype, value):
    ty = register_type(dtype)
    if isinstance(ty, ir.IntType):
        return ir.Constant(ty, int(value) & ((1 << ty.width) - 1))
    return ir.Constant(ty, float(value))


# ---------------------------------------------------------------- operation table

OPS = {}


def op(*names):
    def register(fn):
        for name in names:
            OPS[name] = fn
        return fn
    return register


def _operand_dtype(e):
    return e.args[0].dtype


@op("add")
def _add(b, e, args):
    return b.fadd(*args, flags=_FAST) if _is_float(e.dtype) else b.add(*args)


@op("sub")
def _sub(b, e, args):
    return b.fsub(*args, flags=_FAST) if _is_float(e.dtype) else b.sub(*args)


@op("mul")
def _mul(b, e, args):
    if _is_float(e.dtype):
        return b.fmul(*args, flags=_FAST)
    return b.and_(*args) if e.dtype == np.bool_ else b.mul(*args)


@op("square")
def _square(b, e, args):
    return _mul(b, e, [args[0], args[0]])


@op("div")
def _div(b, e, args):
    x, y = args
    if _is_float(e.dtype):
        return b.fdiv(x, y, flags=_FAST)
    if e.dtype == np.int64 and e.args[1].op == "const" and e.args[1].attr[1] > 0:
        return b.udiv(x, y)     # index arithmetic: never negative, divisor a positive constant
    zero, safe_y = _safe_divisor(b, e.dtype, y)
    all_ones = ir.Constant(y.type, -1)         # x / 0, as XLA defines it (-1 signed, max unsigned)
    if not _is_signed(e.dtype):
        return b.select(zero, all_ones, b.udiv(x, safe_y))
    quotient = b.sdiv(x, safe_y)
    minus_one = b.icmp_signed("==", y, all_ones)
    return b.select(zero, all_ones, b.select(minus_one, b.sub(ir.Constant(y.type, 0), x), quotient))


def _safe_divisor(b, dtype, y):
    """(y == 0, a divisor that never traps: 1 where y is 0 or -1)."""
    one = ir.Constant(y.type, 1)
    zero = b.icmp_signed("==", y, ir.Constant(y.type, 0))
    bad = zero
    if _is_signed(dtype):
        bad = b.or_(zero, b.icmp_signed("==", y, ir.Constant(y.type, -1)))
    return zero, b.select(bad, one, y)


@op("rem")
def _rem(b, e, args):
    x, y = args
    if _is_float(e.dtype):
        return b.frem(x, y)
    if e.dtype == np.int64 and e.args[1].op == "const" and e.args[1].attr[1] > 0:
        return b.urem(x, y)
    zero, safe_y = _safe_divisor(b, e.dtype, y)
    if not _is_signed(e.dtype):
        return b.select(zero, x, b.urem(x, safe_y))
    remainder = b.srem(x, safe_y)
    minus_one = b.icmp_signed("==", y, ir.Constant(y.type, -1))
    return b.select(zero, x, b.select(minus_one, ir.Constant(y.type, 0), remainder))


def _compare(b, dtype, predicate, x, y):
    if _is_float(dtype):
        if predicate == "!=":
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(predicate, x, y)
    if _is_signed(dtype):
        return b.icmp_signed(predicate, x, y)
    return b.icmp_unsigned(predicate, x, y)


for _name, _predicate in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")):
    OPS[_name] = (lambda predicate: lambda b, e, args: _compare(b, _operand_dtype(e), predicate, *args))(_predicate)


def _extremum(b, dtype, x, y, predicate):
    """numpy's maximum/minimum: NaN wins, ties keep the first operand."""
    wins = _compare(b, dtype, predicate, x, y)
    if _is_float(dtype):
        wins = b.or_(wins, b.fcmp_unordered("uno", x, x))
    return b.select(wins, x, y)


def _elementwise_extremum(kind, predicate):
    """Floats through llvm.maximum/minimum: NaN wins and -0 < +0, as XLA defines max/min."""
    def emit(b, e, args):
        if _is_float(e.dtype):
            return call_intrinsic(b, f"llvm.{kind}.{_suffix(args[0].type)}", args[0].type, args)
        return _extremum(b, e.dtype, *args, predicate)
    return emit


OPS["max"] = _elementwise_extremum("maximum", ">=")
OPS["min"] = _elementwise_extremum("minimum", "<=")


@op("neg")
def _neg(b, e, args):
    return b.fneg(args[0]) if _is_float(e.dtype) else b.sub(ir.Constant(args[0].type, 0), args[0])


@op("abs")
def _abs(b, e, args):
    x = args[0]
    if _is_float(e.dtype):
        return _float_intrinsic(b, "fabs", x)
    if not _is_signed(e.dtype):
        return x
    negative = b.icmp_signed("<", x, ir.Constant(x.type, 0))
    return b.select(negative, b.sub(ir.Constant(x.type, 0), x), x)


@op("sign")
def _sign(b, e, args):
    x = args[0]
    one, minus_one = _constant(e.dtype, 1), _constant(e.dtype, -1)
    zero = _constant(e.dtype, 0)
    positive = _compare(b, e.dtype, ">", x, zero)
    if not (_is_float(e.dtype) or _is_signed(e.dtype)):
        return b.select(positive, one, zero)
    negative = _compare(b, e.dtype, "<", x, zero)
    # Floats give x * 0 for 0, -0 and NaN (themselves, as numpy) and for subnormals, which
    # the entry point's DAZ makes compare as zeros: signed zeros then, as XLA gives.
    rest = b.fmul(x, zero) if _is_float(e.dtype) else zero
    return b.select(positive, one, b.select(negative, minus_one, rest))


OPS["floor"] = lambda b, e, args: _float_intrinsic(b, "floor", args[0])
OPS["ceil"] = lambda b, e, args: _float_intrinsic(b, "ceil", args[0])
OPS["sqrt"] = lambda b, e, args: _float_intrinsic(b, "sqrt", args[0])


@op("round")
def _round(b, e, args):
    method = dict(e.attr or ()).get("rounding_method", 0)
    return _float_intrinsic(b, "round" if method == 0 else "roundeven", args[0])


@op("rsqrt")
def _rsqrt(b, e, args):
    root = _float_intrinsic(b, "sqrt", args[0])
    return b.fdiv(ir.Constant(root.type, 1.0), root)


@op("is_finite")
def _is_finite(b, e, args):
    magnitude = _float_intrinsic(b, "fabs", args[0])
    return b.fcmp_ordered("<", magnitude, ir.Constant(magnitude.type, float("inf")))


def _math(name):
    """A transcendental from llvm_math."""
    return lambda b, e, args: _half_in_float32(b, llvm_math.EMITTERS[name], args)


def _half_in_float32(b, emitter, args):
    """emitter(b, *args); half-precision inputs compute in float32."""
    if isinstance(args[0].type, ir.HalfType):
        wide = [b.fpext(a, F32) for a in args]
        return b.fptrunc(emitter(b, *wide), F16)
    return emitter(b, *args)


# Their own emitters below: sin, tan, tanh and atan (subnormals kept), logistic (16-bit floats
# as XLA rounds them), polygamma (its order).
_KEEPING_SUBNORMALS = ("sin", "tan", "tanh", "atan")
for _name in kernel_ir.ops_in(kernel_ir.MATH) - {*_KEEPING_SUBNORMALS, "logistic", "polygamma"}:
    OPS[_name] = _math(_name)


def _keeping_subnormals(name):
    """sin, tan, tanh and atan return subnormal x itself, as XLA's do (f(x) = x there): under
    the entry point's DAZ they would read it as 0. A select moves the bits unflushed."""
    def emit(b, e, args):
        (x,) = args
        value = _half_in_float32(b, llvm_math.EMITTERS[name], args)
        if isinstance(x.type, ir.HalfType):       # float16's subnormals are float32 normals
            return value
        tiny = ir.Constant(x.type, float(dtypes.finfo(e.dtype).tiny))
        return b.select(b.fcmp_ordered("<", _float_intrinsic(b, "fabs", x), tiny), x, value)
    return emit


for _name in _KEEPING_SUBNORMALS:
    OPS[_name] = _keeping_subnormals(_name)


def _reading_subnormals_as_zero(emit):
    """emit with a subnormal x replaced by a signed zero first, as DAZ reads it: for the
    functions whose code returns x itself for tiny x (a select, which DAZ does not touch),
    so they agree with eager and with XLA (log1p(1e-39) is 0)."""
    def wrapped(b, e, args):
        (x,) = args
        if isinstance(x.type, ir.HalfType):       # float16's subnormals are float32 normals
            return emit(b, e, args)
        tiny = ir.Constant(x.type, float(dtypes.finfo(e.dtype).tiny))
        subnormal = b.fcmp_ordered("<", _float_intrinsic(b, "fabs", x), tiny)
        return emit(b, e, [b.select(subnormal, b.fmul(x, ir.Constant(x.type, 0.0)), x)])
    return wrapped


for _name in ("log1p", "asin", "asinh", "atanh", "sinh", "erf", "lgamma", "digamma", "cbrt"):
    OPS[_name] = _reading_subnormals_as_zero(OPS[_name])


@op("logistic")
def _logistic(b, e, args):
    """16-bit floats as XLA: it expands logistic to 1 / (1 + exp(-x)) before widening them to
    float32 op by op, so each of the three steps rounds to the 16-bit format."""
    if not (_is_bf16(e.dtype) or e.dtype == np.float16):
        return llvm_math.emit_logistic(b, *args)
    (x,) = args
    narrow = (lambda value: round_to_bf16(b, value)) if _is_bf16(e.dtype) else (lambda value: value)
    one = ir.Constant(x.type, 1.0)
    z = narrow(_half_in_float32(b, llvm_math.EMITTERS["exp"], [b.fneg(x)]))
    return b.fdiv(one, narrow(b.fadd(one, z)))


@op("polygamma")
def _polygamma(b, e, args):
    order = dict(e.attr)["m"]
    return _half_in_float32(b, lambda builder, x: llvm_math.emit_polygamma(builder, x, order), args)


class _Narrow16:
    """A 16-bit float format's layout (sign, exponent, `mantissa_bits`), and whether
    nextafter(x, y) with x == y gives y (ml_dtypes' bfloat16) or x (numpy's float16):
    the two differ only for x = -y = 0."""

    def __init__(self, mantissa_bits, equal_gives_y):
        self.infinity = 0x7fff & ~((1 << mantissa_bits) - 1)
        self.quiet_nan = self.infinity | 1 << (mantissa_bits - 1)   # the NaN both libraries return
        self.equal_gives_y = equal_gives_y


_FLOAT16_LAYOUT = _Narrow16(10, equal_gives_y=False)
_BFLOAT16_LAYOUT = _Narrow16(7, equal_gives_y=True)


def _narrow16_layout(dtype):
    if dtype == np.float16:
        return _FLOAT16_LAYOUT
    return _BFLOAT16_LAYOUT if _is_bf16(dtype) else None


@op("nextafter")
def _nextafter(b, e, args):
    """libm steps in float32/float64 only: the 16-bit formats step their bit patterns.
    Integer compares also keep subnormal operands apart, which DAZ would read as zeros."""
    layout = _narrow16_layout(e.dtype)
    if layout is None:
        return _math("nextafter")(b, e, args)
    x, y = (bitcast(b, a, e.dtype, np.int16) for a in args)
    return bitcast(b, _nextafter_bits(b, layout, x, y), np.int16, e.dtype)


def _nextafter_bits(b, layout, x, y):
    x_magnitude, y_magnitude = b.and_(x, _i16(0x7fff)), b.and_(y, _i16(0x7fff))
    x_order, y_order = _sign_magnitude_order(b, x, x_magnitude), _sign_magnitude_order(b, y, y_magnitude)
    # One pattern up moves away from zero: toward y when y is larger and x positive, or the reverse.
    away_from_zero = b.xor(b.icmp_signed("<", x_order, y_order), b.icmp_signed("<", x, _i16(0)))
    stepped = b.select(away_from_zero, b.add(x, _i16(1)), b.sub(x, _i16(1)))
    smallest_toward_y = b.or_(b.and_(y, _i16(-0x8000)), _i16(1))
    result = b.select(b.icmp_unsigned("==", x_magnitude, _i16(0)), smallest_toward_y, stepped)
    result = b.select(b.icmp_signed("==", x_order, y_order), y if layout.equal_gives_y else x, result)
    either_nan = b.or_(b.icmp_unsigned(">", x_magnitude, _i16(layout.infinity)),
                       b.icmp_unsigned(">", y_magnitude, _i16(layout.infinity)))
    return b.select(either_nan, _i16(layout.quiet_nan), result)


def _i16(value):
    return ir.Constant(I16, value)


def _sign_magnitude_order(b, bits, magnitude):
    """An integer ordered as the float is (both zeros equal), for patterns that are not NaN."""
    negative = b.icmp_signed("<", bits, ir.Constant(bits.type, 0))
    return b.select(negative, b.neg(magnitude), magnitude)


@op("fma")
def _fma(b, e, args):
    """One rounding: the hardware FMA, or for narrow formats double arithmetic (whose
    product of two narrow values is exact) rounded once to the format."""
    if e.dtype in (np.float32, np.float64):
        return call_intrinsic(b, f"llvm.fma.{_suffix(args[0].type)}", args[0].type, list(args))
    wide = [convert(b, a, e.dtype, np.float64) for a in args]
    total = b.fadd(b.fmul(wide[0], wide[1]), wide[2])
    return convert(b, total, np.float64, e.dtype)


def _bit_intrinsic(name, *extra):
    def emit(b, e, args):
        x = args[0]
        return call_intrinsic(b, f"llvm.{name}.{_suffix(x.type)}", x.type, [x, *extra])
    return emit


OPS["clz"] = _bit_intrinsic("ctlz", ir.Constant(I1, 0))
OPS["population_count"] = _bit_intrinsic("ctpop")


def _shift(kind):
    """XLA's shifts: the amount is unsigned, and an amount past the width shifts all bits out."""
    def emit(b, e, args):
        x, amount = args
        width = ir.Constant(x.type, x.type.width)
        too_far = b.icmp_unsigned(">=", amount, width)
        if kind == "ashr":
            return b.ashr(x, b.select(too_far, ir.Constant(x.type, x.type.width - 1), amount))
        safe = b.select(too_far, ir.Constant(x.type, 0), amount)
        shifted = b.shl(x, safe) if kind == "shl" else b.lshr(x, safe)
        return b.select(too_far, ir.Constant(x.type, 0), shifted)
    return emit


OPS["shift_left"] = _shift("shl")
OPS["shift_right_logical"] = _shift("lshr")
OPS["shift_right_arithmetic"] = _shift("ashr")


@op("not")
def _not(b, e, args):
    return b.xor(args[0], ir.Constant(args[0].type, -1 if e.dtype != np.bool_ else 1))


OPS["and"] = lambda b, e, args: b.and_(*args)
OPS["or"] = lambda b, e, args: b.or_(*args)
OPS["xor"] = lambda b, e, args: b.xor(*args)


@op("select_n")
def _select_n(b, e, args):
    which, cases = args[0], args[1:]
    if len(cases) == 1:
        return cases[0]
    if which.type == I1:
        return b.select(which, cases[1], cases[0])
    result = cases[0]
    for k, case in enumerate(cases[1:], start=1):
        result = b.select(b.icmp_signed("==", which, ir.Constant(which.type, k)), case, result)
    return result


@op("convert")
def _convert(b, e, args):
    return convert(b, args[0], e.args[0].dtype, e.dtype)


def convert(b, x, source, target):
    source, target = np.dtype(source), np.dtype(target)
    # float16 goes through float32: LLVM would call compiler-rt helpers (__truncdfhf2, ...)
    # that the JIT cannot resolve, while float32 <-> float16 is one instruction (F16C).
    if source == np.float16 and target != np.float16:
        return convert(b, b.fpext(x, F32), np.float32, target)
    if target == np.float16 and source not in (np.float16, np.float32, np.bool_):
        if source == np.float64:
            return b.fptrunc(_to_float32_round_to_odd(b, x), F16)
        return b.fptrunc(convert(b, x, source, np.float32), F16)
    target_type = register_type(target)
    if target == np.bool_:
        return _compare(b, source, "!=", x, _constant(source, 0))
    if source == np.bool_:
        return b.uitofp(x, target_type) if _is_float(target) else b.zext(x, target_type)
    if _is_float(source) and _is_float(target):
        return _convert_float(b, x, source, target, target_type)
    if _is_float(source):
        kind = "fptosi" if _is_signed(target) else "fptoui"
        # Saturating conversion: NaN -> 0 and out-of-range values clamp, like the eager impl.
        return call_intrinsic(b, f"llvm.{kind}.sat.{_suffix(target_type)}.{_suffix(x.type)}", target_type, [x])
    if _is_float(target):
        return b.sitofp(x, target_type) if _is_signed(source) else b.uitofp(x, target_type)
    if target_type.width < x.type.width:
        return b.trunc(x, target_type)
    if target_type.width > x.type.width:
        return b.sext(x, target_type) if _is_signed(source) else b.zext(x, target_type)
    return x


def _to_float32_round_to_odd(b, x):
    """double -> float rounding to odd: a following float -> half rounding is then correct
    (no double-rounding error). Truncate toward zero, and set the last bit if inexact."""
    nearest = b.fptrunc(x, F32)
    wide = b.fpext(nearest, F64)
    bits = b.bitcast(nearest, I32)
    overshoot = b.fcmp_ordered(">", _float_intrinsic(b, "fabs", wide), _float_intrinsic(b, "fabs", x))
    bits = b.select(overshoot, b.sub(bits, ir.Constant(I32, 1)), bits)
    inexact = b.fcmp_unordered("!=", wide, x)
    bits = b.select(inexact, b.or_(bits, ir.Constant(I32, 1)), bits)
    return b.bitcast(bits, F32)


def _convert_float(b, x, source, target, target_type):
    if x.type == target_type:
        return round_to(b, x, target) if _in_float32(target) and target != source else x
    if _in_float32(target):    # via float32 (float64 first rounds to float32, as ml_dtypes does for bfloat16)
        return round_to(b, b.fptrunc(x, target_type) if isinstance(x.type, ir.DoubleType) else b.fpext(x, target_type),
                        target)
    wider = _float_bits(target_type) > _float_bits(x.type)
    return b.fpext(x, target_type) if wider else b.fptrunc(x, target_type)


def _float_bits(ty):
    return {"half": 16, "float": 32, "double": 64}[str(ty)]


@op("bitcast")
def _bitcast(b, e, args):
    return bitcast(b, args[0], e.args[0].dtype, e.dtype)


def bitcast(b, x, source, target):
    raw = to_memory(b, x, source) if _in_float32(source) else x
    if not _in_float32(target):
        return b.bitcast(raw, register_type(target))
    return from_memory(b, b.bitcast(raw, memory_type(target)), target)


# ---------------------------------------------------------------- reductions

# Bitwise reductions (reduce_and/or/xor; on booleans "all"/"any"/"odd count"): their
# identity (-1: all bits set, at any width); OPS has the instruction that combines.
_BITWISE_REDUCTIONS = {"and": -1, "or": 0, "xor": 0}


def reduction_identity(kind, dtype):
    dtype = np.dtype(dtype)
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if kind in _BITWISE_REDUCTIONS:
        return _BITWISE_REDUCTIONS[kind]
    largest = kind in ("min", "argmin")
    if dtype == np.bool_:
        return int(largest)
    if _is_float(dtype):
        return float("inf") if largest else float("-inf")
    info = np.iinfo(dtype)
    return int(info.max if largest else info.min)


def _combine(b, kind, dtype, acc, value):
    if kind in _BITWISE_REDUCTIONS:
        return OPS[kind](b, None, [acc, value])
    if kind == "sum":
        return b.fadd(acc, value, flags=_REDUCE_FAST) if _is_float(dtype) else b.add(acc, value)
    if kind == "prod":
        if _is_float(dtype):
            return b.fmul(acc, value, flags=_REDUCE_FAST)
        return b.and_(acc, value) if dtype == np.bool_ else b.mul(acc, value)
    if _is_float(dtype):
        # llvm.maximum/minimum propagate NaN like numpy and vectorize as reductions.
        name = "maximum" if kind == "max" else "minimum"
        return call_intrinsic(b, f"llvm.{name}.{_suffix(acc.type)}", acc.type, [acc, value])
    return _extremum(b, dtype, value, acc, ">" if kind == "max" else "<")


def _arg_better(b, dtype, kind, value, best):
    predicate = ">" if kind == "argmax" else "<"
    better = _compare(b, dtype, predicate, value, best)
    if _is_float(dtype):
        # The first NaN wins, as numpy's argmax/argmin.
        value_nan = b.fcmp_unordered("uno", value, value)
        best_nan = b.fcmp_unordered("uno", best, best)
        better = b.or_(better, b.and_(value_nan, b.not_(best_nan)))
    return better


# ---------------------------------------------------------------- kernels

class KernelEmitter:
    def __init__(self, module, kernel, aliases=None):
        self.module, self.kernel = module, kernel
        self.parallel = kernel.parallel_loop()
        types = [PTR] * len(kernel.params) + [I64, I64] * (self.parallel is not None)
        # Control-flow bodies are partitioned apart, so their kernels may share names: each
        # function gets a name unique in the module.
        self.function = ir.Function(module, ir.FunctionType(VOID, types), module.get_unique_name(kernel.name))
        self.function.linkage = "internal"
        llvm_target.add_function_attributes(self.function)
        for argument in self.function.args[:len(kernel.params)]:
            argument.add_attribute("noalias")
        self.buffers = dict(zip(kernel.params, self.function.args))
        # A donated input's buffer holding an output (donation.py): the output is stored
        # through the input's pointer, so `noalias` stays true and LLVM sees the reuse.
        for output, source in (aliases or {}).items():
            self.buffers[output] = self.buffers[source]
        # The parallel loop runs over [start, stop) given by the caller (one thread's share).
        self.bounds = tuple(self.function.args[len(kernel.params):]) or None
        entry = self.function.append_basic_block("entry")
        self.allocas = ir.IRBuilder(entry)
        self.body_block = self.function.append_basic_block("body")
        self.b = ir.IRBuilder(self.body_block)
        self.loop_values, self.accumulators, self.positions = {}, {}, {}

    def emit(self):
        self._declare_accumulators()
        if all(loop.extent > 0 for loop in self.kernel.outer):
            self._loops(self.kernel.outer, self._stages)
        self.b.ret_void()
        self.allocas.branch(self.body_block)
        return self.function

    def _declare_accumulators(self):
        for stage in self.kernel.stages:
            if isinstance(stage, Reduce):
                value_type = register_type(stage.value.dtype)
                acc_id = stage.result.attr
                if stage.kind.startswith("arg"):
                    self.positions[acc_id] = self.allocas.alloca(value_type)
                    self.accumulators[acc_id] = self.allocas.alloca(I64)
                else:
                    self.accumulators[acc_id] = self.allocas.alloca(value_type)

    def _loops(self, loops, body, interleave=None):
        """Nested do-while loops over static extents (all > 0), then `body()` innermost;
        `interleave` asks the vectorizer for that many independent copies of each loop."""
        if not loops:
            body()
            return
        loop, rest = loops[0], loops[1:]
        start, stop = self.bounds if loop is self.parallel else (0, loop.extent)
        hints = (("llvm.loop.interleave.count", interleave),) if interleave else ()
        self._counted_loop(loop, start, stop, lambda: self._loops(rest, body, interleave), hints=hints)

    def _counted_loop(self, loop, start, stop, body, step=1, hints=(), name=None):
        """`for loop in range(start, stop, step): body()`, the counter in loop_values[loop]
        (or handed to body when `loop` is None); bounds are ints or i64 values, `hints`
        (name, value) pairs of loop metadata."""
        def iteration(counter):
            if loop is None:
                body(counter)
            else:
                self.loop_values[loop] = counter
                body()
        emit_loop(self.b, start, stop, iteration, step=step, name=name or loop.name, hints=hints)

    def _stages(self):
        for stage in self.kernel.stages:
            if isinstance(stage, Reduce):
                self._reduce(stage)
            else:
                self._store(stage)

    def _emitter(self):
        shares = {self.parallel: self.bounds} if self.bounds else None
        return ExprEmitter(self.b, self.loop_values, self.buffers, self.accumulators, shares)

    def _runs(self, stage):
        return all(loop.extent > 0 for loop in stage.loops)

    def _reduce(self, stage):
        dtype, acc_id = stage.value.dtype, stage.result.attr
        is_arg = stage.kind.startswith("arg")
        best = self.positions[acc_id] if is_arg else self.accumulators[acc_id]
        self.b.store(_constant(dtype, reduction_identity(stage.kind, dtype)), best)
        if is_arg:
            self.b.store(ir.Constant(I64, 0), self.accumulators[acc_id])
        if not self._runs(stage):
            return

        def body(target=best):
            emitter = self._emitter()
            value = emitter.emit(stage.value)
            self._emit_writes(emitter, stage.writes)
            current = self.b.load(target)
            if not is_arg:
                self.b.store(_combine(self.b, stage.kind, dtype, current, value), target)
                return
            better = _arg_better(self.b, dtype, stage.kind, value, current)
            self.b.store(self.b.select(better, value, current), best)
            position = emitter.emit(stage.index)
            old = self.b.load(self.accumulators[acc_id])
            self.b.store(self.b.select(better, position, old), self.accumulators[acc_id])
        if _sums_in_blocks(stage):
            self._blocked_sum(stage, best, body)
        else:
            self._loops(stage.loops, body, REDUCTION_INTERLEAVE)

    def _blocked_sum(self, stage, best, body):
        """A float32 sum over a long innermost loop, block by block: each block of SUM_BLOCK
        points accumulates as before (vectorized, several accumulators), and the blocks' sums
        add up in float64. The error then grows with the block length, not with n (1e7 points:
        relative error 7.8e-7 before, 4e-8 after, as numpy's pairwise sum), at the cost of one
        horizontal add per block."""
        loop, value_type, wide = stage.loops[-1], register_type(stage.value.dtype), F64
        total, block = self.allocas.alloca(wide), self.allocas.alloca(value_type)
        self.b.store(ir.Constant(wide, 0.0), total)
        interleave = (("llvm.loop.interleave.count", REDUCTION_INTERLEAVE),)

        def one_block(start):
            self.b.store(ir.Constant(value_type, 0.0), block)
            end = self.b.add(start, as_i64(SUM_BLOCK))
            stop = self.b.select(self.b.icmp_unsigned("<", end, as_i64(loop.extent)), end, as_i64(loop.extent))
            self._counted_loop(loop, start, stop, lambda: body(block), hints=interleave)
            partial = self.b.fpext(self.b.load(block), wide)
            self.b.store(self.b.fadd(self.b.load(total), partial), total)

        def blocks():
            self._counted_loop(None, 0, loop.extent, one_block, step=SUM_BLOCK, name=f"{loop.name}.blocks")
        self._loops(stage.loops[:-1], blocks, REDUCTION_INTERLEAVE)
        self.b.store(self.b.fptrunc(self.b.load(total), value_type), best)

    def _store(self, stage):
        if not self._runs(stage):
            return
        tiles = transposed_reads.plan(stage)
        if tiles is None:
            self._loops(stage.loops, lambda: self._emit_guarded_writes(self._emitter(), stage))
            return
        others = [loop for loop in stage.loops if loop not in (tiles.rows, tiles.columns)]
        self._loops(others, lambda: self._tiled_store(stage, tiles))

    # -- stores with transposed reads (transposed_reads.py), tiled rows x columns
    def _tiled_store(self, stage, tiles):
        """Whole tiles where they fit; the edges (a partial tile of rows or columns)
        run the plain loops, so no vector reaches past an operand's rows."""
        rows, columns, tile = tiles.rows, tiles.columns, tiles.tile
        start, stop = self.bounds if rows is self.parallel else (as_i64(0), as_i64(rows.extent))
        rows_end = self.b.add(start, self.b.and_(self.b.sub(stop, start), as_i64(-tile)))
        columns_end = columns.extent // tile * tile

        def point():
            self._emit_writes(self._emitter(), stage.writes)

        def edge(loop, start, stop, body):
            # Less than a tile across, little work: vectorizing it cost ~10% of the compile time.
            self._counted_loop(loop, start, stop, body, hints=_SCALAR)

        def row_of_tiles(row):
            self._counted_loop(None, 0, columns_end, lambda column: self._tile(stage, tiles, row, column),
                               step=tile, name=columns.name + ".tiles")
            if columns_end < columns.extent:
                edge(rows, row, self.b.add(row, as_i64(tile)),
                     lambda: edge(columns, columns_end, columns.extent, point))
        self._counted_loop(None, start, rows_end, row_of_tiles, step=tile, name=rows.name + ".tiles")
        edge(rows, rows_end, stop, lambda: edge(columns, 0, columns.extent, point))

    def _tile(self, stage, tiles, row, column):
        """One tile: each staged operand transposed through registers into its stack
        buffer, then the fused body over the tile reading the buffers."""
        self.loop_values[tiles.rows], self.loop_values[tiles.columns] = row, column
        offsets = self._emitter()
        staged = {load: self._transpose_into_buffer(load, offsets.emit(load.args[0]), step, tiles.tile)
                  for load, step in tiles.loads.items()}
        tile = tiles.tile

        def point(r, c):
            self.loop_values[tiles.rows] = self.b.add(row, r)
            self.loop_values[tiles.columns] = self.b.add(column, c)
            emitter = self._emitter()
            position = self.b.add(self.b.mul(r, as_i64(tile)), c)
            for load, buffer in staged.items():
                memory = memory_type(load.dtype)
                pointer = self.b.gep(buffer, [position], inbounds=True, source_etype=memory)
                emitter.memo[id(load)] = from_memory(self.b, self.b.load(pointer, typ=memory), load.dtype)
            self._emit_writes(emitter, stage.writes)
        self._counted_loop(None, 0, tile, lambda r: self._counted_loop(
            None, 0, tile, lambda c: point(r, c), name=tiles.columns.name + ".in"), name=tiles.rows.name + ".in")

    def _transpose_into_buffer(self, load, offset, step, tile):
        """buffer[r * tile + c] = operand[offset + r + c * step] for r, c < tile."""
        memory = memory_type(load.attr.dtype)
        vector = ir.VectorType(memory, tile)
        slot = self.allocas.alloca(vector, size=tile)
        slot.align = 64
        source = self.buffers[load.attr]
        rows = []
        for c in range(tile):
            pointer = self.b.gep(source, [self.b.add(offset, as_i64(c * step))], inbounds=True,
                                 source_etype=memory)
            rows.append(self.b.load(pointer, typ=vector, align=load.attr.dtype.itemsize))
        for r, values in enumerate(transpose_square(self.b, rows)):
            self.b.store(values, self.b.gep(slot, [as_i64(r)], inbounds=True, source_etype=vector))
        return self.allocas.bitcast(slot, memory.as_pointer())

    def _emit_guarded_writes(self, emitter, stage):
        if stage.guard is None:
            self._emit_writes(emitter, stage.writes)
            return
        with self.b.if_then(emitter.emit(stage.guard)):
            self._emit_writes(emitter, stage.writes)

    def _emit_writes(self, emitter, writes):
        for buffer, index, value in writes:
            offset, result = emitter.emit(index), emitter.emit(value)
            pointer = self.b.gep(self.buffers[buffer], [offset], inbounds=True,
                                 source_etype=memory_type(buffer.dtype))
            self.b.store(to_memory(self.b, result, buffer.dtype), pointer)


# The pipeline interleaves no loop by itself (llvm_target.optimize): for the elementwise
# loops, memory-bound or with no carried dependence, it only multiplied the code that
# LLVM then had to compile. A reduction keeps several independent accumulators, else
# each vector add waits for the previous one (softmax 4096x1024 ran 25% slower).
REDUCTION_INTERLEAVE = 4

# Points per block of a blocked float32 sum (_blocked_sum): 64 vector accumulators' worth
# of 64 points each; sums over fewer than two blocks run as one.
SUM_BLOCK = 4096


def _sums_in_blocks(stage):
    return (stage.kind == "sum" and stage.value.dtype == np.float32 and bool(stage.loops)
            and stage.loops[-1].extent >= 2 * SUM_BLOCK)


_SCALAR = (("llvm.loop.vectorize.width", 1),)


# ---------------------------------------------------------------- entry points

def new_module(name):
    return ir.Module(name=name)


def emit_kernel(module, kernel, aliases=None):
    return KernelEmitter(module, kernel, aliases).emit()
