"""Vectorization (vmap) by a batching trace.

A batched value carries the position of its batch dimension (`dim`, or None when
the value is the same for every batch element). Rule table, filled in next to
each primitive:
  batch_rules[p](args, dims, **params) -> (out, out_dim)   (lists for multiple results)
Rules are called only when at least one argument is batched.

Primitives that need the mapped axis itself (collectives such as psum, and the
control-flow primitives, whose bodies may hold collectives) register instead in
  axis_batch_rules[p](axis, args, dims, **params) -> (out, out_dim)
where `axis` is the BatchTrace (its axis_size and axis_name). These rules are
called even when no argument is batched: psum of an unbatched value still sums
over the axis, and axis_index has no arguments at all.
"""
import functools
import threading
from contextlib import contextmanager

from jaxlite.core import errors
from jaxlite.core.array import as_array_argument
from jaxlite.core.ref import Ref, discharged
from jaxlite.core.trace import Trace, Tracer, current_trace, set_current_trace

batch_rules = {}
axis_batch_rules = {}

not_mapped = None


class BatchTracer(Tracer):
    __slots__ = ("val", "dim")

    def __init__(self, trace, val, dim):
        self._trace, self.val, self.dim = trace, val, dim

    @property
    def aval(self):
        aval = self.val.aval
        return aval if self.dim is None else aval.update(shape=logical_shape(aval, self.dim))

    def __repr__(self):
        return f"VmapTracer(aval={self.aval}, batched={self.val.aval})"


class BatchTrace(Trace):
    def __init__(self, parent, axis_size, axis_name=None):
        self.parent, self.axis_size, self.axis_name = parent, axis_size, axis_name

    def describe(self):
        name = f" over axis {self.axis_name!r}" if self.axis_name is not None else ""
        return f"vmap{name}"

    def value_and_dim(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.dim
        return x, not_mapped

    def process_primitive(self, primitive, args, params):
        vals, dims = zip(*map(self.value_and_dim, args)) if args else ((), ())
        with set_current_trace(self.parent):
            axis_rule = axis_batch_rules.get(primitive)
            if axis_rule is not None:
                out, out_dim = axis_rule(self, list(vals), list(dims), **params)
            elif all(d is None for d in dims):
                return primitive.bind(*vals, **params)
            else:
                out, out_dim = _batch_rule(primitive)(list(vals), list(dims), **params)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim)


def _batch_rule(primitive):
    rule = batch_rules.get(primitive)
    if rule is None:
        raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
    return rule


class _AxisEnv(threading.local):
    sizes = ()    # (name, size, binder) of the enclosing named vmaps and shard_maps, innermost last


_axis_env = _AxisEnv()


@contextmanager
def extend_axis_env(name, size, binder=None):
    """Make a vmap's axis name visible to collectives while its function is traced.

    The names are dynamic scope, not trace parents, so a function staged inside a
    vmap (say a loop body) can still refer to the axis; the batching trace
    resolves the reference once the staged computation is batched. A shard_map
    binds its mesh axes here too, with itself as `binder`: collectives over them
    become its mesh collectives instead.
    """
    previous = _axis_env.sizes
    if name is not None:
        _axis_env.sizes = previous + ((name, size, binder),)
    try:
        yield
    finally:
        _axis_env.sizes = previous


def _innermost_binding(name):
    for binding in reversed(_axis_env.sizes):
        if binding[0] == name:
            return binding
    raise NameError(f"unbound axis name: {name}")


def bound_axis_size(name):
    """The size of the innermost enclosing vmap (or shard_map axis) named `name`; NameError if none."""
    return _innermost_binding(name)[1]


def axis_binder(name):
    """The shard_map whose mesh axis is the innermost binding of `name`, or None for a vmap."""
    return _innermost_binding(name)[2]


