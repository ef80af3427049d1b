"""Complex values as pairs of real ones: the compiler computes with real numbers only.

`split_complex` rewrites a program so that no value inside it is complex: each complex value
becomes two real ones (its parts, in separate vectors, so an elementwise complex kernel is
a vectorized real kernel), and each complex operation the real operations that compute its
parts. At the program's boundary -- and at the boundary of a loop or branch body, whose
carries are single values -- a complex array of shape S is the real array of shape S + (2,)
holding its parts interleaved: exactly the bytes of the complex array, so the runtime passes
complex buffers through without a copy (runtime.Executable's `interface`). Slicing out the
parts and concatenating them back are fused into the kernels next to them, which read and
write the interleaved buffers directly.

Measured (benchmarks/bench_complex.py): see the commit that introduced this module. An
operation without a rule here is computed from its complex value (rebuilt with lax.complex
and split again), so it runs with its numpy implementation between kernels, and is logged.
"""
import itertools
import logging
import math

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.powers import power_by_squaring
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array
from jaxlite.core.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from jaxlite.core.primitive import Primitive
from jaxlite.core.staging import trace_to_jaxpr
from jaxlite.lax import complex_parts, cumulative, elementwise as ew, gradients, reductions, shapes, slicing, sorting
from jaxlite.lax import linalg, windowed
from jaxlite.lax.convolution import conv_general_dilated_p
from jaxlite.lax.dot import dot_general_p
from jaxlite.lax.fft import FftType, fft_p
from jaxlite.lower.fft_kernels import fft_pairs_p

logger = logging.getLogger("jaxlite.jit")


class Pair:
    """A complex value as its real and imaginary parts (real arrays of the value's shape);
    `packed`, when known, the same value as interleaved parts (shape + (2,)): where the
    value came in so, from the program's boundary or a native routine, it leaves so again
    without the copy that slicing out its parts and concatenating them back would be."""

    __slots__ = ("re", "im", "packed")

    def __init__(self, re, im, packed=None):
        self.re, self.im, self.packed = re, im, packed


# ---------------------------------------------------------------- the pass

def split_complex(closed):
    """`closed` with no complex value inside; a complex input or output of shape S is a real
    array of shape S + (2,) (its parts interleaved). Programs without complex values are kept."""
    if not _mentions_complex(closed.jaxpr):
        return closed

    def run(*args):
        values = [_unpack(x) if dtypes.is_complex(a.dtype) else x for x, a in zip(args, closed.in_avals)]
        outs = _interpret(closed.jaxpr, [_concrete(c) for c in closed.consts], values)
        return [_pack(out, aval) if isinstance(out, Pair) else out for out, aval in zip(outs, closed.out_avals)]
    return trace_to_jaxpr(run, [pair_aval(a) for a in closed.in_avals], "complex values split into real parts")


def pair_aval(aval):
    """How a value crosses a split program's boundary: a complex one as its interleaved parts."""
    if not dtypes.is_complex(aval.dtype):
        return aval
    return ShapedArray(tuple(aval.shape) + (2,), dtypes.real_dtype(aval.dtype))


def interface_of(closed):
    """The complex avals of a program's inputs and outputs, when it has any (else None): what
    the runtime's callers pass and receive, where the compiled code sees pair_aval's arrays."""
    avals = list(closed.in_avals) + list(closed.out_avals)
    if not any(dtypes.is_complex(a.dtype) for a in avals):
        return None
    return list(closed.in_avals), list(closed.out_avals)


def _mentions_complex(jaxpr):
    variables = jaxpr.constvars + jaxpr.invars + jaxpr.outvars
    if any(dtypes.is_complex(v.aval.dtype) for v in variables):
        return True
    return any(_eqn_mentions_complex(eqn) for eqn in jaxpr.eqns)


def _eqn_mentions_complex(eqn):
    if any(dtypes.is_complex(v.aval.dtype) for v in eqn.inputs + eqn.outputs):
        return True
    return any(_mentions_complex(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub) for sub in _sub_jaxprs(eqn))


def _sub_jaxprs(eqn):
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, (ClosedJaxpr, Jaxpr)):
                yield item


def _concrete(value):
    value = np.asarray(value)
    if not dtypes.is_complex(value.dtype):
        return value
    return Pair(Array(np.array(value.real)), Array(np.array(value.imag)))


def _interpret(jaxpr, consts, args):
    env = {}

    def read(v):
        if isinstance(v, Literal):
            return _concrete(v.val) if dtypes.is_complex(v.aval.dtype) else v.val
        return env[v]

    for v, value in zip(jaxpr.constvars + jaxpr.invars, list(consts) + list(args)):
        env[v] = value
    for eqn in jaxpr.eqns:
        outs = _split_eqn(eqn, [read(v) for v in eqn.inputs])
        env.update(zip(eqn.outputs, outs))
    return [read(v) for v in jaxpr.outvars]


