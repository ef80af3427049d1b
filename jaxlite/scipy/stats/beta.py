"""The beta distribution on [0, 1] with shapes a and b."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import outside as _outside, standardized as _standardized


def logpdf(x, a, b, loc=0, scale=1):
    z, log_scale, a, b = _standardized("beta.logpdf", x, loc, scale, a, b)
    value = _special.xlogy(a - 1, z) + _special.xlog1py(b - 1, -z) - _special.betaln(a, b) - log_scale
    return _outside((z < 0) | (z > 1), value, -_np.inf)


def pdf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    z, _, a, b = _standardized("beta.cdf", x, loc, scale, a, b)
    return _special.betainc(a, b, _jnp.clip(z, 0, 1))


def logcdf(x, a, b, loc=0, scale=1):
    return _jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    z, _, a, b = _standardized("beta.sf", x, loc, scale, a, b)
    return _special.betainc(b, a, 1 - _jnp.clip(z, 0, 1))


def logsf(x, a, b, loc=0, scale=1):
    return _jnp.log(sf(x, a, b, loc, scale))
