"""GEMM output passes: transposed products, and epilogue fusion.

A reverse-mode weight gradient comes out of dot_general's transpose rule as
`transpose(dot_general(g, x))`; `swap_transposed_products` computes it directly as
`dot_general(x, g)`, so the GEMM writes it in the layout its consumers read (the
transpose would otherwise be a strided pass over the whole gradient).

The generated GEMM applies elementwise epilogues while its accumulators are still in
registers (gemm.BIAS, RESIDUAL, SUBTRACT, SUBTRACT_FROM, SCALE, RELU, RELU_GRAD). `fuse_epilogues`
finds a matrix product whose only use starts such a chain, and replaces product and
chain by one `dot_epilogue` equation, so `relu(x @ w + b)` costs one pass over the
output instead of three, an SGD step `w - lr * grad` is written by the GEMM, and so
is a backward pass's product times relu's derivative (the mask read from the
pre-activation, with JAX's 0.5 at 0). A bf16 product's chain may end in the rounding
of its result to bf16 (under precision.bf16, the next product's operand): the GEMM
writes the layer's bf16 output itself, with no conversion pass reading C back.
"""
import numpy as np

from jaxlite.core.abstract import ShapedArray
from jaxlite.core import dtypes
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Literal, Var
from jaxlite.core.primitive import Primitive
from jaxlite.lower import primitives as P


def _dot_epilogue_impl(lhs, rhs, *extra, dimension_numbers, epilogue, preferred_element_type=None, rounded=()):
    """The numpy meaning (used when the equation is evaluated outside a compiled program).
    A bf16 product sums in float32; the operands `rounded` names (float32 ones of a bf16
    product) are rounded to bf16 first; "round_bf16" ends a chain by rounding the result."""
    (lc, rc), _ = dimension_numbers
    if epilogue[-1:] == (ROUND_BF16,):
        return _dot_epilogue_impl(lhs, rhs, *extra, dimension_numbers=dimension_numbers, epilogue=epilogue[:-1],
                                  preferred_element_type=preferred_element_type, rounded=rounded).astype(dtypes.bfloat16)
    lhs, rhs = (x.astype(dtypes.bfloat16) if i in rounded else x for i, x in enumerate((lhs, rhs)))
    out_dtype = _out_dtype(lhs, preferred_element_type)
    rhs = rhs.astype(out_dtype, copy=False)
    out = np.tensordot(lhs.astype(out_dtype, copy=False), rhs, (lc, rc)).astype(out_dtype, copy=False)
    args = iter(extra)
    for name in epilogue:
        if name == "relu":
            out = np.where(out < 0, np.zeros((), out.dtype), out)
        elif name == "scale":
            out = out * next(args)
        elif name == "subtract":
            out = out - next(args)
        elif name == "subtract_from":
            out = next(args) - out
        elif name == "relu_grad":
            x = next(args)
            out = out * np.where(x > 0, 1, np.where(x == 0, 0.5, 0)).astype(out.dtype)
        else:
            out = out + next(args)
    return out.astype(out_dtype)


def _dot_epilogue_aval(lhs, rhs, *extra, dimension_numbers, epilogue, preferred_element_type=None, rounded=()):
    (lc, rc), _ = dimension_numbers
    m = lhs.shape[1 - lc[0]]
    n = rhs.shape[1 - rc[0]]
    rounded = epilogue[-1:] == (ROUND_BF16,)
    return ShapedArray((m, n), dtypes.bfloat16 if rounded else _out_dtype(lhs, preferred_element_type))


def _out_dtype(lhs, preferred_element_type):
    return np.dtype(lhs.dtype if preferred_element_type is None else preferred_element_type)


# The last step of a bf16 product's chain may round its float32 result to bf16 (the next
# product's operand, under precision.bf16): the GEMM then writes bf16 (gemm_lowp.ROUND_TO_BF16).
ROUND_BF16 = "round_bf16"

