"""The gamma distribution with shape a."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import outside as _outside, standardized as _standardized


def logpdf(x, a, loc=0, scale=1):
    z, log_scale, a = _standardized("gamma.logpdf", x, loc, scale, a)
    value = _special.xlogy(a - 1, z) - z - _special.gammaln(a) - log_scale
    return _outside(z < 0, value, -_np.inf)


def pdf(x, a, loc=0, scale=1):
    return _jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    z, _, a = _standardized("gamma.cdf", x, loc, scale, a)
    return _special.gammainc(a, _jnp.maximum(z, 0))


def logcdf(x, a, loc=0, scale=1):
    return _jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    z, _, a = _standardized("gamma.sf", x, loc, scale, a)
    return _special.gammaincc(a, _jnp.maximum(z, 0))


def logsf(x, a, loc=0, scale=1):
    return _jnp.log(sf(x, a, loc, scale))
