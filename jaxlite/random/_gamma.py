"""Gamma variates: Marsaglia and Tsang's rejection method, one primitive with JAX's rules.

Each element gets a key of its own (the draw's key split once per element) and
runs its own rejection loop, so the same key gives JAX's samples whatever the
batch around it. Elements run side by side: the per-element sampler is vmapped,
which turns its while loops into loops that stop when every lane is done.

The derivative with respect to the shape parameter is implicit reparameterization
(Figurnov et al., 2018): holding the sample's CDF value fixed, dx/da is
-(dP(a, x)/da) / (dP(a, x)/dx) for the regularized incomplete gamma function P.
"""
import math

import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.extended import physical_rules
from jaxlite.core.primitive import Primitive
from jaxlite.lax.special import digamma
from jaxlite.random import _keys
from jaxlite.random._core import _exponential, _normal, _split, _uniform
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import vmap


def _gamma_one(key, alpha, log_space):
    """One Gamma(alpha) variate (its log when log_space) from one key.

    Shapes below 1 are boosted: Gamma(a) is Gamma(a + 1) * U**(1/a), which the
    log-space variant forms as a sum so that tiny shapes do not underflow.
    """
    dtype = alpha.dtype
    zero, one = lax.full((), 0, dtype), lax.full((), 1, dtype)
    boost_mask = lax.ge(alpha, one)
    boosted = lax.select_n(boost_mask, lax.add(alpha, one), alpha)
    d = lax.sub(boosted, 1 / 3)
    c = lax.div(lax.full((), 1 / 3, dtype), lax.sqrt(d))

    def rejected(state):
        _, x_sq, v, u = state
        squeeze_fails = lax.ge(u, lax.sub(one, lax.mul(0.0331, lax.mul(x_sq, x_sq))))
        log_fails = lax.ge(lax.log(u), lax.add(lax.mul(x_sq, 0.5),
                                               lax.mul(d, lax.add(lax.sub(one, v), lax.log(v)))))
        return lax.bitwise_and(squeeze_fails, log_fails)

    def positive_cube_root_candidate(state):
        key = state[0]
        key, subkey = _split_two(key)
        x = _normal(subkey, (), dtype)
        return key, x, lax.add(one, lax.mul(x, c))

    def propose(state):
        key, x_key, u_key = _split_three(state[0])
        _, x, v = lax.while_loop(lambda s: lax.le(s[2], zero), positive_cube_root_candidate,
                                 (x_key, zero, lax.full((), -1, dtype)))
        v_cubed = lax.mul(lax.mul(v, v), v)
        return key, lax.mul(x, x), v_cubed, _uniform(u_key, (), dtype, 0.0, 1.0)

    key, subkey = _split_two(key)
    # The initial state is one the rejection test always rejects.
    _, _, v, _ = lax.while_loop(rejected, propose, (key, zero, one, lax.full((), 2, dtype)))
    if log_space:
        log_u = lax.neg(_exponential(subkey, (), dtype))
        log_boost = lax.select_n(lax.bitwise_or(boost_mask, lax.eq(log_u, zero)),
                                 lax.mul(log_u, lax.div(one, alpha)), zero)
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    u = lax.sub(one, _uniform(subkey, (), dtype, 0.0, 1.0))
    boost = lax.select_n(boost_mask, lax.pow(u, lax.div(one, alpha)), one)
    return lax.mul(lax.mul(d, v), boost)


def _split_two(key):
    keys = _split(key, (2,))
    return keys[0], keys[1]


def _split_three(key):
    keys = _split(key, (3,))
    return keys[0], keys[1], keys[2]


def _gamma_samples(key, a, log_space):
    """Samples of shape a.shape; typed keys of shape K each serve a block of a's leading axes K."""
    per_key = math.prod(a.shape[key.ndim:])
    keys = lax.reshape(key, (math.prod(key.shape),))
    keys = vmap(lambda k: _split(k, (per_key,)))(keys)
    keys = lax.reshape(keys, (a.size,))
    samples = vmap(lambda k, alpha: _gamma_one(k, alpha, log_space))(keys, lax.reshape(a, (a.size,)))
    return lax.reshape(samples, a.shape)


