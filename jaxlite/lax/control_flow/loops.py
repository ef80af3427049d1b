"""Loops: while_loop and scan as primitives; fori_loop and map built on them.

Eagerly, a loop interprets its stored body jaxpr once per iteration: the user's
Python function is traced once, never once per iteration.
"""
import operator

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.array import Array
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Var, dce_closed
from jaxlite.core import ref as ref_module
from jaxlite.core.primitive import Primitive
from jaxlite.core.staging import eval_jaxpr, jaxpr_as_fun, trace_to_jaxpr
from jaxlite.core.trace import Tracer, set_current_trace
from jaxlite.core.tree_util import tree_unflatten
from jaxlite.lax.control_flow.common import (
    args_tree, at_front_where, batch_axis_jaxpr, carry_fixpoint, check_carry_types,
    check_jaxpr_inputs, flat_operands, front_dims, instantiated, interleave,
    promote_weak_carry, reorder_jaxpr, run_jaxpr, same_types, split, trace_hoisted, type_text,
    with_unused_inputs)
from jaxlite.lax.elementwise import add, convert_element_type, lt, select_n
from jaxlite.lax.reductions import reduce_or
from jaxlite.lax.shapes import broadcast_in_dim
from jaxlite.transforms import ad, batching
from jaxlite.transforms.partial_eval import computed_from, partial_eval_rules, split_jaxpr


def _trace_carry_fun(fun, fun_name, init, extra_avals=(), carry_part=None):
    """Trace a loop body on the carry (plus per-iteration inputs), checking the carry's type.

    `fun` maps (carry, *extras) to its output, whose structure `carry_part` maps to
    the output carry's. Returns (jaxpr, consts, out_tree, init leaves, carry tree),
    the init leaves after a weakly typed initial carry took the body's types.
    """
    leaves, carry_tree = flat_operands(init)
    while True:
        in_tree = args_tree(tree_unflatten(carry_tree, leaves), *extra_avals)
        avals = [x.aval for x in leaves] + list(extra_avals)
        jaxpr, consts, out_tree = trace_hoisted(fun, in_tree, avals, fun_name)
        carry_out_avals = jaxpr.out_avals[:len(leaves)]
        leaves, promoted = promote_weak_carry(leaves, carry_out_avals)
        if not promoted:
            out_carry_tree = carry_part(out_tree) if carry_part else out_tree
            check_carry_types(fun_name, carry_tree, [x.aval for x in leaves],
                              out_carry_tree, carry_out_avals)
            return jaxpr, consts, out_tree, leaves, carry_tree


# ---------------------------------------------------------------- while

while_p = Primitive("while", multiple_results=True)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = split(args, cond_nconsts, body_nconsts)
    while run_jaxpr(cond_jaxpr, cond_consts + carry)[0]:
        carry = run_jaxpr(body_jaxpr, body_consts + carry)
    return carry


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = split(avals, cond_nconsts, body_nconsts)
    check_jaxpr_inputs("while", cond_jaxpr, cond_consts + carry)
    check_jaxpr_inputs("while", body_jaxpr, body_consts + carry)
    if not same_types(carry, body_jaxpr.out_avals):
        raise TypeError("while: the body must return the carry's types")
    return body_jaxpr.in_avals[body_nconsts:]


