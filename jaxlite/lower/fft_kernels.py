"""Native FFT: lax.fft's four transforms along one axis, batched over the others.

Complex data is read and written as numpy lays it out: (real, imaginary) float pairs,
interleaved. A length is transformed by a plan, chosen when the routine is generated:
  * mixed radix (Stockham, self-sorting: no bit-reversal pass) when every prime factor is at
    most MAX_RADIX: one pass over the data per factor, radices 8 and 4 first, then 2 and
    the odd primes; each pass is its own function with the radix's butterfly unrolled, its strides
    constant and its pointers noalias, so the innermost loop (along the contiguous stride)
    vectorizes;
  * Bluestein's chirp-z otherwise: a length-n transform as a cyclic convolution of length
    M >= 2n - 1 (M a product of 2, 3 and 5), done by two forward mixed-radix transforms of
    length M; the second one's output read backwards is the inverse transform.
Twiddle factors are tables computed once in double precision (sin/cos of exact multiples of
2 pi / n) when the routine is loaded (its `_init` function), rounded to the dtype. The
inverse transform reads them conjugated, so one table serves both directions.

Real transforms of even length n are a complex transform of length n / 2 on the real data
read as pairs, with a pass that separates the spectra of the even and odd samples (and its
inverse); odd lengths go through the complex transform of length n.

A routine transforms one axis: the last, one line per entry, or another, `lanes`
neighbouring lines per entry transformed together: each part of an entry is a SIMD vector
across the lines, read from and written to numpy's layout in place (a row of the lanes is
contiguous), the passes between in split work buffers (the lanes' real parts, then their
imaginary parts); no line is gathered or scattered. complex_split.py makes a transform over
several axes one routine per axis, so the native pool shares each axis's lines between
threads.

Under jit complex values are real pairs (complex_split.py); its rule for lax.fft makes an
`fft_pairs` equation per axis on the interleaved parts (a complex array of shape S as the real array
S + (2,): numpy's bytes), which is what the routine reads and writes.
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from llvmlite import ir

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.primitive import Primitive
from jaxlite.lax.fft import FftType, complex_dtype, fft_p, real_dtype
from jaxlite.lower import llvm_target
from jaxlite.lower.llvm_helpers import (F32, F64, I32, I64, PTR, VOID, as_i64, call_intrinsic, declare, emit_loop, gep,
                                        load, store)
from jaxlite.lower.native_routines import Routine, define_routine

# Prime factors above this go through Bluestein's algorithm (an odd radix's butterfly costs
# about r^2 / 2 multiply-adds per r points, unrolled in the pass's code).
MAX_RADIX = 31
_FLAGS = ("contract",)
_FLOAT_TYPES = {"float32": F32, "float64": F64}


# ---------------------------------------------------------------- complex arithmetic on (re, im) pairs

def _add(b, x, y):
    return b.fadd(x[0], y[0], flags=_FLAGS), b.fadd(x[1], y[1], flags=_FLAGS)


def _sub(b, x, y):
    return b.fsub(x[0], y[0], flags=_FLAGS), b.fsub(x[1], y[1], flags=_FLAGS)


def multiply(b, x, y, flags=_FLAGS):
    """x y; `flags` () rounds each product as numpy's complex multiply does (no FMA)."""
    re = b.fsub(b.fmul(x[0], y[0], flags=flags), b.fmul(x[1], y[1], flags=flags), flags=flags)
    im = b.fadd(b.fmul(x[0], y[1], flags=flags), b.fmul(x[1], y[0], flags=flags), flags=flags)
    return re, im




def _scale(b, x, factor):
    constant = ir.Constant(x[0].type, factor)
    return b.fmul(x[0], constant, flags=_FLAGS), b.fmul(x[1], constant, flags=_FLAGS)


def _times_i(b, x, sign):
    """sign * i * x."""
    return (x[1], b.fneg(x[0])) if sign < 0 else (b.fneg(x[1]), x[0])


def _conj(b, x):
    return x[0], b.fneg(x[1])


def load_complex(b, pointer, index, element):
    index = b.mul(as_i64(index), as_i64(2))
    return load(b, pointer, index, element), load(b, pointer, b.add(index, as_i64(1)), element)


def store_complex(b, value, pointer, index):
    index = b.mul(as_i64(index), as_i64(2))
    store(b, value[0], pointer, index)
    store(b, value[1], pointer, b.add(index, as_i64(1)))


