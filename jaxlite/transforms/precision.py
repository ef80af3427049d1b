"""Precision lowering as function transforms: `bf16(f)` and `int8(f)`.

Both are traces, like jvp and vmap, rather than jaxpr interpreters. A trace sees
every primitive the function binds, whatever traces sit above or below it, so
`jvp(bf16(f))`, `bf16(vmap(f))`, `grad(int8(f))` and `make_jaxpr(int8(f))` compose
with no staging step; an interpreter would first have to stage `f` to a jaxpr, which
loses nothing here but costs a trace per call in eager code. Higher-order primitives
(jit, cond, while, scan) carry their bodies as jaxprs: those are lowered by running
the same trace over them (`lower_jaxpr`), keeping their types.

The trace rewrites matrix products (dot_general, conv_general_dilated) and, for
`bf16(f, elementwise=True)`, a fixed set of arithmetic elementwise ops; every other
primitive passes through to the parent trace. A value may then be computed in a
narrower dtype than the function expects (a bf16 activation where f sees float32):
such a value travels in a `PrecisionTracer` that remembers the dtype f sees
("nominal"), so f's Python code, jnp's promotion and its outputs all keep f's own
types. Values computed at their nominal type travel unwrapped.

The rule for `elementwise=True`: only the ops in `_BF16_ELEMENTWISE` (add, sub,
mul, max, select, ... : the cheap arithmetic between matrix products: biases,
activations like relu, residual sums) run in bf16. Everything else -- reductions,
and exp/log/div/sqrt/tanh and the other transcendentals that softmax and
normalization are made of -- sees its operands at the function's own precision
(float32), as mixed-precision training does.

Under jit, the narrow products these transforms emit (bf16 x bf16 -> float32,
int8 x int8 -> int32) run on lower/gemm_lowp.py's vdpbf16ps / vpdpbusd kernels.
"""
import functools
from dataclasses import dataclass

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes, errors
from jaxlite.core.array import as_array_argument
from jaxlite.core.primitive import Primitive
from jaxlite.core.ir import ClosedJaxpr
from jaxlite.core.staging import eval_jaxpr, flatten_fun, trace_to_jaxpr
from jaxlite.core.trace import EvalTrace, Trace, Tracer, current_trace, set_current_trace
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.lax import elementwise as ew
from jaxlite.lax.convolution import _fold_into_features, _merge_groups, _split_groups, conv_general_dilated_p
from jaxlite.lax.dot import dot_general_p
from jaxlite.transforms import ad, batching
from jaxlite.transforms.jit import jit

_BF16_ELEMENTWISE = frozenset([
    ew.add_p, ew.add_any_p, ew.sub_p, ew.mul_p, ew.neg_p, ew.max_p, ew.min_p, ew.abs_p,
    ew.sign_p, ew.square_p, ew.integer_pow_p, ew.select_n_p])
_PRODUCTS = (dot_general_p, conv_general_dilated_p)
_INT8_MAX = 127


class PrecisionTracer(Tracer):
    """A value computed in a narrower dtype than the function sees (`nominal`)."""

    __slots__ = ("val", "nominal")

    def __init__(self, trace, val, nominal):
        self._trace, self.val, self.nominal = trace, val, nominal

    @property
    def aval(self):
        return self.nominal

    def to_concrete_value(self):
        value = self.val.to_concrete_value() if isinstance(self.val, Tracer) else self.val
        return None if value is None else np.asarray(value).astype(self.nominal.dtype)


class PrecisionTrace(Trace):
    def __init__(self, parent, policy):
        self.parent, self.policy = parent, policy

    def describe(self):
        return f"precision lowering to {self.policy.name}"

    def value_and_nominal(self, x):
        if isinstance(x, PrecisionTracer) and x._trace is self:
            return x.val, x.nominal
        return x, ad.aval_of(x)

    def process_primitive(self, primitive, args, params):
        vals, nominals = zip(*map(self.value_and_nominal, args)) if args else ((), ())
        out_nominals = primitive.abstract_eval_list(list(nominals), params)
        with set_current_trace(self.parent):
            out = self.policy.lower(primitive, list(vals), list(nominals), params)
        outs = out if primitive.multiple_results else [out]
        tracers = [self.wrap(v, n) for v, n in zip(outs, out_nominals)]
        return tracers if primitive.multiple_results else tracers[0]

    def wrap(self, val, nominal):
        if ad.aval_of(val).dtype == nominal.dtype:
            return val
        return PrecisionTracer(self, val, nominal)

    def to_nominal(self, x):
        """x as a parent-trace value of the dtype the function sees."""
        val, nominal = self.value_and_nominal(x)
        return _as_dtype(val, nominal)


