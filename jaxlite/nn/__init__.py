"""jaxlite.nn: activation functions and the numerically careful reductions of neural nets.

Everything is composed from jaxlite.numpy and lax operations, so it traces,
batches and differentiates. Piecewise functions are written as selections rather
than max/min where JAX defines the derivative at the kink by a custom rule
(relu'(0) = 0): a select passes the tangent of the branch it picks.
"""
import numpy as np

import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.lax.special import erfc
from jaxlite.nn import initializers
from jaxlite.nn._attention import dot_product_attention
from jaxlite.nn._scaled_matmul import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul
from jaxlite.numpy.util import broadcast_to, promote_and_broadcast, promote_to_inexact
from jaxlite.core.namespace import dir_of_all

__all__ = ["celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu",
           "get_scaled_dot_general_config", "hard_swish", "hard_tanh", "identity", "initializers",
           "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp",
           "mish", "one_hot", "relu", "relu6", "scaled_dot_general", "scaled_matmul", "selu",
           "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid",
           "squareplus", "standardize", "swish", "tanh"]
__dir__ = dir_of_all(globals())


def _inexact(name, x):
    return promote_to_inexact(name, x)[0]


def _where(condition, x, y):
    """x where condition holds, else y (NumPy broadcasting and promotion)."""
    x, y = promote_and_broadcast("where", x, y)
    shape = np.broadcast_shapes(np.shape(condition), np.shape(x), np.shape(y))
    condition, x, y = (broadcast_to(v, shape) for v in (condition, x, y))
    return lax.select_n(condition, y, x)


# ---------------------------------------------------------------- activations


def tanh(x, /):
    return jnp.tanh(x)


