"""GEMM epilogue fusion: dot_general followed by bias, residual, scale and relu.

The generated GEMM applies elementwise epilogues while its accumulators are still in
registers (gemm.BIAS, RESIDUAL, SCALE, RELU). This pass finds a matrix product whose
only use starts such a chain, and replaces product and chain by one `dot_epilogue`
equation, so `relu(x @ w + b)` costs one pass over the output instead of three.
"""
import numpy as np

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Literal, Var
from jaxlite.core.primitive import Primitive


def _dot_epilogue_impl(lhs, rhs, *extra, dimension_numbers, epilogue, preferred_element_type=None):
    """The numpy meaning (used when the equation is evaluated outside a compiled program).
    A bf16 product sums in float32; float32 weights of a bf16 product are rounded first."""
    (lc, rc), _ = dimension_numbers
    out_dtype = _out_dtype(lhs, preferred_element_type)
    rhs = rhs.astype(lhs.dtype, copy=False).astype(out_dtype, copy=False)
    out = np.tensordot(lhs.astype(out_dtype, copy=False), rhs, (lc, rc)).astype(out_dtype, copy=False)
    args = iter(extra)
    for name in epilogue:
        if name == "relu":
            out = np.where(out < 0, np.zeros((), out.dtype), out)
        elif name == "scale":
            out = out * next(args)
        else:
            out = out + next(args)
    return out.astype(out_dtype)


def _dot_epilogue_aval(lhs, rhs, *extra, dimension_numbers, epilogue, preferred_element_type=None):
    (lc, rc), _ = dimension_numbers
    m = lhs.shape[1 - lc[0]]
    n = rhs.shape[1 - rc[0]]
    return ShapedArray((m, n), _out_dtype(lhs, preferred_element_type))


def _out_dtype(lhs, preferred_element_type):
    return np.dtype(lhs.dtype if preferred_element_type is None else preferred_element_type)


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
        if eqn.primitive.name != "dot_general" or not _plain_matrix_product(eqn) or not is_gemm(eqn):
            continue
        chain, extra, names, result = [], [], [], eqn.outputs[0]
        while result not in outputs and result in consumer and not _claimed(consumer[result], absorbed, replacements):
            step = _epilogue_step(consumer[result], result, producers)
            if step is None:
                break
            name, arg = step
            chain.append(consumer[result])
            names.append(name)
            extra += [arg] if arg is not None else []
            result = consumer[result].outputs[0]
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
    name = eqn.primitive.name
    others = [v for v in eqn.inputs if v is not acc]
    out = eqn.outputs[0].aval
    if len(others) != 1 or out.shape != acc.aval.shape or out.dtype != acc.aval.dtype:
        return None
    other = others[0]
    if name == "max" and _is_zero(other, producers):
        return "relu", None
    if name == "mul" and isinstance(other, Var) and other.aval.ndim == 0:
        return "scale", other
    if name != "add" or not isinstance(other, Var) or other.aval.shape != acc.aval.shape:
        return None
    bias = _column_vector(other, producers)
    if bias is not None:
        return "bias", bias
    return "residual", other


def _is_zero(atom, producers):
    if isinstance(atom, Var) and atom in producers and producers[atom].primitive.name == "broadcast_in_dim":
        atom = producers[atom].inputs[0]
    return isinstance(atom, Literal) and np.asarray(atom.val) == 0


def _column_vector(atom, producers):
    """The (n,) vector that `atom` broadcasts along the rows, if it is one."""
    eqn = producers.get(atom)
    if eqn is None or eqn.primitive.name != "broadcast_in_dim":
        return None
    source = eqn.inputs[0]
    columns = eqn.params["shape"][1]
    if isinstance(source, Var) and source.aval.shape == (columns,) and eqn.params["broadcast_dimensions"] == (1,):
        return source
    return None
