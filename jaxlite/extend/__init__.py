"""jaxlite.extend: the interfaces for libraries that extend the system (as jax.extend)."""
from jaxlite.extend import core, linear_util, random, source_info_util
