"""Transcendental functions emitted as LLVM IR, written so the loop vectorizer can widen them.

libm calls stay scalar inside a vectorized loop, so the elementwise code generator uses these
emitters instead. Every emitter takes an `llvmlite.ir.IRBuilder` and a value whose type is
float, double or a vector of either, and returns a value of the same type.

float32 functions are branch-free: range reduction, then a polynomial, then fix-ups for special
values done with `select`. Only IR the vectorizer widens is used (arithmetic carrying the
`contract` flag so FMAs form, fcmp/select, bitcasts, integer ops, and the fma/fabs/floor/rint/
copysign/sqrt intrinsics). Where float32 arithmetic is not accurate enough (sin/cos reduction of
huge arguments, erf/erfc) the computation widens to double, which still vectorizes.

float64: exp, exp2, expm1, tanh and logistic share the float32 algorithms with double-precision
polynomials; the other float64 functions call libm on scalars (vectors are split into lanes).
That is correct but slow; it is the documented tradeoff until double kernels matter.

float32 tan shares sin's reduction; float32 atan and atan2 reduce to atan on [0, 1] (the quotient
in float32, the polynomial in double).
The less common primitives (asin, ..., pow, nextafter, lgamma) call libm in both precisions.
erf_inv and digamma are not in libm and are written here: float32 erf_inv as a polynomial
in w = -log(1 - y^2) (vectorized), the float64 one and digamma in double with libm calls.

Polynomial coefficients are fitted at import by Chebyshev interpolation (near-minimax) so each
table states the function and interval it approximates instead of a column of magic numbers.
"""
import functools
import math
from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numpy.polynomial import Chebyshev, Polynomial

from jaxlite.core.powers import power_by_squaring
from jaxlite.lower import kernel_ir, llvm_helpers
from jaxlite.lower.llvm_helpers import I16, I32, call_intrinsic, declare

_FAST = ("contract",)


# A NamedTuple, not a frozen dataclass: defining one of those compiles its methods (~1.4 ms
# of every process's first jit).
class _Format(NamedTuple):
    """The bit layout of an IEEE binary format."""
    bits: int
    mantissa_bits: int
    bias: int
    numpy_type: type

    def round(self, value):
        return float(self.numpy_type(value))

    def bits_of(self, value):
        int_type = np.int32 if self.bits == 32 else np.int64
        return int(np.array(value, self.numpy_type).view(int_type))

    @property
    def min_normal(self):
        return 2.0 ** (1 - self.bias)


FORMAT32 = _Format(32, 23, 127, np.float32)
FORMAT64 = _Format(64, 52, 1023, np.float64)


# ---------------------------------------------------------------------------------------------
# Constants and polynomial tables

class _fit(Sequence):
    """Power-basis coefficients, lowest first, of the Chebyshev interpolant of func on [lo, hi].
    Fitted when first read: the tables' fits cost ~15 ms, which a process compiling no such
    function (or loading its programs from the persistent cache) need not pay."""

    def __init__(self, func, lo, hi, degree):
        self._arguments = (func, lo, hi, degree)

    @functools.cached_property
    def coefficients(self):
        func, lo, hi, degree = self._arguments
        with np.errstate(divide="ignore", invalid="ignore"):
            interpolant = Chebyshev.interpolate(func, degree, domain=[lo, hi])
        return tuple(interpolant.convert(kind=Polynomial).coef)

    def __getitem__(self, index):
        return self.coefficients[index]

    def __len__(self):
        return len(self.coefficients)


def _divided_by(func, t, value_at_zero):
    """func(t) / t with the removable singularity at 0 filled in."""
    safe_t = np.where(t == 0, 1.0, t)
    return np.where(t == 0, value_at_zero, func(safe_t) / safe_t)


def _split(exact, fmt):
    """(hi, lo): hi is `exact` rounded to fmt, lo the rest, for extra-precise Cody-Waite steps."""
    hi = fmt.round(float(exact))
    return hi, float(exact - Decimal(hi))


with localcontext() as _ctx:
    _ctx.prec = 50
    _LN2_EXACT = Decimal(2).ln()
    _LOG2E_EXACT = 1 / _LN2_EXACT

def _scaled_exp_taylor(scale, degree):
    """Coefficients of (exp(scale * r) - 1) / r, computed in decimal so each rounds once."""
    return tuple(float(scale ** (k + 1) / math.factorial(k + 1)) for k in range(degree + 1))


_LN2 = math.log(2)
# (e^r - 1) / r and (2^r - 1) / r on the reduced ranges |r| <= ln2/2 and |r| <= 1/2 (widened
# for the rounding of n). A double-precision fit is limited to ~1e-15 by the power-basis
# conversion, so float64 uses the Taylor series to a degree where its remainder is < 1e-18.
_EXPM1_OVER_X = {FORMAT32: _fit(lambda r: _divided_by(np.expm1, r, 1.0), -0.36, 0.36, 6),
                 FORMAT64: _scaled_exp_taylor(Decimal(1), 13)}
_EXP2M1_OVER_X = {FORMAT32: _fit(lambda r: _divided_by(lambda t: np.expm1(t * _LN2), r, _LN2),
                            -0.51, 0.51, 6),
                  FORMAT64: _scaled_exp_taylor(_LN2_EXACT, 13)}

# log(1 + f) = f + f^2 * L(f) on the mantissa interval [sqrt(1/2), sqrt(2)) minus one.
_LOG1P_F_TERM = _fit(lambda f: _divided_by(lambda t: (np.log1p(t) - t) / t, f, -0.5),
                     math.sqrt(0.5) - 1, math.sqrt(2) - 1, 9)


