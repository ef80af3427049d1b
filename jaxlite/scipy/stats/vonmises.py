"""The von Mises distribution on the circle with concentration kappa."""
import math as _math

import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import outside as _outside, promote as _promote


def logpdf(x, kappa):
    x, kappa = _promote("vonmises.logpdf", x, kappa)
    value = kappa * (_jnp.cos(x) - 1) - _math.log(2 * _math.pi) - _jnp.log(_special.i0e(kappa))
    return _outside(kappa <= 0, value, _np.nan)


def pdf(x, kappa):
    return _jnp.exp(logpdf(x, kappa))
