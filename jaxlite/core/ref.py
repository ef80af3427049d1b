"""Mutable array references (`jax.new_ref`, `jax.Ref`, `jax.freeze`).

A Ref holds an array value that `ref[idx] = v` replaces and `ref[idx]` reads. jaxlite
discharges the state while tracing: a write binds a functional update (`.at[idx].set`)
in the trace that is current, and the Ref then holds its result. So a Ref created and
used inside a transformed function (jit, grad, vmap) costs nothing at run time beyond
the updates themselves, and needs no effect in the IR.

A Ref passed as an argument to a jitted function is read as one more input and its final
value is one more output, written back into the Ref after the call (transforms/jit.py).
What this design cannot express is a write from inside a nested trace (a loop body, a
vmap or grad of a function that did not create the Ref) into a Ref of an outer one:
that raises, as does a jitted function that closes over a Ref instead of taking it as an
argument (its value would be baked into the cached program).
"""
import threading
from contextlib import contextmanager

import numpy as np

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.trace import EVAL_TRACE, Tracer, current_trace


class AbstractRef:
    """The type of a Ref: `Ref{float32[3]}`, as jax.typeof prints it."""

    def __init__(self, inner_aval):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)

    def __eq__(self, other):
        return isinstance(other, AbstractRef) and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash(("Ref", self.inner_aval))

    def __str__(self):
        return f"Ref{{{self.inner_aval.strip_weak_type()}}}"

    __repr__ = __str__


class _Staging(threading.local):
    depth = 0       # how many jit traces (whose programs are cached) are under way


_staging = _Staging()


@contextmanager
def staging_a_cached_program():
    """While jit traces: a closed-over Ref read now would be baked into the program."""
    _staging.depth += 1
    try:
        yield
    finally:
        _staging.depth -= 1


class Ref:
    """A mutable reference to an array: read with `ref[...]`, write with `ref[...] = value`."""

    __slots__ = ("_value", "_scope")

    def __init__(self, value, scope):
        self._value, self._scope = value, scope

    aval = property(lambda self: AbstractRef(_aval_of(self._value)))
    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: len(self._value.shape))
    size = property(lambda self: int(np.prod(self._value.shape)))

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, index):
        self._check_read()
        return self._value if _whole(index) else self._value[index]

    def __setitem__(self, index, value):
        self._check_write(value)
        # The update is built from jaxlite.numpy, which sits above core: imported here.
        from jaxlite import lax, numpy as jnp
        value = as_array_argument(value)
        if _whole(index):
            self._value = lax.convert_element_type(jnp.broadcast_to(value, self.shape), self.dtype)
        else:
            self._value = self._value.at[index].set(value)

    def get(self, index=...):
        return self[index]

    def set(self, value, index=...):
        self[index] = value

    def swap(self, value, index=...):
        old = self[index]
        self[index] = value
        return old

    def addupdate(self, delta, index=...):
        self[index] = self[index] + delta

    def __repr__(self):
        if isinstance(self._value, Tracer):
            return f"Ref({self.aval})"
        return "Ref(" + repr(self._value)[len("Array("):]

    def _check_read(self):
        if _staging.depth and self._scope is EVAL_TRACE and not isinstance(self._value, Tracer):
            raise ValueError(
                f"a jitted function read the mutable array reference of type {self.aval} from its "
                "closure: jaxlite would bake its current value into the compiled program. Pass the "
                "reference as an argument of the jitted function instead.")

    def _check_write(self, value):
        self._check_read()
        if current_trace() is not self._scope and (isinstance(value, Tracer) or current_trace() is not EVAL_TRACE):
            raise ValueError(
                f"performing a set/swap operation on the mutable array reference of type {self.aval} "
                f"from inside {current_trace().describe()}, a transformation of a function that did "
                "not create it: jaxlite can write a reference only at the level that created it (or "
                "in a jitted function that takes it as an argument). Move the reference into the "
                "transformed function, or pass it in and return the new value.")


def discharged(flat_fun, positions):
    """flat_fun, taking the values of the Refs at `positions` and returning their final
    values after its outputs: what a staged function with Ref arguments computes."""
    if not positions:
        return flat_fun

    def fun(*leaves):
        leaves = list(leaves)
        refs = [Ref(leaves[i], current_trace()) for i in positions]
        for i, ref in zip(positions, refs):
            leaves[i] = ref
        return flat_fun(*leaves) + [ref[...] for ref in refs]
    return fun


def _whole(index):
    return index is Ellipsis or index == ()


def _aval_of(value):
    return value.aval if isinstance(value, (Array, Tracer)) else ShapedArray(np.shape(value), value.dtype)


def new_ref(init_val, *, memory_space=None, kind=None):
    """A new mutable reference holding (a copy of) `init_val`."""
    value = as_array_argument(init_val)
    if isinstance(value, Array):
        value = Array(np.array(value._value), value.weak_type)
    return Ref(value, current_trace())


def freeze(ref):
    """The array a reference holds, as an immutable value."""
    if not isinstance(ref, Ref):
        raise TypeError(f"freeze expects a mutable array reference (jax.new_ref), got {type(ref).__name__}")
    return ref[...]
