"""jaxlite.extend.core: primitives and jaxpr types for code that defines its own (jax.extend.core)."""
from jaxlite.core.ir import ClosedJaxpr, Eqn as JaxprEqn, Jaxpr, Literal, Var
from jaxlite.core.ir import typecheck as check_jaxpr
from jaxlite.core.primitive import Primitive
from jaxlite.core.staging import abstractify as _abstractify
from jaxlite.core.staging import jaxpr_as_fun


def valid_jaxtype(x):
    """Whether x can be an argument of a transformed function (an array, tracer or scalar of a supported dtype)."""
    try:
        _abstractify(x)
    except TypeError:
        return False
    return True