def _split_eqn(eqn, values):
    """The outputs of one equation, complex ones as Pairs."""
    if not _eqn_mentions_complex(eqn):
        return _bind(eqn, values, eqn.params)
    rule = RULES.get(eqn.primitive)
    if rule is not None:
        outs = rule(eqn, *values)
        return outs if eqn.primitive.multiple_results else [outs]
    if any(True for _ in _sub_jaxprs(eqn)):
        return _split_bodies(eqn, values)
    from jaxlite.lower.step_policy import eqn_step_kind
    if eqn_step_kind(eqn) in ("native", "gemm"):
        return _native_on_complex(eqn, values)
    return _computed_whole(eqn, values)


def _native_on_complex(eqn, values):
    """A native routine that reads and writes complex buffers itself (a complex LAPACK call)
    takes its complex operands and gives its complex results as their interleaved parts,
    which are the complex values' bytes: no copy, no complex value in the program."""
    packed = [_pack(x, v.aval) if isinstance(x, Pair) else x for x, v in zip(values, eqn.inputs)]
    outs = on_parts_p.bind(*packed, primitive=eqn.primitive, params=tuple(sorted(eqn.params.items())),
                           in_avals=tuple(v.aval for v in eqn.inputs))
    outs = outs if eqn.primitive.multiple_results else outs[:1]
    return [_unpack(out) if dtypes.is_complex(v.aval.dtype) else out for out, v in zip(outs, eqn.outputs)]


def _bind(eqn, values, params):
    outs = eqn.primitive.bind(*values, **params)
    return outs if eqn.primitive.multiple_results else [outs]


def _split_bodies(eqn, values):
    """Loops and branches: their bodies are split, and their complex operands and results
    cross as interleaved parts (the bodies' boundary, as the program's)."""
    params = {name: _split_param(value) for name, value in eqn.params.items()}
    packed = [_pack(x, v.aval) if isinstance(x, Pair) else x for x, v in zip(values, eqn.inputs)]
    outs = _bind(eqn, packed, params)
    return [_unpack(out) if dtypes.is_complex(v.aval.dtype) else out for out, v in zip(outs, eqn.outputs)]


def _split_param(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_split_param(item) for item in value)
    if isinstance(value, ClosedJaxpr):
        return split_complex(value)
    if isinstance(value, Jaxpr):
        return split_complex(ClosedJaxpr(value, [])).jaxpr
    return value


def _computed_whole(eqn, values):
    """No rule: compute the complex values themselves (a numpy step between kernels)."""
    logger.warning("jit: %s on complex values runs with its numpy implementation between kernels", eqn.primitive)
    whole = [lax.complex(x.re, x.im) if isinstance(x, Pair) else x for x in values]
    outs = _bind(eqn, whole, eqn.params)
    return [_parts(out) if dtypes.is_complex(v.aval.dtype) else out for out, v in zip(outs, eqn.outputs)]


def _as_complex(x, aval):
    return np.ascontiguousarray(x).reshape(-1).view(aval.dtype).reshape(aval.shape)


def _as_parts(z):
    z = np.ascontiguousarray(z)
    return z.reshape(-1).view(z.real.dtype).reshape(z.shape + (2,))


def _on_parts_impl(*parts, primitive, params, in_avals):
    values = [_as_complex(x, aval) if dtypes.is_complex(aval.dtype) else x for x, aval in zip(parts, in_avals)]
    outs = primitive.impl(*values, **dict(params))
    outs = outs if primitive.multiple_results else [outs]
    return [_as_parts(out) if dtypes.is_complex(out.dtype) else out for out in outs]


def _inner_out_avals(primitive, params, in_avals):
    outs = primitive.abstract_eval(*in_avals, **dict(params))
    return outs if primitive.multiple_results else [outs]


def inner_eqn(eqn):
    """The equation an on_parts equation computes, on its complex values (its native routine's spec)."""
    primitive, params, in_avals = eqn.params["primitive"], eqn.params["params"], eqn.params["in_avals"]
    return Eqn(primitive, [Var(aval) for aval in in_avals], dict(params),
               [Var(aval) for aval in _inner_out_avals(primitive, params, in_avals)])


