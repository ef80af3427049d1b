"""Collectives over the mesh axes of a shard_map: one device per process, so across processes.

Inside `shard_map(f, mesh=...)` the collectives of jaxlite.lax (psum, all_gather, ...)
over a mesh axis bind these primitives instead of their vmap forms (parallel.py asks
the axis's binder, the shard_map). Every equation carries what it needs to run without
the shard_map around it: the `mesh`, the `axes` it combines over, `check_vma` (which
of JAX's two differentiation rules applies) and `where` (the function shard_map ran,
for error messages). They communicate, so they are `effectful`: never dropped, merged
or reordered (core.ir.has_effects); jit runs them as native steps of its program
(lower/collectives.py), and eagerly they run the same native code.

Differentiation follows JAX. With check_vma=True a psum's result is one value,
invariant over the axis, and its transpose is `pvary` (an identity that marks a value
as varying), whose own transpose is psum; shard_map inserts pvary where an invariant
value meets a varying one. With check_vma=False psum transposes to psum.
"""
import math

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import NUMBER, check_dtype
from jaxlite.lax.elementwise import convert_element_type, div, eq, mul
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import move_dim


def axes_size(mesh, axes, axis_index_groups=None, **params):
    """How many processes one collective over `axes` combines: the axes' size, or the size of
    one of the axis_index_groups."""
    if axis_index_groups is not None:
        return len(axis_index_groups[0])
    return math.prod(mesh.shape[name] for name in axes)


def process_groups(mesh, axes, axis_index_groups=None):
    """The processes a collective over mesh `axes` combines, as a tuple of groups, each the
    process indices in the order of their position along the axes (row-major in the order the
    axes are named); processes that differ only in the other axes' coordinates are in one
    group. axis_index_groups splits each group further by positions along the axis."""
    processes = np.vectorize(lambda device: device.process_index, otypes=[np.int64])(mesh.devices)
    along = [mesh.axis_names.index(name) for name in axes]
    others = [d for d in range(processes.ndim) if d not in along]
    rows = processes.transpose(others + along).reshape(-1, math.prod(mesh.shape[name] for name in axes))
    groups = [tuple(int(p) for p in row) for row in rows]
    if axis_index_groups is not None:
        groups = [tuple(row[i] for i in group) for row in groups for group in axis_index_groups]
    return tuple(groups)


def checked_index_groups(axis_index_groups, axis_name, size):
    """axis_index_groups as a tuple of tuples: groups of equal size that hold every position of
    the axis once (as JAX requires)."""
    if axis_index_groups is None:
        return None
    if isinstance(axis_name, (tuple, list)) and len(axis_name) != 1:
        raise ValueError(f"axis_index_groups needs a single axis name, got {axis_name!r}")
    groups = tuple(tuple(int(i) for i in group) for group in axis_index_groups)
    positions = sorted(i for group in groups for i in group)
    if not groups or len({len(group) for group in groups}) != 1 or positions != list(range(size)):
        raise ValueError(f"axis_index_groups must be groups of equal size holding each index of the axis "
                         f"(size {size}) once, got {[list(g) for g in groups]}")
    return groups


def _run(primitive):
    def impl(*operands, **params):
        from jaxlite.lower import collectives
        return collectives.run_eagerly(primitive, operands, params)
    return impl


def _collective(name, abstract_eval):
    primitive = Primitive(name)
    primitive.effectful = True
    primitive.def_impl(_run(primitive))
    primitive.def_abstract_eval(abstract_eval)
    return primitive


def _batch_with_dim(primitive, operand_dim, result_dim):
    """A collective on blocks along the leading axis: the batch dimension goes to
    `operand_dim(d)` of the operand and comes out at `result_dim(d)`."""
    def rule(args, dims, **params):
        d = operand_dim(dims[0])
        return primitive.bind(move_dim(args[0], dims[0], d), **params), result_dim(d)
    batching.batch_rules[primitive] = rule


# ---------------------------------------------------------------- reductions: sum, max, min

def _reduce_aval(x, op, **params):
    check_dtype("p" + op, x, NUMBER)
    return x


process_reduce_p = _collective("process_reduce", _reduce_aval)




def _reduce_transpose(ct, x, op, check_vma, **params):
    if op != "sum":
        raise TypeError(f"p{op} is not linear")
    if check_vma:
        return [pvary_p.bind(ct, check_vma=check_vma, **params)]
    return [process_reduce_p.bind(ct, op="sum", check_vma=check_vma, **params)]


