"""The multivariate normal distribution, the last axis of x being the vector."""
import math as _math

import numpy as _np

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.scipy.stats._common import float_dtype as _float_dtype


def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = (_jnp.asarray(v) for v in (x, mean, cov))
    dtype = _float_dtype(x, mean, cov)
    x, mean, cov = x.astype(dtype), mean.astype(dtype), cov.astype(dtype)
    if mean.ndim == 0 or cov.ndim == 0:
        if mean.ndim or cov.ndim:
            raise ValueError("multivariate_normal.logpdf got incompatible shapes")
        return (-0.5 * (x - mean) ** 2 / cov - 0.5 * (_math.log(2 * _math.pi) + _jnp.log(cov))).astype(dtype)
    n = mean.shape[-1]
    if cov.ndim == 1:
        cov = cov[..., None] * _jnp.eye(n, dtype=dtype) if cov.shape[-1] == n else cov
    if cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    factor = _lax.cholesky(cov)
    centered = x - mean
    shape = _np.broadcast_shapes(centered.shape, factor.shape[:-1])
    factor = _jnp.broadcast_to(factor, shape[:-1] + (n, n))
    whitened = _lax.triangular_solve(factor, _jnp.broadcast_to(centered, shape)[..., None],
                                     left_side=True, lower=True)[..., 0]
    log_det = _jnp.sum(_jnp.log(_jnp.einsum("...ii->...i", factor)), axis=-1)
    return -0.5 * _jnp.sum(whitened * whitened, axis=-1) - log_det - 0.5 * n * _math.log(2 * _math.pi)


def pdf(x, mean, cov):
    return _jnp.exp(logpdf(x, mean, cov))
