"""Low-precision GEMMs: bf16 x bf16 -> float32 and int8 x int8 -> int32.

Both reuse gemm.py's generator whole (blocking, packing, edge tiles, threads, epilogues):
only the microkernel's inner product changes. An A or B element of the generated kernel is
a 32-bit word holding a group of consecutive K values -- two bf16 or four int8 -- and one
instruction reduces a group into each accumulator lane:

    vdpbf16ps  acc[j] += a[2j] * b[2j] + a[2j+1] * b[2j+1]          (float32 lanes)
    vpdpbusd   acc[j] += sum over 4 bytes of  u8(a) * s8(b)          (int32 lanes)

A row of A already has its groups side by side; B is repacked once ("prepared", as
weights are in inference) so that word [p, j] holds B[g*p : g*p + g, j]. vpdpbusd takes
one unsigned operand, so the activations are offset by 128 into u8 and the epilogue takes
back 128 * (column sums of B), which makes the result exactly the s8 x s8 product.

Hosts without AVX512_BF16 / AVX512_VNNI (or `portable=True`) get the same kernel with a
widening multiply-add in place of the instruction; it gives the same int32 results, and
float32 results equal up to the rounding order of the two products of a bf16 pair.
"""
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from jaxlite.core.dtypes import bfloat16
from jaxlite.lower import gemm, llvm_target
from jaxlite.lower.gemm import Epilogue, InnerProduct

I32 = ir.IntType(32)
_ACTIVATION_OFFSET = 128


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
    high = builder.and_(words, gemm.splat(builder, ir.Constant(I32, -0x10000), words.type))
    low = builder.shl(words, gemm.splat(builder, ir.Constant(I32, 16), words.type))
    return [builder.bitcast(half, emitter.vec) for half in (high, low)]


def _bf16_portable(emitter, builder, a, b, acc):
    # The products are exact in float32, so each FMA rounds only its sum, as vdpbf16ps does.
    for a_half, b_half in zip(_bf16_halves(emitter, builder, a), _bf16_halves(emitter, builder, b)):
        acc = gemm._fma(emitter, builder, a_half, b_half, acc)
    return acc


def _vpdpbusd(emitter, builder, a, b, acc):
    instruction = emitter.intrinsic("llvm.x86.avx512.vpdpbusd.512", emitter.vec, [emitter.vec] * 3)
    return builder.call(instruction, [acc, a, b])


def _int8_bytes(builder, words):
    """The four bytes of each word as sign-extended int32 lanes."""
    splat = lambda count: gemm.splat(builder, ir.Constant(I32, count), words.type)
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


def has_native(kind):
    """Whether the host has the instruction for `kind` ("bf16" or "int8") at 512 bits."""
    feature = {"bf16": "avx512bf16", "int8": "avx512vnni"}[kind]
    return llvm_target.vector_width_bits() >= 512 and llvm_target.host_has(feature)


# ----------------------------------------------------------------------------- Python API

@dataclass(frozen=True)
class PreparedB:
    """B repacked into words of `group` K values: (ceil(k / group), n), plus int8's correction."""
    words: np.ndarray
    column_correction: np.ndarray | None


class LowPrecisionGemm:
    """C = A @ B for narrow A (m x k) and B (k x n), from a compiled GemmKernel over words."""

    def __init__(self, m, n, k, product, narrow_dtype, epilogue=None):
        self.m, self.n, self.k = m, n, k
        self.product, self.narrow_dtype = product, np.dtype(narrow_dtype)
        self.k_words = -(-k // product.group)
        self.offsets_activations = product is INT8
        if self.offsets_activations:
            epilogue = gemm.chain(_UNDO_OFFSET, *([epilogue] if epilogue else []))
        self.kernel = gemm.compile_gemm(m, n, self.k_words, epilogue=epilogue, product=product,
                                        vector_bits=512 if product in (BF16, INT8) else None)

    def asm(self):
        return self.kernel.asm()

    def _grouped(self, array, rows):
        """array (rows x k) with k zero-padded to whole groups, as a contiguous narrow array."""
        array = np.asarray(array, self.narrow_dtype)
        if array.shape != (rows, self.k):
            raise ValueError(f"expected an operand of shape {(rows, self.k)}, got {array.shape}")
        padding = self.k_words * self.product.group - self.k
        return np.ascontiguousarray(np.pad(array, ((0, 0), (0, padding))) if padding else array)

    def prepare_b(self, b):
        """Repack B (k x n) once: word [p, j] holds B[group*p : group*(p+1), j]."""
        grouped = self._grouped(np.asarray(b).T, self.n)          # n x k_words*group
        words = grouped.reshape(self.n, self.k_words, self.product.group).transpose(1, 0, 2)
        words = np.ascontiguousarray(words).view(self.product.dtype)[..., 0]
        correction = None
        if self.offsets_activations:
            correction = (_ACTIVATION_OFFSET * grouped.astype(np.int32).sum(axis=1)).astype(np.int32)
        return PreparedB(np.ascontiguousarray(words), correction)

    def prepare_a(self, a):
        grouped = self._grouped(a, self.m)
        if self.offsets_activations:
            grouped = grouped.view(np.uint8) ^ np.uint8(_ACTIVATION_OFFSET)
        return grouped.view(self.product.dtype)

    def run(self, a, b, *extra, out=None, threads=1):
        """A @ B (then the epilogue) for a narrow A and a PreparedB (or a narrow B)."""
        if not isinstance(b, PreparedB):
            b = self.prepare_b(b)
        correction = () if b.column_correction is None else (b.column_correction,)
        return self.kernel.run(self.prepare_a(a), b.words, *correction, *extra, out=out, threads=threads)

    def __call__(self, a, b, *extra, out=None):
        return self.run(a, b, *extra, out=out)


def compile_gemm_bf16(m, n, k, epilogue=None, portable=None):
    """bf16 (m x k) @ bf16 (k x n) accumulated in float32, with an optional float32 epilogue.
    portable=True forces the widening fallback; None picks vdpbf16ps when the host has it."""
    native = has_native("bf16") if portable is None else not portable
    return LowPrecisionGemm(m, n, k, BF16 if native else BF16_PORTABLE, bfloat16, epilogue)


def compile_gemm_int8(m, n, k, portable=None):
    """int8 (m x k) @ int8 (k x n) accumulated in int32 (wrapping, as the instructions do).
    portable=True forces the widening fallback; None picks vpdpbusd when the host has it."""
    native = has_native("int8") if portable is None else not portable
    return LowPrecisionGemm(m, n, k, INT8 if native else INT8_PORTABLE, np.int8)
