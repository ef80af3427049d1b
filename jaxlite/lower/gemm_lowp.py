"""Low-precision GEMMs: bf16 x bf16 -> float32 and int8 x int8 -> int32.

Both reuse gemm.py's generator whole (blocking, packing, edge tiles, threads, epilogues):
only the microkernel's inner product changes. An A or B element of the generated kernel is
a 32-bit word holding a group of consecutive K values -- two bf16 or four int8 -- and one
instruction reduces a group into each accumulator lane:

    vdpbf16ps  acc[j] += a[2j] * b[2j] + a[2j+1] * b[2j+1]          (float32 lanes)
    vpdpbusd   acc[j] += sum over 4 bytes of  u8(a) * s8(b)          (int32 lanes)

A row of A already has its groups side by side; B is repacked once ("prepared", as
weights are in inference) so that word [p, j] holds B[g*p : g*p + g, j], and laid out in
the GEMM's micro-panels (gemm.prepacked_b_shape), which the kernel then reads in place:
with C split by rows, every thread would otherwise pack all of B on every call. vpdpbusd takes
one unsigned operand, so the activations are offset by 128 into u8 and the epilogue takes
back 128 * (column sums of B), which makes the result exactly the s8 x s8 product.

Hosts without AVX512_BF16 / AVX512_VNNI (or `portable=True`) get the same kernel with a
widening multiply-add in place of the instruction; it gives the same int32 results, and
float32 results equal up to the rounding order of the two products of a bf16 pair.
"""
import ctypes
import threading
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from jaxlite.core import dtypes
from jaxlite.lower import gemm, llvm_helpers, llvm_math, llvm_target, native_pool
from jaxlite.lower.gemm import Epilogue, InnerProduct
from jaxlite.lower.llvm_helpers import F32, I8, I16, I32, VOID
from jaxlite.lower.native_call import array_data

_ACTIVATION_OFFSET = 128
_INT8_MAX = 127
# The quantizing/rounding passes are memory-bound. Handed to the native pool (a worker
# starts a unit in ~1 us), a second thread repays itself from ~100K elements on data in
# cache (activations quantized, 1 / 2 threads: 256 x 512 0.027 / 0.020 ms, 512 x 1024
# 0.088 / 0.055; 128 x 256 0.010 / 0.012), and on weights in L3 (784 x 1024 quantized per
# column: 0.16 / 0.10 ms). Running an int8 product's activation and weight passes at once,
# one per thread, gained nothing.
PASS_MIN_ELEMENTS_PER_THREAD = 1 << 16


def _words(emitter, builder, vector):
    return builder.bitcast(vector, ir.VectorType(I32, emitter.blk.lanes))


def _dpbf16ps(emitter, builder, a, b, acc):
    words = ir.VectorType(I32, emitter.blk.lanes)
    # The <16 x i32> operand form is the older signature; LLVM upgrades it to <32 x bfloat>.
    instruction = emitter.intrinsic("llvm.x86.avx512bf16.dpbf16ps.512", emitter.vec, [emitter.vec, words, words])
    return builder.call(instruction, [acc, _words(emitter, builder, a), _words(emitter, builder, b)])


def _bf16_halves(emitter, builder, vector):
    """(high, low) bf16 values of each word, widened to float32 (exact: bf16 is float32's top half)."""
    words = _words(emitter, builder, vector)
    high = builder.and_(words, llvm_helpers.splat(builder, ir.Constant(I32, -0x10000), words.type))
    low = builder.shl(words, llvm_helpers.splat(builder, ir.Constant(I32, 16), words.type))
    return [builder.bitcast(half, emitter.vec) for half in (high, low)]


def _bf16_portable(emitter, builder, a, b, acc):
    # The products are exact in float32, so each FMA rounds only its sum, as vdpbf16ps does.
    for a_half, b_half in zip(_bf16_halves(emitter, builder, a), _bf16_halves(emitter, builder, b)):
        acc = gemm.FMA["float32"].multiply_add(emitter, builder, a_half, b_half, acc)
    return acc


def _vpdpbusd(emitter, builder, a, b, acc):
    instruction = emitter.intrinsic("llvm.x86.avx512.vpdpbusd.512", emitter.vec, [emitter.vec] * 3)
    return builder.call(instruction, [acc, a, b])


def _int8_bytes(builder, words):
    """The four bytes of each word as sign-extended int32 lanes."""
    splat = lambda count: llvm_helpers.splat(builder, ir.Constant(I32, count), words.type)
    return [builder.ashr(builder.shl(words, splat(24 - 8 * j)), splat(24)) for j in range(4)]


def _int8_portable(emitter, builder, a, b, acc):
    for a_byte, b_byte in zip(_int8_bytes(builder, a), _int8_bytes(builder, b)):
        acc = builder.add(acc, builder.mul(a_byte, b_byte))
    return acc


BF16 = InnerProduct("bf16-dpbf16ps", "float32", 2, _dpbf16ps)
BF16_PORTABLE = InnerProduct("bf16-portable", "float32", 2, _bf16_portable)
INT8 = InnerProduct("int8-vpdpbusd", "int32", 4, _vpdpbusd)
INT8_PORTABLE = InnerProduct("int8-portable", "int32", 4, _int8_portable)

