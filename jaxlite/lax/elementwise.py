"""Elementwise primitives. Each block declares a primitive and registers its rules."""
import builtins
import operator

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array
from jaxlite.core.primitive import Primitive
from jaxlite.core.trace import EVAL_TRACE, set_current_trace
from jaxlite.lax.base import (ANY, FLOAT, INEXACT, INTEGER, INTEGRAL, NUMBER, ORDERED, REAL, as_operand,
                              as_operands, check_dtype, flushing_subnormals, naryop_primitive, scalar_like,
                              unary_primitive)
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching
from jaxlite.core.extended import is_extended, physical_rules
from jaxlite.transforms import physical
from jaxlite.transforms.ad import defjvp, defjvp_with_output, defjvp_zero


def _bind_unary(primitive):
    def op(x):
        return primitive.bind(as_operand(x))
    op.__name__ = primitive.name
    return op


def _bind_nary(primitive):
    def op(*args):
        return primitive.bind(*as_operands(*args))
    op.__name__ = primitive.name
    return op


def unbroadcast(ct, aval):
    """Sum a cotangent down to the shape of an operand that was a broadcast scalar."""
    from jaxlite.lax.reductions import reduce_sum
    if ad.is_zero(ct) or ct.shape == aval.shape:
        return ct
    return reduce_sum(ct, tuple(range(ct.ndim)))


def _broadcast_tangent(t, x, y):
    """t (of x's shape) at the shape of x op y: x may be a scalar broadcast against y."""
    from jaxlite.lax.shapes import broadcast
    return broadcast(t, y.shape) if t.ndim < y.ndim else t


# ---------------------------------------------------------------- arithmetic

add_p = naryop_primitive("add", np.add, NUMBER)
fusion_rules.elementwise(add_p, "add")
add = _bind_nary(add_p)
ad.deflinear(add_p, lambda ct, x, y: [unbroadcast(ct, x.aval) if ad.is_undefined(x) else None,
                                      unbroadcast(ct, y.aval) if ad.is_undefined(y) else None])

# add_any sums tangents and cotangents; unlike add it never sees Python scalars.
add_any_p = naryop_primitive("add_any", np.add, NUMBER)
fusion_rules.elementwise(add_any_p, "add")
add_any = _bind_nary(add_any_p)
ad.deflinear(add_any_p, lambda ct, x, y: [ct, ct])

sub_p = naryop_primitive("sub", np.subtract, NUMBER)
fusion_rules.elementwise(sub_p, "sub")
sub = _bind_nary(sub_p)
ad.deflinear(sub_p, lambda ct, x, y: [
    unbroadcast(ct, x.aval) if ad.is_undefined(x) else None,
    unbroadcast(neg(ct), y.aval) if ad.is_undefined(y) else None])

mul_p = naryop_primitive("mul", np.multiply, NUMBER)
fusion_rules.elementwise(mul_p, "mul")
mul = _bind_nary(mul_p)
ad.defbilinear(mul_p,
               lambda ct, x, y: unbroadcast(mul(ct, y), x.aval),
               lambda ct, x, y: unbroadcast(mul(x, ct), y.aval))


def _divide(x, y):
    if dtypes.is_int(x.dtype):
        # lax.div on integers rounds toward zero, as C does: x - fmod(x, y) is an exact
        # multiple of y (and never overflows, unlike |x|), so floor division of it truncates.
        # x / 0 is all ones (-1 when signed), as XLA defines it; INT_MIN / -1 wraps to INT_MIN.
        safe_y = np.where(y == 0, 1, y).astype(y.dtype)
        with np.errstate(over="ignore"):
            quotient = (x - np.fmod(x, safe_y)) // safe_y
        return np.where(y == 0, -1, quotient).astype(x.dtype)
    return np.divide(x, y)


def _div_jvp_denominator(t, x, y):
    """-t x / y^2 rounded as JAX's rule rounds it, -t * x * y^-2: where the two terms of a
    quotient's derivative nearly cancel (sin(s) / s near 0), a last-bit difference is the result."""
    return mul(mul(neg(t), x), integer_pow(y, -2))


div_p = naryop_primitive("div", _divide, NUMBER)
fusion_rules.elementwise(div_p, "div")
div = _bind_nary(div_p)
defjvp(div_p,
       lambda t, x, y: div(t, y),
       lambda t, x, y: _div_jvp_denominator(t, x, y))
ad.transpose_rules[div_p] = lambda ct, x, y: [unbroadcast(div(ct, y), x.aval), None]


def _remainder(x, y):
    if dtypes.is_int(x.dtype):
        return np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y))).astype(x.dtype)
    return np.fmod(x, y)


rem_p = naryop_primitive("rem", _remainder, REAL)
fusion_rules.elementwise(rem_p, "rem")
rem = _bind_nary(rem_p)
defjvp(rem_p,
       _broadcast_tangent,
       lambda t, x, y: mul(neg(t), round(div(sub(x, rem(x, y)), y))))

