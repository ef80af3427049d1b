"""The Poisson distribution with mean mu."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import off_lattice as _off_lattice, outside as _outside, promote as _promote


def logpmf(k, mu, loc=0):
    k, mu, loc = _promote("poisson.logpmf", k, mu, loc)
    k = k - loc
    value = _special.xlogy(k, mu) - mu - _special.gammaln(k + 1)
    return _outside(_off_lattice(k), value, -_np.inf)


def pmf(k, mu, loc=0):
    return _jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    k, mu, loc = _promote("poisson.cdf", k, mu, loc)
    k = _jnp.floor(k - loc)
    return _outside(k < 0, _special.gammaincc(k + 1, mu), 0.0)


_ENTROPY_TERMS = 1000


def entropy(mu, loc=0):
    """-sum_k p(k) log p(k), over k < 1000 (the neglected terms vanish for mu up to ~800)."""
    mu, loc = _promote("poisson.entropy", mu, loc)
    k = _jnp.arange(_ENTROPY_TERMS, dtype=mu.dtype).reshape((_ENTROPY_TERMS,) + (1,) * mu.ndim)
    log_p = logpmf(k, mu)
    return -_jnp.sum(_jnp.where(_jnp.isfinite(log_p), _jnp.exp(log_p) * log_p, 0.0), axis=0)
