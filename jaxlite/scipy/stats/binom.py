"""The binomial distribution of n trials with success probability p."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import off_lattice as _off_lattice, outside as _outside, promote as _promote


def logpmf(k, n, p, loc=0):
    k, n, p, loc = _promote("binom.logpmf", k, n, p, loc)
    k = k - loc
    log_choose = _special.gammaln(n + 1) - _special.gammaln(k + 1) - _special.gammaln(n - k + 1)
    value = log_choose + _special.xlogy(k, p) + _special.xlog1py(n - k, -p)
    return _outside(_off_lattice(k) | (k > n), value, -_np.inf)


def pmf(k, n, p, loc=0):
    return _jnp.exp(logpmf(k, n, p, loc))