def _power(x, y):
    """libm's pow, as the compiled kernels (and XLA:CPU's) call it: numpy's float32 power is
    its own approximation (a fifth of its results differ by an ulp), and even float64 pow
    rounded to float32 differs from powf near a rounding tie. 16-bit floats go through powf
    and one rounding, as jit computes them."""
    if not dtypes.is_float(x.dtype):
        return np.power(x, y)
    from jaxlite.lower import libm_loops          # loads llvmlite: only when a float pow runs
    if x.dtype.itemsize < 4:
        return libm_loops.apply("pow", x.astype(np.float32), y.astype(np.float32)).astype(x.dtype)
    return libm_loops.apply("pow", x, y)


pow_p = naryop_primitive("pow", _power, INEXACT)
fusion_rules.elementwise(pow_p, "pow")
def pow(x, y):
    """x ** y; a Python int exponent takes x's dtype (JAX's pow takes an integer exponent), a
    Python float or complex one is of its default dtype, which x's must be (as JAX's)."""
    if type(y) is int and hasattr(x, "dtype"):
        y = scalar_like(x, y)
    return pow_p.bind(*as_operands(x, y))


def _pow_jvp_base(t, x, y):
    return mul(t, mul(y, pow(x, sub(y, scalar_like(y, 1)))))


def _pow_jvp_exponent(t, x, y):
    # d/dy x^y = log(x) x^y, taken as 0 where x == 0 (the limit from the right for y > 0).
    safe_log = log(select_n(eq(x, scalar_like(x, 0)), x, full_like(x, 1)))
    return mul(t, mul(safe_log, pow(x, y)))


defjvp(pow_p, _pow_jvp_base, _pow_jvp_exponent)

def _signed_zeros_ordered(extremum, zero_of):
    """numpy's maximum/minimum (NaN wins) with -0 < +0, as XLA orders them: where both
    operands are zeros, zero_of(x, y) picks the result. numpy selects an operand's bits,
    where compiled code (DAZ) gives a zero for a subnormal: times 1 flushes it here too."""
    def impl(x, y):
        out = extremum(x, y)
        if not dtypes.is_float(out.dtype):
            return out
        both_zero = (x == 0) & (y == 0)
        if both_zero.any():
            out = np.where(both_zero, zero_of(x, y), out).astype(out.dtype)
        return _times_one(out)
    return impl


def _times_one(out):
    """out * 1 in place (a fresh result): under DAZ a subnormal becomes a signed zero."""
    one = np.ones((), out.dtype)
    return np.multiply(out, one, out=out) if isinstance(out, np.ndarray) and out.ndim else np.multiply(out, one)


max_p = naryop_primitive("max", _signed_zeros_ordered(
    np.maximum, lambda x, y: np.where(np.signbit(x), y, x)), NUMBER)
fusion_rules.elementwise(max_p, "max")
max = _bind_nary(max_p)
min_p = naryop_primitive("min", _signed_zeros_ordered(
    np.minimum, lambda x, y: np.where(np.signbit(x), x, y)), NUMBER)
fusion_rules.elementwise(min_p, "min")
min = _bind_nary(min_p)


def _balanced_share(x, y, wins, extremum):
    """1 where x wins, 0 where it loses and 1/2 at ties, so max(x, x) has gradient 1
    (at the broadcast shape: either operand may be a scalar). Complex values, which
    lax.gt refuses, win where they are the (lexicographic) extremum and differ."""
    if dtypes.is_complex(x.dtype):
        won = bitwise_and(eq(extremum(x, y), x), ne(x, y))
    else:
        won = wins(x, y)
    one, half, zero = (full_like(won, value, dtype=x.dtype) for value in (1, 0.5, 0))
    return select_n(won, select_n(eq(x, y), zero, half), one)


defjvp(max_p,
       lambda t, x, y: mul(t, _balanced_share(x, y, gt, max)),
       lambda t, x, y: mul(t, _balanced_share(y, x, gt, max)))
defjvp(min_p,
       lambda t, x, y: mul(t, _balanced_share(x, y, lt, min)),
       lambda t, x, y: mul(t, _balanced_share(y, x, lt, min)))

nextafter_p = naryop_primitive("nextafter", np.nextafter, FLOAT)
fusion_rules.elementwise(nextafter_p, "nextafter")
nextafter = _bind_nary(nextafter_p)
defjvp_zero(nextafter_p)

def _atan2(y, x):
    """numpy's arctan2 for reals; for complex (as XLA) -i log((x + iy) / sqrt(x^2 + y^2)),
    the angle's analytic continuation: nan where x^2 + y^2 is 0."""
    if not np.iscomplexobj(y):
        return np.arctan2(y, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (-1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))).astype(y.dtype)


atan2_p = naryop_primitive("atan2", _atan2, INEXACT)
fusion_rules.elementwise(atan2_p, "atan2")
atan2 = _bind_nary(atan2_p)
defjvp(atan2_p,
       lambda t, x, y: mul(t, div(y, add(square(x), square(y)))),
       lambda t, x, y: mul(t, div(neg(x), add(square(x), square(y)))))

# ---------------------------------------------------------------- unary arithmetic

neg_p = unary_primitive("neg", np.negative, NUMBER)
fusion_rules.elementwise(neg_p, "neg")
neg = _bind_unary(neg_p)
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])

def _sign(x):
    out = np.sign(x)
    return np.where(x == 0, x, out) if out.dtype.kind == "f" else out     # keeps -0.0


sign_p = unary_primitive("sign", _sign, NUMBER, subnormals_as_zero=True)
fusion_rules.elementwise(sign_p, "sign")
sign = _bind_unary(sign_p)
defjvp_zero(sign_p)

