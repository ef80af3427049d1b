"""The beta-binomial distribution: binomial with a Beta(a, b) success probability."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import off_lattice as _off_lattice, outside as _outside, promote as _promote


def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = _promote("betabinom.logpmf", k, n, a, b, loc)
    k = k - loc
    log_choose = -_jnp.log(n + 1) - _special.betaln(n - k + 1, k + 1)
    value = log_choose + _special.betaln(k + a, n - k + b) - _special.betaln(a, b)
    return _outside(_off_lattice(k) | (k > n), value, -_np.inf)


def pmf(k, n, a, b, loc=0):
    return _jnp.exp(logpmf(k, n, a, b, loc))
