"""Machinery shared by the control-flow primitives.

A control-flow primitive holds its branches or loop body as ClosedJaxprs, traced
once from the user's function on the abstract values of the operands. Values the
function closes over (arrays, or tracers of an enclosing transformation) are
hoisted out of the jaxpr and passed as explicit leading operands of the
primitive, so the enclosing transformations see them like any other argument:
a JVP gets their tangents, a vmap their batch dimensions. The stored jaxprs
therefore take `consts + operands` and close over concrete values only.

The transformation rules work on those jaxprs as a whole, through the helpers
every call-like primitive uses: `ad.jvp_jaxpr` and `batching.batch_jaxpr`.
"""
import numpy as np

from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Var, constvars_as_invars
from jaxlite.core.staging import flatten_fun, jaxpr_as_fun, trace_to_jaxpr
from jaxlite.core.tree_util import keystr, tree_flatten, tree_leaves_with_path, tree_unflatten
from jaxlite.transforms import ad, batching


def flat_operands(tree):
    """The leaves of an operand pytree as arrays (Python scalars stay weakly typed)."""
    leaves, treedef = tree_flatten(tree)
    return [as_array_argument(x) for x in leaves], treedef


def trace_hoisted(fun, in_tree, in_avals, description):
    """Trace fun(*args) once, where args has structure in_tree and leaves of in_avals.

    Returns (jaxpr, consts, out_tree): the jaxpr takes consts + flat args and has
    no consts of its own; consts are what the function closed over.
    """
    flat_fun, out_tree = flatten_fun(fun, in_tree)
    hoisted, consts = constvars_as_invars(trace_to_jaxpr(flat_fun, in_avals, description))
    return hoisted, [as_array_argument(c) for c in consts], out_tree[0]


def args_tree(*args):
    """The structure trace_hoisted expects for positional arguments."""
    return tree_flatten((args, {}))[1]


def run_jaxpr(closed, values):
    """Evaluate a stored jaxpr eagerly on numpy values, returning numpy values.

    Inputs are wrapped with the weak types the jaxpr was traced with, so each
    iteration computes exactly the types the trace saw.
    """
    args = [Array(v, aval.weak_type) for v, aval in zip(values, closed.in_avals)]
    return [np.asarray(out) for out in jaxpr_as_fun(closed)(*args)]


# ---------------------------------------------------------------- type checks

def type_text(aval):
    """A type as JAX's error messages spell it: float32[3,4]."""
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


def same_types(xs, ys):
    return len(xs) == len(ys) and all(same_type(a, b) for a, b in zip(xs, ys))


def difference(a, b):
    """Why two types differ, as JAX's messages say it."""
    if a.shape != b.shape and a.dtype != b.dtype:
        return "the shapes and dtypes do not match"
    return "the shapes do not match" if a.shape != b.shape else "the dtypes do not match"


def check_carry_types(fun_name, in_tree, in_avals, out_tree, out_avals):
    """A loop carry must keep its pytree structure and every leaf's type."""
    if in_tree != out_tree:
        raise TypeError(f"{fun_name} function carry input and carry output must have the same "
                        f"pytree structure, but they differ: the input carry has structure "
                        f"{in_tree} and the output carry has structure {out_tree}. Revise the "
                        "function so that the carry output has the structure of the carry input.")
    paths = [keystr(path) for path, _ in tree_leaves_with_path(tree_unflatten(in_tree, in_avals))]
    for path, a, b in zip(paths, in_avals, out_avals):
        if not same_type(a, b):
            raise TypeError(
                f"{fun_name} function carry input and carry output must have equal types, but "
                f"they differ: the input carry component carry{path} has type {type_text(a)} "
                f"but the corresponding output carry component has type {type_text(b)}, "
                f"so {difference(a, b)}. Revise the function so that all output types match "
                "the corresponding input types.")


def promote_weak_carry(init, out_avals):
    """Weakly typed initial carries (Python scalars) take the type the body gives them.

    Returns the new initial carry leaves and whether any changed, in which case
    the body must be traced again on the new types.
    """
    from jaxlite.lax.elementwise import convert_element_type
    promoted, changed = [], False
    for x, out in zip(init, out_avals):
        if x.aval.weak_type and x.shape == out.shape and (x.dtype, True) != (out.dtype, out.weak_type):
            x = convert_element_type(x, out.dtype, weak_type=out.weak_type)
            changed = True
        promoted.append(x)
    return promoted, changed


def check_jaxpr_inputs(name, closed, avals):
    """The operands of a control-flow equation must match the types its jaxpr was traced on."""
    expected = closed.in_avals
    if not same_types(expected, avals):
        shown = lambda xs: ", ".join(type_text(a) for a in xs)
        raise TypeError(f"{name}: operands ({shown(avals)}) do not match the types its jaxpr "
                        f"takes ({shown(expected)})")


# ---------------------------------------------------------------- jaxpr surgery

def reorder_jaxpr(closed, in_order=None, out_order=None):
    """closed with its inputs (outputs) permuted: new input i is old input in_order[i]."""
    jaxpr = closed.jaxpr
    invars = jaxpr.invars if in_order is None else [jaxpr.invars[i] for i in in_order]
    outvars = jaxpr.outvars if out_order is None else [jaxpr.outvars[i] for i in out_order]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, jaxpr.eqns, outvars), closed.consts)


def with_unused_inputs(closed, before, after):
    """closed taking extra, ignored inputs of the given avals before and after its own."""
    jaxpr = closed.jaxpr
    invars = [Var(a) for a in before] + jaxpr.invars + [Var(a) for a in after]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, jaxpr.eqns, jaxpr.outvars), closed.consts)


def interleave(primal_counts, tangent_counts):
    """Positions that turn [p0 p1 .. t0 t1 ..] (groups) into [p0 t0 p1 t1 ..]."""
    order, primal_start, tangent_start = [], 0, sum(primal_counts)
    for n_primal, n_tangent in zip(primal_counts, tangent_counts):
        order += range(primal_start, primal_start + n_primal)
        order += range(tangent_start, tangent_start + n_tangent)
        primal_start += n_primal
        tangent_start += n_tangent
    return order


def split(values, *counts):
    """Cut a flat list into consecutive groups of the given sizes (the rest last)."""
    groups, start = [], 0
    for n in counts:
        groups.append(list(values[start:start + n]))
        start += n
    groups.append(list(values[start:]))
    return groups


def carry_fixpoint(step, start):
    """The smallest mask containing `start` that one more iteration does not grow.

    A loop carry whose tangent is nonzero (or that is batched) after one iteration
    must be treated so from the start, which can make further carries so in turn.
    """
    mask = list(start)
    while True:
        grown = [a or b for a, b in zip(mask, step(mask))]
        if grown == mask:
            return mask
        mask = grown


# ---------------------------------------------------------------- transformation helpers

def instantiated(tangents, mask):
    return [ad.instantiate(t) for t, keep in zip(tangents, mask) if keep]


def batch_axis_jaxpr(axis, closed, dims, force_out=False):
    """batching.batch_jaxpr over the axis of a BatchTrace (its size and name)."""
    return batching.batch_jaxpr(closed, dims, axis.axis_size, axis.axis_name, force_out)


def at_front_where(values, dims, mask, size):
    """Move each value's batch dim to 0; values marked in mask get one if unbatched."""
    return [batching.bdim_at_front(v, d, size) if keep else v
            for v, d, keep in zip(values, dims, mask)]


def front_dims(mask):
    return [0 if b else None for b in mask]
