"""Native complex cumprod and reduce_prod along one axis, on numpy's interleaved complex buffers.

complex_split.py computes most complex operations as real ones on the parts; a product's
parts depend on each other at every step, so as real kernels a cumprod took log2(n) rounds
of a parallel prefix scan and a reduce_prod log2(n) rounds of pairwise products, each round
a pass over memory (a 1024 x 1024 complex64 cumprod 54-66 ms, a product 3-4 ms). Here each
is one sequential pass, in numpy's order (each output the previous one times the next
input, every product rounded as numpy rounds it: no FMA), so jit agrees with eager.

An operand of shape (outer, n, inner), along n: a routine entry is a group of `lanes`
independent chains, the innermost loop running across them: neighbouring entries of the
inner axis (contiguous: the loop vectorizes) or, for a cumprod along the last axis (inner =
1), neighbouring lines (whose serial chains then overlap in the pipeline instead of waiting
out each multiply's latency). A prod along the last axis multiplies a line's entries into a
vector of partial products, entry i into lane i mod lanes, then the lanes and the entries
left over in turn: the one product whose order is not numpy's.
"""
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from jaxlite.lower import llvm_target
from jaxlite.lower.fft_kernels import Layout, load_complex, multiply, store_complex
from jaxlite.lower.llvm_helpers import F32, F64, I32, PTR, VOID, as_i64, emit_loop, gep
from jaxlite.lower.native_routines import Routine, define_routine

_ELEMENTS = {"complex64": F32, "complex128": F64}
_CONTIGUOUS_LANES = 256     # inner entries a chain group takes (2 KiB of complex64)
_LINE_LANES = 8             # lines a group takes along the last axis


@dataclass(frozen=True)
class ComplexProductSpec:
    """`kind` "cumprod" (reversed when `reverse`) or "prod" of `dtype` ("complex64",
    "complex128") along the middle axis of (outer, length, inner)."""
    kind: str
    dtype: str
    outer: int
    length: int
    inner: int
    reverse: bool = False

    @property
    def lanes(self):
        if self.kind == "prod" and self.inner == 1:
            return 1
        lanes, count = (_CONTIGUOUS_LANES, self.inner) if self.inner > 1 else (_LINE_LANES, self.outer)
        while count % lanes:
            lanes //= 2
        return lanes

    def build(self):
        name = f"native_complex_{self.kind}"
        entries = self.outer * self.inner // self.lanes
        module = define_routine(name, 2, entries, _Emitter(self).emit_entry)
        return Routine(module, name, entries, 0, 6 * self.length * self.lanes)

    @property
    def partial_products(self):
        """Lanes of a last-axis prod's partial products: one 512-bit vector of real parts."""
        return 16 if self.dtype == "complex64" else 8


