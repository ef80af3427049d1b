"""Graph passes: named ClosedJaxpr -> ClosedJaxpr functions run before fusion.

Each pass rebuilds the equation list through a substitution map (`env`) from old
variables to the atoms replacing them, so a pass never mutates its input. The pipeline
(pipeline.STAGES) runs them as named stages; with config "jaxlite_dump_passes" set, the
jaxpr is logged after every one.

  inline_calls   nested jit calls become the inner equations
  dce            equations whose results are unused disappear, unless they have an
                 effect (core.ir.has_effects: debug callbacks, bodies holding one)
  cse            an equation equal to an earlier one (same primitive, inputs and
                 params) reuses its results; effectful equations are never merged
  fold_constants equations on literals and small constants are evaluated now;
                 a scalar result becomes a literal (bigger results would bloat the code)
  fold_constant_operands  (run by the pipeline for the low-precision GEMMs' operands)
                 constant-only computations feeding chosen equations are evaluated now
  simplify       exact identities: x*1, x+0 (integers; for floats only x+(-0.0) and
                 x-0, since -0.0+0.0 is +0.0), neg(neg x), transpose of transpose,
                 the inverse pairs XLA cancels too (log(exp x), (a/b)*b, (a*b)/b),
                 reshape of reshape, a reshape of a transpose that only moves unit
                 axes, a transposed dot_general operand (folded into the dimension
                 numbers when the GEMM can read the result as stored), and
                 elementwise ops on a broadcast scalar literal use the literal
                 directly (lax elementwise ops broadcast rank 0)
  widen_narrow_floats  (run by the pipeline for the cumulative ops and linear algebra)
                 chosen equations on float16/bfloat16 compute in float32 between conversions
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, has_effects
from jaxlite.core.primitive import call_primitives
from jaxlite.lower import primitives as P
from jaxlite.lower.fusion_rules import LOWERINGS

SMALL_CONSTANT = 1      # elements: folded results up to this size become literals


class Rewriter:
    """Rebuilds a jaxpr: `read` resolves substitutions, `emit` appends equations."""

    def __init__(self, closed):
        self.closed, self.env, self.eqns = closed, {}, []
        self.constvars, self.consts = list(closed.jaxpr.constvars), list(closed.consts)

    def read(self, atom):
        while isinstance(atom, Var) and atom in self.env:
            atom = self.env[atom]
        return atom

    def emit(self, eqn):
        self.eqns.append(eqn.replace(inputs=[self.read(v) for v in eqn.inputs]))

    def result(self):
        jaxpr = self.closed.jaxpr
        outvars = [self.read(v) for v in jaxpr.outvars]
        return ClosedJaxpr(Jaxpr(self.constvars, jaxpr.invars, self.eqns, outvars), self.consts)


# ---------------------------------------------------------------- widening

def widen_narrow_floats(closed, applies, float32_to_float64=lambda eqn: False):
    """Equations `applies(eqn)` accepts run on float32 copies of their float16/bfloat16
    operands and results, between conversions (the cumulative ops, whose eager
    implementation accumulates so; linear algebra, which the native routines do in float32
    and float64); those `float32_to_float64(eqn)` accepts run on float64 copies of their
    float32 ones (cumsum, whose sequential sum would lose digits like n eps). Other operands
    and results (integers: lu's pivots) stay as they are."""
    rewriter = Rewriter(closed)

    def convert(x, out):
        return Eqn(P.convert_element_type_p, [x], {"new_dtype": out.aval.dtype, "weak_type": out.aval.weak_type}, [out])

    def widened(v, eqn):
        dtype = v.aval.dtype
        if dtypes.is_float(dtype) and dtype.itemsize < 4 and applies(eqn):
            return Var(ShapedArray(v.aval.shape, np.dtype(np.float32)))
        if dtype == np.float32 and float32_to_float64(eqn):
            return Var(ShapedArray(v.aval.shape, np.dtype(np.float64)))
        return v

    for eqn in closed.jaxpr.eqns:
        inputs, outputs = [widened(v, eqn) for v in eqn.inputs], [widened(v, eqn) for v in eqn.outputs]
        if all(w is v for w, v in zip(inputs + outputs, eqn.inputs + eqn.outputs)):
            rewriter.emit(eqn)
            continue
        for v, w in zip(eqn.inputs, inputs):
            if w is not v:
                rewriter.emit(convert(v, w))
        rewriter.emit(eqn.replace(inputs=inputs, outputs=outputs))
        for w, v in zip(outputs, eqn.outputs):
            if w is not v:
                rewriter.emit(convert(w, v))
    return rewriter.result()


def transpose_gemm_operands(closed, operand_permutations):
    """Give each product `operand_permutations(eqn)` names a permutation for (an operand
    the GEMM cannot read as stored) a transpose of that operand, and read it as stored:
    fusion writes the copy in a kernel (often the producer's), and the GEMM then runs
    inside the program's native code instead of copying from Python."""
    rewriter = Rewriter(closed)
    for eqn in closed.jaxpr.eqns:
        permutations = operand_permutations(eqn) if eqn.primitive is P.dot_general_p else None
        if not permutations or permutations == (None, None):
            rewriter.emit(eqn)
            continue
        inputs = list(eqn.inputs)
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        axes = [[lc, lb], [rc, rb]]
        for side, permutation in enumerate(permutations):
            if permutation is None:
                continue
            x = inputs[side]
            moved = Var(ShapedArray(tuple(x.aval.shape[a] for a in permutation), x.aval.dtype, x.aval.weak_type))
            rewriter.emit(Eqn(P.transpose_p, [x], {"permutation": tuple(permutation)}, [moved]))
            contracting, batch = axes[side]
            axes[side] = [tuple(permutation.index(a) for a in contracting), tuple(permutation.index(a) for a in batch)]
            inputs[side] = moved
        dimension_numbers = ((axes[0][0], axes[1][0]), (axes[0][1], axes[1][1]))
        rewriter.emit(eqn.replace(inputs=inputs, params={**eqn.params, "dimension_numbers": dimension_numbers}))
    return rewriter.result()


# ---------------------------------------------------------------- inlining

def inline_calls(closed):
    """Replace every call (jit, custom derivatives, checkpoint: core.primitive.call_primitives)
    by its body."""
    rewriter = Rewriter(closed)
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive in call_primitives:
            _inline(rewriter, eqn)
        else:
            rewriter.emit(eqn)
    return rewriter.result()


def _inline(rewriter, eqn):
    splice(rewriter, inline_calls(eqn.params["jaxpr"]), eqn)


def splice(rewriter, inner, eqn):
    """Emit `inner`'s equations in place of `eqn`, with fresh variables (the same jaxpr
    may be spliced several times); eqn's outputs become inner's outputs."""
    jaxpr = inner.jaxpr
    renamed = {v: Var(v.aval) for v in jaxpr.constvars}
    rewriter.constvars += list(renamed.values())
    rewriter.consts += inner.consts
    renamed.update(zip(jaxpr.invars, [rewriter.read(v) for v in eqn.inputs]))
    rename = lambda atom: renamed.get(atom, atom) if isinstance(atom, Var) else atom
    for inner_eqn in jaxpr.eqns:
        outputs = [Var(v.aval) for v in inner_eqn.outputs]
        renamed.update(zip(inner_eqn.outputs, outputs))
        rewriter.eqns.append(inner_eqn.replace(inputs=list(map(rename, inner_eqn.inputs)), outputs=outputs))
    for out, inner_out in zip(eqn.outputs, jaxpr.outvars):
        rewriter.env[out] = rename(inner_out)


# ---------------------------------------------------------------- dead code

def dce(closed):
    jaxpr = closed.jaxpr
    live = {v for v in jaxpr.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outputs) or has_effects(eqn):
            kept.append(eqn)
            live.update(v for v in eqn.inputs if isinstance(v, Var))
    used = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts) if v in live]
    constvars, consts = [v for v, _ in used], [c for _, c in used]
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, kept[::-1], jaxpr.outvars), consts)


