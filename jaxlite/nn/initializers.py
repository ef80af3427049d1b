"""Weight initializers with JAX's calling convention: `init(key, shape, dtype)`.

The builders (normal, glorot_uniform, ...) take the distribution's settings and
return such an init function; zeros and ones are init functions themselves.
"""
import math
from typing import Protocol

import numpy as np

import jaxlite.numpy as jnp
from jaxlite import random
from jaxlite.core import dtypes
from jaxlite.core.namespace import dir_of_all

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal",
           "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal",
           "ones", "orthogonal", "truncated_normal", "uniform", "variance_scaling", "xavier_normal",
           "xavier_uniform", "zeros"]
__dir__ = dir_of_all(globals())


def _dtype(dtype):
    return dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)


def zeros(key, shape, dtype=None):
    """All zeros; the key is ignored."""
    return jnp.zeros(shape, _dtype(dtype))


def ones(key, shape, dtype=None):
    """All ones; the key is ignored."""
    return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None):
    def init(key, shape, dtype=dtype):
        return jnp.full(shape, value, _dtype(dtype))
    return init


def _scaled(sampler, factor, default_dtype):
    """An initializer drawing sampler(key, shape, dtype) times a constant."""
    def init(key, shape, dtype=default_dtype):
        dtype = _dtype(dtype)
        return sampler(key, shape, dtype) * jnp.asarray(factor, dtype)
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform on [0, scale)."""
    return _scaled(random.uniform, scale, dtype)


def normal(stddev=1e-2, dtype=None):
    """Normal with mean 0 and the given standard deviation."""
    return _scaled(random.normal, stddev, dtype)


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """stddev times a standard normal truncated to (lower, upper); the truncation
    shrinks the standard deviation below stddev, and no correction is applied."""
    def sampler(key, shape, dtype):
        return random.truncated_normal(key, lower, upper, shape, dtype)
    return _scaled(sampler, stddev, dtype)


def _size(shape, axes):
    return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """Inputs and outputs per unit: axes outside in/out/batch are a convolution's window."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis.")
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    receptive_field = math.prod(shape) / in_size / out_size / _size(shape, batch_axis)
    return in_size * receptive_field, out_size * receptive_field


# The standard deviation of a standard normal truncated to (-2, 2).
_TRUNCATED_STDDEV = 0.87962566103423978

_DENOMINATORS = {
    "fan_in": lambda fan_in, fan_out: fan_in,
    "fan_out": lambda fan_in, fan_out: fan_out,
    "fan_avg": lambda fan_in, fan_out: (fan_in + fan_out) / 2,
    "fan_geo_avg": lambda fan_in, fan_out: (fan_in * fan_out) ** 0.5,
}


def _variance_scaled_sample(key, shape, dtype, distribution, variance):
    # The factors are computed in dtype, as JAX does, so the samples round the same way.
    variance = jnp.asarray(variance, dtype)
    if distribution == "truncated_normal":
        factor = jnp.sqrt(variance) / jnp.asarray(_TRUNCATED_STDDEV, dtype)
        return random.truncated_normal(key, -2, 2, shape, dtype) * factor
    if distribution == "normal":
        return random.normal(key, shape, dtype) * jnp.sqrt(variance)
    if distribution == "uniform":
        return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
    """Samples with variance scale / n, n counting the inputs ("fan_in"), the outputs
    ("fan_out"), or their arithmetic ("fan_avg") or geometric ("fan_geo_avg") mean.

    distribution is "truncated_normal" (cut at two standard deviations, rescaled to
    keep the variance), "normal" or "uniform".
    """
    if mode not in _DENOMINATORS:
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")

    def init(key, shape, dtype=dtype):
        shape, dtype = tuple(shape), _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        variance = scale / _DENOMINATORS[mode](fan_in, fan_out)
        return _variance_scaled_sample(key, shape, dtype, distribution, variance)
    return init


def _preset(scale, mode, distribution, name):
    def builder(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)
    builder.__name__ = name
    builder.__doc__ = f"variance_scaling({scale}, {mode!r}, {distribution!r})."
    return builder


glorot_uniform = _preset(1.0, "fan_avg", "uniform", "glorot_uniform")
glorot_normal = _preset(1.0, "fan_avg", "truncated_normal", "glorot_normal")
lecun_uniform = _preset(1.0, "fan_in", "uniform", "lecun_uniform")
lecun_normal = _preset(1.0, "fan_in", "truncated_normal", "lecun_normal")
he_uniform = _preset(2.0, "fan_in", "uniform", "he_uniform")
he_normal = _preset(2.0, "fan_in", "truncated_normal", "he_normal")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


class Initializer(Protocol):
    """The type of an init function: init(key, shape, dtype=None) -> array."""
    def __call__(self, key, shape, dtype=None): ...


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Haar-random orthogonal matrices (orthonormal rows or columns, whichever are fewer) with
    the axis column_axis as columns and the other axes flattened into rows, times scale."""
    def init(key, shape, dtype=dtype):
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), _dtype(dtype), m=n_cols)
        q = jnp.reshape(q, tuple(np.delete(np.array(shape), column_axis)) + (n_cols,))
        return scale * jnp.moveaxis(q, -1, column_axis)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Convolution kernels (3-d to 5-d) that are zero but for an orthogonal matrix at the
    centre tap (Xiao et al., 2018), so the convolution starts as an isometry."""
    def init(key, shape, dtype=dtype):
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        centre = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        taps = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, _dtype(dtype)).at[taps].set(centre)
    return init
