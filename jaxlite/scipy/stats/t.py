"""Student's t distribution with df degrees of freedom."""
import math as _math

from jaxlite import numpy as _jnp
from jaxlite.scipy import special as _special
from jaxlite.scipy.stats._common import standardized as _standardized


def logpdf(x, df, loc=0, scale=1):
    z, log_scale, df = _standardized("t.logpdf", x, loc, scale, df)
    normalizer = (_special.gammaln((df + 1) / 2) - _special.gammaln(df / 2)
                  - 0.5 * _jnp.log(df * _math.pi))
    return normalizer - (df + 1) / 2 * _jnp.log1p(z * z / df) - log_scale


def pdf(x, df, loc=0, scale=1):
    return _jnp.exp(logpdf(x, df, loc, scale))
