"""int8 products as one GEMM step: quantize the activations, multiply, dequantize.

precision.int8 writes a matrix product as three parts (see precision._int8_dot):

    qx, sx = quantize(x, rows)                      abs, reduce_max, div, round, clamp, convert
    acc = dot_general(qx, qw) -> int32              the vpdpbusd GEMM
    out = float32(acc) * (sx[:, None] * sw[None, :])

Run as written, the quantization is two passes over x plus a materialized broadcast of
the row scales, and the dequantization one more pass over the output. This pass finds
that pattern (and a bias add and relu right after it) and replaces it by one
`int8_matmul` equation: the runtime quantizes x straight into the GEMM's A words in
one compiled pass (LowPrecisionGemm.quantize_a_job), and the GEMM's epilogue applies scales,
bias and relu while the accumulators are in registers. The quantization equations
stay in the jaxpr for any other reader; DCE drops them when nothing else reads them.

bf16 products get the same treatment for their operands: float32 operands rounded in the
program (weights passed as arguments, the first layer's activations) go to the GEMM step as
float32, which rounds them as it packs them (gemm_lowp.BF16_FROM_FLOAT32; weights of an odd
K in one compiled pass, LowPrecisionGemm.round_b_job), instead of a conversion kernel and a repacking
of its output.
"""
import numpy as np

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Literal, Var
from jaxlite.core.primitive import Primitive
from jaxlite.lower import primitives as P
from jaxlite.lower.epilogues import (_column_vector, _epilogue_step, _plain_matrix_product, _use_counts,
                                     dot_epilogue_p)

_INT8_MAX = 127.0
_SCALE_FLOOR = float(np.float32(127 * np.finfo(np.float32).tiny))


def quantize_rows(x):
    """(q, scale) per row, exactly as precision.quantize(x, (1,)) computes them."""
    amax = np.max(np.abs(x), axis=1)
    scale = np.maximum(amax, np.float32(_SCALE_FLOOR)) / np.float32(_INT8_MAX)
    q = np.clip(np.rint(x / scale[:, None]), -_INT8_MAX, _INT8_MAX)
    return q.astype(np.int8), scale


def _int8_matmul_impl(x, w, *rest, dimension_numbers, relu, quantize_weights):
    """The numpy meaning, in the transform's order of float operations."""
    if quantize_weights:
        qw_t, w_scale = quantize_rows(w.T)      # per column of w
        qw, bias = qw_t.T, rest
    else:
        qw, (w_scale, *bias) = w, rest
    qx, x_scale = quantize_rows(x)
    acc = qx.astype(np.int32) @ qw.astype(np.int32)
    out = acc.astype(np.float32) * (x_scale[:, None] * w_scale[None, :])
    out = out + bias[0] if bias else out
    return np.maximum(out, np.float32(0)) if relu else out


def _int8_matmul_aval(x, w, *rest, dimension_numbers, relu, quantize_weights):
    return ShapedArray((x.shape[0], w.shape[1]), np.dtype(np.float32))


int8_matmul_p = Primitive("int8_matmul")
int8_matmul_p.def_impl(_int8_matmul_impl)
int8_matmul_p.def_abstract_eval(_int8_matmul_aval)


def fuse_int8_matmuls(closed, is_int8_gemm):
    """Replace quantize + int8 dot (`is_int8_gemm(eqn)`) + dequantize [+ bias] [+ relu]."""
    jaxpr = closed.jaxpr
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outputs}
    uses = _use_counts(jaxpr)
    consumer = {v: eqn for eqn in jaxpr.eqns for v in eqn.inputs if isinstance(v, Var) and uses[v] == 1}
    outputs = {v for v in jaxpr.outvars if isinstance(v, Var)}
    replacements = {}
    for eqn in jaxpr.eqns:
        if eqn.primitive is P.dot_general_p and is_int8_gemm(eqn):
            match = _match(eqn, producers, consumer, outputs)
            if match is not None:
                last, fused = match
                replacements[id(last)] = fused
    if not replacements:
        return closed
    eqns = [replacements.get(id(e), e) for e in jaxpr.eqns]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars), closed.consts)


def round_bf16_operands_in_gemms(closed, is_bf16_gemm):
    """bf16 GEMMs (dot_general or dot_epilogue with `is_bf16_gemm(eqn)`) whose operands are
    only read by them after a float32 -> bf16 conversion become dot_epilogues of the float32
    operands, their `rounded` param naming them (activations only for an even K: only the
    GEMM's packing rounds them)."""
    jaxpr = closed.jaxpr
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outputs}
    uses = _use_counts(jaxpr)
    eqns = [_rounding_operands(eqn, producers, uses) if is_bf16_gemm(eqn) and _plain_matrix_product(eqn)
            else eqn for eqn in jaxpr.eqns]
    if all(new is old for new, old in zip(eqns, jaxpr.eqns)):
        return closed
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars), closed.consts)


