"""The logistic distribution."""
from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import promote as _promote, standardized as _standardized


def logpdf(x, loc=0, scale=1):
    z, log_scale = _standardized("logistic.logpdf", x, loc, scale)
    size = _jnp.abs(z)
    return -size - 2 * _jnp.log1p(_jnp.exp(-size)) - log_scale


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return _special.expit(_standardized("logistic.cdf", x, loc, scale)[0])


def sf(x, loc=0, scale=1):
    return _special.expit(-_standardized("logistic.sf", x, loc, scale)[0])


def ppf(x, loc=0, scale=1):
    x, loc, scale = _promote("logistic.ppf", x, loc, scale)
    return _special.logit(x) * scale + loc


def isf(x, loc=0, scale=1):
    x, loc, scale = _promote("logistic.isf", x, loc, scale)
    return -_special.logit(x) * scale + loc
