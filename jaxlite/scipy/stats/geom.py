"""The geometric distribution: the trial of the first success, k = 1, 2, ..."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import outside as _outside, promote as _promote


def logpmf(k, p, loc=0):
    k, p, loc = _promote("geom.logpmf", k, p, loc)
    k = k - loc
    value = _special.xlog1py(k - 1, -p) + _jnp.log(p)
    return _outside((k < 1) | (k != _jnp.floor(k)), value, -_np.inf)


def pmf(k, p, loc=0):
    return _jnp.exp(logpmf(k, p, loc))
