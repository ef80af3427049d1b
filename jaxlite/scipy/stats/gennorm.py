"""The generalized normal distribution with shape beta: density ~ exp(-|x|^beta)."""

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import promote as _promote


def logpdf(x, beta):
    x, beta = _promote("gennorm.logpdf", x, beta)
    return _jnp.log(0.5 * beta) - _special.gammaln(1 / beta) - _jnp.abs(x) ** beta


def pdf(x, beta):
    return _jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    x, beta = _promote("gennorm.cdf", x, beta)
    half = 0.5 * _special.gammaincc(1 / beta, _jnp.abs(x) ** beta)
    return _jnp.where(x < 0, half, 1 - half).astype(x.dtype)


