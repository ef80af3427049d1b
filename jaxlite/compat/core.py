"""`jax.core` under install_as_jax: JAX's public core names, mapped onto jaxlite's own."""
import numpy as _np

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Literal, Var
from jaxlite.core.primitive import Primitive
from jaxlite.core.trace import Trace, Tracer
from jaxlite.core.staging import abstractify as _abstractify
from jaxlite.core.staging import eval_jaxpr
from jaxlite.core.trace import ensure_compile_time_eval

# The abstract value of an argument by its Python type, as JAX's registry: TensorFlow
# Probability registers its ndarray subclass here; jaxlite takes any ndarray subclass as one.
pytype_aval_mappings = {_np.ndarray: _abstractify}
AbstractValue = ShapedArray