# A primitive with a native routine on complex buffers, its complex operands and results given
# as their interleaved parts (inside compiled programs only): the routine reads the bytes as
# complex values, as the native FFT does (fft_kernels.fft_pairs_p).
on_parts_p = Primitive("on_parts", multiple_results=True)
on_parts_p.def_impl(_on_parts_impl)
on_parts_p.def_abstract_eval(lambda *parts, primitive, params, in_avals: [
    pair_aval(aval) for aval in _inner_out_avals(primitive, params, in_avals)])


def _parts(z):
    return Pair(lax.real(z), lax.imag(z))


def _unpack(x):
    """The parts of a complex value given as interleaved real parts (shape + (2,))."""
    axis = x.ndim - 1
    return Pair(lax.index_in_dim(x, 0, axis, keepdims=False), lax.index_in_dim(x, 1, axis, keepdims=False), x)


def _pack(z, aval):
    """A complex value as its interleaved real parts (shape + (2,))."""
    shape, axis = tuple(aval.shape), len(aval.shape)
    if z.packed is not None and _is_packed_form(z.packed, aval):
        return z.packed
    parts = [lax.broadcast_in_dim(_full(part, shape), shape + (1,), tuple(range(axis))) for part in (z.re, z.im)]
    return lax.concatenate(parts, axis)


def _is_packed_form(x, aval):
    return tuple(x.shape) == tuple(aval.shape) + (2,) and np.dtype(x.dtype) == dtypes.real_dtype(aval.dtype)


def _full(x, shape):
    x = lax.base.as_operand(x)
    return x if tuple(x.shape) == shape else lax.broadcast_in_dim(x, shape, ())


# ---------------------------------------------------------------- arithmetic on parts

def _mul(x, y):
    return Pair(lax.sub(lax.mul(x.re, y.re), lax.mul(x.im, y.im)),
                lax.add(lax.mul(x.re, y.im), lax.mul(x.im, y.re)))


def _div(x, y):
    """x / y with y scaled by its larger part first, so c^2 + d^2 cannot overflow."""
    scale = lax.max(lax.abs(y.re), lax.abs(y.im))
    c, d = lax.div(y.re, scale), lax.div(y.im, scale)
    denominator = lax.add(lax.mul(y.re, c), lax.mul(y.im, d))
    return Pair(lax.div(lax.add(lax.mul(x.re, c), lax.mul(x.im, d)), denominator),
                lax.div(lax.sub(lax.mul(x.im, c), lax.mul(x.re, d)), denominator))


def _constant(value, like):
    """A complex constant as a Pair in the dtype of `like`'s parts."""
    return Pair(lax.full((), value.real, like.re.dtype), lax.full((), value.imag, like.re.dtype))


def _times_i(z):
    return Pair(lax.neg(z.im), z.re)


def _times_minus_i(z):
    return Pair(z.im, lax.neg(z.re))


def _abs(z):
    """hypot(re, im) scaled by the larger part, so squares never overflow or vanish."""
    a, b = lax.abs(z.re), lax.abs(z.im)
    big, small = lax.max(a, b), lax.min(a, b)
    zero = lax.full_like(big, 0)
    safe = lax.select_n(lax.eq(big, zero), big, lax.full_like(big, 1))
    ratio = lax.div(small, safe)
    out = lax.mul(big, lax.sqrt(lax.add(lax.mul(ratio, ratio), lax.full_like(ratio, 1))))
    return lax.select_n(lax.eq(small, lax.full_like(small, np.inf)), out, small)    # |inf + i nan| = inf


def _exp(z):
    magnitude = lax.exp(z.re)
    return Pair(lax.mul(magnitude, lax.cos(z.im)), lax.mul(magnitude, lax.sin(z.im)))


def _log(z):
    return Pair(lax.log(_abs(z)), lax.atan2(z.im, z.re))


def _sqrt(z):
    """The principal root: t = sqrt((|z| + |re|) / 2) is the part that never cancels."""
    t = lax.sqrt(lax.mul(lax.add(_abs(z), lax.abs(z.re)), lax.full_like(z.re, 0.5)))
    zero = lax.full_like(t, 0)
    other = lax.div(z.im, lax.mul(t, lax.full_like(t, 2)))
    other = lax.select_n(lax.eq(t, zero), other, zero)
    negative = lax.lt(z.re, zero)
    signed_t = lax.select_n(_sign_bit(z.im), t, lax.neg(t))
    return Pair(lax.select_n(negative, t, lax.abs(other)), lax.select_n(negative, other, signed_t))


def _sign_bit(x):
    bits = np.dtype(f"i{x.dtype.itemsize}")
    return lax.lt(lax.bitcast_convert_type(x, bits), lax.full((), 0, bits))


def _reciprocal(z):
    return _div(_constant(1.0, z), z)


