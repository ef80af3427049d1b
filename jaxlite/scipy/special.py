"""jaxlite.scipy.special: SciPy's special functions on jaxlite arrays, as JAX offers them.

Everything is a composition of lax operations (series and continued fractions as native
loops, selects between regimes), so jit compiles each function into native kernels.
Arguments are promoted as JAX promotes them: integers to the default float type.
"""
import math as _math
import operator as _operator
from fractions import Fraction as _Fraction

import numpy as _np

from jaxlite import lax as _lax
from jaxlite import nn as _nn
from jaxlite import numpy as _jnp
from jaxlite.core import dtypes as _dtypes
from jaxlite.core import errors as _errors
from jaxlite.core.trace import Tracer as _Tracer
from jaxlite.lax.special_series import lbeta as _lbeta
from jaxlite.numpy.util import promote_to_inexact as _promote_to_inexact
from jaxlite.transforms.custom_derivatives import custom_jvp as _custom_jvp

_EULER_GAMMA = 0.57721566490153286061


def _inexact(name, *args):
    """Arguments promoted to one float dtype and broadcast to one shape."""
    return _promote_to_inexact(name, *args)


def _finfo(x):
    return _np.finfo(x.dtype)


def _counter(x, start=1):
    """A scalar loop counter in x's dtype (while_loop's condition must be a scalar)."""
    return _jnp.asarray(start, x.dtype)


def _as_float(name, x):
    return _inexact(name, x)[0]


# ---------------------------------------------------------------- reductions (from jaxlite.nn)

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) along axis, stable for large |a|."""
    return _nn.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, where=where)


def softmax(x, /, *, axis=None):
    """exp(x) / sum(exp(x)) over axis (all axes by default)."""
    return _nn.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """x - logsumexp(x) over axis (all axes by default)."""
    return _nn.log_softmax(x, axis=axis)


# ---------------------------------------------------------------- logistic

def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return _lax.logistic(_as_float("expit", x))


def logit(x):
    """log(x / (1 - x)), the inverse of expit."""
    x = _as_float("logit", x)
    return _lax.log(x / (1 - x))


# ---------------------------------------------------------------- gamma family

def gammaln(x):
    """log |Gamma(x)|."""
    return _lax.lgamma(_as_float("gammaln", x))


def _is_nonpositive_integer(x):
    return (x <= 0) & (x == _jnp.floor(x))


def gammasgn(x):
    """The sign of Gamma(x): NaN at its poles, 0, and -inf."""
    x = _as_float("gammasgn", x)
    odd_floor = _jnp.remainder(_jnp.floor(x), 2) == 1
    sign = _jnp.where((x < 0) & odd_floor, -1.0, 1.0).astype(x.dtype)
    undefined = ((x < 0) & (x == _jnp.floor(x))) | (x == -_np.inf) | _jnp.isnan(x)
    return _jnp.where(undefined, _np.nan, _jnp.where(x == 0, _jnp.copysign(1.0, x), sign)).astype(x.dtype)


def gamma(x):
    """Gamma(x) = sign * exp(log |Gamma(x)|), with Gamma(+-0) = +-inf."""
    x = _as_float("gamma", x)
    value = gammasgn(x) * _lax.exp(_lax.lgamma(x))
    return _jnp.where(x == 0, _jnp.copysign(_np.inf, x), value).astype(x.dtype)


def loggamma(x):
    """The principal branch of log Gamma(x) on the reals: log Gamma for x > 0, NaN below."""
    x = _as_float("loggamma", x)
    return _jnp.where(x > 0, _lax.lgamma(x), _np.nan).astype(x.dtype)


def digamma(x):
    """psi(x) = d/dx log Gamma(x)."""
    return _lax.digamma(_as_float("digamma", x))


def polygamma(n, x):
    """The n-th derivative of digamma; n a concrete integer (array) as JAX requires it integer."""
    n_values = _np.asarray(n)
    if not _np.issubdtype(n_values.dtype, _np.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {n_values.dtype}.")
    x = _as_float("polygamma", x)
    shape = _np.broadcast_shapes(n_values.shape, x.shape)
    out = _jnp.full(shape, _np.nan, x.dtype)
    for order in _np.unique(n_values):
        value = _lax.digamma(x) if order == 0 else _lax.polygamma(int(order), x) if order > 0 else x * _np.nan
        out = _jnp.where(n_values == order, value, out)
    return out


def multigammaln(a, d):
    """log of the multivariate gamma function of dimension d (a static integer)."""
    d = int(d)
    a = _as_float("multigammaln", a)
    total = d * (d - 1) / 4 * _math.log(_math.pi)
    for j in range(d):
        total = total + _lax.lgamma(a - j / 2)
    return _jnp.asarray(total, a.dtype) if d == 0 else total


def factorial(n, exact=False):
    """n! = Gamma(n + 1) for n >= 0, and 0 for negative n."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    n = _as_float("factorial", n)
    return _jnp.where(n < 0, 0.0, gamma(n + 1)).astype(n.dtype)


def comb(N, k, *, repetition=False):
    """The binomial coefficient N choose k (with repetition: N + k - 1 choose k), through
    log Gamma; 0 where k < 0 or k > N."""
    N, k = _inexact("comb", N, k)
    if repetition:
        N = N + k - 1
    value = _lax.exp(_lax.lgamma(N + 1) - _lax.lgamma(k + 1) - _lax.lgamma(N - k + 1))
    return _jnp.where((k < 0) | (k > N) | (N < 0), 0.0, value).astype(N.dtype)


def poch(z, m):
    """The rising factorial Gamma(z + m) / Gamma(z)."""
    z, m = _inexact("poch", z, m)
    value = gammasgn(z + m) * gammasgn(z) * _lax.exp(_lax.lgamma(z + m) - _lax.lgamma(z))
    return _jnp.where(m == 0, 1.0, value).astype(z.dtype)


def betaln(a, b):
    """log |B(a, b)|, accurate for large a and b (Stirling's series, no cancellation)."""
    a, b = _inexact("betaln", a, b)
    return _lbeta(a, b)


def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)."""
    a, b = _inexact("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * _lax.exp(_lbeta(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    return _lax.betainc(*_inexact("betainc", a, b, x))


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return _lax.igamma(*_inexact("gammainc", a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x)."""
    return _lax.igammac(*_inexact("gammaincc", a, x))