# acc - 128 * column sums of B: undoes the u8 offset of the activations.
_UNDO_OFFSET = Epilogue("undo_activation_offset", ("columns",),
                        lambda ctx, acc: ctx.builder.sub(acc, ctx.load(0)))


def _dequantizing(relu):
    """float32(acc) * (row_scale * column_scale) + bias (then relu: precision.int8's order of
    operations, so jit and eager agree to the bit), stored as float32 bits in
    the int32 C: the epilogue runs once, after the last K slice has summed the int32s.
    The float arguments arrive as int32 views, since every kernel argument has C's type."""
    def apply(ctx, acc):
        builder = ctx.builder
        floats = ir.VectorType(F32, acc.type.count)
        argument = lambda index: builder.bitcast(ctx.load(index), floats)
        value = builder.fmul(builder.sitofp(acc, floats), builder.fmul(argument(0), argument(1)))
        value = builder.fadd(value, argument(2))
        if relu:
            value = gemm.RELU.apply(ctx, value)
        return builder.bitcast(value, acc.type)
    return Epilogue("dequantize" + ("+relu" if relu else ""), ("rows", "columns", "columns"), apply)


# Arguments: row scales (m,), column scales (n,), bias (n,), all float32; the output is float32.
DEQUANTIZE = _dequantizing(relu=False)
DEQUANTIZE_RELU = _dequantizing(relu=True)


def _store_rounded_to_bf16(ctx, acc):
    """Also store the result rounded to bf16 (to nearest even, as convert_element_type)
    into the argument, a bf16 array shaped like C: a layer's output becomes the next
    product's A operand while the tile is in registers, instead of in a conversion pass
    that reads C back."""
    ctx.store_to_tile(0, llvm_math.emit_f32_to_bf16_bits(ctx.builder, acc))
    return acc


# Argument: the bf16 output (m, n). C then only carries the partial sums between K slices.
ROUND_TO_BF16 = Epilogue("round_bf16", ("tile",), _store_rounded_to_bf16)


def _rounded_pair(emitter, builder, values):
    """The word(s) of two float32 K values (or rows of them) rounded to bf16: the first low."""
    vector = isinstance(values[0].type, ir.VectorType)
    words = ir.VectorType(I32, emitter.blk.lanes) if vector else I32
    low, high = (builder.zext(llvm_math.emit_f32_to_bf16_bits(builder, value), words) for value in values)
    sixteen = llvm_helpers.splat(builder, ir.Constant(I32, 16), words) if vector else ir.Constant(I32, 16)
    return builder.bitcast(builder.or_(low, builder.shl(high, sixteen)), emitter.vec if vector else emitter.elem)


# float32 operands (weights passed as arguments, activations) rounded to bf16 by the GEMM's
# packing, block by block between the microkernel calls, instead of by a pass of their own
# (round_b, a conversion kernel): they then stream from memory while the GEMM computes, as a
# float32 GEMM's do, with no rounded copy written and read back.
BF16_FROM_FLOAT32 = gemm.OperandSource("bf16-from-float32", 2, _rounded_pair)


def has_native(kind):
    """Whether the host has the instruction for `kind` ("bf16" or "int8") at 512 bits."""
    feature = {"bf16": "avx512bf16", "int8": "avx512vnni"}[kind]
    return llvm_target.vector_width_bits() >= 512 and llvm_target.host_has(feature)


# ----------------------------------------------------------------------------- Python API

@dataclass(frozen=True)
class PreparedB:
    """B repacked into words of `group` K values, (ceil(k / group), n), laid out in the GEMM's
    micro-panels (gemm.prepacked_b_shape); plus int8's correction."""
    words: np.ndarray
    column_correction: np.ndarray | None


@dataclass(frozen=True)
class NativePass:
    """A compiled pass for callers outside Python: the function at `address` is called as
    fn(*pointers, *sizes, start, stop) over slices [start, stop) of range(count), which are
    independent (any split over threads gives the same result). `pointers` names its array
    arguments in order; `sizes` are its i64 arguments before start and stop. `function` is
    the ctypes function (it keeps the machine code alive). `elements` is what it reads,
    which decides how many threads repay themselves (pass_units)."""
    function: object
    pointers: tuple
    sizes: tuple
    count: int
    elements: int

    @property
    def address(self):
        return self.function.address