# A NamedTuple, not a frozen dataclass: defining one of those compiles its methods (~1.4 ms
# of every process's first jit).
class Layout(NamedTuple):
    """Where entry k of a line sits in a buffer, for `lanes` neighbouring lines transformed
    together (each part of an entry a SIMD vector across them): `stride` complex entries
    after entry k - 1. The lanes of an entry are contiguous, as numpy interleaves them (real,
    imaginary, real, ...), or `split`: the lanes' real parts, then their imaginary parts,
    as the work buffers hold them, which vector loads and stores read without shuffles."""
    stride: int = 1
    lanes: int = 1
    split: bool = False

    def load(self, b, pointer, index, element):
        if self.lanes == 1:
            return load_complex(b, pointer, b.mul(as_i64(index), as_i64(self.stride)), element)
        offset = b.mul(as_i64(index), as_i64(2 * self.stride))
        if self.split:
            vector = ir.VectorType(element, self.lanes)
            return (_load_vector(b, pointer, offset, vector),
                    _load_vector(b, pointer, b.add(offset, as_i64(self.lanes)), vector))
        pairs = _load_vector(b, pointer, offset, ir.VectorType(element, 2 * self.lanes))
        return tuple(b.shuffle_vector(pairs, pairs, _mask(range(part, 2 * self.lanes, 2))) for part in (0, 1))

    def store(self, b, value, pointer, index):
        if self.lanes == 1:
            store_complex(b, value, pointer, b.mul(as_i64(index), as_i64(self.stride)))
            return
        offset = b.mul(as_i64(index), as_i64(2 * self.stride))
        if self.split:
            _store_vector(b, value[0], pointer, offset)
            _store_vector(b, value[1], pointer, b.add(offset, as_i64(self.lanes)))
            return
        lanes = range(self.lanes)
        _store_vector(b, b.shuffle_vector(value[0], value[1], _mask(j + part * self.lanes for j in lanes
                                                                     for part in (0, 1))), pointer, offset)


def _work_layout(lanes):
    """Scratch holding `lanes` lines: contiguous, split when there are several."""
    return Layout(lanes, lanes, True) if lanes > 1 else Layout()


def _mask(indices):
    indices = list(indices)
    return ir.Constant(ir.VectorType(I32, len(indices)), indices)


def _load_vector(b, pointer, offset, vector):
    element = vector.element
    return b.load(gep(b, pointer, offset, element), typ=vector, align=_itemsize(element))


def _store_vector(b, value, pointer, offset):
    b.store(value, gep(b, pointer, offset, value.type.element), align=_itemsize(value.type.element))


def _itemsize(element):
    return 4 if element == F32 else 8


def _splat(b, value, lanes):
    """A complex scalar (a twiddle) in every lane."""
    if lanes == 1:
        return value
    vector = ir.VectorType(value[0].type, lanes)
    zeros = _mask([0] * lanes)
    return tuple(b.shuffle_vector(b.insert_element(ir.Constant(vector, None), part, ir.Constant(I32, 0)),
                                  ir.Constant(vector, None), zeros) for part in value)


def _zero(element, lanes):
    return ir.Constant(ir.VectorType(element, lanes) if lanes > 1 else element, 0.0)


def _butterfly(b, a, sign):
    """The length-len(a) DFT of `a` with root exp(sign 2 pi i / len(a)), unrolled."""
    r = len(a)
    if r == 1:
        return a
    if r == 2:
        return [_add(b, a[0], a[1]), _sub(b, a[0], a[1])]
    if r == 4:
        t0, t1 = _add(b, a[0], a[2]), _sub(b, a[0], a[2])
        t2, t3 = _add(b, a[1], a[3]), _times_i(b, _sub(b, a[1], a[3]), sign)
        return [_add(b, t0, t2), _add(b, t1, t3), _sub(b, t0, t2), _sub(b, t1, t3)]
    if r == 8:
        return _radix8_butterfly(b, a, sign)
    return _odd_butterfly(b, a, sign)


def _radix8_butterfly(b, a, sign):
    """Two length-4 DFTs of the even and odd inputs, the odd ones' k-th output turned by
    exp(sign 2 pi i k / 8) (by a multiply only for odd k: the others are 1 and sign i)."""
    even, odd = _butterfly(b, a[0::2], sign), _butterfly(b, a[1::2], sign)
    half = math.sqrt(0.5)
    turned = [odd[0], _scale(b, _add(b, odd[1], _times_i(b, odd[1], sign)), half), _times_i(b, odd[2], sign),
              _scale(b, _sub(b, _times_i(b, odd[3], sign), odd[3]), half)]
    return [_add(b, e, o) for e, o in zip(even, turned)] + [_sub(b, e, o) for e, o in zip(even, turned)]


