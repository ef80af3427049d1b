"""The Bernoulli distribution: 1 with probability p."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import outside as _outside, promote as _promote


def logpmf(k, p, loc=0):
    k, p, loc = _promote("bernoulli.logpmf", k, p, loc)
    k = k - loc
    value = _special.xlogy(k, p) + _special.xlog1py(1 - k, -p)
    return _outside((k != 0) & (k != 1), value, -_np.inf)


def pmf(k, p, loc=0):
    return _jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = _promote("bernoulli.cdf", k, p)
    value = _jnp.where(k < 0, 0.0, _jnp.where(k < 1, 1 - p, 1.0))
    return _outside((p < 0) | (p > 1) | _jnp.isnan(k), value.astype(k.dtype), _np.nan)


def ppf(q, p):
    q, p = _promote("bernoulli.ppf", q, p)
    value = _jnp.where(q <= 1 - p, 0.0, 1.0).astype(q.dtype)
    return _outside((q < 0) | (q > 1) | (p < 0) | (p > 1), value, _np.nan)