def zeta(x, q=None):
    """Hurwitz's zeta function sum_k (q + k)^-x."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function.")
    return _lax.zeta(*_inexact("zeta", x, q))


def bernoulli(n):
    """The Bernoulli numbers B_0 ... B_n (with B_1 = -1/2), for a static integer n."""
    n = int(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    numbers = [_Fraction(1)]
    for m in range(1, n + 1):
        numbers.append(-sum(_math.comb(m + 1, k) * numbers[k] for k in range(m)) / (m + 1))
    return _jnp.asarray(_np.array([float(b) for b in numbers]), _jnp.result_type(float))


# ---------------------------------------------------------------- error function family

def erf(x):
    return _lax.erf(_as_float("erf", x))


def erfc(x):
    return _lax.erfc(_as_float("erfc", x))


def erfinv(x):
    return _lax.erf_inv(_as_float("erfinv", x))


def _split(x):
    """(hi, lo) with hi + lo = x exactly, hi keeping the upper half of the significand bits
    (by masking the lower ones, which no floating-point contraction can disturb), so that a
    product of two his is exact."""
    info = _finfo(x)
    dropped = info.nmant + 1 - (info.nmant + 1) // 2
    bits = _np.dtype(f"uint{info.bits}")
    mask = _np.array(~((1 << dropped) - 1) & ((1 << info.bits) - 1)).astype(bits)
    hi = _lax.bitcast_convert_type(_lax.bitcast_convert_type(x, bits) & mask, x.dtype)
    return hi, x - hi


def _square_split(x):
    """(hi, lo) with hi + lo = x^2 to twice the working precision: hi_x^2 is exact (exp(x^2)
    would otherwise carry x^2's rounding, ~x^2 ulps)."""
    hi, lo = _split(x)
    return hi * hi, lo * (2 * hi + lo)


def _erfcx_asymptotic(x):
    """exp(x^2) erfc(x) ~ 1 / (x sqrt(pi)) * sum_k (-1)^k (2k - 1)!! / (2 x^2)^k, for large x."""
    inverse = 1 / (2 * x * x)
    term, total = 1.0, 1.0
    for k in range(1, 11):
        term = term * -(2 * k - 1) * inverse
        total = total + term
    return total / (x * _math.sqrt(_math.pi))


def _erfcx_from(x):
    return 8.0 if x.dtype == _np.float32 or _finfo(x).bits < 64 else 26.0


@_custom_jvp
def _erfcx(x):
    start = _erfcx_from(x)
    size = _jnp.abs(x)
    # exp(x^2) in two factors for every x it is needed at: all negative ones (erfcx(x) =
    # 2 exp(x^2) - erfcx(-x) grows to float32's largest values by x = -9.3) and small positive ones.
    hi, lo = _square_split(_jnp.where((size < start) | (x < 0), x, 0.0))
    growth = _lax.exp(hi) * _lax.exp(lo)
    asymptotic = _erfcx_asymptotic(_jnp.where(size < start, start, size))
    of_size = _jnp.where(size < start, growth * _lax.erfc(size), _jnp.where(size == _np.inf, 0.0, asymptotic))
    negative = _jnp.where(x == -_np.inf, _np.inf, 2 * growth - of_size)   # the split of inf^2 is inf, nan
    return _jnp.where(x < 0, negative, of_size).astype(x.dtype)


@_erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    out = _erfcx(x)
    return out, (2 * x * out - 2 / _math.sqrt(_math.pi)) * x_dot


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x), without overflow or underflow."""
    return _erfcx(_as_float("erfcx", x))


# ---------------------------------------------------------------- the Faddeeva function
#
# Weideman's rational series (SIAM J. Numer. Anal. 31, 1994): in the upper half plane
# w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)), Z = (L + iz) / (L - iz), with p a
# polynomial whose N coefficients one FFT gives; N = 16 reaches float32's rounding, N = 40
# float64's (measured against scipy). The lower half plane reflects: w(z) = 2 exp(-z^2) - w(-z).

_WOFZ_TERMS = {_np.dtype(_np.float32): 16, _np.dtype(_np.float64): 40}


def _weideman_coefficients(terms):
    """(coefficients, highest power first, and L) of Weideman's series with `terms` terms."""
    m = 2 * terms
    scale = _math.sqrt(terms / _math.sqrt(2))
    t = scale * _np.tan(_np.arange(-m + 1, m) * _np.pi / (2 * m))
    samples = _np.concatenate([[0.0], _np.exp(-t * t) * (scale * scale + t * t)])
    coefficients = _np.real(_np.fft.fft(_np.fft.fftshift(samples))) / (2 * m)
    return coefficients[terms:0:-1], scale


def _wofz_upper(z):
    """w(z) for Im z >= 0."""
    real_dtype = _np.dtype(_lax.real(z).dtype)
    coefficients, scale = _weideman_coefficients(_WOFZ_TERMS.get(real_dtype, 16))
    iz = _lax.complex(-_lax.imag(z), _lax.real(z))
    denominator = scale - iz
    ratio = (scale + iz) / denominator
    polynomial = _jnp.zeros_like(z)
    for c in coefficients.astype(real_dtype):
        polynomial = polynomial * ratio + c
    return 2 * polynomial / (denominator * denominator) + (1 / _math.sqrt(_math.pi)) / denominator


def _two_sum(a, b):
    """(s, e): s = fl(a + b) and its rounding error e, s + e = a + b exactly (Knuth)."""
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


def _twice_exp_minus_square(z):
    """2 exp(-z^2) = 2 exp(y^2 - x^2) (cos 2xy - i sin 2xy), the exponent and the angle to twice
    the working precision: where this term dominates w, |z| is large and one rounding of
    2xy would already cost 2xy ulps of phase."""
    x, y = _lax.real(z), _lax.imag(z)
    (x_hi, x_lo), (y_hi, y_lo) = _split(x), _split(y)
    exponent, error = _two_sum(y_hi * y_hi, -(x_hi * x_hi))
    exponent_lo = error + (y_lo * (2 * y_hi + y_lo) - x_lo * (2 * x_hi + x_lo))
    angle_hi = 2 * (x_hi * y_hi)
    angle_lo = 2 * (x_hi * y_lo + x_lo * y_hi + x_lo * y_lo)
    magnitude = 2 * _lax.exp(exponent) * _lax.exp(exponent_lo)
    cos_hi, sin_hi, cos_lo, sin_lo = _lax.cos(angle_hi), _lax.sin(angle_hi), _lax.cos(angle_lo), _lax.sin(angle_lo)
    cosine = cos_hi * cos_lo - sin_hi * sin_lo
    sine = sin_hi * cos_lo + cos_hi * sin_lo
    # (a zero sine stays an exact zero when the magnitude overflows: -100j gives inf, not nan)
    return _lax.complex(magnitude * cosine, _jnp.where(sine == 0, 0, -magnitude * sine))


