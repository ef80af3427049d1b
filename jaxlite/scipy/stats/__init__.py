"""jaxlite.scipy.stats: scipy.stats's distributions as JAX offers them (a module of
functions per distribution), and the statistics sem, rankdata and mode."""
from jaxlite.scipy.stats import (bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon,
                                 gamma, gennorm, geom, gumbel_l, gumbel_r, laplace, logistic,
                                 multinomial, multivariate_normal, nbinom, norm, pareto, poisson, t,
                                 truncnorm, uniform, vonmises, wrapcauchy)
from jaxlite.scipy.stats._kde import gaussian_kde
from jaxlite.scipy.stats._statistics import mode, rankdata, sem