floor_p = unary_primitive("floor", np.floor, FLOAT, subnormals_as_zero=True)
fusion_rules.elementwise(floor_p, "floor")
floor = _bind_unary(floor_p)
defjvp_zero(floor_p)

ceil_p = unary_primitive("ceil", np.ceil, FLOAT, subnormals_as_zero=True)
fusion_rules.elementwise(ceil_p, "ceil")
ceil = _bind_unary(ceil_p)
defjvp_zero(ceil_p)


def _round_half_away(x):
    # floor(|x| + 0.5) would round 0.49999997 up (the sum rounds to 1) and odd integers past
    # 2**23 to the next even one; x - trunc(x) is exact.
    whole = np.trunc(x)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole).astype(x.dtype)


round_p = Primitive("round")
fusion_rules.elementwise(round_p, "round")
round_p.def_impl(lambda x, rounding_method=0: _round_half_away(x) if rounding_method == 0 else np.round(x))
round_p.def_abstract_eval(lambda x, rounding_method=0: _unary_float_aval("round", x))
batching.vectorized_rule(round_p)
defjvp_zero(round_p)


def round(x, rounding_method=0):
    """rounding_method 0 rounds half away from zero; 1 rounds half to even."""
    return round_p.bind(as_operand(x), rounding_method=int(rounding_method))


def _unary_float_aval(name, x):
    check_dtype(name, x, FLOAT)
    return x


# ---------------------------------------------------------------- reduce_precision
# x rounded to a narrower float format (`exponent_bits`, `mantissa_bits`) and kept in its
# dtype, as XLA does it, on the bits: the mantissa rounds to nearest even, a value past
# the format's range becomes an infinity and one below its smallest normal a zero (of
# its sign), NaN stays NaN. One algorithm serves eager (numpy arrays) and jit (kernel-IR
# expressions built from existing kernel ops, so codegen needs nothing new).

def _reduce_precision_bits(ops, x, exponent_bits, mantissa_bits):
    info = dtypes.finfo(x.dtype)
    bits = ops.to_bits(x)
    if mantissa_bits < info.nmant:
        dropped = info.nmant - mantissa_bits
        last_kept_bit = ops.and_(ops.shift_right(bits, dropped), 1)
        rounded = ops.add(bits, ops.add(last_kept_bit, (1 << (dropped - 1)) - 1))
        bits = ops.and_(rounded, ~((1 << dropped) - 1) & ((1 << info.bits) - 1))
    if exponent_bits < info.nexp:
        exponent_mask = ((1 << info.nexp) - 1) << info.nmant
        bias, reduced_bias = (1 << (info.nexp - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = ops.and_(bits, exponent_mask)
        signed_zero = ops.and_(bits, 1 << (info.bits - 1))
        bits = ops.where(ops.le(exponent, (bias - reduced_bias) << info.nmant), signed_zero, bits)
        overflows = ops.gt(exponent, (bias + reduced_bias) << info.nmant)
        bits = ops.where(overflows, ops.or_(signed_zero, exponent_mask), bits)
    return ops.where(ops.isnan(x), x, ops.from_bits(bits))


class _ArrayBits:
    """_reduce_precision_bits's operations on numpy arrays (at least 1-d: no scalar overflow warnings)."""

    def __init__(self, dtype):
        self.dtype, self.bits_dtype = np.dtype(dtype), np.dtype(f"u{np.dtype(dtype).itemsize}")

    def to_bits(self, x):
        return x.view(self.bits_dtype)

    def from_bits(self, bits):
        return bits.view(self.dtype)

    def and_(self, a, b):
        return np.bitwise_and(a, self.bits_dtype.type(b))

    def or_(self, a, b):
        return np.bitwise_or(a, b)

    def add(self, a, b):
        return np.add(a, b if isinstance(b, np.ndarray) else self.bits_dtype.type(b))

    def shift_right(self, a, n):
        return np.right_shift(a, self.bits_dtype.type(n))

    def le(self, a, b):
        return a <= self.bits_dtype.type(b)

    def gt(self, a, b):
        return a > self.bits_dtype.type(b)

    def where(self, condition, then, otherwise):
        return np.where(condition, then, otherwise)

    def isnan(self, x):
        return np.isnan(x)


class _KernelBits(_ArrayBits):
    """The same operations as kernel-IR nodes (lower/kernel_ir.py), for the fused kernel."""

    def __init__(self, eb, dtype):
        super().__init__(dtype)
        self.eb = eb

    def _bits(self, a):
        return a if not isinstance(a, int) else self.eb.const(a, self.bits_dtype)

    def _node(self, op, dtype, *args):
        return self.eb.node(op, dtype, tuple(self._bits(a) for a in args))

    def to_bits(self, x):
        return self._node("bitcast", self.bits_dtype, x)

    def from_bits(self, bits):
        return self._node("bitcast", self.dtype, bits)

    def and_(self, a, b):
        return self._node("and", self.bits_dtype, a, b)

    def or_(self, a, b):
        return self._node("or", self.bits_dtype, a, b)

    def add(self, a, b):
        return self._node("add", self.bits_dtype, a, b)

    def shift_right(self, a, n):
        return self._node("shift_right_logical", self.bits_dtype, a, n)

    def le(self, a, b):
        return self._node("le", dtypes.bool_, a, b)

    def gt(self, a, b):
        return self._node("gt", dtypes.bool_, a, b)

    def where(self, condition, then, otherwise):
        return self._node("select_n", then.dtype, condition, otherwise, then)

    def isnan(self, x):
        return self._node("ne", dtypes.bool_, x, x)


def _reduce_precision_impl(x, exponent_bits, mantissa_bits):
    flat = np.asarray(x).reshape(-1)
    out = _reduce_precision_bits(_ArrayBits(flat.dtype), flat, exponent_bits, mantissa_bits)
    return out.reshape(np.shape(x))


def _reduce_precision_rule(lw, eqn, index):
    x = lw.operand(eqn.inputs[0], index)
    return _reduce_precision_bits(_KernelBits(lw.eb, x.dtype), x, **eqn.params)


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.def_impl(_reduce_precision_impl)
reduce_precision_p.def_abstract_eval(lambda x, **params: _unary_float_aval("reduce_precision", x))
batching.vectorized_rule(reduce_precision_p)
ad.deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])
fusion_rules.fused(reduce_precision_p, _reduce_precision_rule, elementwise=True)


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """`operand` rounded to a float format with `exponent_bits` exponent and `mantissa_bits`
    mantissa bits, in its own dtype."""
    exponent_bits, mantissa_bits = operator.index(exponent_bits), operator.index(mantissa_bits)
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")
    return reduce_precision_p.bind(as_operand(operand), exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)