# ---------------------------------------------------------------- common subexpressions

def cse(closed):
    rewriter = Rewriter(closed)
    seen = {}
    for eqn in closed.jaxpr.eqns:
        inputs = [rewriter.read(v) for v in eqn.inputs]
        key = _eqn_key(eqn, inputs)
        if key is not None and key in seen:
            for out, previous in zip(eqn.outputs, seen[key]):
                rewriter.env[out] = previous
            continue
        rewriter.emit(eqn)
        if key is not None:
            seen[key] = eqn.outputs
    return rewriter.result()


def _atom_key(atom):
    if isinstance(atom, Literal):
        value = np.asarray(atom.val)
        return ("literal", value.tobytes(), value.dtype, atom.aval.weak_type)
    return atom


def _eqn_key(eqn, inputs):
    """None for an equation that must not be merged: unhashable params, or an effect
    (two identical debug prints both print)."""
    if has_effects(eqn):
        return None
    try:
        key = (eqn.primitive, tuple(map(_atom_key, inputs)), tuple(sorted(eqn.params.items())))
        hash(key)
    except TypeError:
        return None
    return key


# ---------------------------------------------------------------- constant folding

def fold_constants(closed):
    """Evaluate equations whose inputs are all literals or small constants."""
    rewriter = Rewriter(closed)
    known = {v: np.asarray(c) for v, c in zip(closed.jaxpr.constvars, closed.consts)
             if np.size(c) <= SMALL_CONSTANT}
    for eqn in closed.jaxpr.eqns:
        inputs = [rewriter.read(v) for v in eqn.inputs]
        values = [_known_value(v, known) for v in inputs]
        foldable = (not eqn.primitive.multiple_results and all(v is not None for v in values)
                    and all(out.aval.size <= SMALL_CONSTANT and out.aval.ndim == 0 for out in eqn.outputs)
                    and not _has_subjaxpr(eqn))
        if not foldable:
            rewriter.emit(eqn)
            continue
        out = eqn.outputs[0]
        value = np.asarray(eqn.primitive.impl(*values, **eqn.params)).astype(out.aval.dtype)
        rewriter.env[out] = Literal(value[()], out.aval)
    return rewriter.result()


