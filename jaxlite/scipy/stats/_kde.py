"""gaussian_kde: a weighted Gaussian kernel density estimate, a pytree as in JAX."""
import math

import numpy as np


from jaxlite import lax
from jaxlite import numpy as jnp
from jaxlite import random
from jaxlite.nn import logsumexp
from jaxlite.scipy import special
from jaxlite.scipy._util import as_inexact
from jaxlite.tree_util import register_pytree_node_class


def _bandwidth_factor(bw_method, neff, d, kde):
    if bw_method is None or bw_method == "scott":
        return neff ** (-1.0 / (d + 4))
    if bw_method == "silverman":
        return (neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
    if callable(bw_method):
        return bw_method(kde)
    if np.ndim(bw_method) == 0 and not isinstance(bw_method, str):
        return bw_method
    raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar or a callable.")


@register_pytree_node_class
class gaussian_kde:
    """The density sum_i w_i N(x; dataset[:, i], covariance), covariance being the weighted
    data covariance scaled by the bandwidth factor squared."""

    def __init__(self, dataset, bw_method=None, weights=None):
        (dataset,) = as_inexact(jnp.atleast_2d(jnp.asarray(dataset)))
        d, n = dataset.shape
        if n <= d:
            raise ValueError("`dataset` should have more than `d` points (columns).")
        weights = jnp.full((n,), 1.0 / n, dataset.dtype) if weights is None else as_inexact(weights)[0].astype(dataset.dtype)
        if weights.ndim != 1 or weights.shape[0] != n:
            raise ValueError("`weights` should be one-dimensional, one per point of `dataset`.")
        weights = weights / jnp.sum(weights)
        neff = 1 / jnp.sum(weights * weights)
        mean = jnp.sum(dataset * weights, axis=1, keepdims=True)
        centered = dataset - mean
        data_covariance = jnp.matmul(centered * weights, centered.T) / (1 - jnp.sum(weights * weights))
        self.dataset, self.weights, self.neff = dataset, weights, neff
        factor = _bandwidth_factor(bw_method, neff, d, self)
        self.covariance = data_covariance * factor ** 2
        self.inv_cov = jnp.linalg.inv(self.covariance)

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        kde = object.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
        return kde

    def _points(self, points):
        (points,) = as_inexact(jnp.atleast_2d(jnp.asarray(points)))
        if points.shape[0] != self.d:
            if points.shape == (1, self.d):
                return points.T
            raise ValueError(f"points have dimension {points.shape[0]}, dataset has dimension {self.d}")
        return points.astype(self.dataset.dtype)

    def _log_terms(self, points, centers, covariance):
        """log N(points_j; centers_i, covariance) as a (number of centers, number of points) matrix."""
        factor = lax.cholesky(covariance)
        difference = centers[:, :, None] - points[:, None, :]          # (d, centers, points)
        flat = difference.reshape(self.d, -1)
        whitened = lax.triangular_solve(factor, flat, left_side=True, lower=True)
        squared = jnp.sum(whitened * whitened, axis=0).reshape(difference.shape[1:])
        log_det = jnp.sum(jnp.log(jnp.einsum("ii->i", factor)))
        return -0.5 * squared - log_det - 0.5 * self.d * math.log(2 * math.pi)

    def evaluate(self, points):
        """The density at each point (columns of a d x m array)."""
        return jnp.exp(self.logpdf(points))

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x):
        log_terms = self._log_terms(self._points(x), self.dataset, self.covariance)
        return logsumexp(log_terms + jnp.log(self.weights)[:, None], axis=0)

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times N(mean, cov)."""
        mean, cov = as_inexact(mean, cov)
        mean = jnp.atleast_1d(mean).astype(self.dataset.dtype).reshape(self.d, 1)
        cov = jnp.atleast_2d(cov).astype(self.dataset.dtype)
        log_terms = self._log_terms(mean, self.dataset, self.covariance + cov)[:, 0]
        return jnp.sum(self.weights * jnp.exp(log_terms))

    def integrate_box_1d(self, low, high):
        """The density's mass between low and high (one-dimensional data only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        sigma = jnp.sqrt(self.covariance[0, 0])
        low, high = ((jnp.asarray(v, self.dataset.dtype) - self.dataset[0]) / sigma for v in (low, high))
        return jnp.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

    def integrate_kde(self, other):
        """The integral of the product of two density estimates."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        log_terms = self._log_terms(other.dataset, self.dataset, self.covariance + other.covariance)
        return jnp.sum(self.weights[:, None] * other.weights[None, :] * jnp.exp(log_terms))

    def resample(self, key, shape=()):
        """Samples of the density: a data point drawn by weight, plus kernel noise; (d, *shape)."""
        shape = tuple(shape)
        pick_key, noise_key = random.split(key)
        chosen = random.choice(pick_key, self.n, shape=shape, p=self.weights)
        noise = random.normal(noise_key, shape + (self.d,), self.dataset.dtype)
        noise = jnp.matmul(noise, lax.cholesky(self.covariance).T)
        return jnp.moveaxis(self.dataset.T[chosen] + noise, -1, 0)

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")


