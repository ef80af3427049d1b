"""Window functions: hanning, hamming and blackman (cosine sums over M points), bartlett
(a triangle) and kaiser (through the Bessel function i0, also public here)."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.numpy.util import promote_to_inexact


def _points(name, M):
    """The phase 2*pi*n/(M-1) for n in range(M), in the default float dtype."""
    try:
        M = int(M)
    except TypeError:
        raise TypeError(f"{name}: M must be a static integer, got {type(M).__name__}") from None
    dtype = dtypes.default_float_dtype()
    n = lax.iota(dtype, max(M, 0))
    return M, n, dtype


def _cosine_sum(name, M, coefficients):
    M, n, dtype = _points(name, M)
    if M <= 1:
        return lax.full((max(M, 0),), 1, dtype)
    phase = lax.mul(n, lax.full_like(n, 2 * np.pi / (M - 1)))
    window = lax.full_like(n, coefficients[0])
    for k, a in enumerate(coefficients[1:], start=1):
        term = lax.mul(lax.full_like(n, a), lax.cos(lax.mul(phase, lax.full_like(n, k))))
        window = lax.add(window, term)
    return window


def hanning(M):
    return _cosine_sum("hanning", M, (0.5, -0.5))


def hamming(M):
    return _cosine_sum("hamming", M, (0.54, -0.46))


def blackman(M):
    return _cosine_sum("blackman", M, (0.42, -0.5, 0.08))


def bartlett(M):
    M, n, dtype = _points("bartlett", M)
    if M <= 1:
        return lax.full((max(M, 0),), 1, dtype)
    half = (M - 1) / 2
    return lax.sub(lax.full_like(n, 1), lax.abs(lax.div(lax.sub(n, lax.full_like(n, half)),
                                                         lax.full_like(n, half))))


def i0(x):
    """The modified Bessel function of the first kind of order 0, from lax.bessel_i0e."""
    (x,) = promote_to_inexact("i0", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def kaiser(M, beta):
    M, n, dtype = _points("kaiser", M)
    if M <= 1:
        return lax.full((max(M, 0),), 1, dtype)
    beta = lax.convert_element_type(beta, dtype)
    ratio = lax.sub(lax.div(lax.mul(n, lax.full_like(n, 2.0)), lax.full_like(n, M - 1)),
                    lax.full_like(n, 1.0))
    argument = lax.mul(lax.broadcast(beta, n.shape),
                       lax.sqrt(lax.sub(lax.full_like(n, 1.0), lax.square(ratio))))
    return lax.div(i0(argument), lax.broadcast(i0(beta), n.shape))