def _expm1(z):
    # As eager (lax.elementwise._expm1_impl): re is expm1(a) cos b - 2 sin^2(b / 2), which keeps
    # its digits near 0, plus 0 (a -0 becomes +0, as XLA gives); im is b itself where b = 0.
    half_sin = lax.sin(lax.mul(z.im, lax.full_like(z.im, 0.5)))
    re = lax.sub(lax.mul(lax.expm1(z.re), lax.cos(z.im)), lax.mul(lax.full_like(z.im, 2), lax.mul(half_sin, half_sin)))
    im = lax.select_n(lax.eq(z.im, lax.full_like(z.im, 0)), lax.mul(lax.exp(z.re), lax.sin(z.im)), z.im)
    return Pair(lax.add(re, lax.full_like(re, 0)), im)


def _log1p(z):
    # |1 + z|^2 - 1 = a (2 + a) + b^2, computed without forming 1 + a first
    a, b = z.re, z.im
    grown = lax.add(lax.mul(a, lax.add(a, lax.full_like(a, 2))), lax.mul(b, b))
    return Pair(lax.mul(lax.log1p(grown), lax.full_like(a, 0.5)), lax.atan2(b, lax.add(a, lax.full_like(a, 1))))


def _sin(z):
    return Pair(lax.mul(lax.sin(z.re), lax.cosh(z.im)), lax.mul(lax.cos(z.re), lax.sinh(z.im)))


def _cos(z):
    return Pair(lax.mul(lax.cos(z.re), lax.cosh(z.im)), lax.neg(lax.mul(lax.sin(z.re), lax.sinh(z.im))))


def _sinh(z):
    return Pair(lax.mul(lax.sinh(z.re), lax.cos(z.im)), lax.mul(lax.cosh(z.re), lax.sin(z.im)))


def _cosh(z):
    return Pair(lax.mul(lax.cosh(z.re), lax.cos(z.im)), lax.mul(lax.sinh(z.re), lax.sin(z.im)))


def _tanh(z):
    """(sinh 2a + i sin 2b) / (cosh 2a + cos 2b); past |a| = 20 it is sign(a) to the last digit
    (where cosh 2a would overflow)."""
    two = lax.full_like(z.re, 2)
    a2, b2 = lax.mul(z.re, two), lax.mul(z.im, two)
    denominator = lax.add(lax.cosh(a2), lax.cos(b2))
    far = lax.gt(lax.abs(z.re), lax.full_like(z.re, 20))
    re = lax.select_n(far, lax.div(lax.sinh(a2), denominator), lax.sign(z.re))
    im = lax.select_n(far, lax.div(lax.sin(b2), denominator), lax.full_like(z.im, 0))
    return Pair(re, im)


def _tan(z):
    return _times_minus_i(_tanh(_times_i(z)))


def _asinh(z):
    return _log(_add(z, _sqrt(_add(_mul(z, z), _constant(1.0, z)))))


def _acosh(z):
    one = _constant(1.0, z)
    return _log(_add(z, _mul(_sqrt(_add(z, one)), _sqrt(_sub(z, one)))))


def _atanh(z):
    half = _constant(0.5, z)
    return _mul(half, _sub(_log1p(z), _log1p(_neg(z))))


def _asin(z):
    return _times_minus_i(_asinh(_times_i(z)))


def _acos(z):
    return _sub(_constant(math.pi / 2, z), _asin(z))


def _atan(z):
    return _times_minus_i(_atanh(_times_i(z)))


def _atan2(y, x):
    """XLA's complex atan2: -i log((x + iy) / sqrt(x^2 + y^2))."""
    radius = _sqrt(_add(_mul(x, x), _mul(y, y)))
    return _times_minus_i(_log(_div(_add(x, _times_i(y)), radius)))


def _logistic(z):
    one = _constant(1.0, z)
    return _div(one, _add(one, _exp(_neg(z))))


def _pow(x, y):
    """exp(y log x), with 0^y = 0 (1 for y = 0) as numpy."""
    out = _exp(_mul(y, _log(x)))
    zero = lax.full_like(x.re, 0)
    base_zero = lax.bitwise_and(lax.eq(x.re, zero), lax.eq(x.im, zero))
    exponent_zero = lax.bitwise_and(lax.eq(y.re, zero), lax.eq(y.im, zero))
    re = lax.select_n(base_zero, out.re, lax.select_n(exponent_zero, zero, lax.full_like(zero, 1)))
    return Pair(re, lax.select_n(base_zero, out.im, zero))