@_custom_jvp
def _wofz(z):
    lower = _lax.imag(z) < 0
    upper = _wofz_upper(_jnp.where(lower, -z, z))
    reflected = _twice_exp_minus_square(_jnp.where(lower, z, 0)) - upper
    return _jnp.where(lower, reflected, upper)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    """w'(z) = 2i / sqrt(pi) - 2 z w(z) (w is entire)."""
    (z,), (z_dot,) = primals, tangents
    w = _wofz(z)
    return w, (2j / _math.sqrt(_math.pi) - 2 * z * w) * z_dot


def wofz(z):
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz), complex (real z promoted)."""
    (z,) = _inexact("wofz", z)
    return _wofz(z.astype(_dtypes.complex_dtype(z.dtype)))


def ndtr(x):
    """The standard normal CDF."""
    x = _as_float("ndtr", x)
    z = x * (1 / _math.sqrt(2))
    central = 0.5 + 0.5 * _lax.erf(z)
    tail = 0.5 * _lax.erfc(_jnp.abs(z))
    return _jnp.where(_jnp.abs(z) < 1 / _math.sqrt(2), central, _jnp.where(z > 0, 1 - tail, tail))


def _log_ndtr_limits(x):
    return (-20.0, 8.0) if _finfo(x).bits >= 64 else (-10.0, 5.0)


def _log_ndtr_asymptotic(x, series_order):
    """log Phi(x) for x far below 0: log(phi(x) / -x) + log(1 + sum_n (-1)^n (2n-1)!! / x^2n)."""
    inverse_square = 1 / (x * x)
    term, total = 1.0, 1.0
    for n in range(1, series_order + 1):
        term = term * -(2 * n - 1) * inverse_square
        total = total + term
    return -0.5 * x * x - _lax.log(-x) - 0.5 * _math.log(2 * _math.pi) + _lax.log(total)


def log_ndtr(x, series_order=3):
    """log of the standard normal CDF, accurate in both tails."""
    if not isinstance(series_order, int) or series_order < 0 or series_order > 30:
        raise ValueError("series_order must be a Python integer in [0, 30], got "
                         f"{series_order!r}")
    x = _as_float("log_ndtr", x)
    lower, upper = _log_ndtr_limits(x)
    upper_tail = -ndtr(-_jnp.where(x > upper, x, upper))
    middle_x = _jnp.clip(x, lower, upper)
    # above 0, log1p keeps the digits of the small 1 - Phi(x) that log(Phi(x)) rounds away
    middle = _jnp.where(x > 0, _lax.log1p(-ndtr(-middle_x)), _lax.log(ndtr(middle_x)))
    lower_tail = _log_ndtr_asymptotic(_jnp.where(x < lower, x, lower), series_order)
    return _jnp.where(x > upper, upper_tail, _jnp.where(x > lower, middle, lower_tail))


def _ndtri_lower(q):
    """The quantile for 0 < q <= 1/2: a starting point (erf_inv near the centre, the tail's
    asymptotic form far out), polished by Newton steps on log Phi, which stay accurate far out."""
    central = _math.sqrt(2) * _lax.erf_inv(2 * q - 1)
    t = _lax.sqrt(-2 * _lax.log(q))
    tail = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
             / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
    x = _jnp.where(q > 0.05, central, tail)
    log_q = _lax.log(q)
    for _ in range(3):
        log_phi = log_ndtr(x)
        log_density = -0.5 * x * x - 0.5 * _math.log(2 * _math.pi)
        x = x - (log_phi - log_q) * _lax.exp(log_phi - log_density)
    return x


def ndtri(p):
    """The inverse of ndtr: the standard normal quantile."""
    p = _as_float("ndtri", p)
    lower = p <= 0.5
    q = _jnp.where(lower, p, 1 - p)
    inside = (q > 0) & (p < 1)
    x = _ndtri_lower(_jnp.where(inside, q, 0.25))
    x = _jnp.where(lower, x, -x)
    x = _jnp.where(p == 0, -_np.inf, _jnp.where(p == 1, _np.inf, x))
    return _jnp.where((p < 0) | (p > 1) | _jnp.isnan(p), _np.nan, x).astype(p.dtype)


# ---------------------------------------------------------------- logarithms and entropies

def _x_times_log(log_fn, neutral, derivative):
    """x * log_fn(y) with 0 where x == 0 (unless y is NaN), and its derivative rule."""
    @_custom_jvp
    def fun(x, y):
        zero = (x == 0) & ~_jnp.isnan(y)
        return _jnp.where(zero, 0.0, x * log_fn(_jnp.where(zero, neutral, y))).astype(x.dtype)

    @fun.defjvp
    def fun_jvp(primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return fun(x, y), x_dot * log_fn(y) + y_dot * x * derivative(y)
    return fun


_xlogy = _x_times_log(_lax.log, 1.0, lambda y: 1 / y)
_xlog1py = _x_times_log(_lax.log1p, 0.0, lambda y: 1 / (1 + y))


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is NaN)."""
    return _xlogy(*_inexact("xlogy", x, y))


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    return _xlog1py(*_inexact("xlog1py", x, y))


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below."""
    x = _as_float("entr", x)
    safe = _jnp.where(x > 0, x, 1.0)
    value = _jnp.where(x > 0, -x * _lax.log(safe), _jnp.where(x == 0, 0.0, -_np.inf))
    return _jnp.where(_jnp.isnan(x), _np.nan, value).astype(x.dtype)


def _entropy_terms(p, q):
    """p log(p / q) where p, q > 0; masks for p == 0 (with q >= 0) and for the rest."""
    both_positive = (p > 0) & (q > 0)
    safe_p, safe_q = _jnp.where(both_positive, p, 1.0), _jnp.where(both_positive, q, 1.0)
    ratio = safe_p / safe_q
    # near p == q, p - q is exact while p / q rounds: log1p of the exact difference keeps digits
    log_ratio = _jnp.where(_jnp.abs(ratio - 1) < 0.5, _lax.log1p((safe_p - safe_q) / safe_q), _lax.log(ratio))
    return both_positive, (p == 0) & (q >= 0), safe_p * log_ratio


def rel_entr(p, q):
    """p log(p / q); 0 where p == 0 and q >= 0; inf elsewhere outside p, q > 0."""
    p, q = _inexact("rel_entr", p, q)
    both_positive, zero_p, term = _entropy_terms(p, q)
    return _jnp.where(both_positive, term, _jnp.where(zero_p, 0.0, _np.inf)).astype(p.dtype)


def kl_div(p, q):
    """p log(p / q) - p + q; q where p == 0 and q >= 0; inf elsewhere outside p, q > 0."""
    p, q = _inexact("kl_div", p, q)
    both_positive, zero_p, term = _entropy_terms(p, q)
    return _jnp.where(both_positive, term - p + q, _jnp.where(zero_p, q, _np.inf)).astype(p.dtype)


def boxcox(x, lmbda):
    """(x^lambda - 1) / lambda, log(x) at lambda == 0."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    return _boxcox_of_log(_lax.log(x), lmbda)


