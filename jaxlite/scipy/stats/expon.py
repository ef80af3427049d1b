"""The exponential distribution."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import outside as _outside, promote as _promote, standardized as _standardized


def logpdf(x, loc=0, scale=1):
    z, log_scale = _standardized("expon.logpdf", x, loc, scale)
    return _outside(z < 0, -z - log_scale, -_np.inf)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    z = _standardized("expon.cdf", x, loc, scale)[0]
    return _outside(z < 0, -_jnp.expm1(-z), 0.0)


def logcdf(x, loc=0, scale=1):
    z = _standardized("expon.logcdf", x, loc, scale)[0]
    return _outside(z < 0, _jnp.log(-_jnp.expm1(-z)), -_np.inf)


def sf(x, loc=0, scale=1):
    return _jnp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    z = _standardized("expon.logsf", x, loc, scale)[0]
    return _outside(z < 0, -z, 0.0)


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote("expon.ppf", q, loc, scale)
    value = -_jnp.log1p(-q) * scale + loc
    return _outside((q < 0) | (q > 1), value, _np.nan)
