"""The distributions built on gamma variates, the rejection samplers for counts, and
the multivariate ones, each drawing from its key exactly as JAX does (the same
splits, the same uniforms in the same order) so that the same key gives JAX's samples.
"""
import numpy as np

import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import broadcast_shapes
from jaxlite.lax.base import shape_tuple
from jaxlite.numpy.util import promote_dtypes_inexact
from jaxlite.random._core import (
    _as_param, _check_shape, _exponential, _float_dtype, _normal, _split, _sampler_key, _split,
    _split_pair, _uniform, bernoulli)
from jaxlite.random._gamma import random_gamma


def _draw_shape(name, shape, *params):
    """JAX's rule: the broadcast shape of the parameters, or `shape`, which they must fit."""
    if shape is None:
        return broadcast_shapes(*(np.shape(p) for p in params))
    shape = shape_tuple(shape)
    _check_shape(name, shape, *(np.shape(p) for p in params))
    return shape


def _int_dtype(name, dtype):
    dtype = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype)
    if not dtypes.is_int(dtype):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dtype}")
    return dtype


# ---------------------------------------------------------------- gamma and its relatives


def gamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """Gamma(a) floats, density x**(a - 1) e**-x / Gamma(a); differentiable in a."""
    return _gamma("gamma", key, a, shape, dtype, log_space=False)


def loggamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """log of Gamma(a) floats, computed in log space so that tiny shapes keep their precision."""
    return _gamma("loggamma", key, a, shape, dtype, log_space=True)


def _gamma(name, key, a, shape, dtype, log_space):
    key = _sampler_key(name, key)
    return _gamma_of(key, a, shape, _float_dtype(name, dtype), log_space)


def _gamma_of(key, a, shape, dtype, log_space):
    shape = _draw_shape("gamma", shape, a)
    a = jnp.broadcast_to(lax.convert_element_type(jnp.asarray(a), dtype), shape)
    return random_gamma(key, a, log_space)


def beta(key, a, b, shape=None, dtype=None, *, out_sharding=None):
    """Beta(a, b) floats, as Ga / (Ga + Gb) of two log-space gamma draws."""
    key = _sampler_key("beta", key)
    dtype = _float_dtype("beta", dtype)
    shape = _draw_shape("beta", shape, a, b)
    key_a, key_b = _split_pair(key)
    log_a = _gamma_of(key_a, a, shape, dtype, True)
    log_b = _gamma_of(key_b, b, shape, dtype, True)
    # Scaled by the larger of the two, so that neither exponential underflows to 0/0.
    log_max = lax.max(log_a, log_b)
    scaled_a, scaled_b = lax.exp(lax.sub(log_a, log_max)), lax.exp(lax.sub(log_b, log_max))
    return lax.div(scaled_a, lax.add(scaled_a, scaled_b))