is_finite_p = unary_primitive("is_finite", np.isfinite, FLOAT)
fusion_rules.elementwise(is_finite_p, "is_finite")
is_finite_p.def_abstract_eval(lambda x: _unary_float_aval("is_finite", x).update(dtype=dtypes.bool_))
is_finite = _bind_unary(is_finite_p)
defjvp_zero(is_finite_p)

abs_p = unary_primitive("abs", np.abs, NUMBER, out_dtype=dtypes.real_dtype)
fusion_rules.elementwise(abs_p, "abs")
abs = _bind_unary(abs_p)


def _abs_jvp(t, x):
    if dtypes.is_complex(x.dtype):
        # d|x| = Re(conj(x) dx) / |x|, taken as 0 at 0 (as JAX: |x| replaced by 1 there).
        from jaxlite.lax.complex_parts import conj, real
        magnitude = abs(x)
        safe = select_n(eq(magnitude, full_like(magnitude, 0)), magnitude, full_like(magnitude, 1))
        return div(real(mul(conj(x), t)), safe)
    # The derivative at 0 (and -0) is 1, as JAX takes it (so grad(hypot)(0, 0) is (1/2, 1/2)).
    return select_n(ge(x, full_like(x, 0)), neg(t), t)


defjvp(abs_p, _abs_jvp)

square_p = unary_primitive("square", np.square, NUMBER)
square_p.def_impl(flushing_subnormals(np.square))         # a product: flushed as mul is
fusion_rules.elementwise(square_p, "square")
square = _bind_unary(square_p)
defjvp(square_p, lambda t, x: mul(t, mul(x, scalar_like(x, 2))))


def _integer_pow(x, y):
    return np.power(x, y) if y >= 0 else np.reciprocal(np.power(x, -y))


integer_pow_p = Primitive("integer_pow")
fusion_rules.fused(integer_pow_p, fusion_rules.integer_pow_rule)
integer_pow_p.def_impl(flushing_subnormals(_integer_pow))
integer_pow_p.def_abstract_eval(lambda x, y: _integer_pow_aval(x, y))
batching.vectorized_rule(integer_pow_p)


def _integer_pow_aval(x, y):
    check_dtype("integer_pow", x, NUMBER)
    if y < 0 and dtypes.is_int(x.dtype):
        raise TypeError("integer_pow of an integer array to a negative power is not an integer")
    return x


def _integer_pow_jvp(t, x, y):
    if y == 0:
        return mul(t, scalar_like(t, 0))
    # As JAX writes it: y * x ** (y - 1), the power left out when it is x itself.
    return mul(t, mul(scalar_like(x, y), x if y == 2 else integer_pow(x, y - 1)))


defjvp(integer_pow_p, _integer_pow_jvp)


def integer_pow(x, y):
    """x ** y for a static Python int y."""
    return integer_pow_p.bind(as_operand(x), y=int(y))


# ---------------------------------------------------------------- transcendental

exp_p = unary_primitive("exp", np.exp, INEXACT, underflows=True)
fusion_rules.elementwise(exp_p, "exp")
exp = _bind_unary(exp_p)
defjvp_with_output(exp_p, lambda ts, out, x: mul(ts[0], out))

exp2_p = unary_primitive("exp2", np.exp2, INEXACT, underflows=True)
fusion_rules.elementwise(exp2_p, "exp2")
exp2 = _bind_unary(exp2_p)
defjvp_with_output(exp2_p, lambda ts, out, x: mul(ts[0], mul(out, scalar_like(out, float(np.log(2))))))

