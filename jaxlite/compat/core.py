"""`jax.core` under install_as_jax: JAX's public core names, mapped onto jaxlite's own."""
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Literal, Var
from jaxlite.core.primitive import Primitive
from jaxlite.core.trace import Trace, Tracer
