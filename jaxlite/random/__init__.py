"""jaxlite.random: JAX's default threefry PRNG and its samplers, bit for bit where JAX's
algorithm is exact float arithmetic (see _core for the key scheme, _keys for typed keys,
_gamma for gamma)."""
from jaxlite.random._core import (
    PRNGKey, bernoulli, bits, categorical, cauchy, choice, clone, exponential, fold_in, gumbel,
    key, key_data, key_dtype, key_impl, laplace, logistic, lognormal, normal, pareto, permutation,
    rademacher, randint, rayleigh, split, truncated_normal, uniform, weibull_min, wrap_key_data)
from jaxlite.random._distributions import (
    ball, beta, binomial, chisquare, dirichlet, double_sided_maxwell, f, gamma, generalized_normal,
    geometric, loggamma, maxwell, multinomial, multivariate_normal, orthogonal, poisson, t,
    triangular, wald)
from jaxlite.random._gamma import random_gamma_p
from jaxlite.random import _rbg  # noqa: F401 -- registers the rbg implementations