def _while_jvp(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, init = split(primals, cond_nconsts, body_nconsts)
    _, body_const_tangents, init_tangents = split(tangents, cond_nconsts, body_nconsts)
    const_nz = [not ad.is_zero(t) for t in body_const_tangents]
    carry_nz = carry_fixpoint(lambda nz: ad.jvp_jaxpr(body_jaxpr, const_nz + nz, nz)[1],
                              [not ad.is_zero(t) for t in init_tangents])
    body_jvp, _ = ad.jvp_jaxpr(body_jaxpr, const_nz + carry_nz, carry_nz)
    n_carry_tangents = sum(carry_nz)
    body_jvp = reorder_jaxpr(body_jvp, interleave([body_nconsts, len(init)],
                                                  [sum(const_nz), n_carry_tangents]))
    carry_tangent_avals = body_jvp.out_avals[len(init):]
    cond_jvp = with_unused_inputs(cond_jaxpr, [], carry_tangent_avals)
    outs = while_p.bind(*cond_consts, *body_consts, *ad.nonzero_tangents(body_const_tangents),
                        *init, *instantiated(init_tangents, carry_nz),
                        cond_jaxpr=cond_jvp, body_jaxpr=body_jvp, cond_nconsts=cond_nconsts,
                        body_nconsts=body_nconsts + sum(const_nz))
    return ad.tangents_out(outs, carry_nz, body_jaxpr.out_avals)


def _while_batch(axis, args, dims, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, init = split(args, cond_nconsts, body_nconsts)
    cond_dims, body_dims, init_dims = split(dims, cond_nconsts, body_nconsts)

    def pred_batched(mask):
        return batch_axis_jaxpr(axis, cond_jaxpr, cond_dims + front_dims(mask))[1][0] is not None

    def step(mask):
        # Lanes that stop at different iterations make every carry differ across lanes.
        if pred_batched(mask):
            return [True] * len(mask)
        return [d is not None for d in batch_axis_jaxpr(axis, body_jaxpr, body_dims + front_dims(mask))[1]]

    carry_batched = carry_fixpoint(step, [d is not None for d in init_dims])
    carry_dims = front_dims(carry_batched)
    init = at_front_where(init, init_dims, carry_batched, axis.axis_size)
    cond_b, _ = batch_axis_jaxpr(axis, cond_jaxpr, cond_dims + carry_dims)
    body_b, _ = batch_axis_jaxpr(axis, body_jaxpr, body_dims + carry_dims, carry_batched)
    if pred_batched(carry_batched):
        cond_b, body_b = _run_until_all_lanes_done(cond_b, body_b, cond_nconsts)
        body_consts = cond_consts + body_consts
    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr=cond_b, body_jaxpr=body_b,
                        cond_nconsts=cond_nconsts, body_nconsts=len(body_consts))
    return outs, carry_dims


def _run_until_all_lanes_done(cond_b, body_b, cond_nconsts):
    """A loop over lanes with their own predicates: loop while any lane runs, and
    keep a finished lane's carry unchanged. The body takes the cond's consts first."""
    body_nconsts = len(body_b.in_avals) - (len(cond_b.in_avals) - cond_nconsts)

    def any_running(*args):
        return [reduce_or(jaxpr_as_fun(cond_b)(*args)[0], (0,))]

    def masked_step(*args):
        cond_consts, body_consts, carry = split(args, cond_nconsts, body_nconsts)
        running = jaxpr_as_fun(cond_b)(*cond_consts, *carry)[0]
        new = jaxpr_as_fun(body_b)(*body_consts, *carry)
        return [select_n(broadcast_in_dim(running, c.shape, (0,)), c, n) for c, n in zip(carry, new)]

    body_avals = cond_b.in_avals[:cond_nconsts] + body_b.in_avals
    return (trace_to_jaxpr(any_running, cond_b.in_avals, "the batched while predicate"),
            trace_to_jaxpr(masked_step, body_avals, "the batched while body"))


while_p.def_impl(_while_impl)
while_p.def_abstract_eval(_while_abstract_eval)
ad.jvp_rules[while_p] = _while_jvp
batching.axis_batch_rules[while_p] = _while_batch


# Reverse mode is impossible for while: the trip count is unknown when tracing, so
# no residuals can be stored per iteration. Partial evaluation still works, as in
# JAX: a loop over the known carries computes them now, and the whole loop is
# staged again for the unknown ones (so linearize works); transposing that loop
# is the error that points users to scan or to a fori_loop with static bounds.


def _while_partial_eval(trace, args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                  body_nconsts=body_nconsts)
    cond_uk, body_const_uk, init_uk = split([trace.is_unknown(x) for x in args],
                                            cond_nconsts, body_nconsts)
    carry_uk = carry_fixpoint(lambda uk: split_jaxpr(body_jaxpr, body_const_uk + uk)[2], init_uk)
    if any(split_jaxpr(cond_jaxpr, cond_uk + carry_uk)[2]) or all(carry_uk):
        return trace.stage(while_p, args, params)
    known_body = split_jaxpr(body_jaxpr, body_const_uk + carry_uk)[0]
    known_body = dce_closed(known_body, [True] * carry_uk.count(False)
                            + [False] * (len(known_body.out_avals) - carry_uk.count(False)))
    # The predicate reads only known values, so its other inputs can go (after DCE,
    # no equation left reads them).
    cond = dce_closed(cond_jaxpr)
    known_invars = [v for v, u in zip(cond.jaxpr.invars, cond_uk + carry_uk) if not u]
    known_cond = ClosedJaxpr(Jaxpr(cond.jaxpr.constvars, known_invars, cond.jaxpr.eqns,
                                   cond.jaxpr.outvars), cond.consts)
    cond_consts, body_consts, init = split(args, cond_nconsts, body_nconsts)
    with set_current_trace(trace.parent):
        known_outs = while_p.bind(*[x for x, u in zip(cond_consts, cond_uk) if not u],
                                  *[x for x, u in zip(body_consts, body_const_uk) if not u],
                                  *[x for x, u in zip(init, carry_uk) if not u],
                                  cond_jaxpr=known_cond, body_jaxpr=known_body,
                                  cond_nconsts=cond_uk.count(False),
                                  body_nconsts=body_const_uk.count(False))
    staged, known_outs = trace.stage(while_p, args, params), iter(known_outs)
    return [out if u else next(known_outs) for out, u in zip(staged, carry_uk)]


def _while_transpose(cts, *args, **params):
    raise ValueError(WHILE_REVERSE_MODE_MESSAGE)


partial_eval_rules[while_p] = _while_partial_eval
ad.transpose_rules[while_p] = _while_transpose
WHILE_REVERSE_MODE_MESSAGE = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


def while_loop(cond_fun, body_fun, init_val):
    """Run body_fun on the carry while cond_fun(carry) is True; return the final carry."""
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("while_loop: cond_fun and body_fun must be callable")
    with ref_module.discovering_outer_refs() as touched:
        body, body_consts, _, init, carry_tree = _trace_carry_fun(body_fun, "while_loop body", init_val)
        carry = tree_unflatten(carry_tree, init)
        cond, cond_consts, _ = trace_hoisted(cond_fun, args_tree(carry), [x.aval for x in init],
                                             "cond_fun")
    if touched.refs:
        return _while_threading_refs(cond_fun, body_fun, init_val, touched.refs)
    outs_avals = cond.out_avals
    if len(outs_avals) != 1 or outs_avals[0].shape != () or outs_avals[0].dtype != np.bool_:
        shown = ", ".join(type_text(a) for a in outs_avals)
        raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) [{shown}].")
    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return tree_unflatten(carry_tree, outs)


