"""The negative binomial distribution: failures before the n-th success."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import off_lattice as _off_lattice, outside as _outside, promote as _promote


def logpmf(k, n, p, loc=0):
    k, n, p, loc = _promote("nbinom.logpmf", k, n, p, loc)
    k = k - loc
    log_choose = _special.gammaln(n + k) - _special.gammaln(n) - _special.gammaln(k + 1)
    value = log_choose + n * _jnp.log(p) + _special.xlog1py(k, -p)
    return _outside(_off_lattice(k), value, -_np.inf)


def pmf(k, n, p, loc=0):
    return _jnp.exp(logpmf(k, n, p, loc))
