"""Mutable array references (`jax.new_ref`, `jax.Ref`, `jax.freeze`).

A Ref holds an array value that `ref[idx] = v` replaces and `ref[idx]` reads. jaxlite
discharges the state while tracing: a write binds a functional update (`.at[idx].set`)
in the trace that is current, and the Ref then holds its result. So a Ref created and
used inside a transformed function (jit, grad, vmap) costs nothing at run time beyond
the updates themselves, and needs no effect in the IR.

A Ref passed as an argument to a jitted function is read as one more input and its final
value is one more output, written back into the Ref after the call (transforms/jit.py);
so is a Ref the jitted function closes over, lifted when it first touches it. vmap maps
a Ref argument over its axis the same way (batching.vmap). A scan (so fori_loop) or
while_loop whose functions touch outer Refs threads their values through its carry: the
body is traced once to find them, then again with them in the carry
(lax/control_flow/loops.py); a cond's branches take them as operands and return their new
values (conditionals.py). A write from another nested trace (vmap or grad of a function
that did not create the Ref) into a Ref of an outer one raises.
"""
import itertools
import threading
from contextlib import contextmanager

import numpy as np

from jaxlite.core.abstract import AbstractValue, ShapedArray
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.trace import EVAL_TRACE, Tracer, current_trace


class AbstractRef(AbstractValue):
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


class _LiftContext:
    """One jit trace under way: the outer Refs its function reads or writes, each lifted
    to one more input (its value at the call) and output (its final value)."""

    def __init__(self, trace):
        self.trace, self.refs, self.proxies = trace, [], {}
        self.started = next(_serials)     # Refs numbered below were made outside it

    def proxy_for(self, ref, outer_stack):
        proxy = self.proxies.get(id(ref))
        if proxy is None:
            scope = self.trace if self.trace is not None else current_trace()
            proxy = Ref(self.new_value(ref._resolved(outer_stack)._value), scope)
            self.proxies[id(ref)] = proxy
            self.refs.append(ref)
        return proxy

    def new_value(self, outer_value):
        return self.trace.new_arg(_aval_of(outer_value))

    def final_values(self):
        return [self.proxies[id(ref)]._value for ref in self.refs]


class _Discovery(_LiftContext):
    """A loop body traced once to learn which outer Refs it touches: they read their outer
    value, and writes go to a stand-in that is thrown away with the trace."""

    def __init__(self):
        super().__init__(None)

    def proxy_for(self, ref, outer_stack):
        # One stand-in per traced function: a cond traces each of its branches in turn.
        proxy = self.proxies.get(id(ref))
        if proxy is not None and proxy._scope is not current_trace():
            del self.proxies[id(ref)]
            self.refs.remove(ref)
        return super().proxy_for(ref, outer_stack)

    def new_value(self, outer_value):
        return outer_value


class _Bound(_LiftContext):
    """A loop body traced again with those Refs' values riding along in the carry."""

    def __init__(self, refs, values):
        super().__init__(current_trace())
        for ref, value in zip(refs, values):
            self.proxies[id(ref)] = Ref(value, self.trace)
            self.refs.append(ref)


# Refs and lift contexts in the order they are made: a Ref made before a context is outside it.
_serials = itertools.count()


class _Lifting(threading.local):
    def __init__(self):
        self.stack = []     # the jit traces and loop bodies under way, innermost last


_lifting = _Lifting()


@contextmanager
def _pushed(context):
    _lifting.stack.append(context)
    try:
        yield context
    finally:
        _lifting.stack.pop()


def lifting_closed_over_refs(flat_fun, found):
    """flat_fun traced by jit, returning after its outputs the final values of the outer Refs
    it touched; `found` receives those Refs (the caller passes their values, writes back)."""
    def fun(*args):
        with _pushed(_LiftContext(current_trace())) as context:
            outs = flat_fun(*args)
        found.extend(context.refs)
        return outs + context.final_values()
    return fun


def discovering_outer_refs():
    """`with discovering_outer_refs() as found:` around tracing a loop body: `found.refs`
    lists the outer Refs it touched."""
    return _pushed(_Discovery())


def binding_refs(refs, values):
    """`with binding_refs(refs, values) as bound:` while tracing a body that threads the Refs'
    values through its carry; `bound.final_values()` are their values at the end."""
    return _pushed(_Bound(refs, values))


class Ref:
    """A mutable reference to an array: read with `ref[...]`, write with `ref[...] = value`."""

    __slots__ = ("_value", "_scope", "_serial")

    def __init__(self, value, scope):
        self._value, self._scope, self._serial = value, scope, next(_serials)

    aval = property(lambda self: AbstractRef(_aval_of(self._value)))
    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: len(self._value.shape))
    size = property(lambda self: int(np.prod(self._value.shape)))

    def unsafe_buffer_pointer(self):
        """The address of the buffer holding the reference's current value."""
        return np.asarray(self._value).ctypes.data

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, index):
        ref = self._in_current_jit()
        return ref._value if _whole(index) else ref._value[index]

    def __setitem__(self, index, value):
        ref = self._in_current_jit()
        if ref is not self:
            ref[index] = value
            return
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

    def _in_current_jit(self):
        """This Ref, or the stand-in the innermost jit trace or loop body under way holds
        for it: a Ref from outside it (a closed-over one) is lifted into it."""
        return self._resolved(_lifting.stack)

    def _resolved(self, stack):
        if not stack or self._scope is stack[-1].trace or self._serial > stack[-1].started:
            return self
        return stack[-1].proxy_for(self, stack[:-1])

    def _check_write(self, value):
        if current_trace() is not self._scope and (isinstance(value, Tracer) or current_trace() is not EVAL_TRACE):
            raise ValueError(
                f"performing a set/swap operation on the mutable array reference of type {self.aval} "
                f"from inside {current_trace().describe()}, a transformation of a function that did "
                "not create it: jaxlite can write a reference only at the level that created it (or "
                "in a jitted function). Move the reference into the transformed function, or pass it in "
                "and return the new value.")


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
    if type(value) is Array:
        value = Array(np.array(value._value), value.weak_type)
    return Ref(value, current_trace())


def freeze(ref):
    """The array a reference holds, as an immutable value."""
    if not isinstance(ref, Ref):
        raise TypeError(f"freeze expects a mutable array reference (jax.new_ref), got {type(ref).__name__}")
    return ref[...]