def _integer_pow(x, y):
    """Repeated squaring, as integer_pow on real values."""
    if y == 0:
        return _constant(1.0, x)
    result = power_by_squaring(x, abs(y), _mul)
    return _reciprocal(result) if y < 0 else result


def _add(x, y):
    return Pair(lax.add(x.re, y.re), lax.add(x.im, y.im))


def _sub(x, y):
    return Pair(lax.sub(x.re, y.re), lax.sub(x.im, y.im))


def _neg(z):
    return Pair(lax.neg(z.re), lax.neg(z.im))


def _sign(z):
    magnitude = _abs(z)
    zero = lax.full_like(magnitude, 0)
    safe = lax.select_n(lax.eq(magnitude, zero), magnitude, lax.full_like(magnitude, 1))
    return Pair(lax.div(z.re, safe), lax.div(z.im, safe))


def _lexicographic_wins(x, y, later):
    """Where x beats y in the order max/min use on complex numbers (real parts first)."""
    first = later(x.re, y.re)
    tie = lax.bitwise_and(lax.eq(x.re, y.re), lax.bitwise_not(later(y.im, x.im)))
    return lax.bitwise_or(first, tie)


def _select(which, x, y):
    """x where `which`, else y (parts of the same shape)."""
    return Pair(lax.select_n(which, y.re, x.re), lax.select_n(which, y.im, x.im))


# ---------------------------------------------------------------- the rules

def _elementwise(fn):
    def rule(eqn, *values):
        shape = tuple(eqn.outputs[0].aval.shape)
        pairs = [Pair(_full(x.re, shape), _full(x.im, shape)) if isinstance(x, Pair) else x for x in values]
        return fn(*pairs)
    return rule


def _each_part(eqn, *values):
    """Operations linear in their complex operands and applied to each part alike (shape
    changes, indexing, sums): the same operation on the real parts and on the imaginary ones
    (a gather's complex fill value split likewise)."""
    fill = eqn.params.get("fill_value")
    params = [eqn.params, eqn.params]
    if isinstance(fill, complex):
        params = [dict(eqn.params, fill_value=part) for part in (fill.real, fill.imag)]
    parts = [_bind(eqn, [x.re if isinstance(x, Pair) else x for x in values], params[0]),
             _bind(eqn, [x.im if isinstance(x, Pair) else x for x in values], params[1])]
    outs = [Pair(re, im) if dtypes.is_complex(v.aval.dtype) else re
            for re, im, v in zip(parts[0], parts[1], eqn.outputs)]
    return outs if eqn.primitive.multiple_results else outs[0]


def _as_pair(x, dtype):
    """A complex operand as a Pair: a real one (conj and convert take those) gets a zero part."""
    if isinstance(x, Pair):
        return x
    x = lax.convert_element_type(x, dtypes.real_dtype(dtype))
    return Pair(x, lax.full_like(x, 0))


def _convert(eqn, x):
    new_dtype = eqn.params["new_dtype"]
    if not dtypes.is_complex(new_dtype):        # a complex value converts by its real part
        return lax.convert_element_type(x.re, new_dtype)
    part = dtypes.real_dtype(new_dtype)
    z = _as_pair(x, new_dtype)
    return Pair(lax.convert_element_type(z.re, part), lax.convert_element_type(z.im, part))


def _bilinear(eqn, x, y):
    """Complex products (dot_general on the generated GEMM, convolutions) as real products
    of the parts: 3 of them (Gauss: re = ar br - ai bi, im = (ar + ai)(br + bi) - ar br -
    ai bi) for long contractions, where the products dominate the elementwise sums around
    them, else 4."""
    params = dict(eqn.params)
    if params.get("preferred_element_type") is not None:
        params["preferred_element_type"] = dtypes.real_dtype(params["preferred_element_type"])
    x, y = _as_pair(x, eqn.outputs[0].aval.dtype), _as_pair(y, eqn.outputs[0].aval.dtype)

    def product(a, b):
        return eqn.primitive.bind(a, b, **params)
    if eqn.primitive is dot_general_p and _contraction_size(eqn) >= GAUSS_MIN_CONTRACTION:
        rr, ii = product(x.re, y.re), product(x.im, y.im)
        mixed = product(lax.add(x.re, x.im), lax.add(y.re, y.im))
        return Pair(lax.sub(rr, ii), lax.sub(lax.sub(mixed, rr), ii))
    return Pair(lax.sub(product(x.re, y.re), product(x.im, y.im)),
                lax.add(product(x.re, y.im), product(x.im, y.re)))


def _contraction_size(eqn):
    (contracting, _), _ = eqn.params["dimension_numbers"]
    return math.prod(eqn.inputs[0].aval.shape[d] for d in contracting)


