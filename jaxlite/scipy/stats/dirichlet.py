"""The Dirichlet distribution over the simplex of the first axis (as scipy and JAX)."""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import float_dtype as _float_dtype


def logpdf(x, alpha):
    x, alpha = _jnp.asarray(x), _jnp.asarray(alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    dtype = _float_dtype(x, alpha)
    x, alpha = x.astype(dtype), alpha.astype(dtype)
    if x.shape[0] != alpha.shape[0]:
        x = _jnp.concatenate([x, 1 - _jnp.sum(x, axis=0, keepdims=True)], axis=0)
    alpha = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
    normalizer = _jnp.sum(_special.gammaln(alpha), axis=0) - _special.gammaln(_jnp.sum(alpha, axis=0))
    value = _jnp.sum(_special.xlogy(alpha - 1, x), axis=0) - normalizer
    on_simplex = _jnp.all(x > 0, axis=0) & (_jnp.abs(_jnp.sum(x, axis=0) - 1) < 1e-4)
    return _jnp.where(on_simplex, value, -_np.inf).astype(dtype)


def pdf(x, alpha):
    return _jnp.exp(logpdf(x, alpha))