log_p = unary_primitive("log", np.log, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(log_p, "log")
log = _bind_unary(log_p)
defjvp(log_p, lambda t, x: div(t, x))

log1p_p = unary_primitive("log1p", np.log1p, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(log1p_p, "log1p")
log1p = _bind_unary(log1p_p)
defjvp(log1p_p, lambda t, x: div(t, add(x, scalar_like(x, 1))))

def _expm1_impl(x):
    """numpy's expm1, and for complex z = a + bi: expm1(a) cos b - 2 sin^2(b / 2) (accurate near
    0) + i e^a sin b, with XLA's values where numpy's differ: +0 real part at +-0 + 0i, and an
    imaginary part b where b = 0 (so inf + 0i and nan + 0i keep a 0, not e^a * 0 = nan)."""
    if not np.iscomplexobj(x):
        return np.expm1(x)
    a, b = x.real, x.imag
    half_sin = np.sin(b / 2)
    re = np.expm1(a) * np.cos(b) - 2 * half_sin * half_sin + 0.0    # + 0.0 makes -0 a +0
    im = np.where(b == 0, b, np.exp(a) * np.sin(b))
    return (re + 1j * im).astype(x.dtype) if np.ndim(x) else x.dtype.type(complex(re, im))


expm1_p = unary_primitive("expm1", _expm1_impl, INEXACT)
fusion_rules.elementwise(expm1_p, "expm1")
expm1 = _bind_unary(expm1_p)
defjvp_with_output(expm1_p, lambda ts, out, x: mul(ts[0], add(out, scalar_like(out, 1))))

sqrt_p = unary_primitive("sqrt", np.sqrt, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(sqrt_p, "sqrt")
sqrt = _bind_unary(sqrt_p)
defjvp_with_output(sqrt_p, lambda ts, out, x: div(ts[0], mul(out, scalar_like(out, 2))))


def _rsqrt(x):
    # One rounding for 16-bit floats, as XLA's rsqrt (computed in float32): 1/sqrt in the
    # 16-bit format would round twice.
    wide = x.astype(np.float32) if x.dtype.itemsize == 2 else x
    return np.reciprocal(np.sqrt(wide)).astype(x.dtype)


rsqrt_p = unary_primitive("rsqrt", _rsqrt, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(rsqrt_p, "rsqrt")
rsqrt = _bind_unary(rsqrt_p)
defjvp_with_output(rsqrt_p, lambda ts, out, x: mul(ts[0], mul(div(out, x), scalar_like(out, -0.5))))

cbrt_p = unary_primitive("cbrt", np.cbrt, FLOAT, subnormals_as_zero=True)
fusion_rules.elementwise(cbrt_p, "cbrt")
cbrt = _bind_unary(cbrt_p)
defjvp_with_output(cbrt_p, lambda ts, out, x: div(ts[0], mul(square(out), scalar_like(out, 3))))

def _tanh(x):
    """numpy's tanh, +-1 from where JAX's float32 tanh (and the compiled one) gives +-1 (numpy
    gives 1 - 2**-24 up to |x| = 10, where tanh rounds to 1 from 9.01)."""
    out = np.tanh(x)
    if x.dtype == np.float32 and x.size:
        one = (x >= TANH_ONE_F32) | (x <= -TANH_ONE_F32)
        if one.any():
            out = np.where(one, np.copysign(np.float32(1), x), out)
    return out


TANH_ONE_F32 = np.float32(7.9988117)      # XLA's float32 tanh is +-1 from here; so is the compiled one
tanh_p = unary_primitive("tanh", _tanh, INEXACT)
fusion_rules.elementwise(tanh_p, "tanh")
tanh = _bind_unary(tanh_p)
defjvp_with_output(tanh_p, lambda ts, out, x: mul(ts[0], sub(scalar_like(out, 1), square(out))))


def _logistic(x):
    if dtypes.is_complex(x.dtype):
        return 1 / (1 + np.exp(-x))
    if x.dtype.itemsize == 2:
        # XLA expands 16-bit logistic to 1 / (1 + exp(-x)), each step rounded to the format.
        with np.errstate(over="ignore"):
            return (1 / (1 + np.exp(-x))).astype(x.dtype)
    # exp(-|x|) never overflows; pick the algebraically equal form for each sign.
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + z), z / (1 + z)).astype(x.dtype)


logistic_p = unary_primitive("logistic", _logistic, INEXACT, underflows=True)
fusion_rules.elementwise(logistic_p, "logistic")
logistic = _bind_unary(logistic_p)
defjvp_with_output(logistic_p, lambda ts, out, x: mul(ts[0], mul(out, sub(scalar_like(out, 1), out))))

sin_p = unary_primitive("sin", np.sin, INEXACT)
fusion_rules.elementwise(sin_p, "sin")
sin = _bind_unary(sin_p)
defjvp(sin_p, lambda t, x: mul(t, cos(x)))

cos_p = unary_primitive("cos", np.cos, INEXACT)
fusion_rules.elementwise(cos_p, "cos")
cos = _bind_unary(cos_p)
defjvp(cos_p, lambda t, x: mul(neg(t), sin(x)))

tan_p = unary_primitive("tan", np.tan, INEXACT)
fusion_rules.elementwise(tan_p, "tan")
tan = _bind_unary(tan_p)
defjvp_with_output(tan_p, lambda ts, out, x: mul(ts[0], add(square(out), scalar_like(out, 1))))


def _one_minus_square(x):
    # (1 - x)(1 + x) keeps its precision near |x| = 1, where 1 - x*x cancels.
    one = scalar_like(x, 1)
    return mul(sub(one, x), add(one, x))


asin_p = unary_primitive("asin", np.arcsin, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(asin_p, "asin")
asin = _bind_unary(asin_p)
defjvp(asin_p, lambda t, x: mul(t, rsqrt(_one_minus_square(x))))

acos_p = unary_primitive("acos", np.arccos, INEXACT)
fusion_rules.elementwise(acos_p, "acos")
acos = _bind_unary(acos_p)
defjvp(acos_p, lambda t, x: mul(neg(t), rsqrt(_one_minus_square(x))))

atan_p = unary_primitive("atan", np.arctan, INEXACT)
fusion_rules.elementwise(atan_p, "atan")
atan = _bind_unary(atan_p)
defjvp(atan_p, lambda t, x: div(t, add(square(x), scalar_like(x, 1))))

sinh_p = unary_primitive("sinh", np.sinh, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(sinh_p, "sinh")
sinh = _bind_unary(sinh_p)
defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))

cosh_p = unary_primitive("cosh", np.cosh, INEXACT)
fusion_rules.elementwise(cosh_p, "cosh")
cosh = _bind_unary(cosh_p)
defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))