def _while_threading_refs(cond_fun, body_fun, init_val, refs):
    """A while_loop whose functions touch Refs from outside it: their values ride along in the
    carry (cond_fun reads them), and their final values are written back after the loop."""
    def threaded_cond(carry):
        inner, values = carry
        with ref_module.binding_refs(refs, values):
            return cond_fun(inner)

    def threaded_body(carry):
        inner, values = carry
        with ref_module.binding_refs(refs, values) as bound:
            new_inner = body_fun(inner)
        return new_inner, bound.final_values()
    carry, finals = while_loop(threaded_cond, threaded_body, (init_val, [ref[...] for ref in refs]))
    for ref, value in zip(refs, finals):
        ref[...] = value
    return carry


# ---------------------------------------------------------------- scan

scan_p = Primitive("scan", multiple_results=True)


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = split(args, num_consts, num_carry)
    y_avals = jaxpr.out_avals[num_carry:]
    ys = [np.empty((length,) + a.shape, a.dtype) for a in y_avals]
    for i in (reversed(range(length)) if reverse else range(length)):
        outs = run_jaxpr(jaxpr, consts + carry + [x[i] for x in xs])
        carry = outs[:num_carry]
        for y, value in zip(ys, outs[num_carry:]):
            y[i] = value
    return carry + ys


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = split(avals, num_consts, num_carry)
    if any(x.shape[:1] != (length,) for x in xs):
        raise TypeError(f"scan: every scanned operand needs leading axis {length}, got "
                        + ", ".join(type_text(x) for x in xs))
    x_slices = [x.update(shape=x.shape[1:]) for x in xs]
    check_jaxpr_inputs("scan", jaxpr, consts + carry + x_slices)
    carry_out, ys = split(jaxpr.out_avals, num_carry)
    if not same_types(carry, carry_out):
        raise TypeError("scan: the body must return the carry's types")
    return jaxpr.in_avals[num_consts:num_consts + num_carry] + [
        y.update(shape=(length,) + y.shape) for y in ys]