def _known_value(atom, known):
    if isinstance(atom, Literal):
        return np.asarray(atom.val, atom.aval.dtype)
    return known.get(atom)


def _has_subjaxpr(eqn):
    return any(isinstance(p, (ClosedJaxpr, Jaxpr)) for p in eqn.params.values())


def fold_constant_operands(closed, is_consumer):
    """Evaluate now, whatever their size, the computations on constants alone that
    produce an operand of an `is_consumer` equation: the weights of an inference
    function (closed over by jit) get their bf16 rounding or int8 quantization once,
    at compile time, instead of on every call. Other equations that read a value
    computed on the way (the weight scales dequantization needs) read it as a constant.
    Evaluation runs each primitive's impl, as eager execution does."""
    jaxpr = closed.jaxpr
    constant = _constant_only_vars(jaxpr)
    wanted = {v for eqn in jaxpr.eqns if is_consumer(eqn)
              for v in eqn.inputs if v in constant and v not in jaxpr.constvars}
    folded = _backward_slice(jaxpr, wanted)
    if not folded:
        return closed
    values = dict(zip(jaxpr.constvars, map(np.asarray, closed.consts)))
    rewriter = Rewriter(closed)
    exposed = set(jaxpr.constvars)
    for eqn in jaxpr.eqns:
        if eqn in folded:
            _evaluate_into(values, eqn)
            continue
        for v in eqn.inputs:
            if isinstance(v, Var) and v in values:
                _expose(v, values, folded, rewriter, exposed)
        rewriter.emit(eqn)
    for v in jaxpr.outvars:
        if isinstance(v, Var) and v in values:
            _expose(v, values, folded, rewriter, exposed)
    return rewriter.result()


def _expose(var, values, folded, rewriter, exposed):
    """Give the rewritten program a folded value: as a constant, except that a broadcast
    is emitted again on its (constant) operand, so the kernels that read it fuse it in
    rather than read a materialized array."""
    if var in exposed:
        return
    exposed.add(var)
    producer = next((e for e in folded if var in e.outputs), None)
    if producer is not None and producer.primitive is P.broadcast_in_dim_p:
        for v in producer.inputs:
            if isinstance(v, Var):
                _expose(v, values, folded, rewriter, exposed)
        rewriter.emit(producer)
        return
    rewriter.constvars.append(var)
    rewriter.consts.append(values[var])


def _constant_only_vars(jaxpr):
    constant = set(jaxpr.constvars)
    for eqn in jaxpr.eqns:
        pure = not _has_subjaxpr(eqn) and not getattr(eqn.primitive, "effectful", False)
        if pure and all(isinstance(v, Literal) or v in constant for v in eqn.inputs):
            constant.update(eqn.outputs)
    return constant


def _backward_slice(jaxpr, wanted):
    """The equations (a set) computing the vars `wanted` from the jaxpr's constants."""
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outputs}
    stack, found = list(wanted), set()
    while stack:
        eqn = producers.get(stack.pop())
        if eqn is not None and eqn not in found:
            found.add(eqn)
            stack.extend(v for v in eqn.inputs if isinstance(v, Var))
    return found