def _as_dtype(val, nominal):
    if ad.aval_of(val).dtype == nominal.dtype:
        return val
    return lax.convert_element_type(val, nominal.dtype, nominal.weak_type)


def _lower_flat(flat_fun, flat_args, policy):
    """Run flat_fun lowered by `policy`; its outputs come back at their own dtypes."""
    trace = PrecisionTrace(current_trace(), policy)
    try:
        with set_current_trace(trace):
            outs = flat_fun(*flat_args)
        return [trace.to_nominal(o) for o in outs]
    finally:
        trace.finish()


@functools.lru_cache(maxsize=256)
def lower_jaxpr(closed, policy):
    """A closed jaxpr with the same types, its products lowered by `policy`: how the
    lowering reaches into the bodies of jit, cond, while and scan."""
    body = lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return trace_to_jaxpr(lambda *args: _lower_flat(body, args, policy), closed.in_avals,
                          f"{policy.name} of a jaxpr")


def _lower_param(value, policy):
    if isinstance(value, ClosedJaxpr):
        return lower_jaxpr(value, policy)
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        return tuple(lower_jaxpr(v, policy) for v in value)
    return value


def _lowered(fun, policy):
    def lowered(*args, **kwargs):
        flat_args, in_tree = tree_flatten((args, kwargs))
        flat_args = [as_array_argument(x) for x in flat_args]
        flat_fun, out_tree = flatten_fun(fun, in_tree)
        outs = _lower_flat(flat_fun, flat_args, policy)
        return tree_unflatten(out_tree[0], outs)

    lowered.__name__ = f"{policy.name}({getattr(fun, '__name__', 'fun')})"
    lowered.__wrapped__ = fun
    return lowered


def _pass_through(primitive, vals, nominals, params, policy):
    """Operands at the function's own dtypes; the bodies of higher-order primitives lowered."""
    params = {name: _lower_param(value, policy) for name, value in params.items()}
    return primitive.bind(*map(_as_dtype, vals, nominals), **params)


def _lowers(aval):
    """Floating point wider than 16 bits: what the lowerings narrow."""
    return dtypes.is_float(aval.dtype) and np.dtype(aval.dtype).itemsize > 2


# ----------------------------------------------------------------------------- bf16

def _to_bf16(val, nominal):
    if not _lowers(nominal):
        return val
    return lax.convert_element_type(val, dtypes.bfloat16, nominal.weak_type)


@dataclass(frozen=True)
class _Bf16Policy:
    elementwise: bool
    name: str = "bf16"

    def lower(self, primitive, vals, nominals, params):
        if primitive in _PRODUCTS and all(map(_lowers, nominals)):
            return _bf16_product(primitive, vals, nominals, params)
        if self.elementwise and primitive in _BF16_ELEMENTWISE and any(map(_lowers, nominals)):
            return primitive.bind(*map(_to_bf16, vals, nominals), **params)
        return _pass_through(primitive, vals, nominals, params, self)


def _bf16_product(primitive, vals, nominals, params):
    """bf16 operands (rounded to nearest even), float32 accumulation."""
    x, w = map(_to_bf16, vals, nominals)
    if primitive is dot_general_p:
        return _dot(_bf16_dot, x, w, params["dimension_numbers"])
    # conv_general_dilated has no preferred_element_type: widening the bf16 values back
    # to float32 gives the same products (exact in float32) and float32 sums.
    x, w = (lax.convert_element_type(v, np.float32) for v in (x, w))
    return primitive.bind(x, w, **params)


def _bf16_dot(x, w, dimension_numbers):
    return lax.dot_general(x, w, dimension_numbers, preferred_element_type=np.float32)


