"""The normal distribution truncated to [a, b] (in standard units)."""
import math as _math

import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import (log1mexp as _log1mexp, outside as _outside,
                                         standardized as _standardized)


def _log_mass(a, b):
    """log(Phi(b) - Phi(a)), from the tail where the difference keeps its digits."""
    upper_side = a > 0
    lo, hi = _jnp.where(upper_side, -b, a), _jnp.where(upper_side, -a, b)
    log_hi, log_lo = _special.log_ndtr(hi), _special.log_ndtr(lo)
    return log_hi + _log1mexp(log_lo - log_hi)


def logpdf(x, a, b, loc=0, scale=1):
    z, log_scale, a, b = _standardized("truncnorm.logpdf", x, loc, scale, a, b)
    value = -0.5 * z * z - 0.5 * _math.log(2 * _math.pi) - log_scale - _log_mass(a, b)
    return _outside((z < a) | (z > b), value, -_np.inf)


def pdf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    z, _, a, b = _standardized("truncnorm.logcdf", x, loc, scale, a, b)
    value = _log_mass(a, _jnp.clip(z, a, b)) - _log_mass(a, b)
    return _jnp.where(z >= b, 0.0, _jnp.where(z <= a, -_np.inf, value)).astype(z.dtype)


def cdf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    z, _, a, b = _standardized("truncnorm.logsf", x, loc, scale, a, b)
    value = _log_mass(_jnp.clip(z, a, b), b) - _log_mass(a, b)
    return _jnp.where(z <= a, 0.0, _jnp.where(z >= b, -_np.inf, value)).astype(z.dtype)


def sf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logsf(x, a, b, loc, scale))