def boxcox1p(x, lmbda):
    """boxcox(1 + x, lambda), accurate for small x."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    return _boxcox_of_log(_lax.log1p(x), lmbda)


def _boxcox_of_log(log_x, lmbda):
    safe = _jnp.where(lmbda == 0, 1.0, lmbda)
    return _jnp.where(lmbda == 0, log_x, _lax.expm1(safe * log_x) / safe).astype(log_x.dtype)


# ---------------------------------------------------------------- Bessel functions

def i0e(x):
    """exp(-|x|) I0(x)."""
    return _lax.bessel_i0e(_as_float("i0e", x))


def i1e(x):
    """exp(-|x|) I1(x)."""
    return _lax.bessel_i1e(_as_float("i1e", x))


def i0(x):
    """The modified Bessel function I0(x)."""
    x = _as_float("i0", x)
    return _lax.exp(_jnp.abs(x)) * _lax.bessel_i0e(x)


def i1(x):
    """The modified Bessel function I1(x)."""
    x = _as_float("i1", x)
    return _lax.exp(_jnp.abs(x)) * _lax.bessel_i1e(x)


def bessel_jn(z, *, v, n_iter=50):
    """J_0(z) ... J_v(z) stacked on a new leading axis, by Miller's backward recurrence from
    order v + n_iter, normalized with J_0 + 2 (J_2 + J_4 + ...) = 1."""
    z = _as_float("bessel_jn", z)
    v, start = int(v), int(v) + int(n_iter)
    safe = _jnp.where(z == 0, 1.0, z)
    above, current = _jnp.zeros_like(z), _jnp.full_like(z, 1e-30)
    orders, norm = {}, _jnp.zeros_like(z)
    for k in range(start, 0, -1):
        above, current = current, 2 * k / safe * current - above
        current, above, norm = _rescaled(current, above, norm, orders)
        if k - 1 <= v:
            orders[k - 1] = current
        if (k - 1) % 2 == 0:
            norm = norm + (current if k - 1 == 0 else 2 * current)
    values = _jnp.stack([orders[n] / norm for n in range(v + 1)])
    at_zero = _jnp.stack([_jnp.full_like(z, 1.0 if n == 0 else 0.0) for n in range(v + 1)])
    return _jnp.where(z == 0, at_zero, values)


def _rescaled(current, above, norm, orders):
    """Keep the unnormalized recurrence in range: where it grew past 1e10, scale it and what
    has been accumulated down by the same factor (the normalization cancels it)."""
    factor = _jnp.where(_jnp.abs(current) > 1e10, 1e-10, 1.0)
    for n in orders:
        orders[n] = orders[n] * factor
    return current * factor, above * factor, norm * factor


# ---------------------------------------------------------------- exponential integrals

def _expn_fraction(n, x, eps, tiny):
    """E_n(x) for x > 1 by its continued fraction (modified Lentz)."""
    def cond(state):
        i, b, c, d, h, delta = state
        return (i < 2000) & _jnp.any(_jnp.abs(delta - 1) > eps)

    def body(state):
        i, b, c, d, h, delta = state
        an = -i * (n - 1 + i)
        b = b + 2
        d = 1 / _nonzero(an * d + b, tiny)
        c = _nonzero(b + an / c, tiny)
        return i + 1, b, c, d, h * d * c, d * c

    b = x + n
    d = 1 / _nonzero(b, tiny)
    init = (_counter(x), b, _jnp.full_like(x, 1 / tiny), d, d, _jnp.full_like(x, 2.0))
    return _lax.while_loop(cond, body, init)[4] * _lax.exp(-x)


def _nonzero(d, tiny):
    return _jnp.where(_jnp.abs(d) < tiny, tiny, d)


def _expn_series(n, x, eps):
    """E_n(x) for 0 < x <= 1 by its power series; the term i = n - 1 carries log(x)."""
    psi = _lax.digamma(n)
    first = _jnp.where(n == 1, -_lax.log(x) - _EULER_GAMMA, 1 / _jnp.where(n == 1, 2.0, n - 1))

    def cond(state):
        i, factor, total, term = state
        return (i < 2000) & _jnp.any(_jnp.abs(term) > eps * _jnp.abs(total))

    def body(state):
        i, factor, total, _ = state
        factor = factor * -x / i
        log_term = factor * (psi - _lax.log(x))
        term = _jnp.where(i == n - 1, log_term, -factor / _jnp.where(i == n - 1, 1.0, i - n + 1))
        return i + 1, factor, total + term, term

    init = (_counter(x), _jnp.ones_like(x), first, _jnp.ones_like(x))
    return _lax.while_loop(cond, body, init)[2]


@_custom_jvp
def _expn(n, x):
    eps, tiny = float(_finfo(x).eps), float(_finfo(x).tiny)
    integral_order = (n >= 0) & (n == _jnp.floor(n))
    regular = integral_order & (n >= 1) & (x > 0)
    use_fraction = x > 1
    fraction = _expn_fraction(_jnp.where(regular & use_fraction, n, 1.0),
                              _jnp.where(regular & use_fraction, x, 2.0), eps, tiny)
    series = _expn_series(_jnp.where(regular & ~use_fraction, n, 1.0),
                          _jnp.where(regular & ~use_fraction, x, 0.5), eps)
    value = _jnp.where(use_fraction, fraction, series)
    safe_x = _jnp.where(x > 0, x, 1.0)
    value = _jnp.where(n == 0, _lax.exp(-safe_x) / safe_x, value)
    value = _jnp.where(x == 0, _jnp.where(n > 1, 1 / _jnp.maximum(n - 1, 1.0), _np.inf), value)
    value = _jnp.where(x == _np.inf, 0.0, value)
    return _jnp.where(~integral_order | (x < 0) | _jnp.isnan(x), _np.nan, value).astype(x.dtype)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    n, x = primals
    return _expn(n, x), -_expn(n - 1, x) * tangents[1]


def expn(n, x):
    """The generalized exponential integral E_n(x) = int_1^inf exp(-x t) / t^n dt."""
    return _expn(*_inexact("expn", n, x))


def exp1(x):
    """E_1(x) = int_x^inf exp(-t) / t dt."""
    x = _as_float("exp1", x)
    return _expn(_jnp.ones_like(x), x)


def _expi_positive(x, eps):
    """Ei(x) for x > 0: its power series up to 40 (positive terms), the asymptotic series above."""
    near = x <= 40
    small = _jnp.where(near, x, 1.0)

    def cond(state):
        k, term, total = state
        return (k < 2000) & _jnp.any(term > eps * total)

    def body(state):
        k, term, total = state
        term = term * small * k / ((k + 1) * (k + 1))
        return k + 1, term, total + term

    series = _lax.while_loop(cond, body, (_counter(x), small, small))[2]
    series = series + _EULER_GAMMA + _lax.log(small)
    large = _jnp.where(near, 41.0, x)
    term, total = 1.0, 1.0
    for k in range(1, 40):
        term = term * k / large
        total = total + term
    return _jnp.where(near, series, _lax.exp(large) / large * total)


@_custom_jvp
def _expi(x):
    eps = float(_finfo(x).eps)
    positive = _expi_positive(_jnp.where(x > 0, x, 1.0), eps)
    negative = -_expn(_jnp.ones_like(x), _jnp.where(x < 0, -x, 1.0))
    value = _jnp.where(x > 0, positive, _jnp.where(x < 0, negative, -_np.inf))
    return _jnp.where(x == _np.inf, _np.inf, value).astype(x.dtype)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _expi(x), _lax.exp(x) / x * x_dot


def expi(x):
    """The exponential integral Ei(x) = -PV int_-x^inf exp(-t) / t dt."""
    return _expi(_as_float("expi", x))


# ---------------------------------------------------------------- dilogarithm

def _dilog_series(z):
    """Li2(z) = sum_k z^k / k^2 for |z| <= 1/2."""
    power, total = z, z
    for k in range(2, 60 if z.dtype == _np.float64 else 30):
        power = power * z
        total = total + power / (k * k)
    return total


def _spence_near_one(y):
    """spence(y) = Li2(1 - y) for 0 <= y <= 3/2: directly near 1, reflected near 0 through
    Li2(z) + Li2(1 - z) = pi^2 / 6 - log(z) log(1 - z)."""
    direct = _dilog_series(1 - y)
    safe_y = _jnp.where(y < 0.5, y, 0.25)
    reflected = (_math.pi ** 2 / 6 - _lax.log(1 - safe_y) * _lax.log(_jnp.where(y > 0, safe_y, 1.0))
                 - _dilog_series(safe_y))
    return _jnp.where(y < 0.5, reflected, direct)


def spence(x):
    """Spence's function int_1^x log(t) / (1 - t) dt = Li2(1 - x), for x >= 0."""
    x = _as_float("spence", x)
    inverted = x > 1.5
    y = _jnp.where(inverted, 1 / _jnp.where(inverted, x, 1.0), _jnp.where(x >= 0, x, 1.0))
    near = _spence_near_one(y)
    log_x = _lax.log(_jnp.where(inverted, x, 1.0))
    value = _jnp.where(inverted, -near - 0.5 * log_x * log_x, near)
    return _jnp.where((x < 0) | _jnp.isnan(x) | (x == _np.inf), _np.nan, value).astype(x.dtype)


