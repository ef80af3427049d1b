"""The Cauchy distribution."""
import math as _math

import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import promote as _promote, standardized as _standardized


def logpdf(x, loc=0, scale=1):
    z, log_scale = _standardized("cauchy.logpdf", x, loc, scale)
    return -_math.log(_math.pi) - log_scale - _jnp.log1p(z * z)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    z = _standardized("cauchy.cdf", x, loc, scale)[0]
    return 0.5 + _jnp.arctan(z) / _np.pi


def logcdf(x, loc=0, scale=1):
    return _jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    z = _standardized("cauchy.sf", x, loc, scale)[0]
    return 0.5 - _jnp.arctan(z) / _np.pi


def logsf(x, loc=0, scale=1):
    return _jnp.log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote("cauchy.ppf", q, loc, scale)
    return loc + scale * _jnp.tan(_np.pi * (q - 0.5))


def isf(q, loc=0, scale=1):
    q, loc, scale = _promote("cauchy.isf", q, loc, scale)
    return loc + scale * _jnp.tan(_np.pi * (0.5 - q))
