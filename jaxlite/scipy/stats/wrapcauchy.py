"""The wrapped Cauchy distribution on [0, 2 pi] with shape 0 < c < 1."""
import math as _math

import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import outside as _outside, promote as _promote


def logpdf(x, c):
    x, c = _promote("wrapcauchy.logpdf", x, c)
    # 1 + c^2 - 2c cos(x), written so that it does not cancel for c near 1 and x near 0
    half_sine = _jnp.sin(x / 2)
    denominator = (1 - c) ** 2 + 4 * c * half_sine * half_sine
    value = _jnp.log1p(-c * c) - _math.log(2 * _math.pi) - _jnp.log(denominator)
    value = _outside((x < 0) | (x > 2 * _math.pi), value, -_np.inf)
    return _outside((c <= 0) | (c >= 1), value, _np.nan)


def pdf(x, c):
    return _jnp.exp(logpdf(x, c))
