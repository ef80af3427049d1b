"""jax._src.core, for flax (its fp8 ops: the public jax.core names) and numpyro (trace_state_clean)."""
from jaxlite.compat.core import *  # noqa: F401,F403 -- this module is an alias of that one
from jaxlite.compat.core import ShapedArray
from jaxlite.core.trace import EVAL_TRACE as _EVAL_TRACE
from jaxlite.core.trace import current_trace as _current_trace


def trace_state_clean():
    """Whether no transformation is tracing now (numpyro checks it before running MCMC)."""
    return _current_trace() is _EVAL_TRACE