def _gamma_physical(in_avals, words, a, log_space):
    """Computed on typed keys again (their physical forms follow in turn)."""
    return _gamma_samples(_keys.wrap(words, "threefry2x32"), a, log_space)


def _gamma_aval(key, a, log_space):
    if not isinstance(key.dtype, _keys.KeyTy):
        raise TypeError(f"random_gamma expects typed keys, got {key.str_short()}")
    if a.shape[:key.ndim] != key.shape:
        raise TypeError(f"random_gamma: the keys' shape {key.shape} must lead the "
                        f"shape of `a`, {a.shape}")
    return ShapedArray(a.shape, a.dtype)


def _gamma_batch(args, dims, log_space):
    size = batching.batch_size(args, dims)
    key, a = (batching.bdim_at_front(x, d, size) for x, d in zip(args, dims))
    return random_gamma_p.bind(key, a, log_space=log_space), 0


def _gamma_jvp(tangents, sample, key, a, log_space):
    a_dot = tangents[1]
    if ad.is_zero(a_dot):
        return ad.Zero(ad.tangent_aval(ad.aval_of(sample)))
    return lax.mul(a_dot, _gamma_grad(sample, a, log_space))


random_gamma_p = Primitive("random_gamma")
random_gamma_p.def_abstract_eval(_gamma_aval)
physical_rules[random_gamma_p] = _gamma_physical
batching.batch_rules[random_gamma_p] = _gamma_batch
ad.defjvp_with_output(random_gamma_p, _gamma_jvp)


def random_gamma(key, a, log_space):
    """Gamma(a) samples (or their logs), one per element of a, for a typed key."""
    return random_gamma_p.bind(key, a, log_space=bool(log_space))


# ---------------------------------------------------------------- the implicit derivative


def _gamma_grad(sample, a, log_space):
    if not log_space:
        return _sample_derivative(a, sample)
    # d log(x)/da = (dx/da) / x; exp may round a tiny sample to 0.
    x = lax.exp(sample)
    x = lax.max(x, lax.full_like(x, dtypes.finfo(x.dtype).tiny))
    return lax.div(_sample_derivative(a, x), x)


def _sample_derivative(a, x):
    """dx/da at fixed P(a, x), elementwise.

    With P(a, x) = x**a e**-x sum_n x**n / Gamma(a + n + 1), the quotient of the two
    partial derivatives is -x sum_n c_n (log x - digamma(a + n + 1)), where
    c_n = Gamma(a) x**n / Gamma(a + n + 1) = c_{n-1} x / (a + n): a series of
    positive weights, summed until the weights have peaked (n > x - a) and fallen
    below float precision. The digammas follow by their recurrence.
    """
    log_x = lax.log(x)
    eps = float(dtypes.finfo(x.dtype).eps)

    def more_terms(state):
        n, weight, _, total, weights = state
        growing = lax.lt(lax.sub(n, 1.0), lax.sub(x, a))
        significant = lax.gt(weight, lax.mul(eps, weights))
        return lax.bitwise_and(jnp.any(lax.bitwise_or(growing, significant)), lax.lt(n, 10000.0))

    def add_term(state):
        n, weight, psi, total, weights = state
        total = lax.add(total, lax.mul(weight, lax.sub(log_x, psi)))
        weights = lax.add(weights, weight)
        a_n = lax.add(a, lax.add(n, 1.0))
        return lax.add(n, 1.0), lax.mul(weight, lax.div(x, a_n)), lax.add(psi, lax.div(1.0, a_n)), total, weights

    zeros = jnp.zeros_like(x)
    start = (lax.full((), 0, x.dtype), lax.div(1.0, a), digamma(lax.add(a, 1.0)), zeros, zeros)
    total = lax.while_loop(more_terms, add_term, start)[3]
    derivative = lax.neg(lax.mul(x, total))
    return lax.select_n(lax.gt(x, 0.0), jnp.zeros_like(x), derivative)