def _sin_cos_taylor(degree):
    """Taylor coefficients, in powers of r^2, of sin(r)/r and cos(r) up to r^degree."""
    return (tuple((-1) ** k / math.factorial(2 * k + 1) for k in range((degree + 1) // 2)),
            tuple((-1) ** k / math.factorial(2 * k) for k in range(degree // 2 + 1)))


# sin and cos of |r| <= pi/4 in double: Taylor series, far below float32 rounding at degree 14,
# below double rounding (remainder < 1e-24) at degree 22.
_SIN_OVER_R, _COS = _sin_cos_taylor(14)
_SIN_OVER_R_DOUBLE, _COS_DOUBLE = _sin_cos_taylor(22)

# atan(t) / t as a polynomial in s = t^2 on [0, 1] (|t| <= 1 after atan's reduction): the
# singularity at s = -1 bounds the convergence; degree 10 is within 5e-10 (0.01 ulp of float32).
_ATAN_OVER_T = _fit(lambda s: _divided_by(np.arctan, np.sqrt(s), 1.0), 0.0, 1.0, 10)

# erf(x) = x * P(x^2) for |x| < 0.9; erfc(x) = exp(-x^2) * t * H(t), t = 1/x, for 0.9 <= x <= 10.1
# (beyond 10.1 erfc underflows float32). H(t) = erfc(1/t) exp(1/t^2) / t is smooth near t = 0.
_ERF_SPLIT, _ERFC_LIMIT = 0.9, 10.1
_vector_erf, _vector_erfc = np.vectorize(math.erf), np.vectorize(math.erfc)
_ERF_OVER_X = _fit(lambda s: _divided_by(lambda t: _vector_erf(np.sqrt(t)) * np.sqrt(t), s,
                                         2 / math.sqrt(math.pi)),
                   0.0, _ERF_SPLIT ** 2, 9)
_ERFC_TAIL = _fit(lambda t: _vector_erfc(1 / t) * np.exp(1 / t ** 2) / t,
                  1 / _ERFC_LIMIT, 1 / _ERF_SPLIT, 15)


def _erf_inv_reference(y):
    """erf_inv in double for 0 <= y < 1, for fitting: Winitzki's guess, then Newton steps on
    erf, or on erfc beyond 1/2 where erf(x) - y would cancel."""
    w = -np.log1p(-y * y)
    t = 2 / (math.pi * 0.147) - w / 2
    x = np.sqrt(np.sqrt(t * t + w / 0.147) - t)
    for _ in range(6):
        residual = np.where(y > 0.5, (1 - y) - _vector_erfc(x), _vector_erf(x) - y)
        x = x - residual / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    return x


def _erf_inv_over_y(w):
    """erf_inv(y) / y as a function of w = -log(1 - y^2), smooth in w (and in sqrt(w))."""
    y = np.sqrt(-np.expm1(-w))
    return _divided_by(_erf_inv_reference, y, math.sqrt(math.pi) / 2)


# float32 erf_inv(y) = y * P(w), w = -log((1 - y)(1 + y)): P in w up to w = 5 (|y| < 0.9966),
# beyond in sqrt(w) up to 4, past the float32 closest to 1 (1 - 2^-24 gives w = 23 ln2,
# sqrt(w) = 3.993). Degree 9, evaluated in double: at most 1 ulp from the rounded erf_inv of
# every float32 (float32 Horner on the same tables was 3 ulp off).
_ERF_INV_SPLIT, _ERF_INV_TAIL_END = 5.0, 4.0
_ERF_INV_CENTRAL = _fit(_erf_inv_over_y, 0.0, _ERF_INV_SPLIT, 9)
_ERF_INV_TAIL = _fit(lambda s: _erf_inv_over_y(s * s), math.sqrt(_ERF_INV_SPLIT), _ERF_INV_TAIL_END, 9)


def _two_over_pi_chunks(count, chunk_bits):
    """2/pi as a sum of doubles holding chunk_bits consecutive bits each (Machin's formula for pi)."""
    bits = count * chunk_bits
    scale = 1 << (bits + 32)

    def scaled_atan_inverse(n):
        total, term, k, sign = 0, scale // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k, sign = k + 2, -sign
        return total

    scaled_pi = 16 * scaled_atan_inverse(5) - 4 * scaled_atan_inverse(239)
    two_over_pi = (2 * scale << bits) // scaled_pi
    mask = (1 << chunk_bits) - 1
    return tuple(math.ldexp((two_over_pi >> (bits - chunk_bits * (i + 1))) & mask,
                            -chunk_bits * (i + 1)) for i in range(count))


# 29-bit chunks times a float32 (24-bit significand) are exact in double. Seven chunks (203 bits)
# leave an error below 2^-75 in x * 2/pi for the largest float32, far below the closest
# approach of any float32 to a multiple of pi/2.
_TWO_OVER_PI = _two_over_pi_chunks(7, 29)


# ---------------------------------------------------------------------------------------------
# The IR builder wrapper

def _format_of(scalar_type):
    return FORMAT64 if isinstance(scalar_type, ir.DoubleType) else FORMAT32


class _Ops:
    """IR construction for one float type (scalar or vector): splatted constants, float ops with
    the `contract` flag, intrinsics, and the integer view of the same width."""

    def __init__(self, builder, ty):
        self.b = builder
        self.ty = ty
        self.lanes = ty.count if isinstance(ty, ir.VectorType) else None
        self.scalar = ty.element if self.lanes else ty
        self.fmt = _format_of(self.scalar)
        self.int_ty = self.shaped(ir.IntType(self.fmt.bits))

    def shaped(self, scalar_type):
        return _same_shape(self.ty, scalar_type)

    def with_scalar(self, scalar_type):
        return _Ops(self.b, self.shaped(scalar_type))

    # constants
    def c(self, value):
        return splat(self.ty, value)

    def i(self, value):
        return splat(self.int_ty, value)

    # float arithmetic
    def add(self, a, b):
        return self.b.fadd(a, b, flags=_FAST)

    def sub(self, a, b):
        return self.b.fsub(a, b, flags=_FAST)

    def mul(self, a, b):
        return self.b.fmul(a, b, flags=_FAST)

    def div(self, a, b):
        return self.b.fdiv(a, b, flags=_FAST)

    def neg(self, a):
        return self.b.fneg(a)

    def intrinsic(self, name, *args):
        suffix = self.scalar.intrinsic_name
        full_name = "%s.%s" % (name, "v%d%s" % (self.lanes, suffix) if self.lanes else suffix)
        return call_intrinsic(self.b, full_name, self.ty, args)

    def fma(self, a, b, c):
        return self.intrinsic("llvm.fma", a, b, c)

    def fabs(self, a):
        return self.intrinsic("llvm.fabs", a)

    def floor(self, a):
        return self.intrinsic("llvm.floor", a)

    def rint(self, a):
        return self.intrinsic("llvm.rint", a)

    def sqrt(self, a):
        return self.intrinsic("llvm.sqrt", a)

    def copysign(self, magnitude, sign):
        return self.intrinsic("llvm.copysign", magnitude, sign)

    # comparisons and selection; ordered comparisons are false for NaN
    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def le(self, a, b):
        return self.b.fcmp_ordered("<=", a, b)

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", a, b)

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", a, b)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def select(self, condition, a, b):
        return self.b.select(condition, a, b)

    def clamp(self, x, lo, hi):
        """Clamp into [lo, hi]; NaN becomes hi, so callers restore NaN afterwards."""
        below_hi = self.select(self.lt(x, self.c(hi)), x, self.c(hi))
        return self.select(self.gt(below_hi, self.c(lo)), below_hi, self.c(lo))

    # integer view
    def bits(self, x):
        return self.b.bitcast(x, self.int_ty)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ty)

    def to_int(self, x):
        return self.b.fptosi(x, self.int_ty)

    def to_float(self, i):
        return self.b.sitofp(i, self.ty)

    def convert(self, x, target):
        """x converted to the float type of `target` (an _Ops of the same shape)."""
        if target.fmt.bits > self.fmt.bits:
            return self.b.fpext(x, target.ty)
        if target.fmt.bits < self.fmt.bits:
            return self.b.fptrunc(x, target.ty)
        return x

    # building blocks
    def polynomial(self, t, coefficients):
        """Horner's rule with FMAs; coefficients lowest degree first."""
        acc = self.c(coefficients[-1])
        for coefficient in reversed(coefficients[:-1]):
            acc = self.fma(acc, t, self.c(coefficient))
        return acc

    def pow2(self, n):
        """2**n for integer n in the normal exponent range, built from its bits."""
        biased = self.b.add(n, self.i(self.fmt.bias))
        return self.from_bits(self.b.shl(biased, self.i(self.fmt.mantissa_bits)))

    def ldexp(self, v, n):
        """v * 2**n in two steps, so 2**n may exceed the exponent range and subnormal results
        are rounded only once."""
        half = self.b.ashr(n, self.i(1))
        rest = self.b.sub(n, half)
        return self.mul(self.mul(v, self.pow2(half)), self.pow2(rest))


def _same_shape(ty, scalar_type):
    """scalar_type, as a vector with as many lanes as ty when ty is a vector."""
    return ir.VectorType(scalar_type, ty.count) if isinstance(ty, ir.VectorType) else scalar_type


def splat(ty, value):
    """A constant of type ty (scalar or vector) with every lane equal to value."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def _keep_nan(e, x, result):
    return e.select(e.isnan(x), x, result)


def _identity_near_zero(e, x, result):
    """f(x) = x for |x| below 2^-(p+1): keeps the sign of zero and exact subnormal results."""
    tiny = e.lt(e.fabs(x), e.c(2.0 ** -(e.fmt.mantissa_bits + 2)))
    return e.select(tiny, x, result)


def _flip_sign_like(e, value, x):
    """value with its sign flipped where x is negative (including -0): f(-x) = -f(x)."""
    sign = e.b.and_(e.bits(x), e.i(-(1 << (e.fmt.bits - 1))))
    return e.from_bits(e.b.xor(e.bits(value), sign))


# ---------------------------------------------------------------------------------------------
# exp family

def _exp2_range(fmt):
    """Exponents beyond which 2**x is 0 or inf in this format."""
    return -(fmt.bias + fmt.mantissa_bits + 2), fmt.bias + 2


def _reduce_by_ln2(e, x):
    """(n, r) with x = n ln2 + r, |r| <= ln2/2; two-part ln2 keeps r accurate."""
    ln2_hi, ln2_lo = _split(_LN2_EXACT, e.fmt)
    n = e.rint(e.mul(x, e.c(1 / _LN2)))
    r = e.fma(e.neg(n), e.c(ln2_hi), x)
    return n, e.fma(e.neg(n), e.c(ln2_lo), r)


def _exp(e, x):
    lo, hi = _exp2_range(e.fmt)
    n, r = _reduce_by_ln2(e, e.clamp(x, lo * _LN2, hi * _LN2))
    exp_r = e.fma(r, e.polynomial(r, _EXPM1_OVER_X[e.fmt]), e.c(1.0))
    return _keep_nan(e, x, e.ldexp(exp_r, e.to_int(n)))


def _exp2(e, x):
    clamped = e.clamp(x, *_exp2_range(e.fmt))
    n = e.rint(clamped)
    r = e.sub(clamped, n)
    exp2_r = e.fma(r, e.polynomial(r, _EXP2M1_OVER_X[e.fmt]), e.c(1.0))
    return _keep_nan(e, x, e.ldexp(exp2_r, e.to_int(n)))


def _expm1(e, x):
    """2^n (e^r - 1) + (2^n - 1), with e^r - 1 from the polynomial directly (no cancellation)."""
    precision = e.fmt.mantissa_bits + 1
    # Below -(p+1) ln2 the result rounds to -1.
    lowest = -(precision + 1) * _LN2
    n, r = _reduce_by_ln2(e, e.clamp(x, lowest, _exp2_range(e.fmt)[1] * _LN2))
    expm1_r = e.mul(r, e.polynomial(r, _EXPM1_OVER_X[e.fmt]))
    k = e.to_int(n)
    # 2^n - 1 is exact while n <= p; for larger n the -1 vanishes and 2^n may overflow, so
    # scale carefully. pow2(k) is meaningless there but harmless: that lane takes `large`.
    two_n = e.pow2(k)
    moderate = e.fma(two_n, expm1_r, e.sub(two_n, e.c(1.0)))
    large = e.ldexp(e.add(expm1_r, e.c(1.0)), k)
    result = e.select(e.gt(n, e.c(precision)), large, moderate)
    return _keep_nan(e, x, _identity_near_zero(e, x, result))


# float32 tanh(z) / z as P(s) / Q(s), s = z^2, for |z| <= 4.55, fitted offline (the fit takes
# seconds): linear least squares on P - fQ weighted by 1/(fQ), reweighted towards the
# minimax (Lawson) over Chebyshev nodes in s. Relative error 2.4e-10 up to 1.5 (tests/
# test_llvm_math.py checks the table against np.tanh); beyond, the weight falls as
# 1/cosh(2z), the factor by which tanh(2z) = 2t / (1 + t^2), t = tanh z, damps an error
# of t. Near 1 the float32 roundings of P, Q, the product and the quotient cost up to
# 1 ulp each: a (6, 3) fit evaluated directly on |x| <= 9 was 5 ulp off on 29 float32
# inputs in [6.07, 7.36]. Beyond |x| = 1.5 this table is evaluated at x/2, and the
# doubling formula damps those roundings. Measured over every float32: at most 3 ulp
# (19431 positive inputs at 3). gelu on 4M float32, one thread, one run: 1.92 ms, against
# 1.72 ms for the (6, 3) form and 3.0 ms for the expm1 form (within 3 ulp at about twice
# the arithmetic; float64 keeps it).
_TANH_HALVING_F32 = 1.5
_TANH_SATURATION_F32 = 9.1      # tanh rounds to +-1 from 9.01; the form returns 1 from here
_TANH_OVER_X_NUMERATOR = (1.0, 0.1268347792019012, 0.0026478799778564127, 6.118754799379341e-06)
_TANH_OVER_X_DENOMINATOR = (1.0, 0.46016810919208023, 0.022703930805575766, 0.00018658028666892798)


def _tanh(e, x):
    return _tanh_f32(e, x) if e.fmt is FORMAT32 else _tanh_by_expm1(e, x)


def _tanh_f32(e, x):
    """n / d = z P(z^2) / Q(z^2) ~ tanh z, with z = x near 0 and z = x/2 beyond 1.5, where
    tanh x = 2 n d / (n^2 + d^2): about 21 vector operations and one division, where the
    expm1 form takes about 45 (gelu on 4M floats is bound by this arithmetic). P(0) rounds
    to Q(0) = 1, so tiny and subnormal x come back unchanged."""
    abs_x = e.fabs(x)
    halve = e.gt(abs_x, e.c(_TANH_HALVING_F32))
    # The halved branch takes |x| clamped where tanh saturates (NaN never halves, so it
    # flows through the direct branch); the sign comes back at the end.
    saturated = e.select(e.lt(abs_x, e.c(_TANH_SATURATION_F32)), abs_x, e.c(_TANH_SATURATION_F32))
    z = e.select(halve, e.mul(saturated, e.c(0.5)), x)
    s = e.mul(z, z)
    n = e.mul(z, e.polynomial(s, _TANH_OVER_X_NUMERATOR))
    d = e.polynomial(s, _TANH_OVER_X_DENOMINATOR)
    product = e.mul(n, d)
    numerator = e.select(halve, e.add(product, product), n)
    denominator = e.select(halve, e.fma(n, n, e.mul(d, d)), d)
    from jaxlite.lax.elementwise import TANH_ONE_F32       # +-1 from there, as eager and JAX
    quotient = e.select(e.le(e.c(TANH_ONE_F32), abs_x), e.c(1.0), e.div(numerator, denominator))
    return e.copysign(quotient, x)


def _tanh_by_expm1(e, x):
    """tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2): no cancellation near 0."""
    saturation = (e.fmt.mantissa_bits + 4) * _LN2 / 2    # tanh rounds to 1 beyond this
    abs_x = e.clamp(e.fabs(x), 0.0, saturation)
    expm1_2x = _expm1(e, e.add(abs_x, abs_x))
    tanh_abs = e.div(expm1_2x, e.add(expm1_2x, e.c(2.0)))
    result = e.copysign(tanh_abs, x)
    return _keep_nan(e, x, _identity_near_zero(e, x, result))


def _logistic(e, x):
    """1/(1+e^-x) for x >= 0 and e^x/(1+e^x) for x < 0: exp never overflows."""
    t = _exp(e, e.neg(e.fabs(x)))
    numerator = e.select(e.lt(x, e.c(0.0)), t, e.c(1.0))
    return e.div(numerator, e.add(e.c(1.0), t))


# ---------------------------------------------------------------------------------------------
# log family (float32)

def _log_reduce(e, x):
    """(k, f) with x = 2^k (1 + f) and 1 + f in [sqrt(1/2), sqrt(2)); x positive and finite."""
    fmt = e.fmt
    subnormal = e.lt(x, e.c(fmt.min_normal))
    normal_x = e.select(subnormal, e.mul(x, e.c(2.0 ** fmt.mantissa_bits)), x)
    k_adjust = e.select(subnormal, e.i(-fmt.mantissa_bits), e.i(0))
    sqrt_half = e.i(fmt.bits_of(math.sqrt(0.5)))
    offset_bits = e.b.sub(e.bits(normal_x), sqrt_half)
    k = e.b.add(e.b.ashr(offset_bits, e.i(fmt.mantissa_bits)), k_adjust)
    mantissa_mask = e.i((1 << fmt.mantissa_bits) - 1)
    m = e.from_bits(e.b.add(e.b.and_(offset_bits, mantissa_mask), sqrt_half))
    return e.to_float(k), e.sub(m, e.c(1.0))


def _log1p_reduced(e, f):
    return e.fma(e.mul(f, f), e.polynomial(f, _LOG1P_F_TERM), f)


def _add_k_ln2(e, k, small):
    """k ln2 + small with ln2 in two parts so the large term carries no rounding error."""
    ln2_hi, ln2_lo = _split(_LN2_EXACT, e.fmt)
    return e.fma(k, e.c(ln2_hi), e.fma(k, e.c(ln2_lo), small))


def _log_special_cases(e, x, result):
    """log-like functions of x: +inf at +inf, -inf at 0, NaN below 0 and at NaN."""
    result = e.select(e.eq(x, e.c(math.inf)), e.c(math.inf), result)
    result = e.select(e.eq(x, e.c(0.0)), e.c(-math.inf), result)
    negative_or_nan = e.b.fcmp_unordered("<", x, e.c(0.0))
    return e.select(negative_or_nan, e.c(math.nan), result)


def _log(e, x):
    k, f = _log_reduce(e, x)
    return _log_special_cases(e, x, _add_k_ln2(e, k, _log1p_reduced(e, f)))


def _log2(e, x):
    k, f = _log_reduce(e, x)
    log2e = e.fmt.round(float(_LOG2E_EXACT))
    return _log_special_cases(e, x, e.fma(_log1p_reduced(e, f), e.c(log2e), k))


def _log1p(e, x):
    """log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the quotient restores what the
    rounding of u lost."""
    one = e.c(1.0)
    u = e.add(one, x)
    correction = e.div(e.sub(x, e.sub(u, one)), u)
    k, f = _log_reduce(e, u)
    result = _add_k_ln2(e, k, e.add(_log1p_reduced(e, f), correction))
    return _identity_near_zero(e, x, _log_special_cases(e, u, result))


# ---------------------------------------------------------------------------------------------
# sin and cos (float32, reduced in double)

def _two_sum(e, a, b):
    """(s, err) with s + err == a + b exactly (Knuth)."""
    s = e.add(a, b)
    b_virtual = e.sub(s, a)
    a_virtual = e.sub(s, b_virtual)
    return s, e.add(e.sub(a, a_virtual), e.sub(b, b_virtual))


def _reduce_by_half_pi(d, abs_x):
    """(n, f) with abs_x * 2/pi = n + f (mod 4), n an integer, |f| <= 1/2 (Payne-Hanek style).

    Each product of abs_x (a float32 value in double) with a 29-bit chunk of 2/pi is exact, and
    so is its remainder mod 4; summing the remainders in double-double keeps the fraction exact
    to far below what any float32 input needs, however large abs_x is.
    """
    hi, lo = d.c(0.0), d.c(0.0)
    for chunk in _TWO_OVER_PI:
        product = d.mul(abs_x, d.c(chunk))
        whole_fours = d.mul(d.c(4.0), d.floor(d.mul(product, d.c(0.25))))
        hi, err = _two_sum(d, hi, d.sub(product, whole_fours))
        lo = d.add(lo, err)
    n = d.rint(hi)
    return n, d.add(d.sub(hi, n), lo)


def _reduced_sin_cos(d, abs_x):
    """(quadrant n as an integer, sin r, cos r) with abs_x = n pi/2 + r, |r| <= pi/4, in double."""
    n, f = _reduce_by_half_pi(d, abs_x)
    r = d.mul(f, d.c(math.pi / 2))
    r2 = d.mul(r, r)
    # n is NaN for inf/NaN input; keep fptosi defined (the result is NaN through r anyway).
    safe_n = d.select(d.isnan(n), d.c(0.0), n)
    return d.to_int(safe_n), d.mul(r, d.polynomial(r2, _SIN_OVER_R)), d.polynomial(r2, _COS)


def _quadrant_bit(d, quadrant, bit):
    return d.b.icmp_signed("!=", d.b.and_(quadrant, d.i(bit)), d.i(0))


def _sin_quadrant(d, abs_x, quadrant_offset):
    """sin(abs_x + quadrant_offset * pi/2) in double."""
    n, sin_r, cos_r = _reduced_sin_cos(d, abs_x)
    quadrant = d.b.add(n, d.i(quadrant_offset))
    value = d.select(_quadrant_bit(d, quadrant, 1), cos_r, sin_r)
    return d.select(_quadrant_bit(d, quadrant, 2), d.neg(value), value)


def _sin(e, x):
    d = e.with_scalar(llvm_helpers.F64)
    abs_x = e.convert(e.fabs(x), d)
    return _flip_sign_like(e, d.convert(_sin_quadrant(d, abs_x, 0), e), x)


def _cos(e, x):
    d = e.with_scalar(llvm_helpers.F64)
    abs_x = e.convert(e.fabs(x), d)
    return d.convert(_sin_quadrant(d, abs_x, 1), e)


def _tan(e, x):
    """sin r / cos r, or -cos r / sin r in odd quadrants (tan has period pi): near a pole the
    divisor is sin of a small, relatively exact r, so the result keeps its accuracy."""
    d = e.with_scalar(llvm_helpers.F64)
    n, sin_r, cos_r = _reduced_sin_cos(d, e.convert(e.fabs(x), d))
    odd = _quadrant_bit(d, n, 1)
    ratio = d.div(d.select(odd, d.neg(cos_r), sin_r), d.select(odd, sin_r, cos_r))
    return _flip_sign_like(e, d.convert(ratio, e), x)


# ---------------------------------------------------------------------------------------------
# atan and atan2 (float32: the reduced argument's quotient in float32, the rest in double)
#
# The quotient t is rounded once in float32 (half an ulp), which moves atan(t) by at most
# half an ulp (its derivative 1 / (1 + t^2) is below atan(t) / t); the polynomial and the
# octant's pi/2 - a, pi - a in double add nothing visible, so the result is within an ulp of
# the exact angle, as JAX's (XLA's) float32 atan2 is (both are off by one at atan2(1, 2.5)).
# A double division costs about three float32 ones and led the loop: llvm-mca puts the
# atan2 loop at 33 cycles per 8 lanes with it, 23 with the float32 division.

def _atan_unit(d, t):
    """atan(t) for 0 <= t <= 1."""
    return d.mul(t, d.polynomial(d.mul(t, t), _ATAN_OVER_T))


def _atan(e, x):
    """atan|x| = pi/2 - atan(1/|x|) beyond 1; odd."""
    d = e.with_scalar(llvm_helpers.F64)
    size = e.fabs(x)
    beyond_one = e.gt(size, e.c(1.0))
    reduced = _atan_unit(d, e.convert(e.select(beyond_one, e.div(e.c(1.0), size), size), d))
    result = d.select(beyond_one, d.sub(d.c(math.pi / 2), reduced), reduced)
    return _keep_nan(e, x, _flip_sign_like(e, d.convert(result, e), x))


def _atan2(e, y, x):
    """The angle of (x, y) from atan of min/max(|x|, |y|) in [0, 1], moved to its octant;
    IEEE's signed zeros and infinities as numpy gives them (atan2(+-0, -0) = +-pi)."""
    d = e.with_scalar(llvm_helpers.F64)
    ay, ax = e.fabs(y), e.fabs(x)
    steep = e.gt(ay, ax)
    low, high = e.select(steep, ax, ay), e.select(steep, ay, ax)
    ratio = e.div(low, high)
    ratio = e.select(e.eq(high, e.c(0.0)), e.c(0.0), ratio)                    # both zero
    ratio = e.select(e.eq(low, e.c(math.inf)), e.c(1.0), ratio)                # both infinite
    angle = _atan_unit(d, e.convert(ratio, d))
    angle = d.select(steep, d.sub(d.c(math.pi / 2), angle), angle)
    x_negative = e.b.icmp_signed("<", e.bits(x), e.i(0))                        # -0 included
    angle = d.select(x_negative, d.sub(d.c(math.pi), angle), angle)
    result = e.copysign(d.convert(angle, e), y)
    return e.select(e.isnan(y), y, e.select(e.isnan(x), x, result))        # (x + y would cost a shuffle of pairs)


# ---------------------------------------------------------------------------------------------
# erf and erfc (float32, computed in double)

def _erf_pieces(d, x):
    """(|x|, erf(x) for |x| < 0.9, erfc(|x|) for |x| >= 0.9) in double."""
    abs_x = d.fabs(x)
    near_zero = d.mul(x, d.polynomial(d.mul(x, x), _ERF_OVER_X))
    t = d.div(d.c(1.0), d.clamp(abs_x, _ERF_SPLIT, _ERFC_LIMIT))
    gaussian = _exp(d, d.neg(d.mul(abs_x, abs_x)))
    tail = d.mul(gaussian, d.mul(t, d.polynomial(t, _ERFC_TAIL)))
    return abs_x, near_zero, tail


def _erf(e, x):
    d = e.with_scalar(llvm_helpers.F64)
    xd = e.convert(x, d)
    abs_x, near_zero, tail = _erf_pieces(d, xd)
    far = d.copysign(d.sub(d.c(1.0), tail), xd)
    result = d.select(d.lt(abs_x, d.c(_ERF_SPLIT)), near_zero, far)
    return _keep_nan(e, x, d.convert(result, e))


def _erfc(e, x):
    d = e.with_scalar(llvm_helpers.F64)
    xd = e.convert(x, d)
    abs_x, near_zero, tail = _erf_pieces(d, xd)
    far = d.select(d.lt(xd, d.c(0.0)), d.sub(d.c(2.0), tail), tail)
    result = d.select(d.lt(abs_x, d.c(_ERF_SPLIT)), d.sub(d.c(1.0), near_zero), far)
    return _keep_nan(e, x, d.convert(result, e))


# ---------------------------------------------------------------------------------------------
# libm calls (scalarized for vectors)

def _libm(builder, name, *args):
    """Call libm's `name` (the `f`-suffixed variant for float) lane by lane."""
    e = _Ops(builder, args[0].type)
    symbol = name + ("f" if e.fmt is FORMAT32 else "")
    function = declare(builder.module, symbol, e.scalar, [e.scalar] * len(args))
    if not e.lanes:
        return builder.call(function, args)
    result = ir.Constant(e.ty, ir.Undefined)
    for lane in range(e.lanes):
        index = ir.Constant(I32, lane)
        lane_args = [builder.extract_element(arg, index) for arg in args]
        result = builder.insert_element(result, builder.call(function, lane_args), index)
    return result


def _libm_emitter(name):
    def emit(builder, *args):
        return _libm(builder, name, *args)
    emit.__name__ = "emit_" + name
    return emit


# ---------------------------------------------------------------------------------------------
# erf_inv and digamma (double precision inside, for both float types)

def _in_double(impl):
    """An emitter computing impl in double and rounding back to the input's type."""
    def emit(builder, x):
        e = _Ops(builder, x.type)
        d = e.with_scalar(llvm_helpers.F64)
        return d.convert(impl(d, e.convert(x, d)), e)
    return emit


def _erf_inv_f32(e, y):
    """float32 erf_inv from the tables: 1 - |y| is exact for |y| >= 1/2 and the product
    rounds once, so w keeps about an ulp where the result is sensitive to it (near 1)."""
    one = e.c(1.0)
    size = e.fabs(y)
    w = e.neg(_log(e, e.mul(e.sub(one, size), e.add(one, size))))
    d = e.with_scalar(llvm_helpers.F64)
    wd = e.convert(w, d)
    central = d.polynomial(wd, _ERF_INV_CENTRAL)
    tail = d.polynomial(d.sqrt(wd), _ERF_INV_TAIL)
    factor = d.select(d.lt(wd, d.c(_ERF_INV_SPLIT)), central, tail)
    x = d.convert(d.mul(factor, e.convert(y, d)), e)
    x = e.select(e.eq(size, one), e.copysign(e.c(math.inf), y), x)
    return e.select(e.b.fcmp_unordered(">", size, one), e.c(math.nan), x)


def _erf_inv_double(d, y):
    """Winitzki's closed-form estimate (relative error ~2e-3), then Newton steps on erf, or on
    erfc beyond 1/2 where erf(x) - y would cancel."""
    one = d.c(1.0)
    a = d.fabs(y)
    w = d.neg(_libm(d.b, "log", d.mul(d.sub(one, a), d.add(one, a))))
    shape = 0.147
    t = d.sub(d.c(2 / (math.pi * shape)), d.mul(w, d.c(0.5)))
    x = d.sqrt(d.sub(d.sqrt(d.fma(t, t, d.mul(w, d.c(1 / shape)))), t))
    use_erfc = d.gt(a, d.c(0.5))
    for _ in range(4):
        erf_residual = d.sub(_libm(d.b, "erf", x), a)
        erfc_residual = d.sub(d.sub(one, a), _libm(d.b, "erfc", x))
        residual = d.select(use_erfc, erfc_residual, erf_residual)
        slope = d.mul(d.c(2 / math.sqrt(math.pi)), _exp(d, d.neg(d.mul(x, x))))
        x = d.sub(x, d.div(residual, slope))
    result = d.select(d.eq(a, one), d.c(math.inf), x)
    result = d.select(d.b.fcmp_unordered(">", a, one), d.c(math.nan), result)
    return d.copysign(result, y)


_DIGAMMA_SHIFT = 10
# psi(w) ~ log w - 1/(2w) - sum B_2k / (2k w^2k); coefficients of w^-2 powers, sign included.
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma_double(d, x):
    """Shift the argument up by recurrence, use the asymptotic series, reflect below 1/2."""
    one = d.c(1.0)
    reflect = d.lt(x, d.c(0.5))
    z = d.select(reflect, d.sub(one, x), x)
    shift_sum = d.c(0.0)
    for k in range(_DIGAMMA_SHIFT):
        shift_sum = d.add(shift_sum, d.div(one, d.add(z, d.c(float(k)))))
    w = d.add(z, d.c(float(_DIGAMMA_SHIFT)))
    inverse_w2 = d.div(one, d.mul(w, w))
    series = d.mul(inverse_w2, d.polynomial(inverse_w2, _DIGAMMA_ASYMPTOTIC))
    psi = d.sub(d.sub(d.sub(_libm(d.b, "log", w), d.div(d.c(0.5), w)), series), shift_sum)
    # cot(pi x) has period 1; reducing to the nearest integer first (exact, into [-1/2, 1/2])
    # keeps pi * x from losing the fraction, also just below an integer (x - floor(x) rounds
    # to 1 for x = -1e-20).
    fraction = d.sub(x, d.rint(x))
    cot_term = d.div(d.c(math.pi), _libm(d.b, "tan", d.mul(d.c(math.pi), fraction)))
    result = d.select(reflect, d.sub(psi, cot_term), psi)
    pole = d.b.and_(d.le(x, d.c(0.0)), d.eq(fraction, d.c(0.0)))
    return d.select(pole, d.c(math.nan), result)


# ---------------------------------------------------------------------------------------------
# polygamma (double precision inside, for both float types)
#
# psi^(m)(x) = (-1)^(m+1) M(x) with M(x) = m! zeta(m + 1, x) = sum_k m! / (x + k)^(m+1) (x > 0).
# M is the first S terms of that sum plus, at w = x + S, the Euler-Maclaurin tail
#   m! zeta(m+1, w) ~ (m-1)!/w^m + m!/(2 w^(m+1)) + sum_j B_2j (m+2j-1)! / ((2j)! w^(m+2j)),
# S chosen per order so the first omitted term is below double rounding. Negative x reflect:
#   psi^(m)(x) = -M(1 - x) - pi^(m+1) cot^(m)(pi x),
# cot's m-th derivative being a polynomial D_m in cot (lax.special.cot_derivative) whose
# coefficients share one sign, so evaluating it does not cancel. The m-th terms cost about
# log2(m) multiplications each, and S grows like m + 8: orders above the limit stay in numpy.

POLYGAMMA_MAX_ORDER = 100
_POLYGAMMA_TERMS = 10


@functools.cache
def _even_bernoulli(count):
    """B_2, B_4, ..., B_2count, exact (the classic recurrence on binomial sums). Computed at
    the first polygamma (with fractions' import ~2 ms, paid by every first compile at import)."""
    from fractions import Fraction
    numbers = [Fraction(1)]
    for n in range(1, 2 * count + 1):
        numbers.append(-sum(math.comb(n + 1, k) * numbers[k] for k in range(n)) / (n + 1))
    return numbers[2::2]


def _polygamma_tail(m):
    """Coefficients of the tail in powers of 1/w^2 (after the (m-1)!/w^m factor is split off:
    tail = u^m * (T(u^2) + m/2 * u) * (m-1)!, u = 1/w), and the shift S."""
    from fractions import Fraction
    terms = [Fraction(math.factorial(m + 2 * j - 1), math.factorial(2 * j) * math.factorial(m - 1)) * b
             for j, b in enumerate(_even_bernoulli(_POLYGAMMA_TERMS + 1), start=1)]
    omitted = abs(terms.pop())
    shift = math.ceil((float(omitted) * 2.0 ** 54) ** (1 / (2 * _POLYGAMMA_TERMS + 2)))
    return (1.0,) + tuple(float(t) for t in terms), shift


def _power(d, u, exponent):
    """u ** exponent for a static exponent >= 1, by squaring."""
    return power_by_squaring(u, exponent, d.mul)


def _zeta_sum(d, z, m):
    """M(z) = m! zeta(m + 1, z) for z >= 0."""
    one = d.c(1.0)
    tail, shift = _polygamma_tail(m)
    total = d.c(0.0)
    for k in range(shift):
        total = d.add(total, _power(d, d.div(one, d.add(z, d.c(float(k)))), m + 1))
    u = d.div(one, d.add(z, d.c(float(shift))))
    series = d.fma(u, d.c(m / 2), d.polynomial(d.mul(u, u), tail))
    return d.mul(d.fma(total, d.c(float(m)), d.mul(_power(d, u, m), series)), d.c(float(math.factorial(m - 1))))


def _cot_pi(d, x):
    """cot(pi x) to a few ulps of itself (D_m's large coefficients amplify an absolute error):
    reduced exactly to r = x - rint(x), |r| <= 1/2, and beyond |r| = 1/4 taken as
    tan(pi (1/2 - |r|)), whose argument is exact, so cot vanishes exactly at half-integers.
    sin and cos of the angle (at most pi/4) are Taylor series: no libm call, so it vectorizes."""
    r = d.sub(x, d.rint(x))
    size = d.fabs(r)
    near_half = d.gt(size, d.c(0.25))
    angle = d.mul(d.c(math.pi), d.select(near_half, d.sub(d.c(0.5), size), size))
    square = d.mul(angle, angle)
    sine, cosine = d.mul(angle, d.polynomial(square, _SIN_OVER_R_DOUBLE)), d.polynomial(square, _COS_DOUBLE)
    return d.copysign(d.div(d.select(near_half, sine, cosine), d.select(near_half, cosine, sine)), r)


def _scaled_cot_derivative(d, x, m):
    """pi^(m+1) D_m(cot(pi x)): D_m has only even or only odd powers, so Horner runs on cot^2."""
    from jaxlite.lax.special import cot_derivative     # the coefficients' one home
    coefficients = [float(c) * math.pi ** (m + 1) for c in cot_derivative(m)]
    parity = (m + 1) % 2
    cot = _cot_pi(d, x)
    even_part = d.polynomial(d.mul(cot, cot), coefficients[parity::2])
    return d.mul(cot, even_part) if parity else even_part


def _polygamma_double(d, x, m):
    reflect = d.lt(x, d.c(0.0))
    magnitude = _zeta_sum(d, d.select(reflect, d.sub(d.c(1.0), x), x), m)
    positive = magnitude if m % 2 else d.neg(magnitude)
    reflected = d.neg(d.add(magnitude, _scaled_cot_derivative(d, x, m)))
    result = d.select(reflect, reflected, positive)
    pole = d.b.and_(d.le(x, d.c(0.0)), d.eq(x, d.floor(x)))
    return d.select(pole, d.c(math.inf if m % 2 else math.nan), result)


def emit_polygamma(builder, x, m):
    """psi^(m)(x) for a static order 1 <= m <= POLYGAMMA_MAX_ORDER, as lax.polygamma: poles
    give inf for odd m and NaN for even m, +inf gives a zero of the sign (-1)^(m+1)."""
    return _in_double(lambda d, xd: _polygamma_double(d, xd, m))(builder, x)


# ---------------------------------------------------------------------------------------------
# bfloat16 conversion

def emit_f32_to_bf16_bits(builder, x):
    """float32 -> bfloat16 bits (i16) rounding to nearest even; NaN stays a quiet NaN."""
    e = _Ops(builder, x.type)
    bits = e.bits(x)
    lowest_kept_bit = builder.and_(builder.lshr(bits, e.i(16)), e.i(1))
    rounded = builder.add(bits, builder.add(e.i(0x7FFF), lowest_kept_bit))
    quiet_nan = builder.or_(bits, e.i(0x00400000))
    kept = e.select(e.isnan(x), quiet_nan, rounded)
    return builder.trunc(builder.lshr(kept, e.i(16)), e.shaped(I16))


def emit_bf16_bits_to_f32(builder, bits16):
    """bfloat16 bits (i16) -> float32: the bits are the top half of the float32."""
    e = _Ops(builder, _same_shape(bits16.type, llvm_helpers.F32))
    widened = builder.zext(bits16, e.int_ty)
    return e.from_bits(builder.shl(widened, e.i(16)))


# ---------------------------------------------------------------------------------------------
# Public emitters and the registry

def _emitter(impl, double_libm_name=None):
    """An emitter from an _Ops-level impl; double inputs go to libm when a name is given."""
    def emit(builder, x):
        e = _Ops(builder, x.type)
        if double_libm_name and e.fmt is FORMAT64:
            return _libm(builder, double_libm_name, x)
        return impl(e, x)
    emit.__name__ = "emit_" + impl.__name__.lstrip("_")
    return emit


emit_exp = _emitter(_exp)
emit_exp2 = _emitter(_exp2)
emit_expm1 = _emitter(_expm1)
emit_tanh = _emitter(_tanh)
emit_logistic = _emitter(_logistic)
emit_log = _emitter(_log, "log")
emit_log2 = _emitter(_log2, "log2")
emit_log1p = _emitter(_log1p, "log1p")
emit_sin = _emitter(_sin, "sin")
emit_cos = _emitter(_cos, "cos")
emit_tan = _emitter(_tan, "tan")
emit_atan = _emitter(_atan, "atan")
emit_erf = _emitter(_erf, "erf")
emit_erfc = _emitter(_erfc, "erfc")


def emit_erf_inv(builder, x):
    e = _Ops(builder, x.type)
    return _erf_inv_f32(e, x) if e.fmt is FORMAT32 else _emit_erf_inv_double(builder, x)


_emit_erf_inv_double = _in_double(_erf_inv_double)

emit_digamma = _in_double(_digamma_double)



def emit_atan2(builder, y, x):
    e = _Ops(builder, y.type)
    return _atan2(e, y, x) if e.fmt is FORMAT32 else _libm(builder, "atan2", y, x)


_LIBM_UNARY = ("asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "cbrt", "lgamma")
_LIBM_BINARY = ("pow", "nextafter")

EMITTERS = {
    "exp": emit_exp, "exp2": emit_exp2, "expm1": emit_expm1,
    "log": emit_log, "log2": emit_log2, "log1p": emit_log1p,
    "tanh": emit_tanh, "logistic": emit_logistic,
    "sin": emit_sin, "cos": emit_cos, "tan": emit_tan, "atan": emit_atan, "atan2": emit_atan2,
    "erf": emit_erf, "erfc": emit_erfc, "erf_inv": emit_erf_inv, "digamma": emit_digamma,
    **{name: _libm_emitter(name) for name in _LIBM_UNARY + _LIBM_BINARY},
}
BINARY_PRIMITIVES = frozenset(_LIBM_BINARY + ("atan2",))

# The kernel ops codegen computes with these emitters (nextafter has an exact one of its
# own in codegen; log2 serves other emitters), and polygamma (emit_polygamma, its order m
# a static attribute).
kernel_ir.declare_ops(kernel_ir.MATH, [name for name in EMITTERS if name not in ("nextafter", "log2")] + ["polygamma"])
