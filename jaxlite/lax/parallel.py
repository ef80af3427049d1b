"""Collectives over a named axis: psum, pmean, pmax, pmin, all_gather, axis_index, ppermute,
pshuffle, psum_scatter, all_to_all, pswapaxes, axis_size.

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
from jaxlite.lax.base import NUMBER, as_operand, check_dtype, scalar_like
from jaxlite.lax.elementwise import add, convert_element_type, div, eq, mul
from jaxlite.lax.reductions import reduce_max, reduce_min, reduce_sum
from jaxlite.lax.shapes import concatenate, full, index_in_dim, iota, reshape
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


def _bind_over_names(primitive, x, axis_name, axis_index_groups=None):
    """Bind once per axis name, each leaf of a pytree separately."""
    names = _axis_names(axis_name)
    sizes = [batching.bound_axis_size(name) for name in names]
    groups = _index_groups(axis_index_groups, names, sizes[-1])

    def reduce_leaf(leaf):
        leaf = as_operand(leaf)
        for name in names:
            binder = batching.axis_binder(name)
            leaf = primitive.bind(leaf, axis_name=name) if binder is None else \
                _mesh_reduce(binder, primitive, leaf, name, groups)
        return leaf
    return tree_map(reduce_leaf, x)


def _index_groups(axis_index_groups, names, size):
    """The axis_index_groups parameter of a mesh collective ({} without groups). As in JAX, only
    collectives across processes (shard_map) take them, over one axis."""
    if axis_index_groups is None:
        return {}
    if any(batching.axis_binder(name) is None for name in names):
        raise NotImplementedError("axis_index_groups not supported in vmap collectives. "
                                  "Please open a feature request!")
    from jaxlite.lax.process_collectives import checked_index_groups
    return {"axis_index_groups": checked_index_groups(axis_index_groups, names, size)}


def _mesh_reduce(binder, primitive, x, name, groups):
    from jaxlite.lax.process_collectives import process_reduce_p
    op = {psum_p: "sum", pmax_p: "max", pmin_p: "min"}[primitive]
    return _in_float32(lambda wide: binder.collective(process_reduce_p, wide, name, op=op, **groups), x)


def _in_float32(reduce, x):
    """A reduction across processes; 16-bit floats are reduced in float32 (MPI has no such type)."""
    if not dtypes.is_16bit_float(x.dtype):
        return reduce(x)
    return convert_element_type(reduce(convert_element_type(x, dtypes.float32)), x.dtype)


psum_p = _reduction_collective("psum", reduce_sum, lambda x, size: mul(x, scalar_like(x, size)))
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


def psum(x, axis_name, *, axis_index_groups=None):
    """The sum of x over the vmapped axis (or axes) named axis_name; across processes
    (shard_map) axis_index_groups sums within each group of positions along the axis."""
    return _bind_over_names(psum_p, x, axis_name, axis_index_groups)


def pmax(x, axis_name, *, axis_index_groups=None):
    return _bind_over_names(pmax_p, x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    return _bind_over_names(pmin_p, x, axis_name, axis_index_groups)


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean over the named axis; integers average to floats, as in JAX."""
    count = 1
    for name in _axis_names(axis_name):
        count *= batching.bound_axis_size(name)
    if axis_index_groups is not None:
        count = len(axis_index_groups[0])

    def mean_leaf(leaf):
        leaf = as_operand(leaf)
        if not dtypes.is_float(leaf.dtype):
            leaf = convert_element_type(leaf, dtypes.default_float_dtype())
        total = psum(leaf, axis_name, axis_index_groups=axis_index_groups)
        return div(total, convert_element_type(count, leaf.dtype))
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
ad.deflinear(all_gather_p, lambda ct, x, axis_name, axis, axis_size, tiled: [
    psum_scatter(ct, axis_name, scatter_dimension=axis, tiled=tiled)])
batching.axis_batch_rules[all_gather_p] = _all_gather_batch


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Every lane's x, stacked along a new axis `axis` (concatenated along it if tiled)."""
    size = batching.bound_axis_size(axis_name)
    binder = batching.axis_binder(axis_name)
    groups = _index_groups(axis_index_groups, _axis_names(axis_name), size)

    def gather_leaf(leaf):
        leaf = as_operand(leaf)
        position = canonicalize_axis(axis, leaf.ndim + (not tiled), "axis")
        if binder is not None:
            return _mesh_all_gather(binder, leaf, axis_name, position, tiled, groups)
        return all_gather_p.bind(leaf, axis_name=axis_name, axis=position, axis_size=size,
                                 tiled=bool(tiled))
    return tree_map(gather_leaf, x)


