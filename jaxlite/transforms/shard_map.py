"""shard_map and pmap: a function run on every device's block of its arguments.

jaxlite has one device per process, so every process runs `f` on its own block and the
collectives over a mesh axis combine the processes along it (MPI under mpiexec, see
jaxlite.distributed). An argument is the block this process holds: in a single process
the whole array; across processes each passes its own block (P('i') splits a dimension
over axis 'i', so each block is that dimension's share; P() means the same value
everywhere). Results are this process's block likewise. jaxlite has no global arrays,
so nothing is split or joined here; in_specs and out_specs say which values vary over
which axes.

With check_vma=True (JAX's default) every value inside carries the set of mesh axes it
varies over (its vma), found as JAX finds it: an argument varies over the axes of its
in_spec, a reduction over an axis (psum, pmax, pmin) gives a value that no longer
varies over it, and an operation varies over all its operands' axes. Where an invariant
value meets a varying one, `pvary` makes it varying (an identity whose transpose is
psum), so reverse mode sums an invariant input's cotangent over the axes, and psum
transposes to pvary. An output whose in out_specs is replicated over an axis it varies
over is an error. With check_vma=False nothing is tracked, psum transposes to psum, and
(as in JAX) an output replicated over an axis has its cotangent divided by the axis
size while a replicated input's cotangent is summed over it.

A value computed inside control flow (cond, scan, while_loop) or an inner jit is taken
to vary over every axis its operands vary over: a reduction over an axis inside such a
body does not make the result invariant for the out_specs check (use check_vma=False).
"""
import functools

import numpy as np

from jaxlite import _sharding
from jaxlite.core import errors
from jaxlite.core.array import as_array_argument
from jaxlite.core.trace import Trace, Tracer, current_trace, set_current_trace
from jaxlite.core.tree_util import broadcast_prefix, tree_flatten, tree_unflatten
from jaxlite.lax import process_collectives as pc
from jaxlite.transforms import ad
from jaxlite.transforms.batching import _flat_in_axes, extend_axis_env, vmap


class _Infer:
    def __repr__(self):
        return "Infer"


Infer = _Infer()


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(), check_vma=True):
    """Run f on every process's block of its arguments, with collectives over mesh axes."""
    if f is None:
        return lambda fun: shard_map(fun, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                     axis_names=axis_names, check_vma=check_vma)
    errors.check_callable(f, "shard_map")
    where = getattr(f, "__name__", repr(f))

    @functools.wraps(f)
    def mapped(*args):
        the_mesh = _resolve_mesh(mesh)
        automatic = {n for n, size in the_mesh.shape.items() if size > 1} - set(axis_names) if axis_names else ()
        if automatic:
            raise NotImplementedError(f"shard_map of {where!r}: axis_names={set(axis_names)} leaves mesh axes "
                                      f"{sorted(automatic)} automatic; jaxlite runs every mesh axis manually")
        flat_args, in_tree = tree_flatten(args)
        flat_args = [as_array_argument(x) for x in flat_args]
        specs = _flat_specs(in_specs, args, "in_specs", the_mesh, where)
        for x, spec in zip(flat_args, specs):
            _check_rank(x, spec, "in_specs", where)
        run = _ShardedRun(the_mesh, check_vma, where)
        values, vmas, out_tree = run(lambda *flat: tree_flatten(f(*tree_unflatten(in_tree, flat))), flat_args, specs)
        out_specs_flat = _flat_specs(out_specs, tree_unflatten(out_tree, values), "out_specs", the_mesh, where)
        return tree_unflatten(out_tree, run.finish(values, vmas, out_specs_flat))

    return mapped


def _resolve_mesh(mesh):
    mesh = mesh if mesh is not None else _sharding.current_mesh()
    if mesh is None:
        raise ValueError("shard_map requires a mesh: pass mesh=, or call it inside `with mesh:`")
    if not isinstance(mesh, _sharding.Mesh):
        raise TypeError(f"shard_map's mesh must be a jaxlite.sharding.Mesh, got {type(mesh).__name__}")
    return mesh


def _flat_specs(specs, tree, what, mesh, where):
    if specs is Infer:
        if any(size > 1 for size in mesh.axis_sizes):
            raise ValueError(f"shard_map of {where!r}: pass in_specs: jaxlite arrays are each process's own "
                             f"block, so there is no sharding to infer them from")
        specs = _sharding.PartitionSpec()
    try:
        flat = broadcast_prefix(specs, tree, is_leaf=lambda x: x is None or isinstance(x, _sharding.PartitionSpec))
    except ValueError as err:
        raise ValueError(f"shard_map of {where!r}: {what} must be a tree prefix of the "
                         f"{'arguments' if what == 'in_specs' else 'outputs'}: {err}") from None
    for spec in flat:
        if not isinstance(spec, _sharding.PartitionSpec):
            raise TypeError(f"shard_map of {where!r}: {what} entries must be PartitionSpecs, got {spec!r}")
        _sharding.check_spec_axes(spec, mesh, f"shard_map of {where!r} {what}")
    return flat