class LowPrecisionGemm:
    """C = A @ B for narrow A (m x k) and B (k x n), from a compiled GemmKernel over words."""

    def __init__(self, m, n, k, product, narrow_dtype, epilogue=None, bf16_output=False, float32_a=False,
                 float32_b=False):
        self.m, self.n, self.k = m, n, k
        self.product, self.narrow_dtype = product, np.dtype(narrow_dtype)
        self.k_words = -(-k // product.group)
        self.offsets_activations = product is INT8
        self.dequantizes = epilogue in (DEQUANTIZE, DEQUANTIZE_RELU)
        self.bf16_output = bf16_output
        if self.offsets_activations:
            epilogue = gemm.chain(_UNDO_OFFSET, *([epilogue] if epilogue else []))
        if bf16_output:
            epilogue = gemm.chain(*([epilogue] if epilogue else []), ROUND_TO_BF16)
        self._kept = threading.local()     # the bf16-output variant's C, per calling thread
        self.float32_a, self.float32_b = float32_a, float32_b
        if (float32_a or float32_b) and (not dtypes.is_bfloat16(narrow_dtype) or k % 2):
            raise ValueError("float32 operands (rounded while packed) are for bf16 products of even k")
        self.kernel = gemm.compile_gemm(m, n, self.k_words, epilogue=epilogue, product=product,
                                        vector_bits=512 if product in (BF16, INT8) else None, packed_b=not float32_b,
                                        a_source=BF16_FROM_FLOAT32 if float32_a else None,
                                        b_source=BF16_FROM_FLOAT32 if float32_b else None)
        self.panel_width = self.kernel.blocking.nr
        self.panels_shape = gemm.prepacked_b_shape(self.kernel.blocking, self.k_words, n)
        # What run_words takes as B's words: float32 B as stored, or prepared panels.
        self.b_shape = (k, n) if float32_b else self.panels_shape

    def asm(self):
        return self.kernel.asm()

    def _operand(self, array, shape):
        array = np.ascontiguousarray(array, self.narrow_dtype)
        if array.shape != shape:
            raise ValueError(f"expected an operand of shape {shape}, got {array.shape}")
        return array

    def a_padder(self):
        """The native pass that makes A's words from a narrow A (m x k), for callers that run
        it themselves; None for float32_a (A is read as given). Called as
        `void pad_rows(ptr a, ptr words, i64 row_bytes, i64 padded_row_bytes, i64 xor_byte,
        i64 row_start, i64 row_end)` (see _compile_row_padder) over rows range(m)."""
        if self.float32_a:
            return None
        itemsize = self.narrow_dtype.itemsize
        sizes = (self.k * itemsize, 4 * self.k_words, _ACTIVATION_OFFSET if self.offsets_activations else 0)
        return NativePass(_compile_row_padder(), ("a", "words"), sizes, self.m, self.m * self.k)

    def b_packer(self):
        """The native pass that makes a PreparedB from a narrow B (k x n), for callers that run
        it themselves. bf16: `void pack_bf16(ptr b, ptr words, i64 k, i64 n, i64 word_row_start,
        i64 word_row_end)` over word rows range(k_words); int8: `void pack_int8(ptr b, ptr words,
        ptr correction, i64 tile_start, i64 tile_end)` over column tiles (k, n baked in)."""
        if dtypes.is_bfloat16(self.narrow_dtype):
            packer = _compile_bf16_packer(self.panel_width, "bfloat16")
            return NativePass(packer, ("b", "words"), (self.k, self.n), self.k_words, self.k * self.n)
        packer = _compile_int8_packer(self.k, self.n, self.panel_width)
        return NativePass(packer, ("b", "words", "correction"), (), self.panels_shape[0], self.k * self.n)

    def _a_quantizer(self):
        """float32 activations x (m x k) quantized per row into A's words and row scales."""
        return NativePass(_compile_quantizer(self.offsets_activations), ("x", "words", "scales"),
                          (self.k, 4 * self.k_words), self.m, self.m * self.k)

    def _b_quantizer(self):
        """float32 weights w (k x n) quantized per column into B's panels, column scales and
        int8's correction."""
        return NativePass(_compile_weight_quantizer(self.k, self.n, self.panel_width),
                          ("w", "words", "scales", "correction"), (), self.panels_shape[0], self.k * self.n)

    def _b_rounder(self):
        """float32 weights w (k x n) rounded to bf16 into B's panels."""
        return NativePass(_compile_bf16_packer(self.panel_width, "float32"), ("w", "words"), (self.k, self.n),
                          self.k_words, self.k * self.n)

    def prepare_b(self, b, threads=1):
        """Repack B (k x n) once: word [p, j] holds B[group*p : group*(p+1), j]. One compiled
        pass (b_packer), split over up to `threads` threads."""
        b = self._operand(b, (self.k, self.n))
        words = np.empty(self.panels_shape, self.product.dtype)
        correction = np.empty(self.n, np.int32) if self.narrow_dtype == np.int8 else None
        _run_pass(self.b_packer(), {"b": b, "words": words, "correction": correction}, threads)
        return PreparedB(words, correction if self.offsets_activations else None)

    def _a_read_as_stored(self):
        """Whether A's words are the narrow A itself: no offset, and k in whole groups."""
        return not self.offsets_activations and self.k % self.product.group == 0

    def prepare_a(self, a, threads=1):
        """A's words for a narrow A (m x k): K padded to whole groups, int8 offset into u8. One
        compiled pass (a_padder), split over up to `threads` threads; bf16 of even k is read
        in place."""
        if self.float32_a:
            return np.ascontiguousarray(a, np.float32)
        a = self._operand(a, (self.m, self.k))
        if self._a_read_as_stored():
            return a.view(self.product.dtype)
        words = np.empty((self.m, self.k_words), self.product.dtype)
        _run_pass(self.a_padder(), {"a": a, "words": words}, threads)
        return words

    def quantize_a(self, x, threads=1):
        """Quantize float32 activations x (m x k) per row, as precision.quantize does, straight
        into A's words: returns (words, row scales). One compiled pass over x, its rows
        split over up to `threads` threads."""
        x = np.ascontiguousarray(x, np.float32)
        if x.shape != (self.m, self.k) or self.narrow_dtype != np.int8:
            raise ValueError(f"quantize_a takes float32 activations of shape {(self.m, self.k)} "
                             f"for an int8 GEMM, got {x.shape}")
        words = np.empty((self.m, self.k_words), self.product.dtype)
        scales = np.empty(self.m, np.float32)
        _run_pass(self._a_quantizer(), {"x": x, "words": words, "scales": scales}, threads)
        return words, scales

    def quantize_b(self, w, threads=1):
        """Quantize float32 weights w (k x n) per column, as precision.quantize does, straight
        into a PreparedB: returns (PreparedB, column scales). One compiled pass over w (plus
        one for the scales), its columns split over up to `threads` threads."""
        w = np.ascontiguousarray(w, np.float32)
        if w.shape != (self.k, self.n) or self.narrow_dtype != np.int8:
            raise ValueError(f"quantize_b takes float32 weights of shape {(self.k, self.n)} "
                             f"for an int8 GEMM, got {w.shape}")
        words = np.empty(self.panels_shape, self.product.dtype)
        scales, correction = np.empty(self.n, np.float32), np.empty(self.n, np.int32)
        _run_pass(self._b_quantizer(), {"w": w, "words": words, "scales": scales, "correction": correction}, threads)
        return PreparedB(words, correction if self.offsets_activations else None), scales

    def round_b(self, w, threads=1):
        """Round float32 weights w (k x n) to bf16 (to nearest even, as convert_element_type
        does) straight into a PreparedB: one compiled pass over w, its word rows split over
        up to `threads` threads."""
        w = np.ascontiguousarray(w, np.float32)
        if w.shape != (self.k, self.n) or not dtypes.is_bfloat16(self.narrow_dtype):
            raise ValueError(f"round_b takes float32 weights of shape {(self.k, self.n)} "
                             f"for a bf16 GEMM, got {w.shape}")
        words = np.empty(self.panels_shape, self.product.dtype)
        _run_pass(self._b_rounder(), {"w": w, "words": words}, threads)
        return PreparedB(words, None)

    def run(self, a, b, *extra, out=None, threads=1):
        """A @ B (then the epilogue) for a narrow A and a PreparedB (or a narrow B)."""
        return self.run_words(self.prepare_a(a, threads), b, *extra, out=out, threads=threads)

    def run_words(self, a_words, b, *extra, out=None, threads=1):
        """Like run, for A already in words (from prepare_a or quantize_a). With float32_b, B
        is the float32 (k x n) weights."""
        if self.float32_b:
            b = PreparedB(np.ascontiguousarray(b, np.float32), None)
        elif not isinstance(b, PreparedB):
            b = self.prepare_b(b, threads)
        correction = () if b.column_correction is None else (b.column_correction,)
        if self.bf16_output:
            return self._run_rounding(a_words, b, extra, out, threads)
        if self.dequantizes:
            extra = [np.ascontiguousarray(e, np.float32).view(self.product.dtype) for e in extra]
            out = np.empty((self.m, self.n), np.float32) if out is None else out
            self.kernel.run(a_words, b.words, *correction, *extra, out=out.view(self.product.dtype),
                            threads=threads)
            return out
        return self.kernel.run(a_words, b.words, *correction, *extra, out=out, threads=threads)

    def __call__(self, a, b, *extra, out=None):
        return self.run(a, b, *extra, out=out)

    def _run_rounding(self, a_words, b, extra, out, threads):
        """The bf16 output variant: C is a float32 scratch array kept per calling thread,
        the result `out` (bf16, m x n) is written by the epilogue."""
        out = np.empty((self.m, self.n), dtypes.bfloat16) if out is None else out
        gemm._check_array("out", out, dtypes.bfloat16, (self.m, self.n))
        gemm._check_array("a", a_words, self.product.dtype, (self.m, self.k if self.float32_a else self.k_words))
        gemm._check_array("b", b.words, self.product.dtype, self.b_shape)
        scratch = getattr(self._kept, "c", None)
        if scratch is None:
            scratch = self._kept.c = np.empty((self.m, self.n), np.float32)
        extra = [np.ascontiguousarray(e, np.float32) for e in extra]
        pointers = [array_data(x) for x in (a_words, b.words, scratch, *extra, out)]
        self.kernel.run_pointers(pointers, self.kernel.model_plan(threads))
        return out

    # -- as jobs of a native_pool.JobList: how a jitted program runs the product, operands
    # and scratch given as context words (see gemm_calls.LowPrecisionCall)

    def quantize_a_job(self, jobs, x, threads):
        """Quantize float32 activations x (m x k) per row into A's words: (words, row scales)."""
        words, scales = jobs.scratch(4 * self.m * self.k_words), jobs.scratch(4 * self.m)
        _add_pass(jobs, self._a_quantizer(), {"x": x, "words": words, "scales": scales}, threads)
        return words, scales

    def quantize_b_job(self, jobs, w, threads):
        """Quantize float32 weights w (k x n) per column into B's panels: (panels, correction,
        column scales)."""
        panels, correction, scales = self._panels(jobs), jobs.scratch(4 * self.n), jobs.scratch(4 * self.n)
        arrays = {"w": w, "words": panels, "scales": scales, "correction": correction}
        _add_pass(jobs, self._b_quantizer(), arrays, threads)
        return panels, correction, scales

    def round_b_job(self, jobs, w, threads):
        """Round float32 weights w (k x n) to bf16 into B's panels: the panels."""
        panels = self._panels(jobs)
        _add_pass(jobs, self._b_rounder(), {"w": w, "words": panels}, threads)
        return panels

    def pad_a_job(self, jobs, a, threads):
        """Narrow A (m x k) as A's words: as stored, or padded to whole groups (int8: offset
        by 128) into scratch (a_padder)."""
        if self._a_read_as_stored():
            return a
        words = jobs.scratch(4 * self.m * self.k_words)
        _add_pass(jobs, self.a_padder(), {"a": a, "words": words}, threads)
        return words

    def pack_b_job(self, jobs, b, threads):
        """Narrow B (k x n) packed into B's panels (b_packer): (panels, int8's correction or None)."""
        arrays = {"b": b, "words": self._panels(jobs), "correction": jobs.scratch(4 * self.n)}
        _add_pass(jobs, self.b_packer(), arrays, threads)
        return arrays["words"], arrays["correction"] if self.offsets_activations else None

    def gemm_job(self, jobs, a, b, correction, extra, out, threads):
        """The GEMM's units on A's words `a`, B's words or panels `b` (plus int8's correction)
        and the epilogue's `extra` arguments, into `out`."""
        kernel = self.kernel
        plan = kernel.model_plan(threads)
        units, table = kernel.plan_units(plan)
        extra = ([correction] if self.offsets_activations else []) + list(extra)
        c = out
        if self.bf16_output:        # C carries the partial sums, the epilogue writes `out`
            c, extra = jobs.scratch(4 * self.m * self.n), extra + [out]
        # A unit may run in any slot of the pool (not only the first len(units)).
        slots = native_pool.slots() if len(units) > 1 else 1
        workspace = jobs.scratch(slots * kernel.workspace_bytes)
        jobs.add(kernel.native.unit_task, len(units),
                 [kernel.address, a, b, c, workspace, kernel.workspace_bytes, ctypes.addressof(table), *extra])
        return plan

    def _panels(self, jobs):
        return jobs.scratch(4 * int(np.prod(self.panels_shape)))


def _quantizer_module(name, pointers, sizes=0):
    """(module, function, builder, call) for
    `void name(ptr * pointers, i64 * sizes, i64 start, i64 stop)`;
    call(name, *args) calls the float32 LLVM intrinsic llvm.<name>.F32."""
    module = ir.Module(name=name)
    arguments = [llvm_helpers.PTR] * pointers + [llvm_helpers.I64] * (sizes + 2)
    function = ir.Function(module, ir.FunctionType(VOID, arguments), name)
    for pointer in function.args[:pointers]:
        # Inputs and outputs never overlap: without this, LLVM checks at every entry to a
        # vectorized loop, which costs as much as a panel row's 48 words.
        pointer.add_attribute("noalias")
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    call = lambda intrinsic, *args: builder.call(
        llvm_helpers.declare(module, f"llvm.{intrinsic}.F32", F32, [F32] * len(args)), list(args), fastmath=("nnan", "nsz"))
    return module, function, builder, call


def _scale_of(builder, call, amax):
    """max(amax, 127 * tiny) / 127, as precision.quantize computes it."""
    floor = float(np.float32(_INT8_MAX * np.finfo(np.float32).tiny))
    return builder.fdiv(call("maxnum", amax, ir.Constant(F32, floor)), ir.Constant(F32, float(_INT8_MAX)))


def _quantized(builder, call, value, scale):
    """clamp(rint(value / scale), -127, 127) as an int32."""
    value = call("rint", builder.fdiv(value, scale))
    value = call("minnum", call("maxnum", value, ir.Constant(F32, -_INT8_MAX)), ir.Constant(F32, _INT8_MAX))
    return builder.fptosi(value, I32)


def _compiled_quantizer(module, name, pointers, sizes=0):
    compiled = llvm_target.compile_ir(llvm_target.add_function_attributes(module))
    signature = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * pointers, *[ctypes.c_int64] * (sizes + 2))
    quantizer = signature(compiled.address(name))
    quantizer.compiled = compiled   # the machine code lives as long as the function
    quantizer.address = compiled.address(name)
    return quantizer


