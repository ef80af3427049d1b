"""jax._src.traceback_util, for equinox and flax: their frames are left out of error tracebacks too."""
from jaxlite.core.errors import _is_internal, api_boundary, excluded_paths as _exclude_paths
from jaxlite.core.errors import register_exclusion


def include_frame(frame):
    """Whether a traceback keeps this frame (it is the user's code)."""
    return not _is_internal(frame.f_code.co_filename)
