"""Primitives the compiler computes with simpler ones (core.primitive.compiler_rewrites).

Run before the graph passes clean up: a convolution becomes pad, `conv_patches` and a
dot_general (lax.convolution._conv_as_gemm), so fusion writes the patch matrix with one
kernel and the product runs on the GEMM. Each rule gets a layout hint per operand: the
memory order of the buffer the operand is read from, found by looking through the
transposes and elementwise operations that fusion inlines.

A product of operands widened from bfloat16 (float32) or int8 (int32), which is how
precision.bf16/int8 write a convolution, is rewritten on the narrow operands with a
wide accumulator (the same products and sums), so it lands on the low-precision GEMMs.
"""
import numpy as np

from jaxlite.core.ir import Var
from jaxlite.core.primitive import CannotRewrite, compiler_rewrites
from jaxlite.core.staging import trace_to_jaxpr
from jaxlite.lower import primitives as P
from jaxlite.lower.fusion_rules import LOWERINGS
from jaxlite.lower.passes import Rewriter, splice

_WIDENED = {("bfloat16", "float32"), ("int8", "int32")}


def apply_rewrites(closed, applied=frozenset()):
    """The program with each rewritable equation rewritten; `applied` are the primitives whose
    rewrites produced it, kept as they are (a rewrite may compute with its own primitive:
    cumsum in blocks of a cumsum)."""
    jaxpr = closed.jaxpr

    def rewritable(eqn):
        return eqn.primitive in compiler_rewrites and eqn.primitive not in applied
    if not any(rewritable(eqn) for eqn in jaxpr.eqns):
        return closed
    rewriter, producers = Rewriter(closed), {}
    for eqn in jaxpr.eqns:
        emitted = len(rewriter.eqns)
        rewritten = None
        if rewritable(eqn):
            rewritten = _applying(eqn.replace(inputs=list(map(rewriter.read, eqn.inputs))), producers, applied)
        if rewritten is not None:
            # Layouts are read off the rewritten program: an earlier convolution's
            # result is laid out as its GEMM wrote it.
            splice(rewriter, *rewritten)
        else:
            rewriter.emit(eqn)
        producers.update({v: new for new in rewriter.eqns[emitted:] for v in new.outputs})
    return rewriter.result()


def _applying(eqn, producers, applied):
    """The equation's rewrite, or None where its rule does not apply."""
    try:
        return _rewritten(eqn, producers, applied)
    except CannotRewrite:
        return None


def _rewritten(eqn, producers, applied):
    rule = compiler_rewrites[eqn.primitive]
    operands, params = list(eqn.inputs), dict(eqn.params)
    narrow = _narrow_sources(operands, eqn.outputs[0].aval.dtype, producers)
    if narrow is not None:
        operands, params["preferred_element_type"] = narrow, eqn.outputs[0].aval.dtype
    orders = tuple(_memory_order(v, producers) for v in eqn.inputs)

    def computed(*args):
        outs = rule(*args, memory_orders=orders, **params)
        return list(outs) if eqn.primitive.multiple_results else [outs]
    rewritten = trace_to_jaxpr(computed, [v.aval for v in operands], f"the rewrite of {eqn.primitive}")
    # A rewrite may compute with primitives that are rewritten themselves (rng_bit_generator
    # with mulhi): those are rewritten too, or they would run as numpy steps.
    return apply_rewrites(rewritten, applied | {eqn.primitive}), eqn.replace(inputs=operands)   # spliced in, reading the chosen operands


def _narrow_sources(operands, out_dtype, producers):
    sources = []
    for v in operands:
        eqn = producers.get(v) if isinstance(v, Var) else None
        if eqn is None or eqn.primitive is not P.convert_element_type_p:
            return None
        sources.append(eqn.inputs[0])
    narrow = {s.aval.dtype.name for s in sources}
    if len(narrow) != 1 or (narrow.pop(), np.dtype(out_dtype).name) not in _WIDENED:
        return None
    return sources


def _memory_order(var, producers):
    """Each axis's position in memory order of the buffer fusion will read it from."""
    order = list(range(var.aval.ndim))
    while isinstance(var, Var) and var in producers:
        eqn = producers[var]
        if eqn.primitive is P.transpose_p:
            order = [eqn.params["permutation"][a] for a in order]
            var = eqn.inputs[0]
            continue
        source = _same_shape_operand(eqn, producers) if _preserves_layout(eqn) else None
        if source is None:
            break
        var = source
    return tuple(order)


def _preserves_layout(eqn):
    """An elementwise equation, which fusion inlines: its result is laid out as its operands."""
    lowering = LOWERINGS.get(eqn.primitive)
    return lowering is not None and lowering.elementwise


def _same_shape_operand(eqn, producers):
    """The operand an elementwise result is laid out like (not a broadcast constant)."""
    for v in eqn.inputs:
        if not isinstance(v, Var) or v.aval.shape != eqn.outputs[0].aval.shape:
            continue
        if v not in producers or producers[v].primitive is not P.broadcast_in_dim_p:
            return v
    return None