def _scan_jvp(primals, tangents, jaxpr, num_consts, num_carry, **params):
    consts, init, xs = split(primals, num_consts, num_carry)
    const_t, init_t, xs_t = split(tangents, num_consts, num_carry)
    const_nz, xs_nz = [[not ad.is_zero(t) for t in ts] for ts in (const_t, xs_t)]
    num_ys = len(jaxpr.out_avals) - num_carry

    def jvp_body(carry_nz):
        return ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz, carry_nz + [False] * num_ys)

    carry_nz = carry_fixpoint(lambda nz: jvp_body(nz)[1][:num_carry],
                              [not ad.is_zero(t) for t in init_t])
    body, out_nz = jvp_body(carry_nz)
    n_tangents = [sum(const_nz), sum(carry_nz), sum(xs_nz)]
    body = reorder_jaxpr(body, interleave([num_consts, num_carry, len(xs)], n_tangents),
                         interleave([num_carry, num_ys], [sum(carry_nz), sum(out_nz[num_carry:])]))
    outs = scan_p.bind(*consts, *ad.nonzero_tangents(const_t), *init, *instantiated(init_t, carry_nz),
                       *xs, *ad.nonzero_tangents(xs_t), jaxpr=body,
                       num_consts=num_consts + n_tangents[0], num_carry=num_carry + n_tangents[1],
                       **params)
    carry_outs, ys = split(outs, num_carry + n_tangents[1])
    carry, carry_dot = ad.tangents_out(carry_outs, carry_nz, jaxpr.out_avals[:num_carry])
    y, y_dot = ad.tangents_out(ys, out_nz[num_carry:], jaxpr.out_avals[num_carry:])
    return carry + y, carry_dot + y_dot


def _scan_batch(axis, args, dims, jaxpr, num_consts, num_carry, **params):
    consts, init, xs = split(args, num_consts, num_carry)
    const_dims, init_dims, xs_dims = split(dims, num_consts, num_carry)
    # Axis 0 of xs is the scanned one, so a batch dim goes to 1; a slice has it at 0.
    xs = [x if d is None else batching.move_dim(x, d, 1) for x, d in zip(xs, xs_dims)]
    slice_dims = [None if d is None else 0 for d in xs_dims]
    num_ys = len(jaxpr.out_avals) - num_carry

    def batch_body(mask):
        return batch_axis_jaxpr(axis, jaxpr, const_dims + front_dims(mask) + slice_dims,
                                mask + [False] * num_ys)

    carry_batched = carry_fixpoint(lambda mask: [d is not None for d in batch_body(mask)[1][:num_carry]],
                                   [d is not None for d in init_dims])
    body, out_dims = batch_body(carry_batched)
    init = at_front_where(init, init_dims, carry_batched, axis.axis_size)
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, num_consts=num_consts, num_carry=num_carry,
                       **params)
    y_dims = [None if d is None else 1 for d in out_dims[num_carry:]]
    return outs, front_dims(carry_batched) + y_dims


scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract_eval)
ad.jvp_rules[scan_p] = _scan_jvp
batching.axis_batch_rules[scan_p] = _scan_batch


# Reverse mode. Partial evaluation splits the body into a known scan, which also
# emits the residuals of every iteration as extra ys, and an unknown (linear) scan
# that reads them back per iteration; residuals that are consts or xs of the loop
# are passed as they are. The transpose runs the linear body's transpose as a
# scan in the opposite direction, carrying the carry cotangents and summing the
# consts' cotangents.