def _check_rank(x, spec, what, where):
    if len(spec) > x.ndim:
        raise ValueError(f"shard_map of {where!r}: {what} {spec} has {len(spec)} entries for a value of "
                         f"rank {x.ndim} (shape {tuple(x.shape)})")


class _ShardedRun:
    """One call of a shard_mapped function: binds the mesh axes, runs f, checks out_specs."""

    def __init__(self, mesh, check_vma, where):
        self.mesh, self.check_vma, self.where = mesh, check_vma, where
        self.manual = {name for name, size in mesh.shape.items() if size > 1}

    def __call__(self, flat_fun, args, specs):
        """(output values, their vmas (None without check_vma), output tree)."""
        if not self.check_vma:
            args = [self._replicated_input(x, self.manual - set(spec.axis_names())) for x, spec in zip(args, specs)]
            with _bound_axes(self.mesh, self):
                outs, out_tree = flat_fun(*args)
            return outs, [None] * len(outs), out_tree
        trace = ShardMapTrace(current_trace(), self)
        try:
            tracers = [ShardMapTracer(trace, x, frozenset(spec.axis_names())) for x, spec in zip(args, specs)]
            with _bound_axes(self.mesh, self), set_current_trace(trace):
                outs, out_tree = flat_fun(*tracers)
            lifted = [trace.lift(o) for o in outs]
        finally:
            trace.finish()
        return [value for value, _ in lifted], [vma for _, vma in lifted], out_tree

    def finish(self, values, vmas, specs):
        results = []
        for index, (value, vma, spec) in enumerate(zip(values, vmas, specs)):
            _check_rank(value, spec, "out_specs", self.where)
            replicated = set(self.mesh.axis_names) - set(spec.axis_names())
            if vma is None:
                results.append(self._replicated_output(value, self.manual & replicated))
            elif vma & replicated:
                raise ValueError(_replication_error(self.where, self.mesh, spec, index, sorted(vma & replicated)))
            else:
                results.append(value)
        return results

    def _replicated_input(self, x, axes):
        """check_vma=False: a replicated input's cotangent is summed over the axes."""
        return pc.pvary_p.bind(x, **self.params(tuple(sorted(axes)))) if axes else x

    def _replicated_output(self, y, axes):
        """check_vma=False: a replicated output's cotangent is shared among its copies."""
        return pc.replicated_output_p.bind(y, **self.params(tuple(sorted(axes)))) if axes else y

    def params(self, axes):
        return dict(axes=axes, mesh=self.mesh, check_vma=self.check_vma, where=self.where)

    # ---- what the collectives of jaxlite.lax call for a mesh axis (batching.axis_binder)

    def collective(self, primitive, x, axis_name, **params):
        """primitive over the processes along mesh axes `axis_name` (lower/collectives.py
        gives each group of them its own MPI communicator)."""
        axes = tuple(axis_name) if isinstance(axis_name, tuple) else (axis_name,)
        return primitive.bind(*([] if x is None else [x]), **params, **self.params(axes))


def _replication_error(where, mesh, spec, index, axes):
    shape = ", ".join(f"{n!r}: {s}" for n, s in mesh.shape.items())
    return (f"shard_map applied to the function {where!r} was given out_specs which require replication "
            f"which can't be statically inferred given the mesh: the mesh has axes ({shape}); out_specs "
            f"entry {index} is {spec!r}, which implies the output is replicated across mesh axes {axes}, but "
            f"it varies over them. If it is meant to be replicated, reduce it over those axes (psum, pmean, ...) "
            f"or pass check_vma=False; if not, name the axes in its out_specs entry.")


class _bound_axes:
    def __init__(self, mesh, binder):
        self.contexts = [extend_axis_env(name, size, binder) for name, size in mesh.shape.items()]

    def __enter__(self):
        for context in self.contexts:
            context.__enter__()

    def __exit__(self, *exc):
        for context in reversed(self.contexts):
            context.__exit__(*exc)


# ---------------------------------------------------------------- tracking vma (check_vma=True)

class ShardMapTracer(Tracer):
    __slots__ = ("val", "vma")

    def __init__(self, trace, val, vma):
        self._trace, self.val, self.vma = trace, val, vma

    @property
    def aval(self):
        return self.val.aval

    def to_concrete_value(self):
        return self.val.to_concrete_value() if isinstance(self.val, Tracer) else self.val._value