# Gauss's 3 products trade a quarter of the GEMM work for three more elementwise passes and
# about twice the rounding error of 4 (|ar + ai| |br + bi| is up to twice |a| |b|). Measured
# at 1024^2 complex64 (this shared 2-core machine, loaded): 4 products 233-250 ms, 3 products
# 156-234 ms; at 256 the passes around them cost about what the product saves.
GAUSS_MIN_CONTRACTION = 256


def _tree_reduction(combine, identity):
    """reduce_prod/max/min of complex values: rounds of pairwise `combine` (of Pairs) along
    each reduced axis in turn, the last first (reductions.pairwise_tree: contiguous halves,
    no transposed copy)."""
    def rule(eqn, x):
        parts = [x.re, x.im]
        for axis in sorted(eqn.params["axes"], reverse=True):
            parts = reductions.pairwise_tree(lambda a, b: _parts_of(combine(Pair(*a), Pair(*b))), parts,
                                             [identity.real, identity.imag], axis)
        return Pair(*parts)
    return rule


def _prefix_combination(combine, identity):
    """cumprod/cummax/cummin of complex values: a parallel prefix scan of `combine` (of Pairs)
    in rounds of elementwise kernels (cumulative.prefix_scan)."""
    def rule(eqn, x):
        re, im = cumulative.prefix_scan(lambda a, b: _parts_of(combine(Pair(*a), Pair(*b))),
                                        [identity.real, identity.imag], [x.re, x.im], eqn.params["axis"],
                                        eqn.params["reverse"])
        return Pair(re, im)
    return rule


def _without_batching_dims(indices, d):
    """A scatter's indices and dimension numbers with its batching dims made scattered ones:
    entry e of the batch targets operand_batching_dims[k] at its own position along
    scatter_indices_batching_dims[k] (an iota as one more index column), a dim the windows
    leave out as they do an inserted one. Batch positions are in bounds: no mode changes them."""
    if not d.operand_batching_dims:
        return indices, d
    batch_shape = tuple(indices.shape[:-1]) + (1,)
    positions = [lax.broadcasted_iota(indices.dtype, batch_shape, dim) for dim in d.scatter_indices_batching_dims]
    indices = lax.concatenate([indices] + positions, indices.ndim - 1)
    return indices, slicing.ScatterDimensionNumbers(
        d.update_window_dims, tuple(sorted(d.inserted_window_dims + d.operand_batching_dims)),
        d.scatter_dims_to_operand_dims + d.operand_batching_dims)


def _natively_by_axis(rule):
    """A complex product (cumprod, reduce_prod): the native routine on the interleaved parts
    (complex_products.py), one axis at a time, the last first; `rule` (rounds of real kernels)
    where it does not apply."""
    def natively_or_by_rule(eqn, x):
        from jaxlite.lower.step_policy import eqn_step_kind
        steps = list(_one_axis_eqns(eqn))
        if not all(eqn_step_kind(step) == "native" for step in steps):
            return rule(eqn, x)
        for step in steps:
            x = _native_on_complex(step, [x])[0]
        return x
    return natively_or_by_rule


def _one_axis_eqns(eqn):
    """A reduction over several axes as reductions over one axis each, the last first."""
    if "axes" not in eqn.params:
        yield eqn
        return
    aval = eqn.inputs[0].aval
    for axis in sorted(eqn.params["axes"], reverse=True):
        params = dict(eqn.params, axes=(axis,))
        out = eqn.primitive.abstract_eval(aval, **params)
        yield Eqn(eqn.primitive, [Var(aval)], params, [Var(out)])
        aval = out


def _scatter_entry_by_entry(combine):
    """scatter-mul/min/max of complex values: a native loop over the update windows in the
    eager order (numpy's ufunc.at), each read, combined with its update (Pairs) and written
    back, so that repeated targets combine in turn."""
    def rule(eqn, operand, indices, updates):
        indices, d = _without_batching_dims(indices, eqn.params["dimension_numbers"])
        mode = eqn.params["mode"]
        operand, updates = (_as_pair(x, eqn.outputs[0].aval.dtype) for x in (operand, updates))
        windows = list(d.update_window_dims)
        entries = [p for p in range(updates.re.ndim) if p not in windows]
        window_shape = tuple(updates.re.shape[p] for p in windows)
        count = math.prod(updates.re.shape[p] for p in entries)
        flat = [lax.reshape(lax.transpose(part, tuple(entries + windows)), (count,) + window_shape)
                for part in (updates.re, updates.im)]
        flat_indices = lax.reshape(indices, (count, indices.shape[-1]))
        one = slicing.ScatterDimensionNumbers(tuple(range(1, 1 + len(windows))), d.inserted_window_dims,
                                              d.scatter_dims_to_operand_dims)
        sizes = slicing.scatter_slice_sizes(operand.re.shape, (1,) + window_shape, one)

        def step(i, parts):
            index = lax.dynamic_slice(flat_indices, (i, 0), (1, indices.shape[-1]))
            update = Pair(*[lax.dynamic_slice(x, (i,) + (0,) * len(windows), (1,) + window_shape) for x in flat])
            current = Pair(*[lax.gather(x, index, slicing._scatter_to_gather_dnums(one), sizes, mode=mode, fill_value=0)
                             for x in parts])
            combined = combine(current, update)
            return tuple(lax.scatter(x, index, new, one, mode=mode) for x, new in zip(parts, _parts_of(combined)))
        return Pair(*lax.fori_loop(0, count, step, (operand.re, operand.im)))
    return rule


