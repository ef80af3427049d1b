"""The multinomial distribution of n draws over the categories of the last axis."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import promote as _promote


def logpmf(x, n, p):
    x, p = _promote("multinomial.logpmf", x, p)
    n = _jnp.asarray(n, x.dtype)
    value = (_special.gammaln(n + 1) + _jnp.sum(_special.xlogy(x, p) - _special.gammaln(x + 1), axis=-1))
    counts_match = _jnp.sum(x, axis=-1) == n
    return _jnp.where(counts_match, value, -_np.inf).astype(x.dtype)


def pmf(x, n, p):
    return _jnp.exp(logpmf(x, n, p))