def batch_flat(flat_fun, vals, dims, axis_size, axis_name=None):
    """Run flat_fun on batched inputs; returns (outputs, their batch dims)."""
    trace = BatchTrace(current_trace(), axis_size, axis_name)
    try:
        inputs = [BatchTracer(trace, v, d) for v, d in zip(vals, dims)]
        with set_current_trace(trace), extend_axis_env(axis_name, axis_size):
            outputs = flat_fun(*inputs)
        pairs = [trace.value_and_dim(o) for o in outputs]
    finally:
        trace.finish()
    return [v for v, _ in pairs], [d for _, d in pairs]


# ---------------------------------------------------------------- rule helpers
# The few array operations needed here come from lax, which registers its rules
# into this module's table; so lax is imported inside the functions.

def move_dim(x, src, dst):
    """Move axis `src` of x to position `dst` (src None: broadcast a new axis of size)."""
    from jaxlite import lax
    if src == dst:
        return x
    perm = [d for d in range(x.ndim) if d != src]
    perm.insert(dst, src)
    return lax.transpose(x, tuple(perm))


def bdim_at_front(x, dim, size):
    """x with its batch dimension first, materializing one for an unbatched x."""
    from jaxlite import lax
    if dim is None:
        return lax.broadcast(x, (size,))
    return move_dim(x, dim, 0)


def batch_size(vals, dims):
    return next(v.shape[d] for v, d in zip(vals, dims) if d is not None)


def vectorized_rule(primitive):
    """Unary elementwise: the output is batched where the input is."""
    def rule(args, dims, **params):
        return primitive.bind(*args, **params), dims[0]
    batch_rules[primitive] = rule


def broadcasting_rule(primitive):
    """n-ary elementwise: move every batch dim to the front, then apply.

    Elementwise primitives accept rank-0 operands beside full-shape ones, so an
    unbatched scalar stays as it is, while a batched scalar must be broadcast to
    the full shape behind its batch dimension.
    """
    def rule(args, dims, **params):
        from jaxlite import lax
        size = batch_size(args, dims)
        full_shape = max((logical_shape(x, d) for x, d in zip(args, dims)), key=len)
        moved = []
        for x, d in zip(args, dims):
            if d is None and x.ndim == 0:
                moved.append(x)
                continue
            y = bdim_at_front(x, d, size)
            if y.ndim - 1 < len(full_shape):
                y = lax.broadcast_in_dim(y, (size,) + full_shape, (0,))
            moved.append(y)
        out = primitive.bind(*moved, **params)
        return out, ([0] * len(out) if primitive.multiple_results else 0)
    batch_rules[primitive] = rule


def logical_shape(x, dim):
    """The shape each batch element sees."""
    return x.shape if dim is None else x.shape[:dim] + x.shape[dim + 1:]


# ---------------------------------------------------------------- the vmap API