def _scan_partial_eval(trace, args, jaxpr, num_consts, num_carry, **params):
    unknowns = [trace.is_unknown(x) for x in args]
    const_uk, init_uk, xs_uk = split(unknowns, num_consts, num_carry)
    num_ys = len(jaxpr.out_avals) - num_carry
    carry_uk = carry_fixpoint(
        lambda uk: split_jaxpr(jaxpr, const_uk + uk + xs_uk)[2][:num_carry], init_uk)
    unknowns = const_uk + carry_uk + xs_uk
    known, unknown, out_uk, num_res = split_jaxpr(jaxpr, unknowns,
                                                  instantiate=carry_uk + [False] * num_ys)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    num_known, num_known_consts = out_uk.count(False), const_uk.count(False)
    res_vars = known.jaxpr.outvars[num_known:]
    # Where each residual comes from: loop invariants (known consts, and values
    # computed from them alone) are computed once and passed as consts; known xs
    # are passed as they are; anything else differs per iteration and is
    # stacked by the known scan.
    kj = known.jaxpr
    invariant = computed_from(kj, kj.constvars + kj.invars[:num_known_consts])
    xs_vars = set(known.jaxpr.invars[num_known_consts + carry_uk.count(False):])
    is_const = [v in invariant for v in res_vars]
    is_xs = [v in xs_vars for v in res_vars]
    stacked = [v for v, c, x in zip(res_vars, is_const, is_xs) if not (c or x)]
    known_body = dce_closed(ClosedJaxpr(
        Jaxpr(kj.constvars, kj.invars, kj.eqns, kj.outvars[:num_known] + stacked), known.consts))
    hoisted = dce_closed(ClosedJaxpr(
        Jaxpr(kj.constvars, kj.invars[:num_known_consts], kj.eqns,
              [v for v, c in zip(res_vars, is_const) if c]), known.consts), keep_effects=False)
    with set_current_trace(trace.parent):
        known_results = scan_p.bind(*known_args, jaxpr=known_body, num_consts=num_known_consts,
                                    num_carry=carry_uk.count(False), **params)
        invariants = iter(eval_jaxpr(hoisted.jaxpr, hoisted.consts, *known_args[:num_known_consts]))
    stacked_res = iter(known_results[num_known:])
    xs_position = {v: i for i, v in enumerate(kj.invars)}
    residuals = [next(invariants) if c else known_args[xs_position[v]] if x else next(stacked_res)
                 for v, c, x in zip(res_vars, is_const, is_xs)]
    # The unknown body takes (residuals, unknown consts, carry, xs); a scan wants its
    # consts first and the per-iteration inputs last, so loop-invariant residuals
    # move to the front and the others join the xs.
    uk_consts, uk_carry, uk_xs = split(range(num_res, len(unknown.jaxpr.invars)),
                                       sum(const_uk), sum(carry_uk))
    order = ([i for i, c in enumerate(is_const) if c] + uk_consts + uk_carry
             + [i for i, c in enumerate(is_const) if not c] + uk_xs)
    operands = residuals + [x for x, u in zip(args, unknowns) if u]
    staged = trace.stage(scan_p, [operands[i] for i in order],
                         dict(params, jaxpr=reorder_jaxpr(unknown, order),
                              num_consts=sum(is_const) + sum(const_uk), num_carry=sum(carry_uk)))
    known_outs, staged_outs = iter(known_results[:num_known]), iter(staged)
    return [next(staged_outs) if u else next(known_outs) for u in out_uk]


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, init, xs = split(args, num_consts, num_carry)
    const_lin, xs_lin = [ad.is_undefined(c) for c in consts], [ad.is_undefined(x) for x in xs]
    ct_carry, ct_ys = split([ad.materialize(ct) for ct in cts], num_carry)
    ct_consts = [ad.zeros(c.aval) for c in consts if ad.is_undefined(c)]
    outs = scan_p.bind(*[c for c in consts if not ad.is_undefined(c)], *ct_consts, *ct_carry,
                       *[x for x in xs if not ad.is_undefined(x)], *ct_ys,
                       jaxpr=_transposed_scan_body(jaxpr, const_lin, num_carry, xs_lin),
                       num_consts=const_lin.count(False), num_carry=len(ct_consts) + num_carry,
                       length=length, reverse=not reverse, unroll=unroll)
    ct_consts, ct_init, ct_xs = split(outs, len(ct_consts), num_carry)
    return (_where(const_lin, ct_consts) + [ct if ad.is_undefined(x) else None
                                            for x, ct in zip(init, ct_init)] + _where(xs_lin, ct_xs))