asinh_p = unary_primitive("asinh", np.arcsinh, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(asinh_p, "asinh")
asinh = _bind_unary(asinh_p)
defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(square(x), scalar_like(x, 1)))))

acosh_p = unary_primitive("acosh", np.arccosh, INEXACT)
fusion_rules.elementwise(acosh_p, "acosh")
acosh = _bind_unary(acosh_p)
defjvp(acosh_p, lambda t, x: mul(t, mul(rsqrt(sub(x, scalar_like(x, 1))), rsqrt(add(x, scalar_like(x, 1))))))

atanh_p = unary_primitive("atanh", np.arctanh, INEXACT, subnormals_as_zero=True)
fusion_rules.elementwise(atanh_p, "atanh")
atanh = _bind_unary(atanh_p)
defjvp(atanh_p, lambda t, x: div(t, _one_minus_square(x)))

# ---------------------------------------------------------------- logic and comparison

not_p = unary_primitive("not", np.invert, INTEGRAL)
fusion_rules.elementwise(not_p, "not")
bitwise_not = _bind_unary(not_p)
defjvp_zero(not_p)

and_p = naryop_primitive("and", np.bitwise_and, INTEGRAL)
fusion_rules.elementwise(and_p, "and")
bitwise_and = _bind_nary(and_p)
defjvp_zero(and_p)

or_p = naryop_primitive("or", np.bitwise_or, INTEGRAL)
fusion_rules.elementwise(or_p, "or")
bitwise_or = _bind_nary(or_p)
defjvp_zero(or_p)

xor_p = naryop_primitive("xor", np.bitwise_xor, INTEGRAL)
fusion_rules.elementwise(xor_p, "xor")
bitwise_xor = _bind_nary(xor_p)
defjvp_zero(xor_p)


# Shifts follow XLA: the shift amount is read as unsigned, and an amount of at
# least the bit width shifts every bit out (arithmetic shifts keep the sign).

def _unsigned_view(x):
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _shift_impl(shift, keeps_sign):
    def impl(x, y):
        bits = 8 * x.dtype.itemsize
        too_far = _unsigned_view(y) >= bits
        # Shifting by bits - 1 leaves only copies of the sign bit.
        saturated = bits - 1 if keeps_sign else 0
        shifted = shift(x, np.where(too_far, saturated, y).astype(x.dtype))
        return shifted if keeps_sign else np.where(too_far, 0, shifted).astype(x.dtype)
    return impl


def _shift_right_arithmetic(x, y):
    signed = np.dtype(f"i{x.dtype.itemsize}")
    return np.right_shift(x.view(signed), y.view(signed)).view(x.dtype)


def _shift_right_logical(x, y):
    return np.right_shift(_unsigned_view(x), _unsigned_view(y)).view(x.dtype)


def _shift_primitive(name, shift, keeps_sign=False):
    primitive = naryop_primitive(name, _shift_impl(shift, keeps_sign), INTEGER)
    defjvp_zero(primitive)
    return primitive, _bind_nary(primitive)


shift_left_p, shift_left = _shift_primitive("shift_left", np.left_shift)
fusion_rules.elementwise(shift_left_p, "shift_left")
shift_right_logical_p, shift_right_logical = _shift_primitive("shift_right_logical",
                                                              _shift_right_logical)
fusion_rules.elementwise(shift_right_logical_p, "shift_right_logical")
shift_right_arithmetic_p, shift_right_arithmetic = _shift_primitive(
    "shift_right_arithmetic", _shift_right_arithmetic, keeps_sign=True)
fusion_rules.elementwise(shift_right_arithmetic_p, "shift_right_arithmetic")

population_count_p = unary_primitive(
    "population_count", lambda x: np.bitwise_count(_unsigned_view(x)).astype(x.dtype), INTEGER)
fusion_rules.elementwise(population_count_p, "population_count")
population_count = _bind_unary(population_count_p)
defjvp_zero(population_count_p)


