"""Collectives over a named axis: psum, pmean, pmax, pmin, all_gather, axis_index.

Under `vmap(f, axis_name='i')` a collective over 'i' combines the values of all
batch elements. Its batching rule runs in the BatchTrace of every enclosing vmap
(batching.axis_batch_rules); a trace whose name is different passes the
operation on to its parent, so nested vmaps find the axis the user named. A
collective that reaches plain evaluation was never claimed by any vmap.

When the innermost binding of the name is a mesh axis of a shard_map instead, the
collective is one across processes: it binds process_collectives' primitive through
the shard_map (`batching.axis_binder`).
"""
from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray, canonicalize_axis
from jaxlite.core.primitive import Primitive
from jaxlite.core.tree_util import tree_map
from jaxlite.lax.base import NUMBER, as_operand, check_dtype
from jaxlite.lax.elementwise import convert_element_type, div, eq, mul
from jaxlite.lax.reductions import reduce_max, reduce_min, reduce_sum
from jaxlite.lax.shapes import iota, reshape
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import bdim_at_front, move_dim


def _unbound(axis_name, **params):
    raise NameError(f"unbound axis name: {axis_name}")


def _axis_names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _matches(axis, axis_name):
    return axis.axis_name is not None and axis.axis_name == axis_name


# ---------------------------------------------------------------- reductions over the axis

def _reduction_collective(name, reduce, unbatched):
    """psum-like: out = reduce over the axis; `unbatched(x, size)` when x is the same in every lane."""
    primitive = Primitive(name)
    primitive.def_impl(lambda x, axis_name: _unbound(axis_name))

    def abstract_eval(x, axis_name):
        check_dtype(name, x, NUMBER)
        return x

    def batch_rule(axis, args, dims, axis_name):
        (x,), (d,) = args, dims
        if not _matches(axis, axis_name):
            return primitive.bind(x, axis_name=axis_name), d
        if d is None:
            return unbatched(x, axis.axis_size), None
        return reduce(x, (d,)), None

    primitive.def_abstract_eval(abstract_eval)
    batching.axis_batch_rules[primitive] = batch_rule
    return primitive


def _bind_over_names(primitive, x, axis_name):
    """Bind once per axis name, each leaf of a pytree separately."""
    names = _axis_names(axis_name)
    for name in names:
        batching.bound_axis_size(name)

    def reduce_leaf(leaf):
        leaf = as_operand(leaf)
        for name in names:
            binder = batching.axis_binder(name)
            leaf = primitive.bind(leaf, axis_name=name) if binder is None else _mesh_reduce(binder, primitive, leaf, name)
        return leaf
    return tree_map(reduce_leaf, x)


def _mesh_reduce(binder, primitive, x, name):
    """A reduction across processes; 16-bit floats are reduced in float32."""
    from jaxlite.lax.process_collectives import process_reduce_p
    op = {psum_p: "sum", pmax_p: "max", pmin_p: "min"}[primitive]
    narrow = x.dtype in (dtypes.bfloat16, dtypes.float16)
    wide = convert_element_type(x, dtypes.float32) if narrow else x
    out = binder.collective(process_reduce_p, wide, name, op=op)
    return convert_element_type(out, x.dtype) if narrow else out


psum_p = _reduction_collective("psum", reduce_sum, lambda x, size: mul(x, size))
ad.deflinear(psum_p, lambda ct, x, axis_name: [psum_p.bind(ct, axis_name=axis_name)])

pmax_p = _reduction_collective("pmax", reduce_max, lambda x, size: x)
pmin_p = _reduction_collective("pmin", reduce_min, lambda x, size: x)


def _extremum_jvp(primitive):
    """The tangent of the winning lanes, averaged over ties (as reduce_max's JVP does)."""
    def rule(primals, tangents, axis_name):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axis_name=axis_name)
        wins = convert_element_type(eq(x, out), x.dtype)
        share = psum_p.bind(mul(t, wins), axis_name=axis_name)
        return out, div(share, psum_p.bind(wins, axis_name=axis_name))
    ad.jvp_rules[primitive] = rule


_extremum_jvp(pmax_p)
_extremum_jvp(pmin_p)