def _where(mask, values):
    """values at the positions marked in mask, None elsewhere."""
    values = iter(values)
    return [next(values) if flag else None for flag in mask]


def _transposed_scan_body(jaxpr, const_lin, num_carry, xs_lin):
    """(residual consts, consts' cotangent sums, carry cotangents, residual xs, y cotangents)
    -> (new sums, cotangents of the previous carry, cotangents of the linear xs)."""
    const_avals, carry_avals, x_avals = split(jaxpr.in_avals, len(const_lin), num_carry)
    groups = [[a for a, lin in zip(const_avals, const_lin) if not lin],
              [ad.tangent_aval(a) for a, lin in zip(const_avals, const_lin) if lin],
              [ad.tangent_aval(a) for a in carry_avals],
              [a for a, lin in zip(x_avals, xs_lin) if not lin],
              [ad.tangent_aval(a) for a in jaxpr.out_avals[num_carry:]]]

    def body(*args):
        res_consts, sums, ct_carry, res_xs, ct_ys = split(args, *[len(group) for group in groups[:4]])
        primals = (_undefined_where(const_avals, const_lin, res_consts)
                   + [ad.UndefinedPrimal(a) for a in carry_avals]
                   + _undefined_where(x_avals, xs_lin, res_xs))
        cts = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, ct_carry + ct_ys)
        ct_consts, ct_prev_carry, ct_xs = split(cts, len(const_lin), num_carry)
        sums = [ad.add_tangents(total, ct) for total, ct in
                zip(sums, [ct for ct, lin in zip(ct_consts, const_lin) if lin])]
        ct_xs = [ct for ct, lin in zip(ct_xs, xs_lin) if lin]
        return [ad.materialize(ct) for ct in sums + ct_prev_carry + ct_xs]

    return trace_to_jaxpr(body, [a for group in groups for a in group], "the transpose of a scan body")


def _undefined_where(avals, linear, values):
    values = iter(values)
    return [ad.UndefinedPrimal(a) if lin else next(values) for a, lin in zip(avals, linear)]


