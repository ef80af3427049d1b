"""jax._src.dtypes, for equinox and flax: the public jax.dtypes module, and the dtype classes flax's
fp8 module subclasses."""
import numpy as _np

from jaxlite.dtypes import *  # noqa: F401,F403 -- this module is an alias of that one
from jaxlite.dtypes import TypePromotionError
from jaxlite.core.dtypes import ExtendedDType

DType = _np.dtype
