"""The right-skewed Gumbel distribution (of maxima)."""
from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import log1mexp as _log1mexp, promote as _promote, standardized as _standardized


def logpdf(x, loc=0, scale=1):
    z, log_scale = _standardized("gumbel_r.logpdf", x, loc, scale)
    return -z - _jnp.exp(-z) - log_scale


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    return -_jnp.exp(-_standardized("gumbel_r.logcdf", x, loc, scale)[0])


def cdf(x, loc=0, scale=1):
    return _jnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    return _log1mexp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    return -_jnp.expm1(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = _promote("gumbel_r.ppf", p, loc, scale)
    return loc - scale * _jnp.log(-_jnp.log(p))
