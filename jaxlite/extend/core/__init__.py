"""jaxlite.extend.core: primitives and jaxpr types for code that defines its own (jax.extend.core)."""
import weakref as _weakref

from jaxlite.core.effects import Effect, Effects, no_effects
from jaxlite.core.ir import ClosedJaxpr, Eqn as JaxprEqn, Jaxpr, Literal, Var
from jaxlite.core.ir import typecheck as check_jaxpr
from jaxlite.core.primitive import Primitive
from jaxlite.core.staging import abstractify as _abstractify
from jaxlite.core.staging import jaxpr_as_fun
from jaxlite.core.trace import current_trace as _current_trace


def valid_jaxtype(x):
    """Whether x can be an argument of a transformed function (an array, tracer or scalar of a supported dtype)."""
    try:
        _abstractify(x)
    except TypeError:
        return False
    return True


def mapped_aval(size, axis, aval):
    """The type of one slice of `aval` along `axis` (which has `size` elements); None: unmapped."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has size {aval.shape[axis]}, not {size}")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
    """The type of `size` values of type `aval` stacked along a new `axis`; None: unmapped."""
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


class _OpaqueTraceState:
    """Which trace was current: equal for the same trace, so code can tell whether it still runs
    in the transformation it started in (flax checks this for its scopes)."""

    def __init__(self, trace):
        self._trace = _weakref.ref(trace)

    def __eq__(self, other):
        return isinstance(other, _OpaqueTraceState) and self._trace() is other._trace() is not None

    def __hash__(self):
        return id(self._trace())


def get_opaque_trace_state(convention=None):
    return _OpaqueTraceState(_current_trace())