def _odd_butterfly(b, a, sign):
    """Odd r: outputs k and r - k share the sums and differences of inputs j and r - j, so
    each pair of outputs costs r - 1 real multiply-adds per component."""
    r, half = len(a), len(a) // 2
    sums = [_add(b, a[j], a[r - j]) for j in range(1, half + 1)]
    diffs = [_sub(b, a[j], a[r - j]) for j in range(1, half + 1)]
    out = [None] * r
    total = a[0]
    for t in sums:
        total = _add(b, total, t)
    out[0] = total
    for k in range(1, half + 1):
        u, v = a[0], None
        for j in range(1, half + 1):
            angle = 2 * math.pi * j * k / r
            u = _add(b, u, _scale(b, sums[j - 1], math.cos(angle)))
            term = _scale(b, diffs[j - 1], math.sin(angle))
            v = term if v is None else _add(b, v, term)
        rotated = _times_i(b, v, sign)
        out[k], out[r - k] = _add(b, u, rotated), _sub(b, u, rotated)
    return out


# ---------------------------------------------------------------- plans for one length

def factorize(n, leading_fours=0):
    """n's radices in pass order (4s, 8s, 4s, a 2, the odd primes ascending), or None when a
    prime factor is above MAX_RADIX. Powers of two take as many 8s as leave no 2 behind
    (2^10: 8, 8, 4, 4): fewer passes over the data than 4s (a 512 x 512 block's columns as
    lanes 520 -> 365 us); but along a contiguous line the first passes, of short stride, store
    strided, which costs more at radix 8 (512-point lines 1.3x slower): there `leading_fours`
    4s come first (2^10: 4, 4, 8, 8; 1.63 -> 1.56 us, 2^16 184 -> 148 us)."""
    twos = (n & -n).bit_length() - 1
    fours = min(leading_fours, twos // 2)
    eights, rest = divmod(twos - 2 * fours, 3)
    if rest == 1 and eights:
        eights, rest = eights - 1, 4
    radices = [4] * fours + [8] * eights + [4] * (rest // 2) + [2] * (rest % 2)
    n >>= twos
    p = 3
    while n > 1 and p <= MAX_RADIX:
        while n % p == 0:
            radices.append(p)
            n //= p
        p += 2
    return radices if n == 1 else None


def good_size(n):
    """The smallest product of 2s, 3s and 5s that is at least n."""
    best = 1 << max(0, (n - 1).bit_length())
    f5 = 1
    while f5 < best:
        f35 = f5
        while f35 < best:
            f = f35
            while f < n:
                f *= 2
            best = min(best, f)
            f35 *= 3
        f5 *= 5
    return best


def make_plan(module, element, n, lanes=1):
    """The plan of length n for `lanes` lines at once."""
    if factorize(n) is None:
        return _Bluestein(module, element, n, lanes)
    return _MixedRadix(module, element, n, lanes)


class _Stage(NamedTuple):
    radix: int
    m: int          # the sub-length after this pass: length = radix * m
    stride: int     # s: the product of the radices before
    offset: int     # where its twiddles start in the table (complex entries)


class _MixedRadix:
    """Stockham passes: pass (r, m, s) maps x to y with, for p < m and q < s,
    y[q + s (r p + k)] = w^(p k) sum_j x[q + s (p + j m)] exp(sign 2 pi i j k / r),
    w = exp(sign 2 pi i / (r m)): the twiddles w^(p k), k = 1..r-1, from complex entry `offset` of
    the table (_twiddle_parts)."""

    def __init__(self, module, element, n, lanes=1):
        self.module, self.element, self.n = module, element, n
        self.stages, length, stride, offset = [], n, 1, 0
        for radix in factorize(n, leading_fours=0 if lanes > 1 else 2):
            m = length // radix
            self.stages.append(_Stage(radix, m, stride, offset))
            offset += m * (radix - 1) if m > 1 else 0
            length, stride = m, stride * radix
        self.table = _global_table(module, element, max(offset, 1), f"twiddles_{n}")
        self.functions = {}

    def work_complex(self, lanes=1):
        """Complex entries of scratch `apply` needs for `lanes` lines at once."""
        if len(self.stages) <= 1:
            return 0
        return self.n if lanes == 1 else 2 * self.n * lanes

    def apply(self, b, src, src_layout, dst, dst_layout, work, sign, scale=1.0):
        """dst = the transform of src (of dst_layout.lanes lines at once); src is only read.
        Intermediates alternate between two buffers, ending in dst: one line's between dst and
        work; several lines' between two halves of work, whose split layout costs no shuffles
        (only the first pass reads interleaved entries, only the last writes them)."""
        element, lanes = self.element, dst_layout.lanes
        if not self.stages:
            dst_layout.store(b, _scaled(b, src_layout.load(b, src, 0, element), scale), dst, 0)
            return
        if lanes == 1:
            temporaries = [(dst, dst_layout), (work, Layout())]
        else:
            temporaries = [(work, _work_layout(lanes)), (gep(b, work, 2 * self.n * lanes, element), _work_layout(lanes))]
        count = len(self.stages)
        buffers = [(src, src_layout)] + [(dst, dst_layout) if j == 0 else temporaries[j % 2]
                                         for j in reversed(range(count))]
        for k in range(count):
            (source, s_in), (target, s_out) = buffers[k], buffers[k + 1]
            function = self._stage_function(k, s_in, s_out, sign, scale if k == count - 1 else 1.0)
            b.call(function, [source, target])

    def _stage_function(self, k, s_in, s_out, sign, scale):
        key = (k, s_in, s_out, sign, scale)
        if key not in self.functions:
            self.functions[key] = self._define_stage(self.stages[k], s_in, s_out, sign, scale)
        return self.functions[key]

    def _define_stage(self, stage, s_in, s_out, sign, scale):
        name = self.module.get_unique_name(f"fft{self.n}_pass")
        function = ir.Function(self.module, ir.FunctionType(VOID, [PTR, PTR]), name)
        function.linkage = "internal"
        for arg in function.args:
            arg.add_attribute("noalias")
        llvm_target.add_function_attributes(function)
        b = ir.IRBuilder(function.append_basic_block("entry"))
        src, dst = function.args
        r, m, s, element = stage.radix, stage.m, stage.stride, self.element

        def each_p(p):
            twiddles = [_splat(b, self._twiddle(b, stage, p, k, sign), s_out.lanes) for k in range(1, r)] if m > 1 else []

            def each_q(q):
                a = [s_in.load(b, src, b.add(q, b.mul(as_i64(s), b.add(p, as_i64(j * m)))), element) for j in range(r)]
                out = _butterfly(b, a, sign)
                for k in range(r):
                    value = multiply(b, out[k], twiddles[k - 1]) if k and twiddles else out[k]
                    index = b.add(q, b.mul(as_i64(s), b.add(b.mul(p, as_i64(r)), as_i64(k))))
                    s_out.store(b, _scaled(b, value, scale), dst, index)
            _loop_or_once(b, s, each_q, "q")
        _loop_or_once(b, m, each_p, "p")
        b.ret_void()
        return function

    def _twiddle(self, b, stage, p, k, sign):
        w = tuple(load(b, self.table, index, self.element) for index in self._twiddle_parts(b, stage, p, k))
        return w if sign < 0 else _conj(b, w)

    @staticmethod
    def _twiddle_parts(b, stage, p, k):
        """Where the parts of twiddle (p, k) sit (in floats): each k's real parts over p, then
        its imaginary parts, so a pass vectorized along p loads them without shuffles."""
        start = b.add(b.mul(b.sub(as_i64(k), as_i64(1)), as_i64(2 * stage.m)), p)
        start = b.add(start, as_i64(2 * stage.offset))
        return start, b.add(start, as_i64(stage.m))

    def emit_init(self, b):
        """Fill the twiddle table: entry (p, k) of a pass is exp(-2 pi i (p k mod rm) / (rm))."""
        for stage in self.stages:
            if stage.m == 1:
                continue
            length = stage.radix * stage.m

            def each_p(p, stage=stage, length=length):
                def each_k(k):
                    turns = b.urem(b.mul(p, k), as_i64(length))
                    root = _unit_root(b, turns, length, -1, self.element)
                    for part, index in zip(root, self._twiddle_parts(b, stage, p, k)):
                        store(b, part, self.table, index)
                emit_loop(b, 1, stage.radix, each_k, name="k")
            emit_loop(b, 0, stage.m, each_p, name="p")


class _Bluestein:
    """Length n as a cyclic convolution of length M: with w_k = exp(sign pi i k^2 / n),
    X_k = w_k sum_j (x_j w_j) conj(w_{k-j}). The convolution is FFT^-1(FFT(a) B) with
    B = FFT(conj(w) wrapped) / M precomputed per direction; FFT^-1(C)_k = FFT(C)_{-k} / M,
    so both transforms of length M are forward ones."""

    def __init__(self, module, element, n, lanes=1):
        self.module, self.element, self.n = module, element, n
        self.size = good_size(2 * n - 1)
        self.inner = _MixedRadix(module, element, self.size, lanes)
        self.chirp = _global_table(module, element, n, f"chirp_{n}")
        self.spectra = {sign: _global_table(module, element, self.size, f"chirp_spectrum_{n}_{sign}")
                        for sign in (-1, 1)}

    def work_complex(self, lanes=1):
        return 2 * self.size * lanes + self.inner.work_complex(lanes)

    def apply(self, b, src, src_layout, dst, dst_layout, work, sign, scale=1.0):
        size, element, lanes = self.size, self.element, dst_layout.lanes
        layout = _work_layout(lanes)
        a, spectrum = work, gep(b, work, 2 * size * lanes, element)
        inner_work = gep(b, work, 4 * size * lanes, element)

        def chirped(k):
            value = multiply(b, src_layout.load(b, src, k, element), _splat(b, self._chirp(b, k, sign), lanes))
            layout.store(b, value, a, k)
        emit_loop(b, 0, self.n, chirped, name="chirp")
        zero = _zero(element, lanes)
        emit_loop(b, self.n, size, lambda k: layout.store(b, (zero, zero), a, k), name="pad")
        self.inner.apply(b, a, layout, spectrum, layout, inner_work, -1)

        def product(k):
            weight = _splat(b, load_complex(b, self.spectra[sign], k, element), lanes)
            layout.store(b, multiply(b, layout.load(b, spectrum, k, element), weight), spectrum, k)
        emit_loop(b, 0, size, product, name="product")
        self.inner.apply(b, spectrum, layout, a, layout, inner_work, -1)

        def unchirped(k):
            backwards = b.urem(b.sub(as_i64(size), k), as_i64(size))
            value = multiply(b, layout.load(b, a, backwards, element), _splat(b, self._chirp(b, k, sign), lanes))
            dst_layout.store(b, _scaled(b, value, scale), dst, k)
        emit_loop(b, 0, self.n, unchirped, name="unchirp")

    def _chirp(self, b, k, sign):
        w = load_complex(b, self.chirp, k, self.element)
        return w if sign < 0 else _conj(b, w)

    def emit_init(self, b):
        """The chirp table (forward sign), then each direction's spectrum, in malloc'd scratch."""
        n, size, element = self.n, self.size, self.element
        self.inner.emit_init(b)

        def each_k(k):
            turns = b.urem(b.mul(k, k), as_i64(2 * n))
            store_complex(b, _unit_root(b, turns, 2 * n, -1, element), self.chirp, k)
        emit_loop(b, 0, n, each_k, name="k")
        itemsize = 2 * (4 if element == F32 else 8)
        malloc = declare(b.module, "malloc", PTR, [I64])
        buffer = b.call(malloc, [as_i64(itemsize * (size + self.inner.work_complex() + 1))])
        work = gep(b, buffer, 2 * size, element)
        zero = ir.Constant(element, 0.0)
        for sign in (-1, 1):
            emit_loop(b, 0, size, lambda k: store_complex(b, (zero, zero), buffer, k), name="clear")

            def wrapped(k, sign=sign):
                value = _scaled(b, _conj(b, self._chirp(b, k, sign)), 1.0 / size)
                store_complex(b, value, buffer, k)
                with b.if_then(b.icmp_signed(">", k, as_i64(0))):
                    store_complex(b, value, buffer, b.sub(as_i64(size), k))
            emit_loop(b, 0, n, wrapped, name="wrap")
            self.inner.apply(b, buffer, Layout(), self.spectra[sign], Layout(), work, -1)
        b.call(declare(b.module, "free", VOID, [PTR]), [buffer])


def _scaled(b, value, scale):
    return value if scale == 1.0 else _scale(b, value, scale)


def _loop_or_once(b, count, body, name):
    if count == 1:
        body(as_i64(0))
    else:
        emit_loop(b, 0, count, body, name=name)


def _unit_root(b, turns, length, sign, element):
    """exp(sign 2 pi i turns / length) (turns an i64 value), computed in double."""
    angle = b.fmul(b.uitofp(turns, F64), ir.Constant(F64, sign * 2 * math.pi / length))
    cos = call_intrinsic(b, "llvm.cos.f64", F64, [angle])
    sin = call_intrinsic(b, "llvm.sin.f64", F64, [angle])
    if element == F64:
        return cos, sin
    return b.fptrunc(cos, element), b.fptrunc(sin, element)


def _global_table(module, element, complex_entries, name):
    """A zero-filled table (in .bss: no bytes in the object code) that the _init function fills."""
    array = ir.ArrayType(element, 2 * complex_entries)
    table = ir.GlobalVariable(module, array, module.get_unique_name(name))
    table.linkage = "internal"
    table.initializer = ir.Constant(array, None)
    table.align = 64
    zero = ir.Constant(I32, 0)
    return table.gep([zero, zero])      # (its first element: indexed like any other buffer)


# ---------------------------------------------------------------- the routine

@dataclass(frozen=True)     # a class of its own: compile_routine's cache holds every kind of spec
class FftSpec:
    """lax.fft of `fft_type` ("FFT", "IFFT", "RFFT", "IRFFT") along one axis of `length`, in
    `precision` ("float32"/"float64"), on `batch` blocks of length * inner complex entries:
    `inner` entries between neighbours on the axis (1: the last axis; only FFT and IFFT
    transform others). A routine entry is one line of the last axis, or a group of `lanes`
    neighbouring lines of another, transformed together as SIMD lanes."""
    fft_type: str
    precision: str
    batch: int
    length: int
    inner: int = 1

    def build(self):
        name = "native_fft"
        emitter = _FftEmitter(self)
        entries = self.batch * (self.inner // self.lanes)
        module = define_routine(name, 2, entries, emitter.emit_entry)
        emitter.define_init(name + "_init")
        work = 5 * self.length * max(1.0, math.log2(max(self.length, 2))) * self.lanes
        return Routine(module, name, entries, emitter.scratch_bytes, work, initialize=True)

    @property
    def lanes(self):
        """Lines of a strided axis transformed together: 256 bytes of each entry's row (32
        lanes of complex64, 16 of complex128: two 512-bit vectors a part), or fewer when
        `inner` is not a multiple. Measured on a 512 x 512 block's columns, one thread: 16
        lanes of complex64 took 610 us, 32 lanes 455 us, 64 lanes 500 us (under load);
        n = 4096 on 64 columns: 8 lanes 770 us, 16 740, 32 610."""
        if self.inner == 1:
            return 1
        lanes = 128 // (4 if self.precision == "float32" else 8)
        while self.inner % lanes:
            lanes //= 2
        return lanes


class _FftEmitter:
    def __init__(self, spec):
        self.spec, self.element = spec, _FLOAT_TYPES[spec.precision]
        self.module = None
        self.plans, self.half_turns = {}, {}

    def plan(self, n):
        if n not in self.plans:
            self.plans[n] = make_plan(self.module, self.element, n, self.spec.lanes)
        return self.plans[n]

    def emit_entry(self, b, pointers, scratch, entry):
        if self.module is None:
            self.module = b.module
            self._layout()
        src, dst = pointers
        regions = self._regions(b, scratch)
        kind, n = self.spec.fft_type, self.spec.length
        if self.spec.inner > 1:
            self._lane_group(b, src, dst, entry, regions)
        elif kind == "RFFT":
            self._real_to_complex(b, self._line(b, src, entry, n), self._line(b, dst, entry, 2 * (n // 2 + 1)), regions)
        elif kind == "IRFFT":
            self._complex_to_real(b, self._line(b, src, entry, 2 * (n // 2 + 1)), self._line(b, dst, entry, n), regions)
        else:
            sign, scale = self._direction()
            self.plan(n).apply(b, self._line(b, src, entry, 2 * n), Layout(), self._line(b, dst, entry, 2 * n),
                               Layout(), regions["work"], sign, scale)

    def _line(self, b, pointer, entry, floats):
        return gep(b, pointer, b.mul(entry, as_i64(floats)), self.element)

    def _direction(self):
        """The root's sign and the scale of the transform (the inverse one's 1 / n)."""
        inverse = self.spec.fft_type in ("IFFT", "IRFFT")
        return (1, 1.0 / self.spec.length) if inverse else (-1, 1.0)

    def _layout(self):
        """Scratch regions (in floats): the plan's work, and for a real transform a complex
        line and the complex spectrum of a real line."""
        spec, n = self.spec, self.spec.length
        real = spec.fft_type in ("RFFT", "IRFFT")
        size = n // 2 if real and n % 2 == 0 else n
        line = n if real else 0
        sizes = {"line": line, "half": line, "work": self.plan(size).work_complex(spec.lanes)}
        self.offsets, total = {}, 0
        for key, count in sizes.items():
            self.offsets[key] = total
            total += 2 * count + 16     # (complex entries as floats, 64-byte aligned for float32)
        self.scratch_bytes = _itemsize(self.element) * total

    def _regions(self, b, scratch):
        return {key: gep(b, scratch, offset, self.element) for key, offset in self.offsets.items()}

    def _lane_group(self, b, src, dst, entry, regions):
        """Entry `entry` of a strided axis: `lanes` neighbouring lines, read and written in
        place of numpy's layout (each of the axis's entries a contiguous row of lanes, a
        cache line or two), so every pass's butterflies are vector operations across lines
        and no line is gathered into a buffer or scattered back."""
        n, inner, lanes = self.spec.length, self.spec.inner, self.spec.lanes
        groups = inner // lanes
        block, group = b.udiv(entry, as_i64(groups)), b.urem(entry, as_i64(groups))
        base = b.mul(b.add(b.mul(block, as_i64(n * inner)), b.mul(group, as_i64(lanes))), as_i64(2))
        layout = Layout(inner, lanes)
        sign, scale = self._direction()
        self.plan(n).apply(b, gep(b, src, base, self.element), layout, gep(b, dst, base, self.element), layout,
                           regions["work"], sign, scale)

    def _real_to_complex(self, b, source, target, regions):
        """The RFFT of a real line of length n into n // 2 + 1 complex entries."""
        n, element = self.spec.length, self.element
        spectrum = regions["half"]
        if n % 2:
            zero = ir.Constant(element, 0.0)
            emit_loop(b, 0, n, lambda k: store_complex(b, (load(b, source, k, element), zero),
                                                        regions["line"], k), name="widen")
            self.plan(n).apply(b, regions["line"], Layout(), spectrum, Layout(), regions["work"], -1)
            emit_loop(b, 0, n // 2 + 1, lambda k: store_complex(
                b, load_complex(b, spectrum, k, element), target, k), name="take")
            return
        self.plan(n // 2).apply(b, source, Layout(), spectrum, Layout(), regions["work"], -1)
        self._split_spectra(b, spectrum, target, n)

    def _split_spectra(self, b, z, target, n):
        """X_k = (Z_k + conj Z_{h-k}) / 2 - i/2 exp(-2 pi i k / n) (Z_k - conj Z_{h-k}), h = n / 2."""
        h, element = n // 2, self.element
        table = self._half_turn_table(n)

        def each_k(k):
            zk = load_complex(b, z, b.urem(k, as_i64(h)), element)
            mirror = _conj(b, load_complex(b, z, b.urem(b.sub(as_i64(h), k), as_i64(h)), element))
            rotated = _times_i(b, multiply(b, _sub(b, zk, mirror), load_complex(b, table, k, element)), -1)
            store_complex(b, _scale(b, _add(b, _add(b, zk, mirror), rotated), 0.5), target, k)
        emit_loop(b, 0, h + 1, each_k, name="split")

    def _complex_to_real(self, b, source, target, regions):
        """The IRFFT (scaled 1/n) of a line of n // 2 + 1 complex entries into n reals."""
        n, element = self.spec.length, self.element
        zero = ir.Constant(element, 0.0)
        spectrum = regions["line"]
        if n % 2:
            def hermitian(k):
                value = load_complex(b, source, k, element)
                value = (value[0], b.select(b.icmp_signed("==", k, as_i64(0)), zero, value[1]))
                store_complex(b, value, spectrum, k)
                with b.if_then(b.icmp_signed(">", k, as_i64(0))):
                    store_complex(b, _conj(b, value), spectrum, b.sub(as_i64(n), k))
            emit_loop(b, 0, n // 2 + 1, hermitian, name="hermitian")
            out = regions["half"]
            self.plan(n).apply(b, spectrum, Layout(), out, Layout(), regions["work"], 1, 1.0 / n)
            emit_loop(b, 0, n, lambda k: store(b, load_complex(b, out, k, element)[0], target, k), name="real")
            return
        self._join_spectra(b, source, spectrum, n)
        self.plan(n // 2).apply(b, spectrum, Layout(), target, Layout(), regions["work"], 1, 1.0 / n)

    def _join_spectra(self, b, x, z, n):
        """Z_k = (X_k + conj X_{h-k}) + i exp(2 pi i k / n) (X_k - conj X_{h-k}), the imaginary
        parts of X_0 and X_h ignored (as pocketfft's c2r does)."""
        h, element = n // 2, self.element
        table = self._half_turn_table(n)
        zero = ir.Constant(element, 0.0)

        def read(k):
            value = load_complex(b, x, k, element)
            edge = b.or_(b.icmp_signed("==", k, as_i64(0)), b.icmp_signed("==", k, as_i64(h)))
            return value[0], b.select(edge, zero, value[1])

        def each_k(k):
            xk, mirror = read(k), _conj(b, read(b.sub(as_i64(h), k)))
            w = _conj(b, load_complex(b, table, k, element))
            rotated = _times_i(b, multiply(b, _sub(b, xk, mirror), w), 1)
            store_complex(b, _add(b, _add(b, xk, mirror), rotated), z, k)
        emit_loop(b, 0, h, each_k, name="join")

    def _half_turn_table(self, n):
        """exp(-2 pi i k / n) for k <= n / 2."""
        if n not in self.half_turns:
            self.half_turns[n] = _global_table(self.module, self.element, n // 2 + 1, f"half_turns_{n}")
        return self.half_turns[n]

    def define_init(self, name):
        function = ir.Function(self.module, ir.FunctionType(VOID, []), name)
        b = ir.IRBuilder(function.append_basic_block("entry"))
        for plan in self.plans.values():
            plan.emit_init(b)
        for n, table in self.half_turns.items():
            emit_loop(b, 0, n // 2 + 1, lambda k: store_complex(
                b, _unit_root(b, k, n, -1, self.element), table, k), name="k")
        b.ret_void()


# ---------------------------------------------------------------- the primitive complex_split makes

def _as_complex(x):
    return np.ascontiguousarray(x).view(complex_dtype(x.dtype))[..., 0]


def _as_pairs(z):
    return np.ascontiguousarray(z).view(z.real.dtype).reshape(z.shape + (2,))


def _reads_pairs(fft_type):
    return FftType(fft_type) is not FftType.RFFT


def _writes_pairs(fft_type):
    return FftType(fft_type) is not FftType.IRFFT


def _fft_pairs_impl(x, fft_type, fft_lengths, axis):
    z = _as_complex(x) if _reads_pairs(fft_type) else x
    out = np.moveaxis(fft_p.impl(np.moveaxis(z, axis, -1), fft_type=fft_type, fft_lengths=fft_lengths), -1, axis)
    return _as_pairs(out) if _writes_pairs(fft_type) else out


def _fft_pairs_aval(x, fft_type, fft_lengths, axis):
    shape, dtype = tuple(x.shape), np.dtype(x.dtype)
    if _reads_pairs(fft_type):
        shape, dtype = shape[:-1], complex_dtype(dtype)
    if axis != -1:      # (FFT and IFFT only: the shape stays)
        return ShapedArray(tuple(x.shape), x.dtype)
    out = fft_p.abstract_eval(ShapedArray(shape, dtype), fft_type=fft_type, fft_lengths=fft_lengths)
    if _writes_pairs(fft_type):
        return ShapedArray(tuple(out.shape) + (2,), real_dtype(out.dtype))
    return out


# lax.fft on complex values given as their interleaved real parts (only inside compiled
# programs), along one axis: the last (any transform) or, at `axis` of the complex value,
# another (FFT and IFFT, of the one length fft_lengths holds).
fft_pairs_p = Primitive("fft_pairs")
fft_pairs_p.def_impl(_fft_pairs_impl)
fft_pairs_p.def_abstract_eval(_fft_pairs_aval)


_PRECISIONS = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}


def fft_spec(eqn):
    """The routine of an fft_pairs equation, or None (zero-sized: nothing to transform)."""
    aval = eqn.inputs[0].aval
    precision = _PRECISIONS.get(np.dtype(aval.dtype))
    lengths = tuple(int(n) for n in eqn.params["fft_lengths"])
    shape = tuple(map(int, aval.shape))
    if _reads_pairs(eqn.params["fft_type"]):
        shape = shape[:-1]
    if precision is None or len(lengths) != 1 or 0 in shape or 0 in lengths:
        return None
    axis = len(shape) + eqn.params["axis"]
    return FftSpec(FftType(eqn.params["fft_type"]).name, precision, math.prod(shape[:axis]), lengths[0],
                   math.prod(shape[axis + 1:]))
