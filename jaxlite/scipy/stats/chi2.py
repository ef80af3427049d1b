"""The chi-squared distribution: a gamma distribution of shape df / 2 and scale 2."""
from jaxlite.scipy.stats import gamma as _gamma
from jaxlite.scipy.stats._common import promote as _promote


def _as_gamma(name, x, df, loc, scale):
    x, df, loc, scale = _promote(name, x, df, loc, scale)
    return x, df / 2, loc, 2 * scale


def logpdf(x, df, loc=0, scale=1):
    return _gamma.logpdf(*_as_gamma("chi2.logpdf", x, df, loc, scale))


def pdf(x, df, loc=0, scale=1):
    return _gamma.pdf(*_as_gamma("chi2.pdf", x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    return _gamma.cdf(*_as_gamma("chi2.cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    return _gamma.logcdf(*_as_gamma("chi2.logcdf", x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    return _gamma.sf(*_as_gamma("chi2.sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    return _gamma.logsf(*_as_gamma("chi2.logsf", x, df, loc, scale))