# ---------------------------------------------------------------- hypergeometric

def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric 1F1(a; b; x) by its series, through Kummer's
    transformation 1F1(a; b; x) = exp(x) 1F1(b - a; b; -x) for x < 0 (positive terms)."""
    a, b, x = _inexact("hyp1f1", a, b, x)
    negative = x < 0
    a_eff = _jnp.where(negative, b - a, a)
    size = _jnp.abs(x)
    eps = float(_finfo(x).eps)

    def cond(state):
        k, term, total = state
        return (k < 2000) & _jnp.any(_jnp.abs(term) > eps * _jnp.abs(total))

    def body(state):
        k, term, total = state
        term = term * (a_eff + k) / (b + k) * size / (k + 1)
        return k + 1, term, total + term

    ones = _jnp.ones_like(x)
    total = _lax.while_loop(cond, body, (_counter(x, 0), ones, ones))[2]
    return _jnp.where(negative, _lax.exp(x) * total, total)


# Past this argument 2F1's series converges slowly: 1 - z takes over (Gauss's connection formula).
_HYP2F1_SERIES_UP_TO = 0.75


def _hyp2f1_series(a, b, c, z):
    """The Gauss series sum (a)_k (b)_k / ((c)_k k!) z^k over a fixed number of terms, enough
    for z <= 3/4 (a fixed count keeps it a scan, so reverse mode differentiates it)."""
    terms = 240 if _finfo(z).bits >= 64 else 120

    def body(k, state):
        term, total = state
        k = k.astype(z.dtype)
        term = term * (a + k) * (b + k) / ((c + k) * (k + 1)) * z
        return term, total + term

    ones = _jnp.ones_like(z)
    return _lax.fori_loop(0, terms, body, (ones, ones))[1]


def _is_nonpositive_integer(v):
    return (v <= 0) & (v == _jnp.round(v))


# The integer formula's finite sum has |c - a - b| terms, run to this static count (so reverse mode
# differentiates it); past it the Gauss series (of Euler's transform below 0) converges fast.
_HYP2F1_INTEGER_TERMS = 32


def _hyp2f1_unit_interval(a, b, c, z):
    """2F1 for 0 <= z < 1: the series up to 3/4, beyond it a connection formula in 1 - z. Gauss's
    (two series weighted by gamma functions of c - a - b) cancels as c - a - b = m + delta nears
    an integer m, losing ~1e-15 / |delta| relative; within sqrt(eps) of m, the integer's own
    formula (_hyp2f1_integer_d), off by ~|delta|, is closer. So an integer gets ~1e-14 and the
    worst case, |delta| near sqrt(eps), ~1e-7 in float64."""
    d = c - a - b
    terminating = _is_nonpositive_integer(a) | _is_nonpositive_integer(b)
    # Euler's transformation 2F1 = (1 - z)^d 2F1(c - a, c - b; c; z) turns these into polynomials.
    euler_terminating = ~terminating & (_is_nonpositive_integer(c - a) | _is_nonpositive_integer(c - b))
    far = (z > _HYP2F1_SERIES_UP_TO) & ~terminating & ~euler_terminating
    near_integer = _jnp.abs(d - _jnp.round(d)) <= _math.sqrt(float(_finfo(z).eps))
    connected = far & ~near_integer
    at_integer = far & near_integer & (_jnp.abs(d) <= _HYP2F1_INTEGER_TERMS)
    by_euler = euler_terminating | (far & near_integer & (d < -_HYP2F1_INTEGER_TERMS))
    direct = _hyp2f1_series(a, b, c, _jnp.where(far & ~(near_integer & (d > 0)), 0.0, z))
    euler_z = _jnp.where(by_euler, z, 0.0)
    euler = (1 - euler_z) ** d * _hyp2f1_series(c - a, c - b, c, euler_z)
    w = _jnp.where(connected, 1 - z, 0.5)
    safe_d = _jnp.where(connected, d, 0.5)
    first = gamma(c) * gamma(safe_d) / (gamma(c - a) * gamma(c - b)) * _hyp2f1_series(a, b, 1 - safe_d, w)
    second = (gamma(c) * gamma(-safe_d) / (gamma(a) * gamma(b)) * w ** safe_d
              * _hyp2f1_series(c - a, c - b, 1 + safe_d, w))
    integer = _hyp2f1_integer_d(*(_jnp.where(at_integer, v, default) for v, default in
                                  ((a, 0.5), (b, 0.5), (c, 1.0), (z, 0.9))))
    return _jnp.where(connected, first + second,
                      _jnp.where(at_integer, integer, _jnp.where(by_euler, euler, direct)))


def _hyp2f1_integer_d(a, b, c, z):
    """2F1 for 3/4 < z < 1 where m = c - a - b is an integer (Abramowitz and Stegun 15.3.10-12).
    A negative m goes through Euler's transformation 2F1(a, b; c; z) = (1 - z)^m 2F1(c - a, c - b;
    c; z), whose c - a - b is -m."""
    m = _jnp.round(c - a - b)
    w = 1 - z
    negative = m < 0
    scale = _jnp.where(negative, w ** m, 1.0)
    a, b = _jnp.where(negative, c - a, a), _jnp.where(negative, c - b, b)
    m = _jnp.abs(m)
    return scale * (_hyp2f1_integer_d_finite(a, b, m, w) + _hyp2f1_integer_d_logarithmic(a, b, m, w))


def _hyp2f1_integer_d_finite(a, b, m, w):
    """Gamma(m) Gamma(a + b + m) / (Gamma(a + m) Gamma(b + m)) sum_{n < m} (a)_n (b)_n w^n /
    (n! (1 - m)_n); nothing for m = 0."""
    def body(n, state):
        term, total = state
        n = n.astype(w.dtype)
        total = total + _jnp.where(n < m, term, 0.0)
        denominator = (n + 1) * (1 - m + n)     # 0 once n = m - 1, where the sum has ended
        return term * (a + n) * (b + n) / _jnp.where(denominator == 0, 1.0, denominator) * w, total

    total = _lax.fori_loop(0, _HYP2F1_INTEGER_TERMS, body, (_jnp.ones_like(w), _jnp.zeros_like(w)))[1]
    safe_m = _jnp.where(m > 0, m, 1.0)
    weight = gamma(safe_m) * gamma(a + b + safe_m) / (gamma(a + safe_m) * gamma(b + safe_m))
    return _jnp.where(m > 0, weight * total, 0.0)


def _hyp2f1_integer_d_logarithmic(a, b, m, w):
    """-(-w)^m Gamma(a + b + m) / (Gamma(a) Gamma(b)) sum_n (a + m)_n (b + m)_n w^n / (n! (n + m)!)
    [log w - psi(n + 1) - psi(n + m + 1) + psi(a + m + n) + psi(b + m + n)]; w <= 1/4, so a fixed
    number of terms converges."""
    terms = 60 if _finfo(w).bits >= 64 else 30
    term = 1 / gamma(m + 1)
    psi = (_lax.log(w) + _EULER_GAMMA - _lax.digamma(m + 1)
           + _lax.digamma(a + m) + _lax.digamma(b + m))
    total = term * psi
    for n in range(1, terms):
        a_k, b_k = a + m + (n - 1), b + m + (n - 1)     # grouped so that a tiny a survives m = 0
        term = term * a_k * b_k / (n * (m + n)) * w
        psi = psi - 1 / n - 1 / (m + n) + 1 / a_k + 1 / b_k
        total = total + term * psi
    sign = _jnp.where(_jnp.remainder(m, 2) == 0, -1.0, 1.0)
    return sign * w ** m * gamma(a + b + m) / (gamma(a) * gamma(b)) * total


def hyp2f1(a, b, c, x):
    """Gauss's hypergeometric function 2F1(a, b; c; x) for real arguments and x <= 1 (inf for
    x > 1, as JAX returns there). Negative x goes through Pfaff's transformation
    2F1(a, b; c; x) = (1 - x)^-a 2F1(a, c - b; c; x / (x - 1)) into [0, 1)."""
    a, b, c, x = _inexact("hyp2f1", a, b, c, x)
    negative = x < 0
    below_one = x < 1
    z = _jnp.where(negative, x / (x - 1), _jnp.where(below_one, x, 0.0))
    b_eff = _jnp.where(negative, c - b, b)
    scale = _jnp.where(negative, (1 - x) ** -a, 1.0)
    value = scale * _hyp2f1_unit_interval(a, b_eff, c, z)
    d = c - a - b
    safe_d = _jnp.where(d > 0, d, 1.0)
    at_one = _jnp.where(d > 0, gamma(c) * gamma(safe_d) / (gamma(c - a) * gamma(c - b)), _np.inf)
    value = _jnp.where(below_one, value, _jnp.where(x == 1, at_one, _np.inf))
    pole = _is_nonpositive_integer(c) & ~(_is_nonpositive_integer(a) & (a > c)) & \
        ~(_is_nonpositive_integer(b) & (b > c))
    return _jnp.where(pole & (x != 0), _np.inf, value).astype(x.dtype)


# ---------------------------------------------------------------- sine, cosine and Fresnel integrals
# Beyond small arguments, both come from continued fractions of complex argument (of the
# exponential integral and of erfc), evaluated with (real, imaginary) pairs.

def _complex_multiply(a, b):
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def _complex_reciprocal(a):
    scale = a[0] * a[0] + a[1] * a[1]
    return a[0] / scale, -a[1] / scale


def _complex_fraction(b, coefficient, b_step, terms):
    """1 / (b + a_1 / (b + s + a_2 / (b + 2s + ...))), b complex, a_n = coefficient(n) and s
    real, evaluated from its tail backwards over a fixed number of terms: backwards, each
    step damps the rounding of the ones before it (forward Lentz accumulates it)."""
    h = (b[0] + b_step * terms, b[1])
    for n in range(terms, 0, -1):
        inverse = _complex_reciprocal(h)
        a = coefficient(n)
        h = (b[0] + b_step * (n - 1) + a * inverse[0], b[1] + a * inverse[1])
    return _complex_reciprocal(h)


def _fraction_terms(x):
    """Terms of sici's and fresnel's continued fractions for full precision where they are
    used (from |x| = 3 and 1.5): measured against scipy in float64."""
    return 50 if _finfo(x).bits >= 64 else 25


_SICI_SERIES_UP_TO = 3.0


def _sici_series(t):
    """Si and Ci - gamma - log t by their power series, for 0 <= t <= 3 (25 terms suffice)."""
    t2 = t * t
    si, ci, term = t, 0.0 * t, t
    for k in range(1, 26):
        # term = (-1)^k t^(2k+1) / (2k+1)!; Si adds term / (2k+1), Ci adds term (2k+1) / (2k t)
        term = -term * t2 / ((2 * k) * (2 * k + 1))
        si = si + term / (2 * k + 1)
        ci = ci + term * (2 * k + 1) / (2 * k * t)
    return si, ci


def sici(x):
    """(Si(x), Ci(x)): the sine integral int_0^x sin(t)/t dt and the cosine integral
    gamma + log|x| + int_0^|x| (cos(t) - 1)/t dt."""
    x = _as_float("sici", x)
    t = _jnp.abs(x)
    near = t <= _SICI_SERIES_UP_TO
    small = _jnp.where(near, t, 1.0)
    si_small, ci_small = _sici_series(small)
    ci_small = ci_small + _EULER_GAMMA + _lax.log(small)
    large = _jnp.where(near | (t == _np.inf), 5.0, t)
    h = _complex_fraction((_jnp.ones_like(large), large), lambda n: -(n * n), 2.0, _fraction_terms(x))
    h = _complex_multiply((_jnp.cos(large), -_jnp.sin(large)), h)
    si_large, ci_large = _math.pi / 2 + h[1], -h[0]
    si = _jnp.where(near, si_small, _jnp.where(t == _np.inf, _math.pi / 2, si_large))
    ci = _jnp.where(near, ci_small, _jnp.where(t == _np.inf, 0.0, ci_large))
    ci = _jnp.where(t == 0, -_np.inf, ci)
    return _jnp.copysign(si, x).astype(x.dtype), _jnp.where(_jnp.isnan(x), _np.nan, ci).astype(x.dtype)


_FRESNEL_SERIES_UP_TO = 1.5


def _fresnel_series(t):
    """(S, C) = the imaginary and real parts of int_0^t exp(i pi u^2 / 2) du, by its series
    sum_k (i pi / 2)^k t^(2k+1) / (k! (2k+1)), for 0 <= t <= 1.5 (30 terms)."""
    scaled = _math.pi / 2 * t * t
    power = t
    c, s = t, 0.0 * t
    for k in range(1, 31):
        power = power * scaled / k
        term = power / (2 * k + 1)
        if k % 4 == 0:
            c = c + term
        elif k % 4 == 1:
            s = s + term
        elif k % 4 == 2:
            c = c - term
        else:
            s = s - term
    return s, c


def fresnel(x):
    """(S(x), C(x)): the Fresnel integrals int_0^x sin(pi t^2 / 2) dt and int_0^x cos(pi t^2 / 2) dt."""
    x = _as_float("fresnel", x)
    t = _jnp.abs(x)
    near = t <= _FRESNEL_SERIES_UP_TO
    s_small, c_small = _fresnel_series(_jnp.where(near, t, 0.0))
    large = _jnp.where(near | (t == _np.inf), 2.0, t)
    pi_t2 = _math.pi * large * large
    h = _complex_fraction((_jnp.ones_like(large), -pi_t2), lambda n: -(2 * n - 1) * (2 * n), 4.0,
                          _fraction_terms(x))
    h = _complex_multiply((large, -large), h)
    # exp(i pi t^2 / 2) with t^2 split exactly (hi + lo) and hi reduced modulo its period 4
    hi, lo = _square_split(large)
    quarter_turns = _jnp.remainder(hi, 4.0) + lo
    phase = (_jnp.cos(0.5 * _math.pi * quarter_turns), _jnp.sin(0.5 * _math.pi * quarter_turns))
    rest = _complex_multiply(phase, h)
    c_large, s_large = _complex_multiply((0.5 * _jnp.ones_like(large), 0.5 * _jnp.ones_like(large)),
                                         (1 - rest[0], -rest[1]))
    s = _jnp.where(near, s_small, _jnp.where(t == _np.inf, 0.5, s_large))
    c = _jnp.where(near, c_small, _jnp.where(t == _np.inf, 0.5, c_large))
    return _jnp.copysign(s, x).astype(x.dtype), _jnp.copysign(c, x).astype(x.dtype)


# ---------------------------------------------------------------- Dawson's integral and Owen's T

def _dawson_fraction(x, terms):
    """x / (1 + 2x^2 / (3 - 4x^2 / (5 + 6x^2 / (7 - ...)))), evaluated backwards."""
    x2 = x * x
    h = _jnp.full_like(x, 2 * terms + 1.0)
    for k in range(terms, 0, -1):
        h = (2 * k - 1) + (2 * k if k % 2 else -2 * k) * x2 / h
    return x / h


def _dawson_asymptotic(x, terms):
    """D(x) ~ 1/(2x) sum_k (2k - 1)!! / (2x^2)^k for large |x|."""
    inverse = 1 / (2 * x * x)
    term, total = 1.0, 1.0
    for k in range(1, terms):
        term = term * (2 * k - 1) * inverse
        total = total + term
    return total / (2 * x)


def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt: a continued fraction up to |x| = 5
    (7 in float64), its asymptotic series beyond."""
    x = _as_float("dawsn", x)
    wide = _finfo(x).bits >= 64
    limit, fraction_terms, series_terms = (7.0, 120, 30) if wide else (5.0, 60, 20)
    near = _jnp.abs(x) <= limit
    inside = _dawson_fraction(_jnp.where(near, x, 0.0), fraction_terms)
    outside = _dawson_asymptotic(_jnp.where(near, 2 * limit, x), series_terms)
    return _jnp.where(near, inside, _jnp.where(_jnp.isinf(x), 0.0, outside)).astype(x.dtype)


