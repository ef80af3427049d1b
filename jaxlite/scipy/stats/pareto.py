"""The Pareto distribution with shape b, density b / z^(b + 1) for z >= 1."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import log1mexp as _log1mexp, outside as _outside, promote as _promote
from jaxlite.scipy.stats._common import standardized as _standardized


def logpdf(x, b, loc=0, scale=1):
    z, log_scale, b = _standardized("pareto.logpdf", x, loc, scale, b)
    return _outside(z < 1, _jnp.log(b) - (b + 1) * _jnp.log(z) - log_scale, -_np.inf)


def pdf(x, b, loc=0, scale=1):
    return _jnp.exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    z, _, b = _standardized("pareto.logsf", x, loc, scale, b)
    return _outside(z < 1, -b * _jnp.log(z), 0.0)


def sf(x, b, loc=0, scale=1):
    return _jnp.exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    return -_jnp.expm1(logsf(x, b, loc, scale))


def logcdf(x, b, loc=0, scale=1):
    return _log1mexp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = _promote("pareto.ppf", q, b, loc, scale)
    value = scale * _jnp.exp(-_jnp.log1p(-q) / b) + loc
    return _outside((q < 0) | (q > 1), value, _np.nan)