def _reduce_jvp(primals, tangents, op, **params):
    (x,), (t,) = primals, tangents
    out = process_reduce_p.bind(x, op=op, **params)
    if ad.is_zero(t):
        return out, ad.Zero(ad.tangent_aval(x.aval))
    if op == "sum":
        return out, process_reduce_p.bind(ad.instantiate(t), op="sum", **params)
    # max/min: the tangent of the winning processes, averaged over ties (as reduce_max's JVP).
    wins = convert_element_type(eq(x, out), x.dtype)
    share = process_reduce_p.bind(mul(ad.instantiate(t), wins), op="sum", **params)
    return out, div(share, process_reduce_p.bind(wins, op="sum", **params))


ad.jvp_rules[process_reduce_p] = _reduce_jvp
ad.transpose_rules[process_reduce_p] = _reduce_transpose
_batch_with_dim(process_reduce_p, lambda d: d, lambda d: d)


# ---------------------------------------------------------------- pvary

# Identities whose transposes differ: pvary's is a psum (see shard_map.py); a replicated
# output's (check_vma=False) divides the cotangent among the copies, as JAX does.

def _identity(name, transpose):
    primitive = Primitive(name)
    primitive.def_impl(lambda x, **params: x)
    primitive.def_abstract_eval(lambda x, **params: x)
    primitive.value_is_operand = 0      # lower/passes.simplify replaces it by its operand
    ad.deflinear(primitive, transpose)
    _batch_with_dim(primitive, lambda d: d, lambda d: d)
    return primitive


pvary_p = _identity("pvary", lambda ct, x, **params: [process_reduce_p.bind(ct, op="sum", **params)])
replicated_output_p = _identity("replicated_output", lambda ct, x, mesh, axes, **params: [
    div(ct, convert_element_type(axes_size(mesh, axes), ct.dtype))])


# ---------------------------------------------------------------- leading-axis block collectives
# all_gather stacks every process's x along a new leading axis; psum_scatter sums x, whose
# leading axis has one block per process, and gives each process its block; all_to_all
# sends block j of the leading axis to process j. jaxlite.lax moves axes around them.

def _gather_aval(x, mesh, axes, **params):
    return x.update(shape=(axes_size(mesh, axes, **params),) + tuple(x.shape), weak_type=False)


def _leading_blocks(what):
    def check(x, mesh, axes, **params):
        size = axes_size(mesh, axes, **params)
        if not x.shape or x.shape[0] != size:
            raise ValueError(f"{what} needs a leading axis of the axis size {size}, got shape {tuple(x.shape)}")
        return x
    return check


def _scatter_aval(x, mesh, axes, **params):
    check_dtype("psum_scatter", x, NUMBER)
    return _leading_blocks("psum_scatter")(x, mesh, axes, **params).update(shape=tuple(x.shape[1:]))


process_all_gather_p = _collective("process_all_gather", _gather_aval)
process_psum_scatter_p = _collective("process_psum_scatter", _scatter_aval)
process_all_to_all_p = _collective("process_all_to_all", _leading_blocks("all_to_all"))
process_ppermute_p = _collective("process_ppermute", lambda x, **params: x)

_batch_with_dim(process_all_gather_p, lambda d: d, lambda d: d + 1)
_batch_with_dim(process_psum_scatter_p, lambda d: 1, lambda d: 0)
_batch_with_dim(process_all_to_all_p, lambda d: 1, lambda d: 1)
_batch_with_dim(process_ppermute_p, lambda d: d, lambda d: d)

ad.deflinear(process_all_gather_p, lambda ct, x, **params: [process_psum_scatter_p.bind(ct, **params)])
ad.deflinear(process_psum_scatter_p, lambda ct, x, **params: [process_all_gather_p.bind(ct, **params)])
ad.deflinear(process_all_to_all_p, lambda ct, x, **params: [process_all_to_all_p.bind(ct, **params)])
ad.deflinear(process_ppermute_p, lambda ct, x, perm, **params: [
    process_ppermute_p.bind(ct, perm=tuple((dst, src) for src, dst in perm), **params)])


# ---------------------------------------------------------------- axis_index

process_axis_index_p = _collective("process_axis_index", lambda **params: ShapedArray((), dtypes.int32))
ad.defjvp_zero(process_axis_index_p)


# Which collectives leave the result varying over their axes (JAX's rules for check_vma):
# a reduction's result is the same on every process; the others differ per process.
MAKES_INVARIANT = frozenset({process_reduce_p})
NEEDS_VARYING = frozenset({process_reduce_p, process_all_gather_p, process_psum_scatter_p,
                           process_ppermute_p, process_all_to_all_p})
ALL = (process_reduce_p, process_all_gather_p, process_psum_scatter_p, process_ppermute_p,
       process_all_to_all_p, process_axis_index_p)