def _gauss_legendre(points):
    nodes, weights = _np.polynomial.legendre.leggauss(points)
    return (nodes + 1) / 2, weights / 2           # on [0, 1]


_OWENS_NODES = 48


def _owens_t_small_a(h, a):
    """T(h, a) for h >= 0, 0 <= a <= 1: Gauss-Legendre over [0, min(a, 12 / h)], beyond which
    the integrand exp(-h^2 (1 + x^2) / 2) / (1 + x^2) is below exp(-72) of its peak."""
    nodes, weights = _gauss_legendre(_OWENS_NODES)
    upper = _jnp.minimum(a, 12 / _jnp.maximum(h, 1e-30))
    total = 0.0
    for node, weight in zip(nodes, weights):
        x = upper * node
        total = total + weight * _lax.exp(-0.5 * h * h * (1 + x * x)) / (1 + x * x)
    return total * upper / (2 * _math.pi)


def owens_t(h, a):
    """Owen's T function (1 / 2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx. Above
    a = 1 through T(h, a) = (Phi(h) Q(ah) + Phi(ah) Q(h)) / 2 - T(ah, 1 / a), Q = 1 - Phi."""
    h, a = _inexact("owens_t", h, a)
    size_h, size_a = _jnp.abs(h), _jnp.abs(a)
    small = size_a <= 1
    direct = _owens_t_small_a(size_h, _jnp.where(small, size_a, 0.0))
    big_a = _jnp.where(small, 2.0, size_a)
    ah = size_h * big_a
    swapped = _owens_t_small_a(ah, 1 / big_a)
    mixed = 0.5 * (ndtr(size_h) * ndtr(-ah) + ndtr(ah) * ndtr(-size_h))
    value = _jnp.where(small, direct, mixed - swapped)
    value = _jnp.where(size_a == _np.inf, 0.5 * ndtr(-size_h), value)
    return (_jnp.sign(a) * value).astype(h.dtype)


