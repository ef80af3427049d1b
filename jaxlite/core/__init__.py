"""The core: dtypes, abstract values, the IR, primitives, tracing and pytrees.

Nothing here imports from lax, transforms or lower; they all build on this.
"""
from jaxlite.core.abstract import ShapedArray, ShapeDtypeStruct
from jaxlite.core.array import Array
from jaxlite.core.config import config
from jaxlite.core.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, typecheck
from jaxlite.core.primitive import Primitive
from jaxlite.core.staging import eval_jaxpr, eval_shape, make_jaxpr
from jaxlite.core.trace import Trace, Tracer, current_trace, set_current_trace