def _evaluate_into(values, eqn):
    results = eqn.primitive.impl(*[_known_value(v, values) for v in eqn.inputs], **eqn.params)
    results = results if eqn.primitive.multiple_results else [results]
    for out, result in zip(eqn.outputs, results):
        values[out] = np.asarray(result).astype(out.aval.dtype, copy=False)


# ---------------------------------------------------------------- algebraic simplification

def simplify(closed):
    rewriter = Rewriter(closed)
    producers = {}
    for eqn in closed.jaxpr.eqns:
        eqn = eqn.replace(inputs=[_scalar_literal_operand(rewriter.read(v), producers, eqn) for v in eqn.inputs])
        replacement = _identity(eqn, producers)
        if replacement is not None and _same_aval(replacement, eqn.outputs[0]):
            rewriter.env[eqn.outputs[0]] = replacement
            continue
        eqn = _merge_chain(eqn, producers)
        rewriter.emit(eqn)
        for out in eqn.outputs:
            producers[out] = rewriter.eqns[-1]
    return rewriter.result()


def _is_elementwise_binary(eqn):
    lowering = LOWERINGS.get(eqn.primitive)
    return lowering is not None and lowering.kernel_op is not None and len(eqn.inputs) == 2


def _scalar_literal_operand(atom, producers, consumer):
    """broadcast_in_dim of a scalar literal feeding an elementwise op: use the literal."""
    if not _is_elementwise_binary(consumer) or not isinstance(atom, Var):
        return atom
    producer = producers.get(atom)
    if producer is None or producer.primitive is not P.broadcast_in_dim_p:
        return atom
    source = producer.inputs[0]
    others = [v for v in consumer.inputs if v is not atom]
    keeps_shape = any(v.aval.shape == atom.aval.shape for v in others)
    if isinstance(source, Literal) and keeps_shape and source.aval.dtype == atom.aval.dtype:
        return Literal(source.val, source.aval.update(weak_type=atom.aval.weak_type))
    return atom


def _is_literal(atom, value):
    return isinstance(atom, Literal) and np.asarray(atom.val).tobytes() == \
        np.asarray(value, atom.aval.dtype).tobytes()


def _identity(eqn, producers):
    """An existing atom equal to the equation's result, or None."""
    primitive, inputs = eqn.primitive, eqn.inputs
    if primitive is P.mul_p and any(_is_literal(a, 1) for a in inputs):
        return _other_if(inputs, lambda a: _is_literal(a, 1))
    if primitive in (P.add_p, P.add_any_p):
        return _other_if(inputs, lambda a: _is_additive_identity(a))
    if primitive is P.sub_p and _is_zero_literal(inputs[1]):
        return inputs[0]
    if primitive is P.neg_p and _produced_by(inputs[0], producers, P.neg_p):
        return producers[inputs[0]].inputs[0]
    if getattr(primitive, "value_is_operand", None) is not None:
        # An identity with a derivative of its own (precision's straight_through, shard_map's
        # pvary): differentiation is over by the time jit lowers.
        return inputs[primitive.value_is_operand]
    # Inverse pairs XLA also cancels (users rely on it: log(exp(x)) under jit is x even where
    # exp overflows, and its derivative (1/e)*e is 1, not inf*0).
    if primitive is P.log_p and _produced_by(inputs[0], producers, P.exp_p):
        return producers[inputs[0]].inputs[0]
    if primitive in (P.mul_p, P.div_p):
        return _cancelled_by(primitive, inputs, producers)
    return None


def _cancelled_by(primitive, inputs, producers):
    """a for (a / b) * b, b * (a / b) and (a * b) / b (either factor order), else None."""
    inverse = P.div_p if primitive is P.mul_p else P.mul_p
    candidates = [(inputs[0], inputs[1]), (inputs[1], inputs[0])] if primitive is P.mul_p else [tuple(inputs)]
    for operand, other in candidates:
        if not _produced_by(operand, producers, inverse):
            continue
        a, b = producers[operand].inputs
        if inverse is P.div_p and b is other:
            return a
        if inverse is P.mul_p and other in (a, b):
            return b if a is other else a
    return None


def _other_if(inputs, is_identity):
    x, y = inputs
    if is_identity(y):
        return x
    if is_identity(x):
        return y
    return None


def _is_zero_literal(atom):
    return isinstance(atom, Literal) and np.asarray(atom.val) == 0