def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
    """Points of the simplex with density prod x_i**(alpha_i - 1), along alpha's last axis."""
    key = _sampler_key("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    alpha = jnp.asarray(alpha)
    if alpha.ndim < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {alpha.ndim}")
    batch = alpha.shape[:-1] if shape is None else shape_tuple(shape)
    _check_shape("dirichlet", batch, alpha.shape[:-1])
    from jaxlite.nn import softmax   # jaxlite.nn's initializers import jaxlite.random
    return softmax(_gamma_of(key, alpha, batch + alpha.shape[-1:], dtype, True), axis=-1)


def chisquare(key, df, shape=None, dtype=None, *, out_sharding=None):
    """Chi-square floats with `df` degrees of freedom: twice a Gamma(df / 2)."""
    key = _sampler_key("chisquare", key)
    dtype = _float_dtype("chisquare", dtype)
    return _chisquare(key, df, _draw_shape("chisquare", shape, df), dtype)


def _chisquare(key, df, shape, dtype):
    half_df = lax.div(lax.convert_element_type(jnp.asarray(df), dtype), 2.0)
    return lax.mul(lax.exp(_gamma_of(key, half_df, shape, dtype, True)), 2.0)


def t(key, df, shape=None, dtype=None, *, out_sharding=None):
    """Student's t floats: a normal over the root of an independent chi-square / df."""
    key = _sampler_key("t", key)
    dtype = _float_dtype("t", dtype)
    shape = _draw_shape("t", shape, df)
    key_n, key_g = _split_pair(key)
    half_df = lax.div(lax.convert_element_type(jnp.asarray(df), dtype), 2.0)
    g = _gamma_of(key_g, half_df, shape, dtype, False)
    return lax.mul(_normal(key_n, shape, dtype), lax.sqrt(lax.div(half_df, g)))


def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
    """F floats: the ratio of two chi-squares, each over its degrees of freedom."""
    key = _sampler_key("f", key)
    dtype = _float_dtype("f", dtype)
    shape = _draw_shape("f", shape, dfnum, dfden)
    dfnum, dfden = (lax.convert_element_type(jnp.asarray(d), dtype) for d in (dfnum, dfden))
    key_den, key_num = _split_pair(key)
    num = lax.div(_chisquare(key_num, dfnum, shape, dtype), dfnum)
    return lax.div(num, lax.div(_chisquare(key_den, dfden, shape, dtype), dfden))


def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
    """Floats with density proportional to exp(-|x|**p)."""
    key = _sampler_key("generalized_normal", key)
    dtype = _float_dtype("generalized_normal", dtype)
    return _generalized_normal(key, p, shape_tuple(shape), dtype)


def _generalized_normal(key, p, shape, dtype):
    key_g, key_r = _split_pair(key)
    inverse_p = lax.div(1.0, lax.convert_element_type(jnp.asarray(p), dtype))
    g = _gamma_of(key_g, inverse_p, shape, dtype, False)
    return lax.mul(_rademacher(key_r, shape, dtype), lax.pow(g, inverse_p))


def ball(key, d, p=2, shape=(), dtype=None, *, out_sharding=None):
    """Points uniform in the unit p-norm ball of dimension d (Barthe et al.)."""
    key = _sampler_key("ball", key)
    dtype = _float_dtype("ball", dtype)
    shape = shape_tuple(shape)
    d = _concrete_int("ball", d, "d")
    key_g, key_e = _split_pair(key)
    g = _generalized_normal(key_g, p, shape + (d,), dtype)
    e = _exponential(key_e, shape, dtype)
    p = lax.convert_element_type(jnp.asarray(p), dtype)
    radius = lax.pow(lax.add(jnp.sum(lax.pow(lax.abs(g), p), axis=-1), e), lax.div(1.0, p))
    return g / radius[..., None]


def _concrete_int(name, value, what):
    try:
        return int(value)
    except Exception as err:
        raise TypeError(f"{name}: {what} must be a concrete integer, got {value!r}") from err


def _rademacher(key, shape, dtype):
    coin = lax.convert_element_type(bernoulli(key, 0.5, shape), dtype)
    return lax.sub(lax.mul(coin, 2), 1)


# ---------------------------------------------------------------- counts by rejection


def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
    """Poisson(lam) integers: Knuth's product of uniforms below lam = 10, Hormann's
    transformed rejection (PTRS) above, as TensorFlow and NumPy do."""
    key = _sampler_key("poisson", key)
    dtype = _int_dtype("poisson", dtype)
    shape = np.shape(lam) if shape is None else shape_tuple(shape)
    lam = lax.convert_element_type(jnp.broadcast_to(jnp.asarray(lam), shape), dtypes.float32)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, 10.0))
    # Each branch runs on every element, with a harmless stand-in where the other one applies.
    lam_knuth = lax.select_n(use_knuth, jnp.zeros_like(lam), lam)
    lam_rejection = lax.select_n(use_knuth, lam, jnp.full_like(lam, 1e5))
    max_iters = int(dtypes.iinfo(dtype).max)
    samples = lax.select_n(use_knuth, _poisson_rejection(key, lam_rejection, shape, dtype, max_iters),
                           _poisson_knuth(key, lam_knuth, shape, dtype, max_iters))
    return lax.select_n(lax.eq(lam, 0.0), samples, jnp.zeros_like(samples))