def _mesh_all_gather(binder, x, name, axis, tiled, groups):
    """Across processes the blocks are stacked along a new leading axis; moved into place here."""
    from jaxlite.lax.process_collectives import process_all_gather_p
    stacked = binder.collective(process_all_gather_p, x, name, **groups)
    return _gather_lanes(stacked, 0, axis, stacked.shape[0], tiled)


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
    """The position of the current element along the vmapped axis named axis_name; for a tuple
    of names, the position in their product (row-major, in the order named)."""
    if isinstance(axis_name, (tuple, list)):
        position = full((), 0, dtypes.int32)
        for name in axis_name:
            position = add(mul(position, full((), batching.bound_axis_size(name), dtypes.int32)), axis_index(name))
        return position
    batching.bound_axis_size(axis_name)
    binder = batching.axis_binder(axis_name)
    if binder is not None:
        from jaxlite.lax.process_collectives import process_axis_index_p
        return binder.collective(process_axis_index_p, None, axis_name)
    return axis_index_p.bind(axis_name=axis_name)


def axis_size(axis_name):
    """The size of the named axis (a Python int); a tuple of names gives their product."""
    size = 1
    for name in _axis_names(axis_name):
        size *= batching.bound_axis_size(name)
    return size


# ---------------------------------------------------------------- block moves
# A collective that exchanges blocks works on a leading axis of blocks, one per lane
# (or process): these helpers move blocks there and back.

def _check_blocks(name, shape, axis, size, tiled):
    if tiled and shape[axis] % size:
        raise ValueError(f"{name}: dimension {axis} of shape {tuple(shape)} is not divisible by the axis size {size}")
    if not tiled and shape[axis] != size:
        raise ValueError(f"{name}: dimension {axis} of shape {tuple(shape)} must equal the axis size {size} "
                         f"(or pass tiled=True)")