def _window_extremum(combine, identity):
    """reduce_window_max/min of complex values: the padded, dilated operand read at each
    offset of the window by a strided slice, the slices combined (Pairs) in turn."""
    def rule(eqn, x):
        p = eqn.params
        padding = [(lo, hi, d - 1) for (lo, hi), d in zip(p["padding"], p["base_dilation"])]
        padded = [lax.pad(part, lax.full((), fill, part.dtype), padding)
                  for part, fill in zip((x.re, x.im), (identity.real, identity.imag))]
        out_shape = eqn.outputs[0].aval.shape
        result = None
        for offset in itertools.product(*map(range, p["window_dimensions"])):
            start = [o * d for o, d in zip(offset, p["window_dilation"])]
            stop = [b + (n - 1) * s + 1 if n else b for b, n, s in zip(start, out_shape, p["window_strides"])]
            window = Pair(*[lax.slice(part, start, stop, p["window_strides"]) for part in padded])
            result = window if result is None else combine(result, window)
        return result
    return rule


def _triangular_solve(eqn, a, b):
    """A solve with conj(a) is the conjugate of the solve with a of conj(b) (BLAS's trsm has
    no conjugate-only op(a)); the others go to trsm as they are."""
    if not eqn.params["conjugate_a"] or eqn.params["transpose_a"]:
        return _native_on_complex(eqn, [a, b])[0]
    params = dict(eqn.params, conjugate_a=False)
    b = _as_pair(b, eqn.outputs[0].aval.dtype)
    x = _native_on_complex(eqn.replace(params=params), [a, Pair(b.re, lax.neg(b.im))])[0]
    return Pair(x.re, lax.neg(x.im))


def _parts_of(z):
    return [z.re, z.im]


def _greater(later):
    """The lexicographic extremum of two Pairs (real parts first), as max/min on complex."""
    return lambda x, y: _select(_lexicographic_wins(x, y, later), x, y)


def _complex(eqn, x, y):
    shape = tuple(eqn.outputs[0].aval.shape)
    return Pair(_full(x, shape), _full(y, shape))


def _conj(eqn, x):
    z = _as_pair(x, eqn.outputs[0].aval.dtype)
    return Pair(z.re, lax.neg(z.im))


def _equal(combine, compare):
    def rule(eqn, x, y):
        return combine(compare(x.re, y.re), compare(x.im, y.im))
    return rule


def _select_n(eqn, which, *cases):
    shape = tuple(eqn.outputs[0].aval.shape)
    return Pair(lax.select_n(which, *[_full(c.re, shape) for c in cases]),
                lax.select_n(which, *[_full(c.im, shape) for c in cases]))


def _fft(eqn, x):
    """lax.fft on the interleaved parts, which the native FFT reads and writes (fft_kernels),
    one axis at a time: each is its own routine, whose lines the native pool shares out
    between threads. A real transform's real axis (the last) comes first forward, last inverse."""
    fft_type, lengths = FftType(eqn.params["fft_type"]), tuple(eqn.params["fft_lengths"])
    value = _pack(x, eqn.inputs[0].aval) if isinstance(x, Pair) else x
    complex_type = FftType.IFFT if fft_type in (FftType.IFFT, FftType.IRFFT) else FftType.FFT
    steps = [(complex_type, (n,), axis) for axis, n in zip(range(-len(lengths), -1), lengths)]
    last = [(fft_type, lengths[-1:], -1)]
    for step_type, step_lengths, axis in (steps + last if fft_type is FftType.IRFFT else last + steps[::-1]):
        value = fft_pairs_p.bind(value, fft_type=step_type, fft_lengths=step_lengths, axis=axis)
    return _unpack(value) if dtypes.is_complex(eqn.outputs[0].aval.dtype) else value