def _poisson_knuth(key, lam, shape, dtype, max_iters):
    """The number of uniforms whose product stays above exp(-lam), counted in logs."""
    def body(state):
        i, k, key, log_product = state
        key, subkey = _split_pair(key)
        k = lax.select_n(lax.gt(log_product, lax.neg(lam)), k, lax.add(k, 1))
        log_product = lax.add(log_product, lax.log(_uniform(subkey, shape, dtypes.float32, 0.0, 1.0)))
        return i + 1, k, key, log_product

    def cond(state):
        i, _, _, log_product = state
        return lax.bitwise_and(jnp.any(lax.gt(log_product, lax.neg(lam))), lax.lt(i, max_iters))

    start = (jnp.asarray(0, dtype), jnp.zeros(shape, dtype), key, jnp.zeros(shape, dtypes.float32))
    return lax.sub(lax.while_loop(cond, body, start)[1], lax.full((), 1, dtype))


def _poisson_rejection(key, lam, shape, dtype, max_iters):
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(state):
        i, k_out, accepted, key = state
        key, u, v = _centered_and_unit_uniforms(key, shape, lam.dtype)
        u_shifted = 0.5 - lax.abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept_fast = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept_fast | (~reject & (s <= t))
        return i + 1, lax.select_n(accept, k_out, k), accepted | accept, key

    start = (jnp.asarray(0, dtype), jnp.full(shape, -1, lam.dtype), jnp.zeros(shape, bool), key)
    return lax.convert_element_type(lax.while_loop(_some_rejected(max_iters), body, start)[1], dtype)


def _centered_and_unit_uniforms(key, shape, dtype):
    """A rejection round's draws: the next key, a uniform on [-1/2, 1/2) and one on [0, 1)."""
    keys = _split(key, (3,))
    u = _uniform(keys[1], shape, dtype, 0.0, 1.0) - 0.5
    return keys[0], u, _uniform(keys[2], shape, dtype, 0.0, 1.0)


def _some_rejected(max_iters):
    """The loop condition of a rejection sampler whose state is (i, samples, accepted, key)."""
    def cond(state):
        i, _, accepted, _ = state
        return lax.bitwise_and(jnp.any(~accepted), i < max_iters)
    return cond


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats: inversion by geometric waiting times where
    n min(p, 1 - p) <= 10, Hormann's BTRS rejection elsewhere (as TensorFlow does)."""
    key = _sampler_key("binomial", key)
    dtype = _float_dtype("binomial", dtype)
    return _binomial(key, n, p, None if shape is None else shape_tuple(shape), dtype)


def _binomial(key, count, prob, shape, dtype):
    shape = _draw_shape("binomial", shape, count, prob)
    (prob,) = promote_dtypes_inexact(prob)
    count = jnp.broadcast_to(lax.convert_element_type(jnp.asarray(count), prob.dtype), shape)
    prob = jnp.broadcast_to(prob, shape)
    below_half = prob < 0.5
    q = lax.select_n(below_half, 1.0 - prob, prob)
    count_invalid = (count != count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_nan, q_negative = q != q, q < 0.0
    q = lax.select_n(q_nan | q_negative, q, jnp.full_like(q, 0.01))
    use_inversion = count_invalid | (count * q <= 10.0)
    count = lax.floor(count)   # as numpy does for a float count
    count_inv = lax.select_n(use_inversion, jnp.zeros_like(count), count)
    count_btrs = lax.select_n(use_inversion, count, jnp.full_like(count, 1e4))
    q_btrs = lax.select_n(use_inversion, q, jnp.full_like(q, 0.5))
    max_iters = float(dtypes.finfo(dtype).max)
    samples = lax.select_n(use_inversion, _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters),
                           _binomial_inversion(key, count_inv, q, shape, dtype, max_iters))
    invalid = q_negative | q_nan | count_invalid
    samples = lax.select_n(invalid, samples, jnp.full_like(samples, np.nan))
    samples = lax.select_n(count_inf & ~invalid, samples, jnp.full_like(samples, np.inf))
    mirrored = below_half | count_invalid | q_nan | count_inf
    return lax.select_n(mirrored, lax.sub(lax.convert_element_type(count, dtype), samples), samples)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
    """One less than the number of geometric waiting times that fit into count."""
    log1m_prob = lax.log1p(lax.neg(prob))

    def body(state):
        i, num_geom, geom_sum, key = state
        subkey, key = _split_pair(key)
        num_geom = lax.select_n(geom_sum <= count, num_geom, num_geom + 1)
        u = _uniform(subkey, shape, prob.dtype, 0.0, 1.0)
        return i + 1, num_geom, geom_sum + lax.ceil(lax.log(u) / log1m_prob), key

    def cond(state):
        i, _, geom_sum, _ = state
        return lax.bitwise_and(jnp.any(geom_sum <= count), i < max_iters)

    zeros = jnp.zeros(shape, prob.dtype)
    start = (jnp.asarray(0, dtypes.default_int_dtype()), zeros, zeros, key)
    return lax.convert_element_type(lax.while_loop(cond, body, start)[1] - 1, dtype)


