"""jaxlite.extend.source_info_util: which source files count as internal (as jax.extend.source_info_util)."""
from jaxlite.core.errors import register_exclusion
