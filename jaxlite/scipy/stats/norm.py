"""The normal distribution."""
import math as _math

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import promote as _promote, standardized as _standardized


def logpdf(x, loc=0, scale=1):
    z, log_scale = _standardized("norm.logpdf", x, loc, scale)
    return -0.5 * z * z - 0.5 * _math.log(2 * _math.pi) - log_scale


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return _special.ndtr(_standardized("norm.cdf", x, loc, scale)[0])


def logcdf(x, loc=0, scale=1):
    return _special.log_ndtr(_standardized("norm.logcdf", x, loc, scale)[0])


def sf(x, loc=0, scale=1):
    return _special.ndtr(-_standardized("norm.sf", x, loc, scale)[0])


def logsf(x, loc=0, scale=1):
    return _special.log_ndtr(-_standardized("norm.logsf", x, loc, scale)[0])


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote("norm.ppf", q, loc, scale)
    return _special.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    q, loc, scale = _promote("norm.isf", q, loc, scale)
    return -_special.ndtri(q) * scale + loc