def _is_additive_identity(atom):
    if not isinstance(atom, Literal):
        return False
    if dtypes.is_float(atom.aval.dtype):
        return _is_literal(atom, -0.0)      # x + (+0.0) changes -0.0 to +0.0
    return _is_zero_literal(atom)


def _produced_by(atom, producers, primitive):
    return isinstance(atom, Var) and atom in producers and producers[atom].primitive is primitive


def _same_aval(atom, var):
    a, b = atom.aval, var.aval
    return a.shape == b.shape and a.dtype == b.dtype and a.weak_type == b.weak_type


def _merge_chain(eqn, producers):
    """transpose(transpose x) and reshape(reshape x) become one equation on x; a
    transposed dot_general operand becomes dimension numbers on the original."""
    primitive, x = eqn.primitive, eqn.inputs[0] if eqn.inputs else None
    if primitive is P.dot_general_p:
        return _fold_transposes_into_dot(eqn, producers)
    if primitive is P.transpose_p and _produced_by(x, producers, P.transpose_p):
        inner = producers[x]
        first, second = inner.params["permutation"], eqn.params["permutation"]
        composed = tuple(first[p] for p in second)
        return eqn.replace(inputs=[inner.inputs[0]], params={"permutation": composed})
    if primitive is P.reshape_p and _produced_by(x, producers, P.reshape_p) and eqn.params.get("dimensions") is None \
            and producers[x].params.get("dimensions") is None:
        return eqn.replace(inputs=[producers[x].inputs[0]])
    if primitive is P.reshape_p and _produced_by(x, producers, P.transpose_p) and eqn.params.get("dimensions") is None \
            and _moves_only_unit_axes(producers[x]):
        return eqn.replace(inputs=[producers[x].inputs[0]])
    return eqn


def _moves_only_unit_axes(transpose_eqn):
    """A transpose keeping the order of the axes longer than 1 leaves the elements in place."""
    shape = transpose_eqn.inputs[0].aval.shape
    moved = [a for a in transpose_eqn.params["permutation"] if shape[a] != 1]
    return moved == sorted(moved)


def _fold_transposes_into_dot(eqn, producers):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    axes = [[lc, lb], [rc, rb]]
    inputs = list(eqn.inputs)
    for side in (0, 1):
        x = inputs[side]
        if not _produced_by(x, producers, P.transpose_p):
            continue
        permutation = producers[x].params["permutation"]
        contracting, batch = axes[side]
        free = [permutation[d] for d in range(len(permutation)) if d not in contracting and d not in batch]
        if free != sorted(free):     # the output's free axes would come out in another order
            continue
        folded = [tuple(permutation[d] for d in contracting), tuple(permutation[d] for d in batch)]
        if not _matrix_layout(*folded, free):   # the GEMM would copy it back in Python
            continue
        axes[side] = folded
        inputs[side] = producers[x].inputs[0]
    dimension_numbers = ((axes[0][0], axes[1][0]), (axes[0][1], axes[1][1]))
    return eqn.replace(inputs=inputs, params={**eqn.params, "dimension_numbers": dimension_numbers})


def _matrix_layout(contracting, batch, free):
    """Whether an operand's axes are stored as (batch, free, contracting) or (batch,
    contracting, free): a matrix (or its transpose) per batch entry."""
    identity = list(range(len(contracting) + len(batch) + len(free)))
    return identity in (list(batch) + free + list(contracting), list(batch) + list(contracting) + free)


def _drop_identity_reshapes(closed):
    """Transposes by the identity permutation and reshapes to the same shape (left by
    merging chains) are their input."""
    rewriter = Rewriter(closed)
    for eqn in closed.jaxpr.eqns:
        if _is_identity_reshape(eqn):
            rewriter.env[eqn.outputs[0]] = rewriter.read(eqn.inputs[0])
            continue
        rewriter.emit(eqn)
    return rewriter.result()


def _is_identity_reshape(eqn):
    if eqn.primitive is P.transpose_p:
        permutation = eqn.params["permutation"]
        return permutation == tuple(range(len(permutation)))
    if eqn.primitive is P.reshape_p:
        return eqn.params.get("dimensions") is None and eqn.inputs[0].aval.shape == eqn.outputs[0].aval.shape
    return False


# ---------------------------------------------------------------- the pipeline

def _simplify_all(closed):
    return _drop_identity_reshapes(simplify(closed))


_simplify_all.__name__ = "simplify"

# The cleanup passes, in order (pipeline.CLEANUP runs them as stages).
PIPELINE = (inline_calls, fold_constants, _simplify_all, cse, dce)