def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorize `fun` over the axes `in_axes` of its arguments.

    in_axes/out_axes are an int, None, or a pytree prefix of the arguments/outputs;
    keyword arguments are always mapped over their axis 0.
    """
    errors.check_callable(fun, "vmap")
    from jaxlite.core.staging import flatten_fun
    from jaxlite.core.tree_util import tree_flatten, tree_unflatten

    @errors.api_boundary
    def batched(*args, **kwargs):
        flat_args, in_tree = tree_flatten((args, kwargs))
        # A Ref argument stands for its value, mapped over its axis; its final value is
        # written back after the call, with the batch axis where it came from.
        refs = [(i, x) for i, x in enumerate(flat_args) if isinstance(x, Ref)]
        flat_args = [as_array_argument(x[...] if isinstance(x, Ref) else x) for x in flat_args]
        dims = _flat_in_axes(in_axes, args, kwargs)
        dims = [_canonical_dim(d, x, "in_axes") for d, x in zip(dims, flat_args)]
        size = _mapped_size(flat_args, dims, axis_size, lambda: _leaf_names(fun, args, kwargs))
        flat_fun, out_tree = flatten_fun(fun, in_tree)
        outs, out_dims = batch_flat(discharged(flat_fun, [i for i, _ in refs]), flat_args, dims, size, axis_name)
        if refs:
            finals, final_dims = outs[len(outs) - len(refs):], out_dims[len(outs) - len(refs):]
            outs, out_dims = outs[:len(outs) - len(refs)], out_dims[:len(outs) - len(refs)]
            for (i, ref), value, d in zip(refs, finals, final_dims):
                _write_back_batched(ref, value, d, dims[i], size)
        out_structure = tree_unflatten(out_tree[0], outs)
        targets = _flat_out_axes(out_axes, out_structure)
        return tree_unflatten(out_tree[0], [
            _place(o, d, target, size) for o, d, target in zip(outs, out_dims, targets)])

    batched.__name__ = f"vmap({getattr(fun, '__name__', 'fun')})"
    batched.__wrapped__ = fun
    return batched


def _write_back_batched(ref, value, dim, ref_dim, size):
    if ref_dim is None and dim is not None:
        raise ValueError(f"vmap wrote a batched value into the unbatched mutable array reference of type "
                         f"{ref.aval} (in_axes None): map the reference too, or write an unbatched value.")
    ref[...] = value if ref_dim is None else _place(value, dim, ref_dim, size)


def _flat_in_axes(in_axes, args, kwargs):
    from jaxlite.core.tree_util import broadcast_prefix
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding "
                         f"to the positional arguments passed to the function, but got "
                         f"len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    try:
        return broadcast_prefix((in_axes, 0), (args, kwargs))
    except ValueError as err:
        raise ValueError(f"vmap in_axes specification must be a tree prefix of the arguments: {err}") from None


def _flat_out_axes(out_axes, outputs):
    from jaxlite.core.tree_util import broadcast_prefix
    try:
        return broadcast_prefix(out_axes, outputs)
    except ValueError as err:
        raise ValueError(f"vmap out_axes specification must be a tree prefix of the outputs: {err}") from None


def _canonical_dim(d, x, what):
    if d is None:
        return None
    ndim = len(getattr(x, "shape", ()))
    if not isinstance(d, int) or not -ndim <= d < ndim:
        raise ValueError(f"vmap was requested to map its argument along axis {d}, which implies "
                         f"that its rank should be at least {d + 1 if isinstance(d, int) and d >= 0 else abs(d) if isinstance(d, int) else '?'}, "
                         f"but is only {ndim} (its shape is {tuple(getattr(x, 'shape', ()))})")
    return d % ndim


def _mapped_size(flat_args, dims, axis_size, leaf_names):
    sizes = {x.shape[d] for x, d in zip(flat_args, dims) if d is not None}
    if len(sizes) > 1:
        shown = "".join(f"\n  * axis {d} of argument {name} of type {x.aval.str_short()} has size {x.shape[d]}"
                        for x, d, name in zip(flat_args, dims, leaf_names()) if d is not None)
        raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped:{shown}")
    if sizes:
        return sizes.pop()
    if axis_size is None:
        raise ValueError("vmap must have at least one non-None value in in_axes, "
                         "or be given axis_size")
    return axis_size


def _leaf_names(fun, args, kwargs):
    """Each argument leaf as the user would write it: `x['w']`, `args[2]`, `kwargs['y']`."""
    import inspect
    from jaxlite.core.tree_util import keystr, tree_leaves_with_path
    try:
        parameters = [p.name for p in inspect.signature(fun).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    names = []
    for i, arg in enumerate(args):
        base = parameters[i] if i < len(parameters) else f"args[{i}]"
        names += [base + keystr(path) for path, _ in tree_leaves_with_path(arg)]
    return names + ["kwargs" + keystr(path) for path, _ in tree_leaves_with_path(kwargs)]


def _place(x, dim, target, size):
    """Move an output's batch dimension to where out_axes asks for it."""
    from jaxlite.lax.base import as_operand
    x = as_operand(x)
    if target is None:
        if dim is not None:
            raise ValueError("vmap has mapped output but out_axes is None")
        return x
    out_ndim = x.ndim + (dim is None)
    if not -out_ndim <= target < out_ndim:
        raise ValueError(f"vmap out_axes={target} is out of bounds for an output of rank "
                         f"{out_ndim} (the batched output; its rank without the batch axis "
                         f"is {out_ndim - 1})")
    target %= out_ndim
    if dim is None:
        x = bdim_at_front(x, None, size)
        dim = 0
    return move_dim(x, dim, target)


