"""The left-skewed Gumbel distribution (of minima): gumbel_r mirrored, x -> -x."""
from jaxlite import numpy as _jnp
from jaxlite.scipy.stats import gumbel_r as _gumbel_r
from jaxlite.scipy.stats._common import promote as _promote


def _mirrored(name, x, loc, scale):
    x, loc, scale = _promote(name, x, loc, scale)
    return -x, -loc, scale


def logpdf(x, loc=0, scale=1):
    return _gumbel_r.logpdf(*_mirrored("gumbel_l.logpdf", x, loc, scale))


def pdf(x, loc=0, scale=1):
    return _gumbel_r.pdf(*_mirrored("gumbel_l.pdf", x, loc, scale))


def logsf(x, loc=0, scale=1):
    return _gumbel_r.logcdf(*_mirrored("gumbel_l.logsf", x, loc, scale))


def sf(x, loc=0, scale=1):
    return _gumbel_r.cdf(*_mirrored("gumbel_l.sf", x, loc, scale))


def logcdf(x, loc=0, scale=1):
    return _gumbel_r.logsf(*_mirrored("gumbel_l.logcdf", x, loc, scale))


def cdf(x, loc=0, scale=1):
    return _gumbel_r.sf(*_mirrored("gumbel_l.cdf", x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = _promote("gumbel_l.ppf", p, loc, scale)
    return loc + scale * _jnp.log(-_jnp.log1p(-p))
