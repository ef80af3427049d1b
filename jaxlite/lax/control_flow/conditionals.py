"""cond and switch: one primitive, `cond`, choosing among branches by an int32 index.

Operands are (index, consts of every branch, operands); each stored branch takes
all the consts (a value several close over once; each ignores the ones it does not
read) followed by the operands, so one equation passes one operand list whatever
branch runs.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core import ref as ref_module
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Var
from jaxlite.core.primitive import Primitive
from jaxlite.core.staging import jaxpr_as_fun, trace_to_jaxpr
from jaxlite.core.trace import set_current_trace
from jaxlite.core.tree_util import keystr, tree_leaves_with_path, tree_unflatten
from jaxlite.lax.base import scalar_like
from jaxlite.lax.control_flow.common import (
    args_tree, batch_axis_jaxpr, check_jaxpr_inputs, difference, flat_operands,
    run_jaxpr, same_type, same_types, trace_hoisted, type_text)
from jaxlite.lax.elementwise import clamp, convert_element_type, ne, select_n
from jaxlite.lax.shapes import broadcast_in_dim
from jaxlite.transforms import ad, batching
from jaxlite.transforms.partial_eval import partial_eval_rules, split_jaxpr

cond_p = Primitive("cond", multiple_results=True)


def _cond_impl(index, *args, branches):
    return run_jaxpr(branches[int(index)], args)


def _cond_abstract_eval(index, *args, branches):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 scalar, got {type_text(index)}")
    for branch in branches:
        check_jaxpr_inputs("cond", branch, args)
    first = branches[0].out_avals
    for branch in branches[1:]:
        if not same_types(first, branch.out_avals):
            raise TypeError("cond: all branches must return the same types")
    weak = [all(b.out_avals[i].weak_type for b in branches) for i in range(len(first))]
    return [a.update(weak_type=w) for a, w in zip(first, weak)]


def _cond_jvp(primals, tangents, branches):
    index, operands, operand_tangents = primals[0], primals[1:], tangents[1:]
    nonzeros = [not ad.is_zero(t) for t in operand_tangents]
    out_nonzeros = [any(m) for m in zip(*(ad.jvp_jaxpr(b, nonzeros)[1] for b in branches))]
    jvp_branches = tuple(ad.jvp_jaxpr(b, nonzeros, out_nonzeros)[0] for b in branches)
    outs = cond_p.bind(index, *operands, *ad.nonzero_tangents(operand_tangents), branches=jvp_branches)
    return ad.tangents_out(outs, out_nonzeros, branches[0].out_avals)


def _cond_batch(axis, args, dims, branches):
    index, operands = args[0], args[1:]
    index_dim, operand_dims = dims[0], dims[1:]
    if index_dim is not None:
        return _cond_as_select(axis, index, index_dim, operands, operand_dims, branches)
    out_batched = [any(d is not None for d in ds)
                   for ds in zip(*(batch_axis_jaxpr(axis, b, operand_dims)[1] for b in branches))]
    batched = [batch_axis_jaxpr(axis, b, operand_dims, out_batched) for b in branches]
    outs = cond_p.bind(index, *operands, branches=tuple(b for b, _ in batched))
    return outs, batched[0][1]


def _cond_as_select(axis, index, index_dim, operands, operand_dims, branches):
    """A batched index picks a branch per lane: run every branch, then select per lane."""
    index = batching.move_dim(index, index_dim, 0)
    results = [jaxpr_as_fun(batch_axis_jaxpr(axis, b, operand_dims, True)[0])(*operands)
               for b in branches]
    outs = [select_n(broadcast_in_dim(index, cases[0].shape, (0,)), *cases) for cases in zip(*results)]
    return outs, [0] * len(outs)


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract_eval)
ad.jvp_rules[cond_p] = _cond_jvp
batching.axis_batch_rules[cond_p] = _cond_batch


# Reverse mode. Partial evaluation splits every branch into a known and an unknown
# part; the known cond returns, beside the known outputs, the residuals of every
# branch (zeros for the branches not taken), and the unknown cond takes all of them.


def _cond_partial_eval(trace, args, branches):
    index, operands = args[0], args[1:]
    if trace.is_unknown(index):
        return trace.stage(cond_p, args, dict(branches=branches))
    unknowns = [trace.is_unknown(x) for x in operands]
    out_unknowns = [any(flags) for flags in zip(*(split_jaxpr(b, unknowns)[2] for b in branches))]
    splits = [split_jaxpr(b, unknowns, instantiate=out_unknowns)[:2] for b in branches]
    known_operands = [x for x, u in zip(operands, unknowns) if not u]
    # A residual that is a known operand is passed to the unknown cond directly
    # (once, whichever branches read it); the others are computed by the known
    # cond, each branch filling the other branches' slots with zeros.
    sources = [_residual_sources(known, len(unknown.in_avals) - sum(unknowns))
               for known, unknown in splits]
    shared = sorted({j for branch in sources for j in branch if j is not None})
    computed = [[a for a, j in zip(unknown.in_avals, branch) if j is None]
                for (_, unknown), branch in zip(splits, sources)]
    known_branches = tuple(_known_branch(known, i, computed, sources[i])
                           for i, (known, _) in enumerate(splits))
    unknown_branches = tuple(
        _unknown_branch(unknown, i, computed, sources[i], shared, [x.aval for x in known_operands])
        for i, (_, unknown) in enumerate(splits))
    with set_current_trace(trace.parent):
        known_results = cond_p.bind(index, *known_operands, branches=known_branches)
    num_known = out_unknowns.count(False)
    unknown_operands = [x for x, u in zip(operands, unknowns) if u]
    staged = trace.stage(cond_p, [index, *[known_operands[j] for j in shared],
                                  *known_results[num_known:], *unknown_operands],
                         dict(branches=unknown_branches))
    known_outs, staged_outs = iter(known_results[:num_known]), iter(staged)
    return [next(staged_outs) if u else next(known_outs) for u in out_unknowns]


def _residual_sources(known, num_res):
    """For each residual of a branch, the known operand it is (or None if computed)."""
    position = {v: j for j, v in enumerate(known.jaxpr.invars)}
    return [position.get(v) for v in known.jaxpr.outvars[len(known.jaxpr.outvars) - num_res:]]


def _known_branch(known, i, computed, sources):
    """Branch i's known part, returning every branch's computed residuals: its own,
    zeros for the rest."""
    num_res = len(sources)

    def branch(*args):
        outs = jaxpr_as_fun(known)(*args)
        own = [r for r, j in zip(outs[len(outs) - num_res:], sources) if j is None]
        residuals = [own if k == i else [ad.zeros(a) for a in avals] for k, avals in enumerate(computed)]
        return outs[:len(outs) - num_res] + [r for group in residuals for r in group]

    return trace_to_jaxpr(branch, known.in_avals, "the known part of a cond branch")


def _unknown_branch(unknown, i, computed, sources, shared, operand_avals):
    """Branch i's unknown part, taking the shared known operands and every branch's
    computed residuals, and reading only its own."""
    jaxpr, num_res = unknown.jaxpr, len(sources)
    res_vars = jaxpr.invars[:num_res]
    forwarded = {j: v for v, j in zip(res_vars, sources) if j is not None}
    shared_vars = [forwarded.get(j) or Var(operand_avals[j]) for j in shared]
    before = [Var(a) for avals in computed[:i] for a in avals]
    after = [Var(a) for avals in computed[i + 1:] for a in avals]
    own = [v for v, j in zip(res_vars, sources) if j is None]
    invars = shared_vars + before + own + after + jaxpr.invars[num_res:]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, jaxpr.eqns, jaxpr.outvars), unknown.consts)


def _cond_transpose(cts, index, *operands, branches):
    linear = [ad.is_undefined(x) for x in operands]
    residuals = [x for x, lin in zip(operands, linear) if not lin]
    transposed = tuple(_transpose_branch(b, linear) for b in branches)
    cts = [ad.materialize(ct) for ct in cts]   # every branch takes the same operands
    operand_cts = iter(cond_p.bind(index, *residuals, *cts, branches=transposed))
    return [None] + [next(operand_cts) if lin else None for lin in linear]


def _transpose_branch(branch, linear):
    """(residuals, output cotangents) -> cotangents of the linear operands."""
    res_avals = [a for a, lin in zip(branch.in_avals, linear) if not lin]

    def transposed(*args):
        residuals, cts = iter(args[:len(res_avals)]), args[len(res_avals):]
        primals = [ad.UndefinedPrimal(a) if lin else next(residuals)
                   for a, lin in zip(branch.in_avals, linear)]
        cts_in = ad.backward_pass(branch.jaxpr, branch.consts, primals, list(cts))
        return [ad.materialize(ct) for ct, lin in zip(cts_in, linear) if lin]

    ct_avals = [ad.tangent_aval(a) for a in branch.out_avals]
    return trace_to_jaxpr(transposed, res_avals + ct_avals, "the transpose of a cond branch")


partial_eval_rules[cond_p] = _cond_partial_eval
ad.transpose_rules[cond_p] = _cond_transpose


# ---------------------------------------------------------------- the API

def switch(index, branches, *operands):
    """branches[index](*operands), with index clamped to [0, len(branches) - 1]."""
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if any(not callable(b) for b in branches):
        raise TypeError(f"switch: branches must be callable, got {branches}")
    index = _as_index(index)
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    names = [f"branch {i}" for i in range(len(branches))]
    return _bind_cond(index, branches, names, operands, reference=0)


_NO_OPERAND = object()


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """true_fun(*operands) if pred else false_fun(*operands), with both traced once.

    JAX's older forms work too: `cond(pred, true_fun, false_fun, operand=x)` and
    `cond(pred, true_operand, true_fun, false_operand, false_fun)`.
    """
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("cond: pass operands either positionally or as operand=, not both")
        operands = (operand,)
    if not callable(true_fun) and callable(false_fun) and len(operands) == 2 and callable(operands[1]):
        true_operand, true_branch, false_operand, false_branch = true_fun, false_fun, *operands
        return cond(pred, lambda ops: true_branch(ops[0]), lambda ops: false_branch(ops[1]),
                    (true_operand, false_operand))
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("cond: true_fun and false_fun arguments should be callable.")
    pred = flat_operands(pred)[0][0]
    if pred.shape != ():
        raise TypeError(f"Pred must be a scalar, got {pred!r} of type {type_text(pred.aval)}")
    if not (dtypes.is_bool(pred.dtype) or dtypes.is_int(pred.dtype) or dtypes.is_float(pred.dtype)):
        raise TypeError(f"Pred type must be either boolean or number, got {pred.dtype}")
    if not dtypes.is_bool(pred.dtype):
        pred = ne(pred, scalar_like(pred, 0))
    index = convert_element_type(pred, np.int32)
    return _bind_cond(index, (false_fun, true_fun), ["false_fun", "true_fun"], operands, reference=1)


def _as_index(index):
    index = flat_operands(index)[0][0]
    if index.shape != () or not dtypes.is_int(index.dtype):
        raise TypeError(f"switch: the index must be a scalar integer, got {type_text(index.aval)}")
    return convert_element_type(index, np.int32)


def _bind_cond(index, funs, names, operands, reference):
    flat, _ = flat_operands(operands)
    avals = [x.aval for x in flat]
    with ref_module.discovering_outer_refs() as touched:
        traced = [trace_hoisted(f, args_tree(*operands), avals, f"lax.cond {name}")
                  for f, name in zip(funs, names)]
    if touched.refs:
        return _cond_threading_refs(index, funs, names, operands, reference, touched.refs)
    _check_branch_outputs(traced, names, reference)
    branches, consts = _join_consts(traced)
    outs = cond_p.bind(index, *consts, *flat, branches=branches)
    return tree_unflatten(traced[0][2], outs)


def _cond_threading_refs(index, funs, names, operands, reference, refs):
    """A cond whose branches touch Refs from outside it: each branch takes their values and
    returns their values after it, which are written back after the cond."""
    def threaded(fun):
        def branch(values, *operands):
            with ref_module.binding_refs(refs, values) as bound:
                out = fun(*operands)
            return out, bound.final_values()
        return branch
    out, finals = _bind_cond(index, [threaded(f) for f in funs], names,
                             ([ref[...] for ref in refs], *operands), reference)
    for ref, value in zip(refs, finals):
        ref[...] = value
    return out


def _check_branch_outputs(traced, names, reference):
    """Every branch must return what branch `reference` (the one messages name first) does."""
    jaxpr0, _, tree0 = traced[reference]
    paths = [keystr(p) for p, _ in tree_leaves_with_path(tree_unflatten(tree0, jaxpr0.out_avals))]
    for (jaxpr, _, tree), name in zip(traced, names):
        if tree != tree0:
            raise TypeError(f"cond branch outputs must have the same pytree structure, but they "
                            f"differ: {names[reference]} returns {tree0} and {name} returns {tree} "
                            f"(* is an array). Revise {names[reference]} and/or {name} so that they "
                            "return the same structure.")
        for path, a, b in zip(paths, jaxpr0.out_avals, jaxpr.out_avals):
            if not same_type(a, b):
                raise TypeError(
                    f"cond branches must have equal output types but they differ: the output "
                    f"of {names[reference]} at path {path or '()'} has type {type_text(a)} but the "
                    f"corresponding output of {name} has type {type_text(b)}, so "
                    f"{difference(a, b)}. Revise {names[reference]} and/or {name} so that all output "
                    "types match.")


def _join_consts(traced):
    """One operand list for every branch: the consts of all branches, a value two branches
    close over passed once (as JAX's), each branch ignoring the ones it does not read."""
    positions, all_consts = {}, []
    keyed = [_const_keys(consts) for _, consts, _ in traced]
    for keys, (_, consts, _) in zip(keyed, traced):
        for key, c in zip(keys, consts):
            if key not in positions:
                positions[key] = len(all_consts)
                all_consts.append(c)
    branches = []
    for keys, (jaxpr, consts, _) in zip(keyed, traced):
        inner = jaxpr.jaxpr
        const_vars = [Var(c.aval) for c in all_consts]
        for key, v in zip(keys, inner.invars):
            const_vars[positions[key]] = v
        invars = const_vars + inner.invars[len(consts):]
        branches.append(ClosedJaxpr(Jaxpr([], invars, inner.eqns, inner.outvars), []))
    return tuple(branches), all_consts


def _const_keys(consts):
    """Each const's identity, and which occurrence of it in this branch it is."""
    seen, keys = {}, []
    for c in consts:
        seen[id(c)] = seen.get(id(c), -1) + 1
        keys.append((id(c), seen[id(c)]))
    return keys