def _add_pass(jobs, pass_, arrays, threads):
    """A NativePass as a job of a JobList, its pointers from `arrays` (context words by name)."""
    jobs.add_ranged(pass_.function, [arrays[name] for name in pass_.pointers] + list(pass_.sizes), pass_.count,
                    pass_units(pass_.elements, threads))


def _run_pass(pass_, arrays, threads):
    """Run a NativePass on numpy `arrays` (by name), its slices split over up to `threads`
    threads (pass_units)."""
    words = tuple(array_data(arrays[name]) for name in pass_.pointers) + pass_.sizes
    units = pass_units(pass_.elements, threads)
    if units == 1:
        pass_.function(*words, 0, pass_.count)
        return
    native_pool.RangedContext(pass_.address, words, pass_.count, units).run()


def pass_units(elements, threads):
    """Slices (threads) for a pass over `elements`: each gets PASS_MIN_ELEMENTS_PER_THREAD at least."""
    return max(1, min(threads, elements // PASS_MIN_ELEMENTS_PER_THREAD))


@llvm_target.compile_once
def _compile_quantizer(offset):
    """void(float* x, i8* q, float* scales, i64 k, i64 k_padded, i64 row_start, i64 row_end):
    per row of x (k wide), scale = max(max|x|, 127 * tiny) / 127 and
    q = clamp(rint(x / scale), -127, 127), xor 128 when `offset`, zero(-offset)-padded to
    k_padded. Sizes are arguments, so one quantizer serves every shape, as the GEMM kernels
    do. Scalar loops: LLVM vectorizes them."""
    module, function, builder, call = _quantizer_module("quantize", 3, sizes=2)
    x, q, scales, k, k_padded, row_start, row_end = function.args
    fill = ir.Constant(I8, _ACTIVATION_OFFSET if offset else 0)

    def row(r):
        x_row = builder.gep(x, [builder.mul(r, k)], source_etype=F32)
        q_row = builder.gep(q, [builder.mul(r, k_padded)], source_etype=I8)
        element = lambda j: builder.load(builder.gep(x_row, [j], source_etype=F32), typ=F32)
        (amax,) = llvm_helpers.emit_loop(builder, 0, k, lambda j, m: [call("maxnum", m, call("fabs", element(j)))],
                                 carried=[ir.Constant(F32, 0.0)], name="j")
        scale = _scale_of(builder, call, amax)
        builder.store(scale, builder.gep(scales, [r], source_etype=F32))

        def quantize(j):
            byte = builder.xor(builder.trunc(_quantized(builder, call, element(j), scale), I8), fill)
            builder.store(byte, builder.gep(q_row, [j], source_etype=I8))
        llvm_helpers.emit_loop(builder, 0, k, quantize, name="jq")
        def pad(j):
            builder.store(fill, builder.gep(q_row, [j], source_etype=I8))
        llvm_helpers.emit_loop(builder, k, k_padded, pad, name="jp")
    llvm_helpers.emit_loop(builder, row_start, row_end, row, name="r")
    builder.ret_void()
    return _compiled_quantizer(module, "quantize", 3, sizes=2)


def _tile_columns(builder, n, panel_width, tile_start, tile_end):
    """The columns [start, stop) of w in the column tiles [tile_start, tile_end)."""
    start = builder.mul(tile_start, llvm_helpers.as_i64(panel_width))
    stop = llvm_helpers.smin(builder, builder.mul(tile_end, llvm_helpers.as_i64(panel_width)), llvm_helpers.as_i64(n))
    return start, stop


def _emit_int8_panels(builder, k, n, panel_width, words, correction, tile_start, tile_end, value):
    """Pack the int8 values value(i, j) (an i32 in [-128, 127]) of the columns in the tiles
    [tile_start, tile_end) four K values to a word into their micro-panels (as prepare_b lays
    them out: zero-padded K, zero columns past n) and set correction[j] = 128 * their sum.
    Loops run down the rows with the columns innermost, so LLVM vectorizes across columns."""
    correction_at = lambda j: builder.gep(correction, [j], source_etype=I32)
    start, stop = _tile_columns(builder, n, panel_width, tile_start, tile_end)
    llvm_helpers.emit_loop(builder, start, stop, _storing(builder, ir.Constant(I32, 0), correction_at), name="j0")
    word_at = _panel_word_address(builder, words, -(-k // 4), panel_width)

    def pack_word(tile, p, rows):
        word_of_column = word_at(tile, p)

        def column(j):
            word, total = ir.Constant(I32, 0), ir.Constant(I32, 0)
            for g in range(rows):
                q = value(builder.add(builder.mul(p, llvm_helpers.as_i64(4)), llvm_helpers.as_i64(g)), j)
                byte = builder.and_(q, ir.Constant(I32, 0xFF))
                word = builder.or_(word, builder.shl(byte, ir.Constant(I32, 8 * g)))
                total = builder.add(total, q)
            builder.store(word, word_of_column(j))
            offset_sum = builder.mul(total, ir.Constant(I32, _ACTIVATION_OFFSET))
            builder.store(builder.add(builder.load(correction_at(j), typ=I32), offset_sum), correction_at(j))
        _emit_panel_columns(builder, builder.mul(tile, llvm_helpers.as_i64(panel_width)), panel_width, llvm_helpers.as_i64(n),
                            column, _storing(builder, ir.Constant(I32, 0), word_of_column))

    def pack_tile(tile):
        llvm_helpers.emit_loop(builder, 0, k // 4, lambda p: pack_word(tile, p, 4), name="p")
        if k % 4:
            pack_word(tile, llvm_helpers.as_i64(k // 4), k % 4)
    llvm_helpers.emit_loop(builder, tile_start, tile_end, pack_tile, name="t")


def _panel_word_address(builder, words, k_words, panel_width):
    """word_at(tile, p)(j): the address of word [p, j] (j a column of w) in the micro-panels."""
    width = llvm_helpers.as_i64(panel_width)

    def word_at(tile, p):
        # The word of column j goes to panel_row + j: row p of the tile's panel.
        panel_row = builder.sub(builder.mul(builder.add(builder.mul(tile, llvm_helpers.as_i64(k_words)), p), width),
                                builder.mul(tile, width))
        return lambda j: builder.gep(words, [builder.add(panel_row, j)], source_etype=I32)
    return word_at


@llvm_target.compile_once
def _compile_weight_quantizer(k, n, panel_width):
    """void(float* w, i32* words, float* scales, i32* correction, i64 tile_start, i64 tile_end):
    per column of w (k x n) in the column tiles [tile_start, tile_end) (panel_width columns
    each), the scale as precision.quantize(w, (0,)) computes it, then the quantized columns
    packed as _compile_int8_packer packs int8 weights."""
    module, function, builder, call = _quantizer_module("quantize_weights", 4)
    w, words, scales, correction, tile_start, tile_end = function.args
    start, stop = _tile_columns(builder, n, panel_width, tile_start, tile_end)
    element = lambda i, j: builder.load(builder.gep(w, [_row_major(builder, i, n, j)], source_etype=F32), typ=F32)
    scale_at = lambda j: builder.gep(scales, [j], source_etype=F32)
    llvm_helpers.emit_loop(builder, start, stop, _storing(builder, ir.Constant(F32, 0.0), scale_at), name="j0")

    def column_max(i):
        def update(j):
            amax = call("maxnum", builder.load(scale_at(j), typ=F32), call("fabs", element(i, j)))
            builder.store(amax, scale_at(j))
        llvm_helpers.emit_loop(builder, start, stop, update, name="jm")
    llvm_helpers.emit_loop(builder, 0, k, column_max, name="i")

    def finish_scale(j):
        builder.store(_scale_of(builder, call, builder.load(scale_at(j), typ=F32)), scale_at(j))
    llvm_helpers.emit_loop(builder, start, stop, finish_scale, name="js")
    quantized = lambda i, j: _quantized(builder, call, element(i, j), builder.load(scale_at(j), typ=F32))
    _emit_int8_panels(builder, k, n, panel_width, words, correction, tile_start, tile_end, quantized)
    builder.ret_void()
    return _compiled_quantizer(module, "quantize_weights", 4)


@llvm_target.compile_once
def _compile_int8_packer(k, n, panel_width):
    """void pack_int8(i8* w, i32* words, i32* correction, i64 tile_start, i64 tile_end): the
    int8 weights w (k x n) of the column tiles [tile_start, tile_end) packed into their
    micro-panels with their correction, exactly as prepare_b returns them."""
    module, function, builder, _ = _quantizer_module("pack_int8", 3)
    w, words, correction, tile_start, tile_end = function.args
    value = lambda i, j: builder.sext(builder.load(
        builder.gep(w, [_row_major(builder, i, n, j)], source_etype=I8), typ=I8), I32)
    _emit_int8_panels(builder, k, n, panel_width, words, correction, tile_start, tile_end, value)
    builder.ret_void()
    return _compiled_quantizer(module, "pack_int8", 3)


def _storing(builder, value, address_of):
    """A loop body storing `value` at address_of(j)."""
    def body(j):
        builder.store(value, address_of(j))
    return body


def _row_major(builder, i, n, j):
    """The index of [i, j] in a row-major array n wide."""
    return builder.add(builder.mul(llvm_helpers.as_i64(i), llvm_helpers.as_i64(n)), j)


_PACK_BLOCK_ROWS = 4


def _emit_panel_columns(builder, first, width, n, column, past_n):
    """column(j) for the columns j < n of the panel `width` wide (a constant) from `first`,
    past_n(j) for its columns from n on (a last panel's zero columns).
    A whole panel loops a constant count, which LLVM vectorizes with no remainder loop or
    trip-count checks: those cost as much as the 48 words of a panel row."""
    end = builder.add(first, llvm_helpers.as_i64(width))
    with builder.if_else(builder.icmp_signed("<=", end, n)) as (whole, part):
        with whole:
            llvm_helpers.emit_loop(builder, first, end, column, name="j")
        with part:
            llvm_helpers.emit_loop(builder, first, n, column, name="j_edge")
            llvm_helpers.emit_loop(builder, n, end, past_n, name="j_zero")


def _float32_as_bf16_bits(builder, w, index):
    return llvm_math.emit_f32_to_bf16_bits(builder, builder.load(builder.gep(w, [index], source_etype=F32), typ=F32))


def _bf16_bits(builder, w, index):
    i16 = I16
    return builder.load(builder.gep(w, [index], source_etype=i16), typ=i16)


# How the bf16 packer reads an element of w: the bf16 bits (i16) of w[index].
_BF16_SOURCES = {"float32": _float32_as_bf16_bits, "bfloat16": _bf16_bits}


@llvm_target.compile_once
def _compile_bf16_packer(panel_width, source):
    """void pack_bf16(ptr w, i32* words, i64 k, i64 n, i64 word_row_start, i64 word_row_end):
    word [p, j] = bf16(w[2p, j]) | bf16(w[2p + 1, j]) << 16 (the high half is zero past the
    last row of an odd k), stored into the micro-panels as prepare_b lays them out, zero
    words in the columns past n. w is float32 rounded to bf16 (to nearest even, as
    convert_element_type does) for source "float32", bf16 taken as is for "bfloat16".
    Sizes are arguments: one packer serves every shape. The inner loop runs along a row
    of a panel, so LLVM vectorizes it."""
    module, function, builder, _ = _quantizer_module("pack_bf16", 2, sizes=2)
    w, words, k, n, start, stop = function.args
    read = _BF16_SOURCES[source]
    width = llvm_helpers.as_i64(panel_width)
    last_row = builder.sub(k, llvm_helpers.as_i64(1))
    k_words = builder.udiv(builder.add(k, llvm_helpers.as_i64(1)), llvm_helpers.as_i64(2))
    tiles = builder.udiv(builder.add(n, llvm_helpers.as_i64(panel_width - 1)), width)
    word_at = _panel_word_address(builder, words, k_words, panel_width)

    def word_row(tile, p):
        low_row = builder.mul(p, llvm_helpers.as_i64(2))
        high_row = builder.add(low_row, llvm_helpers.as_i64(1))
        has_high = builder.icmp_signed("<", high_row, k)
        high_row = builder.select(has_high, high_row, last_row)    # stay inside w
        bits = lambda row, j: builder.zext(read(builder, w, _row_major(builder, row, n, j)), I32)
        word_of_column = word_at(tile, p)

        def column(j):
            high = builder.select(has_high, bits(high_row, j), ir.Constant(I32, 0))
            builder.store(builder.or_(bits(low_row, j), builder.shl(high, ir.Constant(I32, 16))), word_of_column(j))
        _emit_panel_columns(builder, builder.mul(tile, width), panel_width, n, column,
                            _storing(builder, ir.Constant(I32, 0), word_of_column))

    def row_block(block_start):
        # A block of word rows (16 rows of w, read from L1/L2) goes out panel by panel:
        # reads and writes both run through memory in order.
        block_end = llvm_helpers.smin(builder, builder.add(block_start, llvm_helpers.as_i64(_PACK_BLOCK_ROWS)), stop)
        llvm_helpers.emit_loop(builder, 0, tiles, lambda tile: llvm_helpers.emit_loop(
            builder, block_start, block_end, lambda p: word_row(tile, p), name="p"), name="t")
    llvm_helpers.emit_loop(builder, start, stop, row_block, _PACK_BLOCK_ROWS, name="pb")
    builder.ret_void()
    return _compiled_quantizer(module, "pack_bf16", 2, sizes=2)


@llvm_target.compile_once
def _compile_row_padder():
    """void pad_rows(ptr src, ptr dst, i64 row_bytes, i64 padded_row_bytes, i64 xor_byte,
    i64 row_start, i64 row_end): per row r in [row_start, row_end), dst row r
    (padded_row_bytes long) = src row r (row_bytes long) with every byte xor xor_byte, then
    xor_byte in the padding: A's words for a narrow A (bf16: xor 0, k padded to even;
    int8: xor 128, the activation offset, k padded to a multiple of 4). Byte loops, which
    LLVM vectorizes; only the given rows are read or written."""
    module, function, builder, _ = _quantizer_module("pad_rows", 2, sizes=3)
    src, dst, row_bytes, padded_row_bytes, xor_byte, row_start, row_end = function.args
    fill = builder.trunc(xor_byte, I8)

    def row(r):
        src_row = builder.gep(src, [builder.mul(r, row_bytes)], source_etype=I8)
        dst_row = builder.gep(dst, [builder.mul(r, padded_row_bytes)], source_etype=I8)
        dst_at = lambda j: builder.gep(dst_row, [j], source_etype=I8)

        def copy(j):
            byte = builder.load(builder.gep(src_row, [j], source_etype=I8), typ=I8)
            builder.store(builder.xor(byte, fill), dst_at(j))
        llvm_helpers.emit_loop(builder, 0, row_bytes, copy, name="j")
        llvm_helpers.emit_loop(builder, row_bytes, padded_row_bytes, _storing(builder, fill, dst_at), name="jp")
    llvm_helpers.emit_loop(builder, row_start, row_end, row, name="r")
    builder.ret_void()
    return _compiled_quantizer(module, "pad_rows", 2, sizes=3)


def compile_gemm_bf16(m, n, k, epilogue=None, portable=None, bf16_output=False, float32_a=False, float32_b=False):
    """bf16 (m x k) @ bf16 (k x n) accumulated in float32, with an optional float32 epilogue.
    bf16_output=True gives the result rounded to bf16 (after the epilogue); float32_a /
    float32_b=True take A / B as float32 (even k), rounded to bf16 as the GEMM packs them.
    portable=True forces the widening fallback; None picks vdpbf16ps when the host has it."""
    native = has_native("bf16") if portable is None else not portable
    return LowPrecisionGemm(m, n, k, BF16 if native else BF16_PORTABLE, dtypes.bfloat16, epilogue, bf16_output, float32_a,
                            float32_b)


def compile_gemm_int8(m, n, k, portable=None, epilogue=None):
    """int8 (m x k) @ int8 (k x n) accumulated in int32 (wrapping, as the instructions do).
    epilogue None gives int32 C; DEQUANTIZE or DEQUANTIZE_RELU give float32 C.
    portable=True forces the widening fallback; None picks vpdpbusd when the host has it."""
    if epilogue not in (None, DEQUANTIZE, DEQUANTIZE_RELU):
        raise ValueError("the int8 GEMM takes no epilogue, DEQUANTIZE or DEQUANTIZE_RELU")
    native = has_native("int8") if portable is None else not portable
    return LowPrecisionGemm(m, n, k, INT8 if native else INT8_PORTABLE, np.int8, epilogue)