# ---------------------------------------------------------------- transforming closed jaxprs

def batch_jaxpr(closed, in_dims, axis_size, axis_name=None, force_out=False):
    """A closed jaxpr vectorized over an axis, and the batch dim of each output.

    Arguments with a dim take a batch axis at that position (None: unbatched).
    Outputs come out batched at 0, or unbatched (None); `force_out` (a bool, or one
    per output) batches an output even if it does not depend on the axis, so a loop
    carry keeps one type. `axis_name` lets collectives in the body refer to the
    axis. Used by call-like primitives (jit, checkpoint, custom rules, control
    flow), whose batching rule batches their body; memoized.
    """
    count = len(closed.out_avals)
    forced = [force_out] * count if isinstance(force_out, bool) else force_out
    return _batch_jaxpr_cached(closed, tuple(in_dims), int(axis_size), axis_name,
                               tuple(bool(f) for f in forced))


@functools.lru_cache(maxsize=256)
def _batch_jaxpr_cached(closed, in_dims, axis_size, axis_name, forced):
    from jaxlite.core.staging import jaxpr_as_fun, trace_to_jaxpr
    out_batched = []

    def batched_fun(*args):
        outs, dims = batch_flat(jaxpr_as_fun(closed), args, in_dims, axis_size, axis_name)
        out_batched[:] = [d is not None or f for d, f in zip(dims, forced)]
        return [bdim_at_front(o, d, axis_size) if b else o for o, d, b in zip(outs, dims, out_batched)]

    avals = [batched_aval(a, d, axis_size) for a, d in zip(closed.in_avals, in_dims)]
    new = trace_to_jaxpr(batched_fun, avals, "vmap of a jaxpr")
    return new, tuple(0 if b else None for b in out_batched)


def batched_aval(aval, dim, size):
    """The type of a value batched at `dim` (None: unbatched, the type unchanged)."""
    if dim is None:
        return aval
    return aval.update(shape=aval.shape[:dim] + (size,) + aval.shape[dim:])


def call_batch_rule(primitive):
    """The batching rule of a primitive whose `jaxpr` param is applied to all operands.

    An axis rule (register it in axis_batch_rules): the body may hold collectives
    over the enclosing vmap's axis, even when no operand is batched. Without
    those, unbatched operands bind the call unchanged (no new jaxpr to compile).
    """
    def rule(axis, args, dims, jaxpr, **params):
        if all(d is None for d in dims) and not uses_named_axes(jaxpr):
            return primitive.bind(*args, jaxpr=jaxpr, **params), [None] * len(jaxpr.out_avals)
        batched, out_dims = batch_jaxpr(jaxpr, dims, axis.axis_size, axis.axis_name)
        return primitive.bind(*args, jaxpr=batched, **params), list(out_dims)
    return rule


def uses_named_axes(jaxpr):
    """Does a body hold a collective (a primitive with an axis rule and no body of its
    own), directly or in the bodies of its equations?"""
    from jaxlite.core.ir import ClosedJaxpr, sub_jaxprs
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    for eqn in jaxpr.eqns:
        bodies = list(sub_jaxprs(eqn))
        if any(map(uses_named_axes, bodies)) or not bodies and eqn.primitive in axis_batch_rules:
            return True
    return False