def bf16(fun, elementwise=False):
    """`fun` with its matrix products on bfloat16 operands, accumulated in float32.

    With elementwise=True the arithmetic elementwise ops between them also run in
    bfloat16, while reductions, exp/log/div (softmax, normalization) stay float32.
    Outputs keep `fun`'s own dtypes.
    """
    errors.check_callable(fun, "precision.bf16")
    return _lowered(fun, _Bf16Policy(bool(elementwise)))


# ----------------------------------------------------------------------------- int8

def quantize(x, axes):
    """Symmetric int8 quantization with one scale per slice over `axes` (reduced away).

    Returns (q, scale) with x ~= q * scale. The scale is at least the smallest normal
    number, so an all-zero slice quantizes to zeros instead of 0/0.
    """
    amax = lax.reduce_max(lax.abs(x), axes)
    scale = lax.div(lax.max(amax, float(_INT8_MAX * np.finfo(np.float32).tiny)), float(_INT8_MAX))
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    q = lax.round(lax.div(x, lax.broadcast_in_dim(scale, x.shape, kept)), rounding_method=1)
    q = lax.clamp(-float(_INT8_MAX), q, float(_INT8_MAX))
    return lax.convert_element_type(q, np.int8), scale


def _place_scale(scale, kept, positions, out_shape):
    """Broadcast a scale whose axes are `kept` operand axes to the output positions given."""
    order = np.argsort([positions[d] for d in kept])
    scale = lax.transpose(scale, tuple(int(i) for i in order))
    return lax.broadcast_in_dim(scale, out_shape, tuple(sorted(positions[d] for d in kept)))


def _dot_scale_positions(ndim, contracting, batch, first_free):
    """Output position of each non-contracted operand axis of a dot_general."""
    free = [d for d in range(ndim) if d not in contracting and d not in batch]
    positions = {d: i for i, d in enumerate(batch)}
    positions.update({d: first_free + i for i, d in enumerate(free)})
    return positions, free


def _int8_dot(x, w, dimension_numbers, out_dtype):
    (lc, rc), (lb, rb) = dimension_numbers
    qx, sx = quantize(x, lc)
    qw, sw = quantize(w, rc)
    acc = lax.dot_general(qx, qw, dimension_numbers, preferred_element_type=np.int32)
    x_positions, x_free = _dot_scale_positions(x.ndim, lc, lb, len(lb))
    w_positions, _ = _dot_scale_positions(w.ndim, rc, rb, len(lb) + len(x_free))
    kept_x = tuple(d for d in range(x.ndim) if d not in lc)
    kept_w = tuple(d for d in range(w.ndim) if d not in rc)
    scale = lax.mul(_place_scale(sx, kept_x, x_positions, acc.shape),
                    _place_scale(sw, kept_w, w_positions, acc.shape))
    return lax.mul(lax.convert_element_type(acc, out_dtype), lax.convert_element_type(scale, out_dtype))