partial_eval_rules[scan_p] = _scan_partial_eval
ad.transpose_rules[scan_p] = _scan_transpose


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop f(carry, x) -> (carry, y) over the leading axis of xs; return (carry, stacked ys).

    `unroll` is recorded on the equation for code generators; it never changes results.
    """
    if not callable(f):
        raise TypeError(f"scan: f must be callable, got {f!r}")
    xs_flat, xs_tree = flat_operands(xs)
    length = _scan_length(xs_flat, length)
    x_avals = [x.aval.update(shape=x.shape[1:]) for x in xs_flat]

    def body(carry, x_leaves):
        out = f(carry, tree_unflatten(xs_tree, x_leaves))
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"scan body output must be a pair (carry, y), got {out!r}")
        return tuple(out)

    with ref_module.discovering_outer_refs() as touched:
        jaxpr, consts, out_tree, init_flat, carry_tree = _trace_carry_fun(
            lambda carry, *x: body(carry, list(x)), "scan body", init, x_avals,
            carry_part=lambda tree: tree.children[0])
    if touched.refs:
        return _scan_threading_refs(f, init, xs, length, reverse, unroll, touched.refs)
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=jaxpr, num_consts=len(consts),
                       num_carry=len(init_flat), length=length, reverse=bool(reverse),
                       unroll=int(unroll))
    carry, ys = split(outs, len(init_flat))
    return tree_unflatten(carry_tree, carry), tree_unflatten(out_tree.children[1], ys)


def _scan_threading_refs(f, init, xs, length, reverse, unroll, refs):
    """A scan whose body touches Refs from outside it: their values ride along in the carry,
    and their final values are written back after the loop."""
    def threaded(carry, x):
        inner, values = carry
        with ref_module.binding_refs(refs, values) as bound:
            new_inner, y = f(inner, x)
        return (new_inner, bound.final_values()), y
    (carry, finals), ys = scan(threaded, (init, [ref[...] for ref in refs]), xs, length, reverse, unroll)
    for ref, value in zip(refs, finals):
        ref[...] = value
    return carry, ys


def _scan_length(xs_flat, length):
    lengths = {x.shape[0] if x.ndim else None for x in xs_flat}
    if None in lengths:
        raise ValueError("scan got value with no leading axis to scan over: every leaf of xs "
                         "must be an array with at least one dimension")
    if len(lengths) > 1:
        raise ValueError(f"scan got values with different leading axis sizes: {sorted(lengths)}")
    if length is not None and lengths and operator.index(length) not in lengths:
        raise ValueError(f"scan got `length` argument of {length} which disagrees with the "
                         f"leading axis size {lengths.pop()} of xs")
    if length is not None:
        lengths.add(operator.index(length))
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths.pop()


def map(f, xs, *, batch_size=None):
    """[f(x) for x in xs] along the leading axis, traced once (a scan with no carry).

    With batch_size, f runs vmapped over batches of that many rows (the rows left over
    in one more vmapped call), as JAX: fewer steps for more memory."""
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    from jaxlite.core.tree_util import tree_flatten, tree_map
    from jaxlite.lax.shapes import concatenate, reshape, slice_in_dim
    batch_size = operator.index(batch_size)
    if batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be a positive integer, got {batch_size}")
    n = tree_flatten(xs)[0][0].shape[0]
    batches, whole = n // batch_size, n // batch_size * batch_size
    mapped = batching.vmap(f)
    if batches == 0:
        return mapped(xs)
    grouped = tree_map(lambda x: reshape(slice_in_dim(x, 0, whole), (batches, batch_size) + x.shape[1:]), xs)
    ys = tree_map(lambda y: reshape(y, (whole,) + y.shape[2:]), scan(lambda _, x: ((), mapped(x)), (), grouped)[1])
    if whole == n:
        return ys
    rest = mapped(tree_map(lambda x: slice_in_dim(x, whole, n), xs))
    return tree_map(lambda a, b: concatenate([a, b], 0), ys, rest)


# ---------------------------------------------------------------- fori_loop

def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """Run val = body_fun(i, val) for i in [lower, upper).

    Static (concrete) bounds make it a scan, which reverse mode can differentiate (and
    which `unroll` is passed to); traced bounds need a while_loop.
    """
    if _is_static(lower) and _is_static(upper):
        return _fori_as_scan(int(lower), int(upper), body_fun, init_val, 1 if unroll is None else unroll)
    if unroll is not None:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")
    return _fori_as_while(lower, upper, body_fun, init_val)


def _is_static(bound):
    return not isinstance(bound, Tracer) and (
        isinstance(bound, (int, np.integer)) or (type(bound) is Array and dtypes.is_int(bound.dtype)))


def _fori_as_scan(lower, upper, body_fun, init_val, unroll):
    def step(carry, _):
        i, val = carry
        return (add(i, 1), body_fun(i, val)), ()

    start = flat_operands(lower)[0][0]
    (_, result), _ = scan(step, (start, init_val), None, length=max(upper - lower, 0), unroll=unroll)
    return result


def _fori_as_while(lower, upper, body_fun, init_val):
    (lower, upper), _ = flat_operands((lower, upper))
    if lower.dtype != upper.dtype:
        lower, upper = [convert_element_type(b, dtypes.promote_types(lower.dtype, upper.dtype))
                        for b in (lower, upper)]

    def body(carry):
        i, stop, val = carry
        return add(i, 1), stop, body_fun(i, val)

    _, _, result = while_loop(lambda carry: lt(carry[0], carry[1]), body, (lower, upper, init_val))
    return result