def _count_leading_zeros(x):
    """Binary search on the top bits: halve the window while its upper half is empty."""
    bits = 8 * x.dtype.itemsize
    value, count = _unsigned_view(x).copy(), np.zeros(x.shape, x.dtype)
    width = bits // 2
    while width:
        empty = (value >> np.array(bits - width, value.dtype)) == 0
        count = np.where(empty, count + width, count).astype(x.dtype)
        value = np.where(empty, value << np.array(width, value.dtype), value)
        width //= 2
    return np.where(_unsigned_view(x) == 0, bits, count).astype(x.dtype)


clz_p = unary_primitive("clz", _count_leading_zeros, INTEGER)
fusion_rules.elementwise(clz_p, "clz")
clz = _bind_unary(clz_p)
defjvp_zero(clz_p)


def _comparison(name, numpy_fn, accepts=ORDERED):
    primitive = naryop_primitive(name, numpy_fn, accepts, out_dtype=dtypes.bool_)
    defjvp_zero(primitive)
    return primitive, _bind_nary(primitive)


eq_p, eq = _comparison("eq", np.equal, ANY)
fusion_rules.elementwise(eq_p, "eq")
ne_p, ne = _comparison("ne", np.not_equal, ANY)
fusion_rules.elementwise(ne_p, "ne")


def _physical_comparison(combine, reduction):
    """Typed keys are equal when all their words are (JAX allows == and != on keys)."""
    def rule(in_avals, x, y):
        from jaxlite.lax import reductions   # reductions and shapes build on this module
        from jaxlite.lax.shapes import broadcast_in_dim
        trailing = next(a for a in in_avals if is_extended(a)).dtype.physical_shape
        shape = in_avals[0].shape if in_avals[0].shape else in_avals[1].shape
        # A rank-0 key beside a key array: its words are broadcast here, not by the primitive.
        x, y = (broadcast_in_dim(v, shape + trailing, tuple(range(len(shape), len(shape) + len(trailing))))
                if a.shape != shape else v for v, a in zip((x, y), in_avals))
        words = combine(x, y)
        return getattr(reductions, reduction)(words, tuple(range(len(shape), words.ndim)))
    return rule


physical_rules[eq_p] = _physical_comparison(eq, "reduce_and")
physical_rules[ne_p] = _physical_comparison(ne, "reduce_or")
lt_p, lt = _comparison("lt", np.less)
fusion_rules.elementwise(lt_p, "lt")
le_p, le = _comparison("le", np.less_equal)
fusion_rules.elementwise(le_p, "le")
gt_p, gt = _comparison("gt", np.greater)
fusion_rules.elementwise(gt_p, "gt")
ge_p, ge = _comparison("ge", np.greater_equal)
fusion_rules.elementwise(ge_p, "ge")

# ---------------------------------------------------------------- select


def _select_n(which, *cases):
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0]) if len(cases) == 2 else cases[0]
    return np.choose(which, np.broadcast_arrays(*cases)).astype(cases[0].dtype)


def _select_n_aval(which, *cases):
    if not cases:
        raise TypeError("select_n needs at least one case")
    if which.dtype != np.bool_ and not dtypes.is_int(which.dtype):
        raise TypeError(f"select_n selector must be boolean or integer, got {which.dtype}")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n with a boolean selector takes at most two cases")
    case = cases[0]
    for other in cases[1:]:
        if other.shape != case.shape or other.dtype != case.dtype:
            raise TypeError(f"select_n cases must have the same shapes and dtypes, "
                            f"got {case.str_short()} and {other.str_short()}")
    if which.ndim and which.shape != case.shape:
        raise TypeError(f"select_n selector shape {which.shape} must be scalar or equal "
                        f"to the case shape {case.shape}")
    weak = all(c.weak_type for c in cases)
    return case.update(weak_type=weak)


select_n_p = Primitive("select_n")
fusion_rules.elementwise(select_n_p, "select_n")
select_n_p.def_impl(_select_n)
select_n_p.def_abstract_eval(_select_n_aval)
physical.structural(select_n_p)


def _select_n_batch(args, dims):
    """Every operand gets the batch dimension in front and the full shape: unlike
    arithmetic, select_n only lets the *selector* be a scalar beside array cases."""
    from jaxlite.lax.shapes import broadcast_in_dim
    size = batching.batch_size(args, dims)
    case_shape = builtins.max((batching.logical_shape(x, d) for x, d in zip(args, dims)), key=len)
    full = (size,) + case_shape
    moved = []
    for x, d in zip(args, dims):
        x = batching.bdim_at_front(x, d, size)
        moved.append(x if x.shape == full else broadcast_in_dim(x, full, tuple(range(x.ndim))))
    return select_n_p.bind(*moved), 0


batching.batch_rules[select_n_p] = _select_n_batch


def select_n(which, *cases):
    """cases[which] elementwise; a boolean `which` picks cases[1] where True."""
    return select_n_p.bind(as_operand(which), *as_operands(*cases))


def _select_n_jvp(primals, tangents):
    which, cases = primals[0], primals[1:]
    out = select_n(which, *cases)
    case_tangents = tangents[1:]
    if all(ad.is_zero(t) for t in case_tangents):
        return out, ad.Zero(ad.tangent_aval(out.aval))
    return out, select_n(which, *map(ad.instantiate, case_tangents))