dot_epilogue_p = Primitive("dot_epilogue")
dot_epilogue_p.def_impl(_dot_epilogue_impl)
dot_epilogue_p.def_abstract_eval(_dot_epilogue_aval)


def fuse_epilogues(closed, is_gemm):
    """Rewrite dot + epilogue chains (`is_gemm(eqn)` says a dot_general runs on the GEMM)."""
    jaxpr = closed.jaxpr
    uses = _use_counts(jaxpr)
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outputs}
    consumer = {v: eqn for eqn in jaxpr.eqns for v in eqn.inputs if isinstance(v, Var) and uses[v] == 1}
    outputs = {v for v in jaxpr.outvars if isinstance(v, Var)}
    absorbed, replacements = set(), {}
    for eqn in jaxpr.eqns:
        if eqn.primitive is not P.dot_general_p or not _plain_matrix_product(eqn) or not is_gemm(eqn):
            continue
        chain, extra, names, result = [], [], [], eqn.outputs[0]
        while result not in outputs and result in consumer and not _claimed(consumer[result], absorbed, replacements):
            step = _epilogue_step(consumer[result], result, producers)
            if step is None:
                break
            name, arg = step
            if name == ROUND_BF16 and not dtypes.is_bfloat16(eqn.inputs[0].aval.dtype):
                break       # only the bf16 GEMM writes bf16
            chain.append(consumer[result])
            names.append(name)
            extra += [arg] if arg is not None else []
            result = consumer[result].outputs[0]
            if name == ROUND_BF16:
                break       # what follows computes on bf16 values
        if chain:
            # The fused equation takes the place of the chain's last equation, where all
            # of its operands are defined.
            absorbed.add(id(eqn))
            absorbed.update(id(e) for e in chain[:-1])
            replacements[id(chain[-1])] = eqn.replace(
                primitive=dot_epilogue_p, inputs=list(eqn.inputs) + extra, outputs=[result],
                params={"dimension_numbers": eqn.params["dimension_numbers"], "epilogue": tuple(names),
                        "preferred_element_type": eqn.params.get("preferred_element_type")})
    if not replacements:
        return closed
    eqns = [replacements.get(id(e), e) for e in jaxpr.eqns if id(e) not in absorbed]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars), closed.consts)


def swap_transposed_products(closed):
    """transpose(dot_general(x, y)) -> dot_general(y, x) when the transpose only swaps
    the two operands' free axes and is the product's only use."""
    jaxpr = closed.jaxpr
    uses = _use_counts(jaxpr)
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outputs}
    swapped, replacements = set(), {}
    for eqn in jaxpr.eqns:
        product = producers.get(eqn.inputs[0]) if eqn.primitive is P.transpose_p else None
        if product is None or product.primitive is not P.dot_general_p or uses[eqn.inputs[0]] != 1:
            continue
        if eqn.params["permutation"] == _operand_swap(product):
            swapped.add(id(product))
            (lc, rc), _ = product.params["dimension_numbers"]
            replacements[id(eqn)] = product.replace(
                inputs=list(product.inputs[::-1]), outputs=list(eqn.outputs),
                params={**product.params, "dimension_numbers": ((rc, lc), ((), ()))})
    if not replacements:
        return closed
    eqns = [replacements.get(id(e), e) for e in jaxpr.eqns if id(e) not in swapped]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars), closed.consts)


def _operand_swap(product):
    """The permutation that moves the rhs's free axes before the lhs's (None with batch axes)."""
    lhs, rhs = product.inputs
    (lc, rc), (lb, _) = product.params["dimension_numbers"]
    if lb:
        return None
    lhs_free, rhs_free = lhs.aval.ndim - len(lc), rhs.aval.ndim - len(rc)
    return tuple(range(lhs_free, lhs_free + rhs_free)) + tuple(range(lhs_free))


def _claimed(eqn, absorbed, replacements):
    """Already in an earlier product's chain (`a @ b + c @ d`: the add is one product's residual)."""
    return id(eqn) in absorbed or id(eqn) in replacements


