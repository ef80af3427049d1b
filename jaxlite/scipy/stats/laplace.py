"""The Laplace (double exponential) distribution."""
import math as _math

from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import standardized as _standardized


def logpdf(x, loc=0, scale=1):
    z, log_scale = _standardized("laplace.logpdf", x, loc, scale)
    return -_math.log(2) - log_scale - _jnp.abs(z)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    z = _standardized("laplace.cdf", x, loc, scale)[0]
    return _jnp.where(z < 0, 0.5 * _jnp.exp(z), 1 - 0.5 * _jnp.exp(-z)).astype(z.dtype)