def _int8_conv(x, w, params, out_dtype):
    """Activation scales per example and feature group (each group is a product of its own;
    this also makes vmap, which folds a batch into more groups, agree with a loop), weight
    scales per output feature (canonical NC.../OI... layouts). conv_general_dilated has no
    preferred_element_type, so the int8 values are widened to int32 for an exact int32
    accumulation."""
    groups = params["feature_group_count"]
    grouped = lax.reshape(x, (x.shape[0], groups, x.shape[1] // groups) + x.shape[2:])
    qx, sx = quantize(grouped, tuple(range(2, grouped.ndim)))
    qw, sw = quantize(w, tuple(range(1, w.ndim)))
    widened = (lax.convert_element_type(q, np.int32) for q in (lax.reshape(qx, x.shape), qw))
    acc = conv_general_dilated_p.bind(*widened, **params)
    n, o = acc.shape[:2]
    sx = lax.reshape(lax.broadcast_in_dim(sx, (n, groups, o // groups) + acc.shape[2:], (0, 1)), acc.shape)
    scale = lax.mul(sx, lax.broadcast_in_dim(sw, acc.shape, (1,)))
    return lax.mul(lax.convert_element_type(acc, out_dtype), lax.convert_element_type(scale, out_dtype))


@dataclass(frozen=True)
class _Int8Policy:
    name: str = "int8"

    def lower(self, primitive, vals, nominals, params):
        if primitive in _PRODUCTS and all(map(_lowers, nominals)) and _int8_supported(primitive, params):
            x, w = map(_as_dtype, vals, nominals)
            out_dtype = primitive.abstract_eval(*nominals, **params).dtype
            if primitive is dot_general_p:
                quantized = _dot(_int8_dot, x, w, params["dimension_numbers"], out_dtype)
            else:
                quantized = _int8_conv(x, w, params, out_dtype)
            return straight_through(x, w, quantized, primitive, params)
        return _pass_through(primitive, vals, nominals, params, self)


def _int8_supported(primitive, params):
    # With batch groups the output's batch axis mixes examples: per-example scales do not apply.
    return primitive is dot_general_p or params["batch_group_count"] == 1


def int8(fun):
    """`fun` with dynamic symmetric int8 quantization of each matrix product.

    The activation operand (lhs) gets one scale per row (max |x| over the contracted
    axes / 127), the weight operand (rhs) one per output channel; products accumulate
    in int32 and are dequantized by the product of scales. Derivatives use the
    straight-through estimator: they are the float product's derivatives.
    """
    errors.check_callable(fun, "precision.int8")
    return _lowered(fun, _Int8Policy())


# ----------------------------------------------------------------------------- eager products

# Below this many multiply-adds an eager product runs as written, on numpy: compiling a
# program for a new shape costs more than numpy's slow integer matmul (~10 ns per
# multiply-add) saves.
EAGER_COMPILE_MIN_WORK = 1 << 22


def _dot(lowering, x, w, dimension_numbers, *static):
    """lowering(x, w, dimension_numbers, *static): the lowered product. Eagerly (concrete
    operands) a big one runs as one compiled program, cached by shape, on the bf16/int8
    GEMMs with the quantization in compiled passes; numpy has no int8 or bf16 GEMM."""
    if isinstance(current_trace(), EvalTrace) and _multiply_adds(x, w, dimension_numbers) >= EAGER_COMPILE_MIN_WORK:
        return _compiled_dot(lowering, dimension_numbers, static)(x, w)
    return lowering(x, w, dimension_numbers, *static)


def _multiply_adds(x, w, dimension_numbers):
    (lc, _), (lb, _) = dimension_numbers
    contracted = int(np.prod([x.shape[d] for d in lc]))
    batch = int(np.prod([x.shape[d] for d in lb]))
    return x.size * w.size // (contracted * batch)


@functools.lru_cache(maxsize=64)
def _compiled_dot(lowering, dimension_numbers, static):
    return jit(lambda x, w: lowering(x, w, dimension_numbers, *static))


# ----------------------------------------------------------------------------- straight-through

straight_through_p = Primitive("straight_through")
straight_through_p.def_impl(lambda x, w, quantized, **params: quantized)
straight_through_p.def_abstract_eval(lambda x, w, quantized, **params: quantized)
straight_through_p.value_is_operand = 2     # compiled, it is the quantized product (lower/passes.simplify)


def straight_through(x, w, quantized, product, params):
    """`quantized` (an approximation of product(x, w)), differentiated as product(x, w)."""
    return straight_through_p.bind(x, w, quantized, product=product,
                                   product_params=tuple(sorted(params.items())))


def _straight_through_jvp(primals, tangents, product, product_params):
    x, w, quantized = primals
    x_dot, w_dot, _ = tangents
    out = straight_through(x, w, quantized, product, dict(product_params))
    bind = lambda a, b: product.bind(a, b, **dict(product_params))
    tangent = ad.Zero(ad.tangent_aval(out.aval))
    if not ad.is_zero(x_dot):
        tangent = ad.add_tangents(tangent, bind(x_dot, w))
    if not ad.is_zero(w_dot):
        tangent = ad.add_tangents(tangent, bind(x, w_dot))
    return out, tangent


def _straight_through_batch(args, dims, product, product_params):
    """dot_general: every batch axis to the front, as one more dot batch dimension.
    conv: the folds of the convolution's own batch rule, `quantized` laid out as their output."""
    size = batching.batch_size(args, dims)
    params = dict(product_params)
    if product is not dot_general_p:
        return _conv_straight_through_batch(args, dims, size, params)
    x, w, quantized = (batching.bdim_at_front(a, d, size) for a, d in zip(args, dims))
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    shift = lambda axes: tuple(a + 1 for a in axes)
    params["dimension_numbers"] = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
    return straight_through(x, w, quantized, product, params), 0


def _conv_straight_through_batch(args, dims, size, params):
    """An unbatched kernel: the batch folds into the examples. A batched kernel folds into the
    output features inside each feature group; with the input batched too, into more groups
    (int8 convolutions have no batch groups). `quantized` gets the folded output's layout."""
    (x, w, quantized), (x_dim, w_dim, q_dim) = args, dims
    quantized = batching.move_dim(quantized, q_dim, 0)      # (size, N, O, ...)
    if w_dim is None:
        x = batching.move_dim(x, x_dim, 0)
        out = straight_through(_merge_axes(x, 0), w, _merge_axes(quantized, 0), conv_general_dilated_p, params)
        return lax.reshape(out, (size, quantized.shape[1]) + out.shape[1:]), 0
    w = batching.move_dim(w, w_dim, 0)
    groups = params["feature_group_count"]
    if x_dim is None:
        folded = _swap_axes(_merge_groups(_swap_axes(quantized, 1), groups), 0)
        out = straight_through(x, _merge_groups(w, groups), folded, conv_general_dilated_p, params)
        return _split_groups(out, 1, groups, size), 1
    x = _fold_into_features(batching.move_dim(x, x_dim, 0))
    params["feature_group_count"] = size * groups
    folded = _merge_axes(_swap_axes(quantized, 0), 1)
    out = straight_through(x, _merge_axes(w, 0), folded, conv_general_dilated_p, params)
    return lax.reshape(out, (out.shape[0], size, out.shape[1] // size) + out.shape[2:]), 1


def _merge_axes(a, axis):
    """a with axes `axis` and `axis` + 1 merged into one."""
    return lax.reshape(a, a.shape[:axis] + (a.shape[axis] * a.shape[axis + 1],) + a.shape[axis + 2:])


def _swap_axes(a, axis):
    """a with axes `axis` and `axis` + 1 swapped."""
    permutation = list(range(a.ndim))
    permutation[axis:axis + 2] = axis + 1, axis
    return lax.transpose(a, tuple(permutation))


ad.jvp_rules[straight_through_p] = _straight_through_jvp
batching.batch_rules[straight_through_p] = _straight_through_batch


# ----------------------------------------------------------------------------- compare

@dataclass(frozen=True)
class OutputError:
    """How far one output of a lowered function is from the reference output."""
    index: int
    shape: tuple
    relative_error: float       # ||lowered - reference|| / ||reference|| (Frobenius)
    max_abs_error: float
    argmax_agreement: float | None   # fraction of rows with equal argmax over the last axis

    def __str__(self):
        agreement = "-" if self.argmax_agreement is None else f"{100 * self.argmax_agreement:.2f}%"
        return (f"output {self.index} {self.shape}: relative error {self.relative_error:.3e}, "
                f"max abs error {self.max_abs_error:.3e}, argmax agreement {agreement}")


def compare(f, lowered_f, *args, verbose=True):
    """Run `f` and `lowered_f` on args; per output, the errors of lowered_f against f."""
    reference, _ = tree_flatten(f(*args))
    lowered, _ = tree_flatten(lowered_f(*args))
    results = [_output_error(i, np.asarray(r, np.float64), np.asarray(l, np.float64))
               for i, (r, l) in enumerate(zip(reference, lowered))]
    if verbose:
        print("\n".join(map(str, results)))
    return results


def _output_error(index, reference, lowered):
    difference = lowered - reference
    norm = np.linalg.norm(reference)
    relative = np.linalg.norm(difference) / norm if norm else float(np.linalg.norm(difference))
    max_abs = float(np.max(np.abs(difference))) if difference.size else 0.0
    agreement = None
    if reference.ndim >= 2 and reference.shape[-1] > 1:
        agreement = float(np.mean(reference.argmax(-1) == lowered.argmax(-1)))
    return OutputError(index, reference.shape, float(relative), max_abs, agreement)