class ShardMapTrace(Trace):
    def __init__(self, parent, run):
        self.parent, self.run = parent, run

    def describe(self):
        return f"shard_map of {self.run.where!r}"

    def lift(self, x):
        if isinstance(x, ShardMapTracer) and x._trace is self:
            return x.val, x.vma
        return x, frozenset()

    def process_primitive(self, primitive, args, params):
        vals, vmas = zip(*map(self.lift, args)) if args else ((), ())
        with set_current_trace(self.parent):
            if primitive in pc.NEEDS_VARYING:
                vals, vmas = zip(*[self._vary(v, vma, set(params["axes"])) for v, vma in zip(vals, vmas)])
            elif len(set(vmas)) > 1:
                union = frozenset().union(*vmas)
                vals, vmas = zip(*[self._vary(v, vma, union) for v, vma in zip(vals, vmas)])
            out = primitive.bind(*vals, **params)
        vma = self._out_vma(primitive, vmas, params)
        if primitive.multiple_results:
            return [ShardMapTracer(self, o, vma) for o in out]
        return ShardMapTracer(self, out, vma)

    def vary_differentiated(self, primitive, primals, tangents, params):
        """Under a JVP inside the body: pvary the operands that ShardMapTrace would, primal and
        tangent alike, so linearization records the pvary and reverse mode sums the cotangent."""
        vmas = [p.vma if isinstance(p, ShardMapTracer) and p._trace is self else None for p in primals]
        known = [v for v in vmas if v is not None]
        if not known:
            return primals, tangents
        target = set(params["axes"]) if primitive in pc.NEEDS_VARYING else frozenset().union(*known)
        primals, tangents = list(primals), list(tangents)
        for i, vma in enumerate(vmas):
            missing = tuple(sorted(set(target) - (vma or frozenset())))
            if vma is None and primitive not in pc.NEEDS_VARYING or not missing:
                continue
            vary = self.run.params(missing)
            primals[i] = pc.pvary_p.bind(primals[i], **vary)
            if not ad.is_zero(tangents[i]):
                tangents[i] = pc.pvary_p.bind(tangents[i], **vary)
        return primals, tangents

    def _vary(self, val, vma, axes):
        missing = tuple(sorted(set(axes) - vma))
        if not missing:
            return val, vma
        return pc.pvary_p.bind(val, **self.run.params(missing)), vma | set(missing)

    @staticmethod
    def _out_vma(primitive, vmas, params):
        vma = frozenset().union(*vmas)
        if primitive in pc.MAKES_INVARIANT:
            return vma - set(params["axes"])
        if primitive in pc.ALL or primitive is pc.pvary_p:
            return vma | set(params["axes"])
        return vma


def _vary_differentiated(primitive, primals, tangents, params):
    for trace in _active_traces():
        primals, tangents = trace.vary_differentiated(primitive, primals, tangents, params)
    return primals, tangents


def _active_traces():
    """The check_vma ShardMapTraces below the current trace."""
    trace, found = current_trace(), []
    while trace is not None:
        if isinstance(trace, ShardMapTrace) and trace.alive:
            found.append(trace)
        trace = getattr(trace, "parent", None)
    return found


ad.operand_rules.append(_vary_differentiated)


# ---------------------------------------------------------------- pmap

def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(), devices=None,
         backend=None, axis_size=None, donate_argnums=()):
    """Map fun over an axis, one element per local device: with jaxlite's one device per
    process, a vmap whose axis (of size 1) is named `axis_name` for the collectives."""
    errors.check_callable(fun, "pmap")
    available = len(devices) if devices is not None else _sharding.local_device_count(backend)
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) else \
        tuple(static_broadcasted_argnums)

    @functools.wraps(fun)
    def run(*args):
        dynamic = [a for i, a in enumerate(args) if i not in static]

        def with_static(*dynamic_args):
            rest = iter(dynamic_args)
            return fun(*[args[i] if i in static else next(rest) for i in range(len(args))])
        axes = in_axes if not isinstance(in_axes, (tuple, list)) or not static else \
            tuple(a for i, a in enumerate(in_axes) if i not in static)
        dims = _flat_in_axes(axes, tuple(dynamic), {})
        leaves = tree_flatten(tuple(dynamic))[0]
        size = max([np.shape(x)[d] for x, d in zip(leaves, dims) if d is not None], default=axis_size or 1)
        if size > available:
            raise ValueError(f"pmap of {getattr(fun, '__name__', 'fun')!r}: the mapped axis has size {size}, "
                             f"more than the {available} local device(s) available")
        return vmap(with_static, in_axes=axes, out_axes=out_axes, axis_size=axis_size,
                    axis_name=axis_name)(*dynamic)

    return run