def _blocks_to_front(x, axis, size, tiled, offset=0):
    """x's dimension offset+axis split into `size` blocks, the block index moved to position
    `offset` (untiled: that dimension is the block index itself)."""
    if tiled:
        shape = list(x.shape)
        shape[offset + axis:offset + axis + 1] = [size, shape[offset + axis] // size]
        x = reshape(x, tuple(shape))
    return move_dim(x, offset + axis, offset)


def _blocks_into(y, axis, tiled, offset=0):
    """The leading block axis (at `offset`) of y put at `axis` of each block (tiled: joined with it)."""
    y = move_dim(y, offset, offset + axis)
    if not tiled:
        return y
    shape = list(y.shape)
    shape[offset + axis:offset + axis + 2] = [shape[offset + axis] * shape[offset + axis + 1]]
    return reshape(y, tuple(shape))


def _lane_collective(name, on_lanes, aval, axis_params=()):
    """A collective over a vmap axis computed on the lanes (moved to the front) by `on_lanes`."""
    primitive = Primitive(name)
    primitive.def_impl(lambda x, axis_name, **params: _unbound(axis_name))
    primitive.def_abstract_eval(aval)

    def batch_rule(vmapped, args, dims, axis_name, axis_size, **params):
        (x,), (d,) = args, dims
        if _matches(vmapped, axis_name):
            return on_lanes(bdim_at_front(x, d, vmapped.axis_size), **params), 0
        if d is None:
            return primitive.bind(x, axis_name=axis_name, axis_size=axis_size, **params), None
        shifted = {k: params[k] + 1 for k in axis_params}     # this vmap's dim goes first
        return primitive.bind(move_dim(x, d, 0), axis_name=axis_name, axis_size=axis_size,
                              **{**params, **shifted}), 0
    batching.axis_batch_rules[primitive] = batch_rule
    return primitive


# ---------------------------------------------------------------- ppermute, pshuffle

def _permuted_lanes(x, perm):
    sources = {dst: src for src, dst in perm}
    lanes = [index_in_dim(x, sources[i], 0) if i in sources else full((1,) + x.shape[1:], 0, x.dtype)
             for i in range(x.shape[0])]
    return concatenate(lanes, 0)


ppermute_p = _lane_collective("ppermute", _permuted_lanes, lambda x, **params: x)
ad.deflinear(ppermute_p, lambda ct, x, perm, **params: [
    ppermute_p.bind(ct, perm=tuple((dst, src) for src, dst in perm), **params)])


def _checked_perm(perm, size):
    perm = tuple((int(src), int(dst)) for src, dst in perm)
    sources, destinations = [s for s, _ in perm], [d for _, d in perm]
    if len(set(sources)) != len(sources) or len(set(destinations)) != len(destinations):
        raise ValueError(f"ppermute sources and destinations must be unique, got {list(perm)}")
    if not all(0 <= i < size for i in sources + destinations):
        raise ValueError(f"ppermute indices must lie in [0, {size}) for an axis of size {size}, got {list(perm)}")
    return perm


def ppermute(x, axis_name, perm):
    """Send each lane's x to another: perm lists (source, destination) pairs; a lane that
    receives nothing gets zeros."""
    size = batching.bound_axis_size(axis_name)
    binder = batching.axis_binder(axis_name)
    perm = _checked_perm(perm, size)
    from jaxlite.lax.process_collectives import process_ppermute_p

    def permute_leaf(leaf):
        leaf = as_operand(leaf)
        if binder is not None:
            return binder.collective(process_ppermute_p, leaf, axis_name, perm=perm)
        return ppermute_p.bind(leaf, axis_name=axis_name, axis_size=size, perm=perm)
    return tree_map(permute_leaf, x)


def pshuffle(x, axis_name, perm):
    """Lane i gets the x of lane perm[i]."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


# ---------------------------------------------------------------- psum_scatter

def _scattered_shape(shape, dimension, size, tiled):
    shape = list(shape)
    if tiled:
        shape[dimension] //= size
    else:
        del shape[dimension]
    return tuple(shape)


def _scatter_lanes(x, scatter_dimension, tiled):
    return _blocks_to_front(reduce_sum(x, (0,)), scatter_dimension, x.shape[0], tiled)


psum_scatter_p = _lane_collective(
    "psum_scatter", _scatter_lanes,
    lambda x, axis_size, scatter_dimension, tiled, **params: x.update(
        shape=_scattered_shape(x.shape, scatter_dimension, axis_size, tiled)),
    axis_params=("scatter_dimension",))
ad.deflinear(psum_scatter_p, lambda ct, x, axis_name, axis_size, scatter_dimension, tiled: [
    all_gather(ct, axis_name, axis=scatter_dimension, tiled=tiled)])


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """The sum over the axis, each lane keeping its block of dimension scatter_dimension."""
    size = batching.bound_axis_size(axis_name)
    binder = batching.axis_binder(axis_name)
    groups = _index_groups(axis_index_groups, _axis_names(axis_name), size)
    size = _group_size(groups, size)

    def scatter_leaf(leaf):
        leaf = as_operand(leaf)
        check_dtype("psum_scatter", leaf, NUMBER)
        dimension = canonicalize_axis(scatter_dimension, leaf.ndim, "scatter_dimension")
        _check_blocks("psum_scatter", leaf.shape, dimension, size, tiled)
        if binder is None:
            return psum_scatter_p.bind(leaf, axis_name=axis_name, axis_size=size,
                                       scatter_dimension=dimension, tiled=bool(tiled))
        from jaxlite.lax.process_collectives import process_psum_scatter_p
        blocks = _blocks_to_front(leaf, dimension, size, tiled)
        return _in_float32(lambda wide: binder.collective(process_psum_scatter_p, wide, axis_name, **groups), blocks)
    return tree_map(scatter_leaf, x)


def _group_size(groups, size):
    return len(groups["axis_index_groups"][0]) if groups else size


# ---------------------------------------------------------------- all_to_all, pswapaxes

def _exchanged_shape(shape, split_axis, concat_axis, size, tiled):
    shape = list(shape)
    if tiled:
        shape[split_axis] //= size
        shape[concat_axis] *= size
        return tuple(shape)
    del shape[split_axis]
    shape.insert(concat_axis, size)
    return tuple(shape)


def _exchange_lanes(x, split_axis, concat_axis, tiled):
    """Lane i gets block i of every lane j, placed at concat_axis in j's order."""
    by_block = move_dim(_blocks_to_front(x, split_axis, x.shape[0], tiled, offset=1), 1, 0)   # (i, j, block)
    return _blocks_into(by_block, concat_axis, tiled, offset=1)


all_to_all_p = _lane_collective(
    "all_to_all", _exchange_lanes,
    lambda x, axis_size, split_axis, concat_axis, tiled, **params: x.update(
        shape=_exchanged_shape(x.shape, split_axis, concat_axis, axis_size, tiled)),
    axis_params=("split_axis", "concat_axis"))
ad.deflinear(all_to_all_p, lambda ct, x, split_axis, concat_axis, **params: [
    all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, **params)])


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Block j of dimension split_axis goes to lane j; the blocks a lane receives are placed
    along concat_axis (untiled: split_axis has the axis size, and is replaced by a new axis
    at concat_axis)."""
    size = batching.bound_axis_size(axis_name)
    binder = batching.axis_binder(axis_name)
    groups = _index_groups(axis_index_groups, _axis_names(axis_name), size)
    size = _group_size(groups, size)

    def exchange_leaf(leaf):
        leaf = as_operand(leaf)
        split = canonicalize_axis(split_axis, leaf.ndim, "split_axis")
        concat = canonicalize_axis(concat_axis, leaf.ndim, "concat_axis")
        _check_blocks("all_to_all", leaf.shape, split, size, tiled)
        if binder is None:
            return all_to_all_p.bind(leaf, axis_name=axis_name, axis_size=size, split_axis=split,
                                     concat_axis=concat, tiled=bool(tiled))
        from jaxlite.lax.process_collectives import process_all_to_all_p
        blocks = _blocks_to_front(leaf, split, size, tiled)
        return _blocks_into(binder.collective(process_all_to_all_p, blocks, axis_name, **groups), concat, tiled)
    return tree_map(exchange_leaf, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap dimension `axis` (of the axis size) with the named axis."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)
