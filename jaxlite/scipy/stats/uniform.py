"""The uniform distribution on [loc, loc + scale]."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import outside as _outside, promote as _promote


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _promote("uniform.logpdf", x, loc, scale)
    return _outside((x < loc) | (x > loc + scale), -_jnp.log(scale), -_np.inf)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _promote("uniform.cdf", x, loc, scale)
    return _jnp.clip((x - loc) / scale, 0, 1)


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote("uniform.ppf", q, loc, scale)
    return _outside((q < 0) | (q > 1), loc + q * scale, _np.nan)