def _rounding_operands(gemm, producers, uses):
    (lhs_contracting, _), _ = gemm.params["dimension_numbers"]
    odd_k = gemm.inputs[0].aval.shape[lhs_contracting[0]] % 2
    inputs, rounded = list(gemm.inputs), []
    for index in (1,) if odd_k else (0, 1):
        convert = _producer(inputs[index], producers, P.convert_element_type_p)
        if convert is not None and uses[inputs[index]] == 1 and convert.inputs[0].aval.dtype == np.float32:
            inputs[index] = convert.inputs[0]
            rounded.append(index)
    if not rounded:
        return gemm
    params = {"dimension_numbers": gemm.params["dimension_numbers"], "epilogue": gemm.params.get("epilogue", ()),
              "preferred_element_type": gemm.params.get("preferred_element_type"), "rounded": tuple(rounded)}
    return gemm.replace(primitive=dot_epilogue_p, inputs=inputs, params=params)


def _match(dot, producers, consumer, outputs):
    """(equation to replace, the int8_matmul taking its place) or None."""
    if dot.params["dimension_numbers"] != (((1,), (0,)), ((), ())) or dot.inputs[0].aval.ndim != 2:
        return None
    x, row_scale = _quantized_source(dot.inputs[0], producers, _ROWS)
    if x is None or x.aval.dtype != np.float32:
        return None
    dequantize = _dequantize(dot.outputs[0], consumer, producers)
    if dequantize is None or dequantize[1] is not row_scale:
        return None
    last, _, w_scale = dequantize
    # Weights quantized in the program (not folded into constants) are quantized by the
    # runtime straight into the GEMM's packed layout.
    w, column_scale = _quantized_source(dot.inputs[1], producers, _COLUMNS)
    quantize_weights = w is not None and column_scale is w_scale and w.aval.dtype == np.float32
    weights = [w] if quantize_weights else [dot.inputs[1], w_scale]
    bias, relu = [], False
    step = _next_epilogue(last, consumer, producers, outputs)
    if step is not None and step[1][0] == "bias":
        last, bias = step[0], [step[1][1]]
        step = _next_epilogue(last, consumer, producers, outputs)
    if step is not None and step[1][0] == "relu":
        last, relu = step[0], True
    fused = last.replace(primitive=int8_matmul_p, inputs=[x] + weights + bias,
                         params={"dimension_numbers": dot.params["dimension_numbers"], "relu": relu,
                                 "quantize_weights": quantize_weights})
    return last, fused


def _next_epilogue(eqn, consumer, producers, outputs):
    result = eqn.outputs[0]
    if result in outputs or result not in consumer:
        return None
    step = _epilogue_step(consumer[result], result, producers)
    return None if step is None else (consumer[result], step)


def _producer(atom, producers, primitive, **params):
    eqn = producers.get(atom) if isinstance(atom, Var) else None
    if eqn is None or eqn.primitive is not primitive:
        return None
    return eqn if all(eqn.params.get(k) == v for k, v in params.items()) else None


def _with_literal(eqn, value):
    """The Var operand of a binary eqn whose other operand is the scalar literal `value`."""
    if eqn is None:
        return None
    first, second = eqn.inputs
    if isinstance(second, Literal) and float(second.val) == value and isinstance(first, Var):
        return first
    return None


_ROWS, _COLUMNS = 1, 0        # the axis a matrix is quantized along (one scale per slice)


def _quantized_source(qx, producers, axis):
    """(x, scale var) when qx = precision.quantize(x, (axis,))[0] for a matrix x, else (None, None)."""
    convert = _producer(qx, producers, P.convert_element_type_p)
    clamped = convert and _with_literal(_producer(convert.inputs[0], producers, P.min_p), _INT8_MAX)
    rounded = clamped and _with_literal(_producer(clamped, producers, P.max_p), -_INT8_MAX)
    divided = rounded and _producer(rounded, producers, P.round_p, rounding_method=1)
    division = divided and _producer(divided.inputs[0], producers, P.div_p)
    if not division:
        return None, None
    x, broadcast = division.inputs
    broadcast = _producer(broadcast, producers, P.broadcast_in_dim_p, broadcast_dimensions=(1 - axis,))
    if not broadcast or not _is_scale_of(broadcast.inputs[0], x, axis, producers):
        return None, None
    return x, broadcast.inputs[0]


def _is_scale_of(scale, x, axis, producers):
    """scale = max(reduce_max(abs(x), axis), floor) / 127."""
    floored = _with_literal(_producer(scale, producers, P.div_p), _INT8_MAX)
    amax = floored and _with_literal(_producer(floored, producers, P.max_p), _SCALE_FLOOR)
    reduced = amax and _producer(amax, producers, P.reduce_max_p, axes=(axis,))
    absolute = reduced and _producer(reduced.inputs[0], producers, P.abs_p)
    return bool(absolute) and absolute.inputs[0] is x and x.aval.ndim == 2


def _dequantize(acc, consumer, producers):
    """(last eqn, row scale, column scale) when float32(acc) * (rows[:, None] * cols[None, :])."""
    convert = consumer.get(acc)
    if convert is None or convert.primitive is not P.convert_element_type_p or \
            convert.outputs[0].aval.dtype != np.float32:
        return None
    product = consumer.get(convert.outputs[0])
    if product is None or product.primitive is not P.mul_p:
        return None
    scales = [v for v in product.inputs if v is not convert.outputs[0]]
    outer = _producer(scales[0], producers, P.mul_p) if len(scales) == 1 else None
    if outer is None:
        return None
    rows = _producer(outer.inputs[0], producers, P.broadcast_in_dim_p, broadcast_dimensions=(0,))
    columns = _column_vector(outer.inputs[1], producers)
    if rows is None or columns is None:
        return None
    return product, rows.inputs[0], columns