def sparse_plus(x):
    """0 below -1, x above 1, and (x + 1)**2 / 4 between: a softplus with compact support."""
    x = _inexact("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """The derivative of sparse_plus: (x + 1) / 2 clipped to [0, 1]."""
    return 0.5 * jnp.clip(_inexact("sparse_sigmoid", x) + 1.0, 0.0, 2.0)


def log1mexp(x):
    """log(1 - exp(-x)) for x > 0, by expm1 below log 2 and log1p above (Maechler, 2012)."""
    x = _inexact("log1mexp", x)
    return jnp.where(x < np.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def relu(x):
    """max(x, 0), with derivative 0 at 0 as in JAX (NaN stays NaN)."""
    (x,) = promote_and_broadcast("relu", x)
    return _where(lax.le(x, lax.full_like(x, 0)), 0, x)


def relu6(x):
    """min(max(x, 0), 6), with derivative 0 at both kinks."""
    x = relu(x)
    return _where(lax.ge(x, lax.full_like(x, 6)), 6, x)


def identity(x):
    return jnp.asarray(x)


def sigmoid(x):
    return lax.logistic(_inexact("sigmoid", x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6: a piecewise linear sigmoid."""
    return relu6(_inexact("hard_sigmoid", x) + 3.0) / 6.0


def soft_sign(x):
    """x / (|x| + 1)."""
    x = _inexact("soft_sign", x)
    return x / (jnp.abs(x) + 1)


def squareplus(x, b=4):
    """(x + sqrt(x**2 + b)) / 2: a smooth relu built from algebraic operations only."""
    x = _inexact("squareplus", x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def softplus(x):
    """log(1 + exp(x)), without overflow for large x: logaddexp(x, 0), as JAX (its derivative
    at 0 is 1/2)."""
    x = _inexact("softplus", x)
    return jnp.logaddexp(x, 0)


def log_sigmoid(x):
    return -softplus(-_inexact("log_sigmoid", x))


def silu(x):
    """x * sigmoid(x)."""
    x = _inexact("silu", x)
    return x * sigmoid(x)


swish = silu


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    x = _inexact("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    """x * tanh(softplus(x))."""
    x = _inexact("mish", x)
    return x * jnp.tanh(softplus(x))


def gelu(x, approximate=True):
    """x * Phi(x) for the standard normal CDF Phi, or its tanh approximation."""
    x = _inexact("gelu", x)
    if approximate:
        cdf = 0.5 * (1.0 + jnp.tanh(float(np.sqrt(2 / np.pi)) * (x + 0.044715 * x ** 3)))
        return x * cdf
    return 0.5 * x * erfc(-x * float(np.sqrt(0.5)))


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = _inexact("elu", x)
    positive = lax.gt(x, lax.full_like(x, 0))
    # expm1 sees 0 where x > 0, so a huge x cannot overflow into the unused branch's gradient.
    negative_part = alpha * jnp.expm1(_where(positive, 0, x))
    return _where(positive, x, negative_part)


def leaky_relu(x, negative_slope=1e-2):
    x = _inexact("leaky_relu", x)
    return _where(lax.ge(x, lax.full_like(x, 0)), x, negative_slope * x)


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1): continuously differentiable elu."""
    x = _inexact("celu", x)
    return jnp.maximum(x, 0) + alpha * jnp.expm1(jnp.minimum(x, 0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """Scaled elu whose fixed point keeps activations at zero mean and unit variance."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def hard_tanh(x):
    """x clipped to [-1, 1]."""
    x = _inexact("hard_tanh", x)
    return _where(lax.gt(x, lax.full_like(x, 1)), 1, _where(lax.lt(x, lax.full_like(x, -1)), -1, x))


def glu(x, axis=-1):
    """Gated linear unit: the first half of `axis` times the sigmoid of the second half."""
    x = jnp.asarray(x)
    axis = canonicalize_axis(axis, x.ndim)
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"glu: axis {axis} has odd size {size}; it must split into two halves")
    first = lax.slice_in_dim(x, 0, size // 2, axis=axis)
    second = lax.slice_in_dim(x, size // 2, size, axis=axis)
    return first * sigmoid(second)


# ---------------------------------------------------------------- normalizing reductions
# Each subtracts the maximum before exponentiating, so no exp overflows. The
# shift cancels mathematically, so its own derivative contributes nothing.


def _masked(x, where, fill):
    return x if where is None else _where(where, x, fill)


def softmax(x, axis=-1, where=None):
    """exp(x) / sum(exp(x)) along axis; entries outside `where` get 0."""
    x = _inexact("softmax", x)
    x_max = jnp.max(x, axis, keepdims=True, initial=-np.inf, where=where)
    unnormalized = jnp.exp(_masked(x, where, -np.inf) - x_max)
    result = unnormalized / jnp.sum(unnormalized, axis, keepdims=True, where=where)
    return _masked(result, where, 0)


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x) along axis; entries outside `where` get -inf."""
    x = _inexact("log_softmax", x)
    x_max = jnp.max(x, axis, keepdims=True, initial=-np.inf, where=where)
    shifted = _masked(x, where, -np.inf) - x_max
    total = jnp.sum(jnp.exp(shifted), axis, keepdims=True, where=where)
    return _masked(shifted - jnp.log(total), where, -np.inf)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) along axis, stable for large |a|.

    With return_sign, returns (log|sum|, sign(sum)); otherwise a negative sum gives NaN.
    """
    if b is None:
        a = _inexact("logsumexp", a)
    else:
        a, b = promote_to_inexact("logsumexp", a, b)
        a = _where(b != 0, a, -np.inf)
    a_max = jnp.max(a, axis, keepdims=True, initial=-np.inf, where=where)
    a_max = _where(jnp.isfinite(a_max), a_max, 0)
    terms = jnp.exp(a - a_max)
    if b is not None:
        terms = terms * b
    total = jnp.sum(terms, axis, keepdims=keepdims, where=where)
    sign = jnp.sign(total)
    shift = a_max if keepdims else jnp.squeeze(a_max, _reduced_axes(axis, a.ndim))
    out = jnp.log(jnp.abs(total)) + shift
    if return_sign:
        return out, sign
    if b is not None:
        out = _where(sign < 0, np.nan, out)
    return out


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) along axis: logsumexp less the log of the number of terms."""
    x = _inexact("logmeanexp", x)
    total = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    ones = jnp.ones_like(x) if where is None else jnp.where(where, 1.0, 0.0).astype(x.dtype)
    return total - jnp.log(jnp.sum(ones, axis=axis, keepdims=keepdims))


def _reduced_axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """(x - mean) / sqrt(variance + epsilon), the statistics taken along axis unless given."""
    x = _inexact("standardize", x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        # E[x^2] - E[x]^2 can round below zero; a variance is never negative.
        variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
        variance = jnp.maximum(variance, 0)
    return (x - mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes, dtype=None, axis=-1):
    """1 where the new axis' index equals x, else 0 (out-of-range x gives all zeros)."""
    x = jnp.asarray(x)
    num_classes = int(num_classes)
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    out_axis = canonicalize_axis(axis, x.ndim + 1)
    out_shape = x.shape[:out_axis] + (num_classes,) + x.shape[out_axis:]
    kept = tuple(d for d in range(len(out_shape)) if d != out_axis)
    labels = lax.broadcast_in_dim(x, out_shape, kept)
    classes = lax.broadcasted_iota(x.dtype, out_shape, out_axis)
    return lax.convert_element_type(lax.eq(labels, classes), dtype)