class _Emitter:
    def __init__(self, spec):
        self.spec, self.element = spec, _ELEMENTS[spec.dtype]
        self.body = None

    def emit_entry(self, b, pointers, scratch, entry):
        """Entry `entry`'s chains: the body function (its pointers noalias, so the loop
        across the chains vectorizes) at the group's first element and first result."""
        spec, src, dst = self.spec, *pointers
        if self.body is None:
            self.body = self._define_body(b.module)
        if spec.inner > 1:
            groups = spec.inner // spec.lanes
            block, group = b.udiv(entry, as_i64(groups)), b.urem(entry, as_i64(groups))
            start = b.add(b.mul(block, as_i64(spec.length * spec.inner)), b.mul(group, as_i64(spec.lanes)))
            result = start if spec.kind == "cumprod" else b.add(b.mul(block, as_i64(spec.inner)),
                                                                  b.mul(group, as_i64(spec.lanes)))
        else:
            start = b.mul(entry, as_i64(spec.lanes * spec.length))
            result = start if spec.kind == "cumprod" else b.mul(entry, as_i64(spec.lanes))
        b.call(self.body, [gep(b, src, b.mul(start, as_i64(2)), self.element),
                           gep(b, dst, b.mul(result, as_i64(2)), self.element)])

    def _define_body(self, module):
        function = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR]), module.get_unique_name("chains"))
        function.linkage = "internal"
        for arg in function.args:
            arg.add_attribute("noalias")
        llvm_target.add_function_attributes(function)
        b = ir.IRBuilder(function.append_basic_block("entry"))
        if self.spec.kind == "cumprod":
            self._cumulative(b, *function.args)
        elif self.spec.inner == 1:
            self._line_product(b, *function.args)
        else:
            self._product(b, *function.args)
        b.ret_void()
        return function

    def _at(self, b, step, lane):
        """The offset (in complex entries) of a chain's element at `step` of the axis."""
        spec = self.spec
        along, across = (spec.inner, 1) if spec.inner > 1 else (1, spec.length)
        return b.add(b.mul(as_i64(step), as_i64(along)), b.mul(as_i64(lane), as_i64(across)))

    def _across(self, b, body):
        emit_loop(b, 0, self.spec.lanes, body, name="lane")

    def _cumulative(self, b, src, dst):
        """dst[i] = dst[i - 1] src[i], the first dst[0] = src[0] (mirrored when reversed)."""
        n, element = self.spec.length, self.element
        position = (lambda i: b.sub(as_i64(n - 1), i)) if self.spec.reverse else (lambda i: i)
        first = position(as_i64(0))
        self._across(b, lambda lane: store_complex(b, load_complex(b, src, self._at(b, first, lane), element), dst,
                                                   self._at(b, first, lane)))

        def each_step(i):
            here, before = position(i), position(b.sub(i, as_i64(1)))

            def each_lane(lane):
                value = multiply(b, load_complex(b, dst, self._at(b, before, lane), element),
                                 load_complex(b, src, self._at(b, here, lane), element), flags=())
                store_complex(b, value, dst, self._at(b, here, lane))
            self._across(b, each_lane)
        emit_loop(b, 1, n, each_step, name="step")

    def _product(self, b, src, dst):
        """dst[lane] = src[0] src[1] ... src[n - 1], multiplied in that order."""
        element = self.element
        self._across(b, lambda lane: store_complex(b, load_complex(b, src, self._at(b, as_i64(0), lane), element),
                                                   dst, lane))

        def each_step(i):
            def each_lane(lane):
                value = multiply(b, load_complex(b, dst, lane, element),
                                 load_complex(b, src, self._at(b, i, lane), element), flags=())
                store_complex(b, value, dst, lane)
            self._across(b, each_lane)
        emit_loop(b, 1, self.spec.length, each_step, name="step")


    def _line_product(self, b, src, dst):
        """dst[0] = the product of a contiguous line's n entries, through partial products."""
        n, element, lanes = self.spec.length, self.element, self.spec.partial_products
        blocks = n // lanes
        if blocks:
            rows = Layout(lanes, lanes)
            partial = emit_loop(b, 1, blocks, lambda k, re, im: multiply(b, (re, im), rows.load(b, src, k, element),
                                                                         flags=()),
                                carried=rows.load(b, src, 0, element), name="block")
            total = _lane(b, partial, 0)
            for lane in range(1, lanes):
                total = multiply(b, total, _lane(b, partial, lane), flags=())
            start = blocks * lanes
        else:
            total, start = load_complex(b, src, 0, element), 1
        total = emit_loop(b, start, n, lambda i, re, im: multiply(b, (re, im), load_complex(b, src, i, element),
                                                                 flags=()), carried=total, name="rest")
        store_complex(b, total, dst, 0)


def _lane(b, vectors, lane):
    return tuple(b.extract_element(part, ir.Constant(I32, lane)) for part in vectors)


def _complex_name(aval):
    name = np.dtype(aval.dtype).name
    return name if name in _ELEMENTS else None


def _split_at(shape, axis):
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def cumprod_spec(eqn):
    """The routine of a complex cumprod, or None (a real one is a fused kernel; nothing to
    compute on an empty operand)."""
    aval = eqn.inputs[0].aval
    dtype = _complex_name(aval)
    if dtype is None or aval.size == 0:
        return None
    return ComplexProductSpec("cumprod", dtype, *_split_at(tuple(aval.shape), eqn.params["axis"]),
                              bool(eqn.params["reverse"]))


def reduce_prod_spec(eqn):
    """The routine of a complex reduce_prod over one axis (complex_split makes one equation
    per axis), or None."""
    aval = eqn.inputs[0].aval
    dtype = _complex_name(aval)
    axes = tuple(eqn.params["axes"])
    if dtype is None or aval.size == 0 or len(axes) != 1:
        return None
    return ComplexProductSpec("prod", dtype, *_split_at(tuple(aval.shape), axes[0]))