def _sort(eqn, *operands):
    """Complex operands sort by their parts, real first (numpy's and JAX's order): each
    becomes two operands, a complex key two keys."""
    flat, keys = [], 0
    for position, x in enumerate(operands):
        parts = [x.re, x.im] if isinstance(x, Pair) else [x]
        flat += parts
        keys += len(parts) if position < eqn.params["num_keys"] else 0
    outs = iter(eqn.primitive.bind(*flat, **dict(eqn.params, num_keys=keys)))
    return [Pair(next(outs), next(outs)) if isinstance(x, Pair) else next(outs) for x in operands]


RULES = {
    sorting.sort_p: _sort,
    fft_p: _fft,
    complex_parts.real_p: lambda eqn, x: x.re,
    complex_parts.imag_p: lambda eqn, x: x.im,
    complex_parts.complex_p: _complex,
    complex_parts.conj_p: _conj,
    ew.convert_element_type_p: _convert,
    dot_general_p: _bilinear,
    conv_general_dilated_p: _bilinear,
    ew.abs_p: lambda eqn, x: _abs(x),
    ew.eq_p: _equal(lax.bitwise_and, lax.eq),
    ew.ne_p: _equal(lax.bitwise_or, lax.ne),
    ew.select_n_p: _select_n,
    reductions.reduce_prod_p: _natively_by_axis(_tree_reduction(_mul, 1)),
    reductions.reduce_max_p: _tree_reduction(_greater(lax.gt), complex(-np.inf, -np.inf)),
    reductions.reduce_min_p: _tree_reduction(_greater(lax.lt), complex(np.inf, np.inf)),
    windowed.reduce_window_max_p: _window_extremum(_greater(lax.gt), complex(-np.inf, 0)),
    windowed.reduce_window_min_p: _window_extremum(_greater(lax.lt), complex(np.inf, 0)),
    linalg.triangular_solve_p: _triangular_solve,
    slicing.scatter_mul_p: _scatter_entry_by_entry(_mul),
    slicing.scatter_max_p: _scatter_entry_by_entry(_greater(lax.gt)),
    slicing.scatter_min_p: _scatter_entry_by_entry(_greater(lax.lt)),
    cumulative.cumprod_p: _natively_by_axis(_prefix_combination(_mul, 1)),
    cumulative.cummax_p: _prefix_combination(_greater(lax.gt), complex(-np.inf, -np.inf)),
    cumulative.cummin_p: _prefix_combination(_greater(lax.lt), complex(np.inf, np.inf)),
    ew.integer_pow_p: lambda eqn, x: _integer_pow(x, eqn.params["y"]),
    **{primitive: _elementwise(fn) for primitive, fn in (
        (ew.max_p, _greater(lax.gt)), (ew.min_p, _greater(lax.lt)), (ew.add_p, _add), (ew.add_any_p, _add), (ew.sub_p, _sub), (ew.mul_p, _mul), (ew.div_p, _div),
        (ew.neg_p, _neg), (ew.sign_p, _sign), (ew.square_p, lambda z: _mul(z, z)), (ew.pow_p, _pow),
        (ew.exp_p, _exp), (ew.exp2_p, lambda z: _exp(_mul(_constant(math.log(2), z), z))),
        (ew.log_p, _log), (ew.log1p_p, _log1p), (ew.expm1_p, _expm1), (ew.sqrt_p, _sqrt),
        (ew.rsqrt_p, lambda z: _reciprocal(_sqrt(z))), (ew.logistic_p, _logistic),
        (ew.sin_p, _sin), (ew.cos_p, _cos), (ew.tan_p, _tan), (ew.sinh_p, _sinh), (ew.cosh_p, _cosh),
        (ew.tanh_p, _tanh), (ew.asin_p, _asin), (ew.acos_p, _acos), (ew.atan_p, _atan),
        (ew.asinh_p, _asinh), (ew.acosh_p, _acosh), (ew.atanh_p, _atanh), (ew.atan2_p, _atan2))},
    **{primitive: _each_part for primitive in (
        shapes.broadcast_in_dim_p, shapes.reshape_p, shapes.transpose_p, shapes.squeeze_p, shapes.rev_p, shapes.slice_p, shapes.pad_p,
        shapes.concatenate_p, slicing.gather_p, slicing.dynamic_slice_p, slicing.dynamic_update_slice_p, slicing.scatter_p,
        slicing.scatter_add_p, reductions.reduce_sum_p, cumulative.cumsum_p, windowed.reduce_window_sum_p, gradients.stop_gradient_p)},
}