# log(k!) - Stirling's approximation of it, for k = 0..9 (exactly tabulated, as in TF).
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k):
    table = jnp.array(_STIRLING_TAIL, dtype=k.dtype)
    clamped = lax.clamp(lax.full((), 0, k.dtype), k, lax.full((), 9, k.dtype))
    kp1_sq = (clamped + 1) * (clamped + 1)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1_sq) / kp1_sq) / (clamped + 1)
    tabulated = table[lax.convert_element_type(lax.floor(clamped), dtypes.int32)]
    return lax.select_n(k <= 9, series, tabulated)


def _btrs(key, count, prob, shape, dtype, max_iters):
    """Transformed rejection with squeeze (Hormann, 1993)."""
    stddev = lax.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = lax.floor((count + 1) * prob)

    def body(state):
        i, k_out, accepted, key = state
        key, u, v = _centered_and_unit_uniforms(key, shape, prob.dtype)
        us = 0.5 - lax.abs(u)
        accept_fast = (us >= 0.07) & (v <= v_r)
        k = lax.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        log_v = lax.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * lax.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * lax.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * lax.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m)
                 - _stirling_tail(k) - _stirling_tail(count - k))
        accept = accept_fast | (~reject & (log_v <= bound))
        return i + 1, lax.select_n(accept, k_out, k), accepted | accept, key

    start = (jnp.asarray(0, dtypes.default_int_dtype()), jnp.full(shape, -1, prob.dtype),
             jnp.zeros(shape, bool), key)
    return lax.convert_element_type(lax.while_loop(_some_rejected(max_iters), body, start)[1], dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of n draws over the categories of p's last axis: a chain of binomials,
    each category taking its share of what the ones before it left."""
    key = _sampler_key("multinomial", key)
    dtype = _float_dtype("multinomial", dtype)
    n, p = promote_dtypes_inexact(n, p)
    shape = p.shape if shape is None else shape_tuple(shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, 1, remaining)

    def take_share(remainder, ratio_and_key):
        ratio, subkey = ratio_and_key
        count = _binomial(subkey, remainder, jnp.clip(ratio, 0, 1), None, remainder.dtype)
        return remainder - count, count

    keys = _split(key, (ratios.shape[0],))
    _, counts = lax.scan(take_share, n, (ratios, keys), unroll=unroll)
    return lax.convert_element_type(jnp.moveaxis(counts, 0, -1), dtype)


def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
    """The number of Bernoulli(p) trials up to the first success (integers >= 1)."""
    key = _sampler_key("geometric", key)
    dtype = _int_dtype("geometric", dtype)
    shape = _draw_shape("geometric", shape, p)
    (p,) = promote_dtypes_inexact(p)
    u = _uniform(key, shape, p.dtype, 0.0, 1.0)
    log_u = lax.log(jnp.where(u == 0, 1, u))   # as JAX: u = 0 counts as 1, never as -inf
    log_q = jnp.broadcast_to(lax.log1p(lax.neg(p)), shape)
    return lax.convert_element_type(lax.floor(lax.div(log_u, log_q)) + 1, dtype)


# ---------------------------------------------------------------- from normals and uniforms


def maxwell(key, shape=(), dtype=None, *, out_sharding=None):
    """Maxwell floats: the length of a standard normal 3-vector."""
    key = _sampler_key("maxwell", key)
    return _maxwell(key, shape_tuple(shape), _float_dtype("maxwell", dtype))


def _maxwell(key, shape, dtype):
    return jnp.linalg.norm(_normal(key, shape + (3,), dtype), axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Maxwell floats with a random sign, scaled by `scale` and shifted by `loc`."""
    key = _sampler_key("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    param_shape = broadcast_shapes(np.shape(loc), np.shape(scale))
    shape = (shape_tuple(shape) or param_shape) + param_shape
    key_maxwell, key_sign = _split_pair(key)
    signed = lax.mul(_rademacher(key_sign, shape, dtype), _maxwell(key_maxwell, shape, dtype))
    return signed * scale + loc


def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
    """Inverse Gaussian floats with the given mean (and shape parameter 1)."""
    key = _sampler_key("wald", key)
    dtype = _float_dtype("wald", dtype)
    shape = _draw_shape("wald", shape, mean)
    key_v, key_z = _split_pair(key)
    mean = jnp.broadcast_to(lax.convert_element_type(jnp.asarray(mean), dtype), shape)
    y = lax.integer_pow(_normal(key_v, shape, dtype), 2)
    z = _uniform(key_z, shape, dtype, 0.0, 1.0)
    mean_sq = lax.integer_pow(mean, 2)
    root = lax.sqrt(4 * mean * y + mean_sq * lax.integer_pow(y, 2))
    x = mean + mean_sq * y / 2 - mean / 2 * root
    return lax.select_n(z <= mean / (mean + x), mean_sq / x, x)


def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
    """Floats with a triangular density on [left, right] peaking at mode (inverse CDF)."""
    key = _sampler_key("triangular", key)
    dtype = _float_dtype("triangular", dtype)
    shape = _draw_shape("triangular", shape, left, mode, right)
    left, mode, right = (_as_param("triangular", v, dtype, shape) for v in (left, mode, right))
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    rising = left + lax.sqrt(u * (right - left) * (mode - left))
    falling = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select_n(u < (mode - left) / (right - left), falling, rising)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky", *, out_sharding=None):
    """Normal vectors with the given mean (..., n) and covariance (..., n, n).

    method "svd" or "eigh" factors a singular covariance too; both factor it by an
    SVD (for a symmetric positive semi-definite matrix the eigendecomposition, here
    in ascending order as eigh returns it).
    """
    key = _sampler_key("multivariate_normal", key)
    mean, cov = promote_dtypes_inexact(mean, cov)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dtype = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cov.shape}.")
    batch = broadcast_shapes(mean.shape[:-1], cov.shape[:-2]) if shape is None else shape_tuple(shape)
    _check_shape("normal", batch, mean.shape[:-1], cov.shape[:-2])
    factor = _covariance_factor(cov, method)
    z = _normal(key, batch + (n,), dtype)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


def _covariance_factor(cov, method):
    if method == "cholesky":
        return jnp.linalg.cholesky(cov)
    u, s, _ = jnp.linalg.svd(cov)
    if method == "eigh":
        u, s = u[..., ::-1], s[..., ::-1]
    return u * lax.sqrt(s)[..., None, :]


def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
    """Haar-random matrices with orthonormal columns (n >= m) or rows: n x m, square by default.

    The Q factor of a normal matrix, made unique by giving R a positive diagonal
    (Mezzadri, 2007); here Q comes from Cholesky QR applied twice, which reaches
    Householder's orthogonality for the well-conditioned matrices normals make.
    """
    key = _sampler_key("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype)
    n = _concrete_int("orthogonal", n, "n")
    m = n if m is None else _concrete_int("orthogonal", m, "m")
    z = _normal(key, shape_tuple(shape) + (max(n, m), min(n, m)), dtype)
    q = _orthonormal_columns(_orthonormal_columns(z))
    return jnp.swapaxes(q, -1, -2) if n < m else q


def _orthonormal_columns(z):
    """z R^-1 for the upper-triangular R with positive diagonal and R^T R = z^T z."""
    gram = jnp.matmul(jnp.swapaxes(z, -1, -2), z)
    lower = lax.cholesky(gram)
    return lax.triangular_solve(lower, z, left_side=False, lower=True, transpose_a=True)