def _select_n_transpose(ct, which, *cases):
    if ad.is_zero(ct):
        return [None] * (1 + len(cases))
    zeros = full_like(ct, 0)
    return [None] + [select_n(which, *[ct if j == i else zeros for j in range(len(cases))])
                     if ad.is_undefined(case) else None
                     for i, case in enumerate(cases)]


ad.jvp_rules[select_n_p] = _select_n_jvp
ad.transpose_rules[select_n_p] = _select_n_transpose


def clamp(lo, x, hi):
    """min(max(x, lo), hi) elementwise."""
    return min(max(x, lo), hi)


# ---------------------------------------------------------------- dtype conversion

def _convert_aval(x, new_dtype, weak_type=False):
    check_dtype("convert_element_type", ShapedArray((), new_dtype), ANY, "new_dtype")
    return ShapedArray(x.shape, new_dtype, weak_type and dtypes.can_be_weak(new_dtype))


def _convert(x, new_dtype, weak_type=False):
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype):
        x = x.real      # as JAX: a complex value converts to a real type by its real part
    if dtypes.is_float(x.dtype) and dtypes.is_int(new_dtype):
        # Out-of-range and NaN values are undefined in C; clamp them as XLA does (NaN to 0).
        # The top can round up in x's format (float32(2**31 - 1) is 2**31, which astype
        # wraps to INT_MIN), so values at or past it take the maximum directly.
        info = dtypes.iinfo(new_dtype)
        if x.dtype.itemsize < 4:
            x = x.astype(np.float32)      # exact; numpy's NaN tests do not see 16-bit NaNs
        x = np.nan_to_num(x, nan=0)
        clamped = np.clip(x, info.min, info.max).astype(new_dtype)
        return np.where(x >= info.max, np.array(info.max, new_dtype), clamped)
    return x.astype(new_dtype)


convert_element_type_p = Primitive("convert_element_type")
fusion_rules.fused(convert_element_type_p, fusion_rules.convert_rule, elementwise=True)
convert_element_type_p.def_impl(_convert)
convert_element_type_p.def_abstract_eval(_convert_aval)
batching.vectorized_rule(convert_element_type_p)


def convert_element_type(x, new_dtype, weak_type=False):
    try:
        new_dtype = dtypes.canonicalize_dtype(new_dtype)
    except TypeError:
        if isinstance(new_dtype, dtypes.ExtendedDType) and getattr(x, "dtype", None) == new_dtype:
            return x    # typed keys to their own dtype (jnp code promotes operands this way)
        raise
    x = as_operand(x, new_dtype if dtypes.is_python_scalar(x) else None)
    if x.dtype == new_dtype and getattr(x, "weak_type", False) == weak_type:
        return x
    if type(x) is Array:        # a constant: converted now (JAX folds it), never staged
        with set_current_trace(EVAL_TRACE):
            return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if ad.is_zero(t) or not (dtypes.is_inexact(x.dtype) and dtypes.is_inexact(new_dtype)):
        return out, ad.Zero(ad.tangent_aval(out.aval))
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=False)


ad.jvp_rules[convert_element_type_p] = _convert_jvp
ad.transpose_rules[convert_element_type_p] = lambda ct, x, new_dtype, weak_type=False: [
    convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=False)]


def bitcast_convert_type(x, new_dtype):
    return bitcast_convert_type_p.bind(as_operand(x), new_dtype=dtypes.as_dtype(new_dtype))


def _bitcast_aval(x, new_dtype):
    # As JAX: a bool's byte has only two valid patterns, so no other type's bits make one.
    if dtypes.bool_ in (x.dtype, np.dtype(new_dtype)) and x.dtype != new_dtype:
        raise TypeError(f"bitcast_convert_type does not convert to or from bool unless both dtypes "
                        f"are bool: got operand dtype {x.dtype.name} and new_dtype {np.dtype(new_dtype).name}; "
                        f"use convert_element_type (or x != 0) instead")
    if np.dtype(new_dtype).itemsize != x.dtype.itemsize:
        raise TypeError(f"bitcast_convert_type between dtypes of different widths "
                        f"({x.dtype.name} -> {np.dtype(new_dtype).name}) is not supported")
    return ShapedArray(x.shape, new_dtype)


bitcast_convert_type_p = Primitive("bitcast_convert_type")
fusion_rules.fused(bitcast_convert_type_p, fusion_rules.bitcast_rule)
bitcast_convert_type_p.def_impl(lambda x, new_dtype: x.view(new_dtype))
bitcast_convert_type_p.def_abstract_eval(_bitcast_aval)
batching.vectorized_rule(bitcast_convert_type_p)
defjvp_zero(bitcast_convert_type_p)


def full_like(x, fill_value, dtype=None, shape=None):
    """As JAX's: weakly typed when x is and no dtype is given (jnp.zeros_like(2.5) is a weak
    float32, zeros_like(True) a strong bool); x may be a Python scalar."""
    from jaxlite.lax.shapes import full
    weak = dtype is None and (getattr(x, "weak_type", False) or dtypes.is_weak_scalar(x))
    dtype = dtypes.dtype_of(x) if dtype is None else dtype
    out = full(np.shape(x) if shape is None else shape, fill_value, dtype)
    return convert_element_type(out, dtype, weak_type=True) if weak else out