def psum(x, axis_name):
    """The sum of x over the vmapped axis (or axes) named axis_name."""
    return _bind_over_names(psum_p, x, axis_name)


def pmax(x, axis_name):
    return _bind_over_names(pmax_p, x, axis_name)


def pmin(x, axis_name):
    return _bind_over_names(pmin_p, x, axis_name)


def pmean(x, axis_name):
    """The mean over the named axis; integers average to floats, as in JAX."""
    count = 1
    for name in _axis_names(axis_name):
        count *= batching.bound_axis_size(name)

    def mean_leaf(leaf):
        leaf = as_operand(leaf)
        if not dtypes.is_float(leaf.dtype):
            leaf = convert_element_type(leaf, dtypes.default_float_dtype())
        return div(psum(leaf, axis_name), convert_element_type(count, leaf.dtype))
    return tree_map(mean_leaf, x)


# ---------------------------------------------------------------- all_gather

def _all_gather_aval(x, axis_name, axis, axis_size, tiled):
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return x.update(shape=tuple(shape))


def _gather_lanes(x, d, axis, size, tiled):
    """The whole axis as one array: the lanes stacked (or concatenated) at `axis`."""
    stacked = move_dim(bdim_at_front(x, d, size), 0, axis)
    if not tiled:
        return stacked
    shape = list(stacked.shape)
    shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
    return reshape(stacked, tuple(shape))


def _all_gather_batch(vmapped, args, dims, axis_name, axis, axis_size, tiled):
    (x,), (d,) = args, dims
    if _matches(vmapped, axis_name):
        return _gather_lanes(x, d, axis, vmapped.axis_size, tiled), None
    params = dict(axis_name=axis_name, axis_size=axis_size, tiled=tiled)
    if d is None:
        return all_gather_p.bind(x, axis=axis, **params), None
    # Keep this vmap's dim in front, so the gathered axis lands after it.
    return all_gather_p.bind(move_dim(x, d, 0), axis=axis + 1, **params), 0


all_gather_p = Primitive("all_gather")
all_gather_p.def_impl(lambda x, axis_name, **params: _unbound(axis_name))
all_gather_p.def_abstract_eval(_all_gather_aval)
ad.defjvp(all_gather_p, lambda t, x, **params: all_gather_p.bind(t, **params))
batching.axis_batch_rules[all_gather_p] = _all_gather_batch


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every lane's x, stacked along a new axis `axis` (concatenated along it if tiled)."""
    size = batching.bound_axis_size(axis_name)
    binder = batching.axis_binder(axis_name)

    def gather_leaf(leaf):
        leaf = as_operand(leaf)
        position = canonicalize_axis(axis, leaf.ndim + (not tiled), "axis")
        if binder is not None:
            return _mesh_all_gather(binder, leaf, axis_name, position, size, tiled)
        return all_gather_p.bind(leaf, axis_name=axis_name, axis=position, axis_size=size,
                                 tiled=bool(tiled))
    return tree_map(gather_leaf, x)


def _mesh_all_gather(binder, x, name, axis, size, tiled):
    """Across processes the blocks are stacked along a new leading axis; moved into place here."""
    from jaxlite.lax.process_collectives import process_all_gather_p
    stacked = binder.collective(process_all_gather_p, x, name)
    return _gather_lanes(stacked, 0, axis, size, tiled)


# ---------------------------------------------------------------- axis_index

def _axis_index_batch(axis, args, dims, axis_name):
    if not _matches(axis, axis_name):
        return axis_index_p.bind(axis_name=axis_name), None
    return iota(dtypes.int32, axis.axis_size), 0


axis_index_p = Primitive("axis_index")
axis_index_p.def_impl(_unbound)
axis_index_p.def_abstract_eval(lambda axis_name: ShapedArray((), dtypes.int32))
ad.defjvp_zero(axis_index_p)
batching.axis_batch_rules[axis_index_p] = _axis_index_batch


def axis_index(axis_name):
    """The position of the current element along the vmapped axis named axis_name."""
    batching.bound_axis_size(axis_name)
    binder = batching.axis_binder(axis_name)
    if binder is not None:
        from jaxlite.lax.process_collectives import process_axis_index_p
        return binder.collective(process_axis_index_p, None, axis_name)
    return axis_index_p.bind(axis_name=axis_name)