def _use_counts(jaxpr):
    counts = {}
    for eqn in jaxpr.eqns:
        for v in eqn.inputs:
            if isinstance(v, Var):
                counts[v] = counts.get(v, 0) + 1
    for v in jaxpr.outvars:
        if isinstance(v, Var):
            counts[v] = counts.get(v, 0) + 1
    return counts


def _plain_matrix_product(eqn):
    """2-D operands, one contracting dimension each, no batch dimensions."""
    lhs, rhs = eqn.inputs[:2]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    return lhs.aval.ndim == rhs.aval.ndim == 2 and len(lc) == 1 and not lb


def _epilogue_step(eqn, acc, producers):
    """(epilogue name, its array argument or None) if `eqn` applies one to `acc`, else None."""
    primitive = eqn.primitive
    others = [v for v in eqn.inputs if v is not acc]
    out = eqn.outputs[0].aval
    if primitive is P.convert_element_type_p and acc.aval.dtype == np.float32 and dtypes.is_bfloat16(out.dtype):
        return ROUND_BF16, None
    if len(others) != 1 or out.shape != acc.aval.shape or out.dtype != acc.aval.dtype:
        return None
    other = others[0]
    if primitive is P.max_p and _is_literal(other, 0, producers):
        return "relu", None
    if primitive is P.mul_p and other.aval.ndim == 0:
        return "scale", other
    if primitive is P.mul_p and _relu_derivative_of(other, producers) is not None:
        return "relu_grad", _relu_derivative_of(other, producers)
    if primitive not in (P.add_p, P.sub_p) or not isinstance(other, Var) or other.aval.shape != acc.aval.shape:
        return None
    if primitive is P.sub_p:
        return ("subtract" if eqn.inputs[0] is acc else "subtract_from"), other
    bias = _column_vector(other, producers)
    if bias is not None:
        return "bias", bias
    return "residual", other


def _is_literal(atom, value, producers):
    """`atom` is the literal `value`, or a broadcast of it."""
    broadcast = _producer(atom, producers, P.broadcast_in_dim_p)
    if broadcast is not None:
        atom = broadcast.inputs[0]
    return isinstance(atom, Literal) and np.asarray(atom.val) == value


def _producer(atom, producers, primitive):
    eqn = producers.get(atom) if isinstance(atom, Var) else None
    return eqn if eqn is not None and eqn.primitive is primitive else None


def _relu_derivative_of(atom, producers):
    """x, when `atom` is the derivative of max(x, 0) as its JVP writes it:
    select_n(x > 0, select_n(x == 0, 0, 0.5), 1)."""
    outer = _producer(atom, producers, P.select_n_p)
    if outer is None or len(outer.inputs) != 3:
        return None
    positive, inner_atom, one = outer.inputs
    greater, inner = _producer(positive, producers, P.gt_p), _producer(inner_atom, producers, P.select_n_p)
    if greater is None or inner is None or len(inner.inputs) != 3:
        return None
    tie, zero, half = inner.inputs
    equal, x = _producer(tie, producers, P.eq_p), greater.inputs[0]
    literals = [(one, 1), (zero, 0), (half, 0.5), (greater.inputs[1], 0)]
    if equal is None or equal.inputs[0] is not x or not _is_literal(equal.inputs[1], 0, producers) or \
            not all(_is_literal(a, value, producers) for a, value in literals):
        return None
    return x if isinstance(x, Var) and x.aval.shape == atom.aval.shape and x.aval.dtype == atom.aval.dtype else None


def _column_vector(atom, producers):
    """The (n,) vector that `atom` broadcasts along the rows, if it is one."""
    eqn = producers.get(atom)
    if eqn is None or eqn.primitive is not P.broadcast_in_dim_p:
        return None
    source = eqn.inputs[0]
    columns = eqn.params["shape"][1]
    if isinstance(source, Var) and source.aval.shape == (columns,) and eqn.params["broadcast_dimensions"] == (1,):
        return source
    return None