# ---------------------------------------------------------------- spherical harmonics

def _normalized_legendre(n_max, cos_theta, sin_theta):
    """{(m, n): the orthonormalized associated Legendre function P_n^m(cos theta) with the
    Condon-Shortley phase} for 0 <= m <= n <= n_max, by the recurrences that stay stable:
    along the diagonal from P_0^0 = 1 / sqrt(4 pi), then up in n at fixed m."""
    table = {(0, 0): _jnp.full_like(cos_theta, 1 / _math.sqrt(4 * _math.pi))}
    for m in range(1, n_max + 1):
        table[m, m] = -_math.sqrt((2 * m + 1) / (2 * m)) * sin_theta * table[m - 1, m - 1]
    for m in range(n_max):
        table[m, m + 1] = _math.sqrt(2 * m + 3) * cos_theta * table[m, m]
        for n in range(m + 2, n_max + 1):
            a = _math.sqrt((4 * n * n - 1) / (n * n - m * m))
            a_before = _math.sqrt((4 * (n - 1) ** 2 - 1) / ((n - 1) ** 2 - m * m))
            table[m, n] = a * (cos_theta * table[m, n - 1] - table[m, n - 2] / a_before)
    return table


def _static_degree_bound(n, n_max):
    if n_max is not None:
        return _operator.index(n_max)
    value = n.to_concrete_value() if isinstance(n, _Tracer) else _np.asarray(n)
    if value is None:
        raise _errors.ConcretizationTypeError(
            "Abstract tracer value encountered where a concrete value is expected: the `n_max` argument "
            "of `jnp.scipy.special.sph_harm` must be statically specified to use `sph_harm` within JAX "
            f"transformations (the degrees n are a traced array {n.aval.str_short()}). Fix: pass n_max=.")
    return int(_np.max(value, initial=0))


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonic Y_n^m(theta, phi) of degree n and order m at polar angle theta
    and azimuth phi (scipy's sph_harm_y convention), zero where |m| > n; degrees up to n_max
    (static; by default the largest n, which must then be concrete)."""
    if diff_n is not None:
        raise NotImplementedError("The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    n_max = _static_degree_bound(n, n_max)
    n, m = _jnp.asarray(n).astype(_np.int32), _jnp.asarray(m).astype(_np.int32)
    theta, phi = _inexact("sph_harm_y", theta, phi)
    n, m, theta, phi = _jnp.broadcast_arrays(n, m, theta, phi)
    order = _jnp.abs(m)
    table = _normalized_legendre(n_max, _jnp.cos(theta), _jnp.abs(_jnp.sin(theta)))
    legendre = _jnp.zeros_like(theta)
    for (mm, nn), values in table.items():
        legendre = _jnp.where((order == mm) & (n == nn), values, legendre)
    angle = order.astype(phi.dtype) * phi
    harmonic = _lax.complex(legendre * _jnp.cos(angle), legendre * _jnp.sin(angle))
    # Y_n^-m = (-1)^m conj(Y_n^m)
    sign = _jnp.where(order % 2 == 1, -1, 1).astype(theta.dtype)
    return _jnp.where(m < 0, sign * _jnp.conj(harmonic), harmonic)
