"""Helpers the distribution modules share: promotion, location-scale, support masks."""

from jaxlite import nn, numpy as jnp
from jaxlite.scipy._util import inexact_dtype as float_dtype  # noqa: F401 (shared with the modules)
from jaxlite.numpy.util import promote_to_inexact


def promote(name, *args):
    """Arguments promoted to one float dtype (integers become the default float) and broadcast."""
    return promote_to_inexact(name, *args)


def standardized(name, x, loc, scale, *shape_args):
    """((x - loc) / scale, log(scale), shape arguments), all promoted together."""
    x, loc, scale, *shape_args = promote(name, x, loc, scale, *shape_args)
    return ((x - loc) / scale, jnp.log(scale), *shape_args)


def outside(condition, value, fill):
    """value where the point is inside the support, fill where `condition` says it is outside."""
    return jnp.where(condition, fill, value).astype(value.dtype)


def log1mexp(log_p):
    """log(1 - exp(log_p)) for log_p <= 0, accurate at both ends (jax.nn.log1mexp of -log_p)."""
    return nn.log1mexp(-log_p)


def off_lattice(k):
    """Where a count is not a non-negative integer (its pmf is 0 there)."""
    return (k < 0) | (k != jnp.floor(k))
