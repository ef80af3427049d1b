"""GEMM code generator: C = epilogue(A @ B) as native code through llvmlite.

The algorithm is Goto's / BLIS's, mirrored for a row-major C. Vectors run along the
rows of C (contiguous in memory), so B is the vector operand and A the broadcast one:

    for each block of row tiles in [tile_start, tile_end)    <- threads split here
      for each kc-deep slice of K
        pack the A rows of the block into kc x mr micro-panels
        for each block of nc_tiles column tiles in [col_start, col_end)   <- or here
          pack B into kc x nr micro-panels (one block sized to stay in L2)
          for each row tile, for each column tile (the A micro-panel stays in L1)
            microkernel: mr x nr accumulators in registers, mr*nv FMAs per k step

One native kernel serves a whole family (dtype, transposes, epilogue, vector width,
inner product): M, N, K, the batch count and batch strides are runtime arguments, so a
process compiles each family once, whatever shapes it meets. The register tile's height
stays static; edges are handled at run time. Packed panels are always mr x nr wide
(packing reads only inside the operands, the rest of a panel is zero or repeats the last
valid row or column), so the inner loop never masks, and the microkernel hands its
accumulators to one store loop over the tile's valid rows whose loads and stores of C
carry a lane mask of its valid columns (AVX-512 k-masks). The microkernel reads A through
run-time strides, packed or where it is (when N fits one column tile, packing A would only
copy); there is one per width from 1 to nv vectors, picked at run time by the tile's
width: a narrow edge tile does not pay for the full width's FMAs.

The packed panels live in a caller-provided workspace rather than on the stack: they
reach ~1 MB, more than a worker thread's stack may hold, and a runtime can keep one
workspace per thread alive across calls instead of faulting fresh pages in each time.
"""
import ctypes
import functools
import threading
from dataclasses import dataclass, field
from typing import Callable

import llvmlite.ir as ir
import numpy as np

from jaxlite.lower import llvm_target, native_call, native_pool
from jaxlite.lower.llvm_helpers import (F32, F64, I1, I32, I64, PTR, VOID, as_i64, declare, emit_choice, emit_loop,
                                        restore_mxcsr, save_and_flush_denormals, smax, smin, splat, transpose_square)

_ELEMENT_TYPES = {"float32": F32, "float64": F64, "int32": I32}
_WORKSPACE_ALIGN = 64
# A worker of the native pool takes a unit within a microsecond when it is spinning, but
# a sleeping one wakes in ~50 us; a unit must repay both the hand-off and the second
# packing of the shared operand (measured: 1000x64x64 (8 MFLOP) 107 -> 62 us on two
# threads; 256x64x64 (2 MFLOP) no gain).
_MIN_FLOPS_PER_THREAD = 2e6


# ----------------------------------------------------------------------------- blocking

@dataclass(frozen=True)
class Blocking:
    """Register tile and cache block sizes for one element size and vector width."""
    lanes: int      # elements per vector register
    mr: int         # rows of the register tile (elements broadcast from A)
    nv: int         # vectors per row of the register tile (loaded from B)
    kc: int         # depth of a K slice: an A micro-panel (kc x mr) stays in L1
    nc_tiles: int   # column tiles per packed B block (kc x nc_tiles*nr stays in L2)
    mb_tiles: int   # row tiles per packed A block

    @property
    def nr(self):
        return self.lanes * self.nv


def choose_blocking(itemsize, vector_bits):
    """Tile sizes from the register file and Zen 4's caches.

    With 32 zmm registers, 8x3 accumulators + 3 B vectors + 1 broadcast leave room to
    overlap the broadcasts; on 1024^3 it ran ~5% faster than 14x2 and 12x2, which fill the
    register file (measured). 16 ymm registers hold 6x2 + 2 + 1. kc keeps an A micro-panel
    (8 KB) plus the B micro-panel it meets (48 KB, streamed) flowing through the 32 KB L1;
    a packed B block takes ~512 KB of the 1 MB L2.
    """
    lanes = vector_bits // (8 * itemsize)
    mr, nv = (8, 3) if vector_bits >= 512 else (6, 2)
    kc = 1024 // itemsize
    nc_tiles = max(1, (512 * 1024) // (kc * itemsize * lanes * nv))
    mb_tiles = max(1, 2048 // mr)
    return Blocking(lanes, mr, nv, kc, nc_tiles, mb_tiles)


# ----------------------------------------------------------------------------- epilogues

@dataclass(frozen=True, eq=False)
class Epilogue:
    """An elementwise transform fused into the store of C.

    `apply(ctx, acc)` gets an `EpilogueContext` and the accumulator vector for
    C[ctx.row, ctx.col : ctx.col + lanes] and returns the vector to store. It runs once,
    after the last K slice. Each entry of `arg_kinds` adds one pointer argument to the
    kernel: "columns" (N values, one per column of C), "rows" (M values, one per row of C,
    shared by the batch), "tile" (shaped like C) or "scalar" (one value). Epilogues
    compare by identity, which keys the kernel cache.
    """
    name: str
    arg_kinds: tuple
    apply: Callable


class EpilogueContext:
    """Where an epilogue runs: builder, row/column index values, and its arguments.
    `row_stride` is C's runtime row length; masked-off lanes lie past C's last column."""

    def __init__(self, emitter, builder, row, col, row_stride, mask, args):
        self.builder, self.row, self.col, self.row_stride = builder, row, col, row_stride
        self.args = args
        self._emitter, self._mask = emitter, mask

    def load(self, arg_index):
        """The vector of argument `arg_index` matching this accumulator."""
        kind, pointer = self.args[arg_index]
        emitter, builder = self._emitter, self.builder
        if kind in ("scalar", "rows"):
            address = emitter.gep(builder, pointer, self.row) if kind == "rows" else pointer
            return splat(builder, builder.load(address, typ=emitter.elem), emitter.vec)
        offset = self.col
        if kind == "tile":
            offset = builder.add(builder.mul(self.row, self.row_stride), self.col)
        return emitter.load_vector(builder, pointer, offset, self._mask)

    def store_to_tile(self, arg_index, vector):
        """Store the integer `vector` (one element per accumulator lane) into the
        "tile" argument `arg_index` at this accumulator's place; masked-off lanes are left alone."""
        builder, (_, pointer) = self.builder, self.args[arg_index]
        offset = builder.add(builder.mul(self.row, self.row_stride), self.col)
        address = builder.gep(pointer, [offset], source_etype=vector.type.element)
        element_bytes = vector.type.element.width // 8
        store = self._emitter.intrinsic(f"llvm.masked.store.v{vector.type.count}i{8 * element_bytes}.p0",
                                        VOID, [vector.type, PTR, I32, self._mask.type])
        builder.call(store, [vector, address, ir.Constant(I32, element_bytes), self._mask])

    def with_args(self, args):
        return EpilogueContext(self._emitter, self.builder, self.row, self.col, self.row_stride,
                               self._mask, args)


def _add_argument(ctx, acc):
    return ctx.builder.fadd(acc, ctx.load(0))


def _relu(ctx, acc):
    # select(acc < 0, 0, acc) keeps NaN, as max(x, 0) does in JAX.
    zero = ir.Constant(acc.type, None)
    return ctx.builder.select(ctx.builder.fcmp_ordered("<", acc, zero), zero, acc)


def _scale(ctx, acc):
    return ctx.builder.fmul(acc, ctx.load(0))


def _subtract_argument(ctx, acc):
    return ctx.builder.fsub(acc, ctx.load(0))


def _subtract_from_argument(ctx, acc):
    return ctx.builder.fsub(ctx.load(0), acc)


def _times_relu_derivative(ctx, acc):
    builder, x = ctx.builder, ctx.load(0)
    lanes = acc.type.count
    zero, half, one = (ir.Constant(acc.type, [value] * lanes) for value in (0.0, 0.5, 1.0))
    at_zero = builder.select(builder.fcmp_ordered("==", x, zero), half, zero)
    return builder.fmul(acc, builder.select(builder.fcmp_ordered(">", x, zero), one, at_zero))


BIAS = Epilogue("bias", ("columns",), _add_argument)
RELU = Epilogue("relu", (), _relu)
SCALE = Epilogue("scale", ("scalar",), _scale)
RESIDUAL = Epilogue("residual", ("tile",), _add_argument)
SUBTRACT = Epilogue("subtract", ("tile",), _subtract_argument)
# C * d/dx max(x, 0) for x the argument tile: 1 where x > 0, 0.5 where x == 0 (as JAX), else 0.
RELU_GRAD = Epilogue("relu_grad", ("tile",), _times_relu_derivative)
# tile - C: an SGD update w - lr * (x.T @ g) writes the new weights from the GEMM.
SUBTRACT_FROM = Epilogue("subtract_from", ("tile",), _subtract_from_argument)


@functools.lru_cache(maxsize=None)
def chain(*epilogues):
    """Apply `epilogues` in order; their arguments follow each other in that order.
    Cached, so equal chains share compiled kernels."""
    def apply(ctx, acc):
        first = 0
        for epilogue in epilogues:
            count = len(epilogue.arg_kinds)
            acc = epilogue.apply(ctx.with_args(ctx.args[first:first + count]), acc)
            first += count
        return acc
    kinds = tuple(kind for epilogue in epilogues for kind in epilogue.arg_kinds)
    return Epilogue("+".join(e.name for e in epilogues), kinds, apply)


# ----------------------------------------------------------------------------- inner products

@dataclass(frozen=True, eq=False)
class InnerProduct:
    """What one microkernel step multiplies, and with which instruction.

    Every element of A, B and C has the type `dtype`. For the float GEMMs an element is one
    value and the step is an FMA. Narrow products pack a `group` of consecutive K values
    into one 32-bit element (two bf16, four int8) and reduce each group into a 32-bit
    accumulator lane with one instruction (vdpbf16ps, vpdpbusd): the K of the kernel then
    counts groups, and packing, blocking and epilogues work unchanged.
    `multiply_add(emitter, builder, a, b, acc)` gets the broadcast A element, a B vector and
    an accumulator vector and returns the new accumulator.
    """
    name: str
    dtype: str
    group: int
    multiply_add: Callable


def _fma(emitter, builder, a, b, acc):
    return builder.call(emitter.intrinsic(f"llvm.fma.{emitter.vector_suffix}", emitter.vec, [emitter.vec] * 3),
                        [a, b, acc])


FMA = {dtype: InnerProduct(dtype, dtype, 1, _fma) for dtype in ("float32", "float64")}


@dataclass(frozen=True, eq=False)
class OperandSource:
    """An A or B stored in another form, converted while it is packed: each packed element
    comes from `group` consecutive K values of the stored operand (its K is group x the
    kernel's, same element size). `convert(emitter, builder, values)` gets the `group` values
    (vectors along B's rows, or scalars of A) and returns the packed one. So a conversion of
    an operand costs no pass of its own: the packing reads it, block by block, between the
    microkernel calls."""
    name: str
    group: int
    convert: Callable


# ----------------------------------------------------------------------------- the generator

@dataclass(frozen=True)
class GemmFamily:
    """Everything static about one native kernel, the kernel cache key. Sizes, batch and
    batch strides are runtime arguments, so every shape of a family shares its code."""
    dtype: str
    trans_a: bool
    trans_b: bool
    epilogue: Epilogue | None
    vector_bits: int
    product: InnerProduct
    # B arrives already in micro-panels (see prepacked_b_shape): the kernel reads it in place
    # instead of packing it, which every thread of a call would do for a row split.
    packed_b: bool = False
    a_source: OperandSource | None = None     # A is then always packed
    b_source: OperandSource | None = None

    @property
    def itemsize(self):
        return np.dtype(self.dtype).itemsize

    @property
    def epilogue_kinds(self):
        return self.epilogue.arg_kinds if self.epilogue else ()


@dataclass(frozen=True)
class GemmSpec:
    """One problem: a family bound to sizes, batch count and batch strides."""
    m: int
    n: int
    k: int
    batch: int
    a_batch_stride: int
    b_batch_stride: int
    family: GemmFamily

    # Properties rather than __getattr__: a failed lookup first costs ~1 us per call.
    dtype = property(lambda self: self.family.dtype)
    trans_a = property(lambda self: self.family.trans_a)
    trans_b = property(lambda self: self.family.trans_b)
    epilogue = property(lambda self: self.family.epilogue)
    epilogue_kinds = property(lambda self: self.family.epilogue_kinds)
    itemsize = property(lambda self: self.family.itemsize)


@dataclass
class Sizes:
    """The runtime sizes inside the entry point, as i64 IR values."""
    m: ir.Value
    n: ir.Value
    k: ir.Value
    row_tiles: ir.Value
    col_tiles: ir.Value
    col_start: ir.Value     # the column tiles this call writes: [col_start, col_end)
    col_end: ir.Value


class GemmEmitter:
    """Builds the LLVM module of one GemmFamily."""

    def __init__(self, family, blocking, name):
        self.spec, self.blk, self.name = family, blocking, name
        self.elem = _ELEMENT_TYPES[family.dtype]
        self.vec = ir.VectorType(self.elem, blocking.lanes)
        self.module = ir.Module(name=name)
        kind = "i" if isinstance(self.elem, ir.IntType) else "f"
        self.vector_suffix = suffix = f"v{blocking.lanes}{kind}{8 * family.itemsize}"
        # The i32 alignment operand is the older form; newer LLVMs upgrade it on parsing.
        self.mask_type = ir.VectorType(I1, blocking.lanes)
        self.masked_load = self.intrinsic(f"llvm.masked.load.{suffix}.p0", self.vec,
                                          [PTR, I32, self.mask_type, self.vec])
        self.masked_store = self.intrinsic(f"llvm.masked.store.{suffix}.p0", VOID,
                                           [self.vec, PTR, I32, self.mask_type])
        self._functions = {}

    def intrinsic(self, name, return_type, arg_types):
        return declare(self.module, name, return_type, arg_types)

    def add(self, builder, x, y):
        return builder.add(x, y) if isinstance(self.elem, ir.IntType) else builder.fadd(x, y)

    # -- element and vector access

    def gep(self, builder, pointer, offset):
        return builder.gep(pointer, [as_i64(offset)], source_etype=self.elem)

    def lane_mask(self, builder, valid):
        """Lanes below the runtime count `valid` (any i64), as the bits of one integer:
        that becomes a single k-register move, where a vector compare would not."""
        lanes = self.blk.lanes
        count = smin(builder, smax(builder, as_i64(valid), as_i64(0)), as_i64(lanes))
        bits = builder.sub(builder.shl(as_i64(1), count), as_i64(1))
        return builder.bitcast(builder.trunc(bits, ir.IntType(lanes)), self.mask_type)

    def load_vector(self, builder, pointer, offset, mask=None):
        """Vector at pointer[offset:]; with a mask, masked-off lanes are zero and not read."""
        address = self.gep(builder, pointer, offset)
        if mask is None:
            return builder.load(address, typ=self.vec, align=self.spec.itemsize)
        return builder.call(self.masked_load, [address, ir.Constant(I32, self.spec.itemsize),
                                               mask, ir.Constant(self.vec, None)])

    def store_vector(self, builder, vector, pointer, offset, mask):
        """Store the lanes in `mask`; the others leave memory untouched."""
        builder.call(self.masked_store, [vector, self.gep(builder, pointer, offset),
                                         ir.Constant(I32, self.spec.itemsize), mask])

    def new_function(self, name, arg_types, internal=True):
        function = ir.Function(self.module, ir.FunctionType(VOID, arg_types), name)
        if internal:
            # One copy of each piece, called where needed: inlining the packing routines
            # into every call site doubled the code and the compile time.
            function.linkage = "internal"
            function.attributes.add("noinline")
        builder = ir.IRBuilder(function.append_basic_block("entry"))
        return function, builder

    def _cached(self, key, emit):
        if key not in self._functions:
            self._functions[key] = emit()
        return self._functions[key]

    # -- microkernel

    def microkernel(self, vectors):
        """void(a, packed b, c, i64 kc, i1 first, i1 last, i64 row0, i64 col0, i64 rows,
        i64 cols, i64 n, i64 a_row_stride, i64 a_k_stride, extra...)

        An mr x (vectors * lanes) tile whose first `rows` rows and `cols` columns are
        stored (rows <= mr, cols <= vectors * lanes). B comes packed nr wide; A with
        run-time strides: packed mr wide (1, mr) or as stored. One kernel for both A
        layouts: a kernel per layout ran no faster and doubled the family's code."""
        return self._cached(("kernel", vectors), lambda: self._emit_microkernel(vectors, f"tile_{vectors}"))

    def _emit_microkernel(self, vectors, name):
        extra_types = [PTR] * len(self.spec.epilogue_kinds)
        function, builder = self.new_function(name, [PTR, PTR, PTR, I64, I1, I1] + [I64] * 7 + extra_types)
        a, b, c, kc, first, last, row0, col0, rows, cols, n, a_row_stride, a_k_stride, *extra = function.args
        buffer = builder.alloca(self.vec, size=self.blk.mr * self.blk.nv)
        a_rows = self._a_row_pointers(builder, a, rows, a_row_stride)
        acc = [ir.Constant(self.vec, None)] * (self.blk.mr * vectors)
        # Not unrolled: 4 k steps per iteration ran no faster (1024^3 and the MLP shapes,
        # one thread) and made the microkernels, most of a family's code, 3x longer to compile.
        acc = emit_loop(builder, 0, kc, lambda k, *acc: self._fma_step(builder, a_rows, a_k_stride, b, k, vectors, acc),
                        1, acc, "k")
        # The accumulators leave through a stack tile to one shared store loop over the
        # valid rows: far less code than a masked store per register (compile time), at
        # the cost of 2*mr*nv vector moves per kc-deep slice.
        for index, value in enumerate(acc):
            r, v = divmod(index, vectors)
            builder.store(value, self.gep(builder, buffer, r * self.blk.nr + v * self.blk.lanes),
                          align=self.spec.itemsize)
        builder.call(self.store_tile(), [buffer, c, first, last, row0, col0, rows, cols, n, *extra])
        builder.ret_void()
        return function

    def _a_row_pointers(self, builder, a, rows, row_stride):
        """A pointer to each tile row's first A element. Rows past `rows` repeat the last
        valid row, so nothing outside A is read."""
        last_row = builder.sub(rows, as_i64(1))
        return [self.gep(builder, a, builder.mul(smin(builder, as_i64(r), last_row), row_stride))
                for r in range(self.blk.mr)]

    def _fma_step(self, builder, a_rows, a_k_stride, b, k, nv, acc):
        """acc[r][v] += A[r, k] * B[k, v*lanes : (v+1)*lanes] for the whole tile."""
        lanes = self.blk.lanes
        b_row = builder.mul(k, as_i64(self.blk.nr))
        b_vectors = [self.load_vector(builder, b, builder.add(b_row, as_i64(v * lanes))) for v in range(nv)]
        a_offset = builder.mul(k, a_k_stride)
        updated = []
        for r, a_row in enumerate(a_rows):
            a_value = splat(builder, builder.load(self.gep(builder, a_row, a_offset), typ=self.elem), self.vec)
            for v in range(nv):
                updated.append(self.spec.product.multiply_add(self, builder, a_value, b_vectors[v], acc[r * nv + v]))
        return updated

    def store_tile(self):
        """void(acc, c, i1 first, i1 last, i64 row0, i64 col0, i64 rows, i64 cols, i64 n, extra...):
        C = acc on the first K slice, C += acc after, the epilogue on the last one, for
        the first `rows` rows and `cols` columns of an mr x nr tile of accumulators."""
        return self._cached("store_tile", self._emit_store_tile)

    def _emit_store_tile(self):
        extra_types = [PTR] * len(self.spec.epilogue_kinds)
        function, builder = self.new_function("store_tile", [PTR, PTR, I1, I1] + [I64] * 5 + extra_types)
        acc, c, first, last, row0, col0, rows, cols, n, *extra = function.args
        lanes, nv = self.blk.lanes, self.blk.nv
        masks = [self.lane_mask(builder, builder.sub(cols, as_i64(v * lanes))) for v in range(nv)]
        epilogue_args = tuple(zip(self.spec.epilogue_kinds, extra))

        def store_row(r):
            row = builder.add(row0, r)
            places = [(builder.add(builder.mul(r, n), as_i64(v * lanes)), builder.add(col0, as_i64(v * lanes)), mask)
                      for v, mask in enumerate(masks)]
            values = [self.load_vector(builder, acc, builder.add(builder.mul(r, as_i64(self.blk.nr)), as_i64(v * lanes)))
                      for v in range(nv)]

            def add_c():
                return [self.add(builder, value, self.load_vector(builder, c, offset, mask))
                        for value, (offset, _, mask) in zip(values, places)]

            values = emit_choice(builder, first, lambda: values, add_c)
            if self.spec.epilogue is not None:
                def apply_epilogue():
                    return [self.spec.epilogue.apply(EpilogueContext(self, builder, row, col, n, mask, epilogue_args), value)
                            for value, (_, col, mask) in zip(values, places)]
                values = emit_choice(builder, last, apply_epilogue, lambda: values)
            for value, (offset, _, mask) in zip(values, places):
                self.store_vector(builder, value, c, offset, mask)

        emit_loop(builder, 0, rows, store_row, name="r")
        builder.ret_void()
        return function

    # -- packing

    def pack_a(self):
        """void(src at A[row0, k0], dst, i64 kc, i64 rows, i64 row_stride, i64 k_stride):
        dst[k*mr + r] = A[row0 + min(r, rows - 1), k0 + k]."""
        return self._cached("pack_a", self._emit_pack_a)

    def _emit_pack_a(self):
        function, builder = self.new_function("pack_a", [PTR, PTR] + [I64] * 4)
        src, dst, kc, rows, row_stride, k_stride = function.args
        mr = self.blk.mr
        last_row = builder.sub(rows, as_i64(1))
        row_starts = [builder.mul(smin(builder, as_i64(r), last_row), row_stride) for r in range(mr)]

        source = self.spec.a_source
        group = source.group if source else 1
        value_stride = builder.udiv(k_stride, as_i64(group))     # of the stored A

        def copy_column(k):
            column = builder.mul(k, k_stride)
            for r, row_start in enumerate(row_starts):
                first = builder.add(column, row_start)
                values = [builder.load(self.gep(builder, src, builder.add(first, builder.mul(as_i64(g), value_stride))),
                                       typ=self.elem) for g in range(group)]
                value = source.convert(self, builder, values) if source else values[0]
                builder.store(value, self.gep(builder, dst, builder.add(builder.mul(k, as_i64(mr)), as_i64(r))))
        emit_loop(builder, 0, kc, copy_column, name="k")
        builder.ret_void()
        return function

    def pack_b(self):
        """void(src at B[k0, col0], dst, i64 kc, i64 cols, i64 stride): dst[k*nr + j] =
        B[k0 + k, col0 + j] for j < cols. `stride` is B's runtime stride (along k for a
        plain B, along columns for a transposed one). Lanes past `cols` are zero for a
        plain B and repeat the last valid column for a transposed one: the microkernel
        never stores them."""
        return self._cached("pack_b", self._emit_pack_b)

    def _emit_pack_b(self):
        function, builder = self.new_function("pack_b", [PTR, PTR] + [I64] * 3)
        src, dst, kc, cols, stride = function.args
        lanes, nv, nr = self.blk.lanes, self.blk.nv, self.blk.nr

        def store_row(k, v, vector):
            offset = builder.add(builder.mul(k, as_i64(nr)), builder.mul(as_i64(v), as_i64(lanes)))
            builder.store(vector, self.gep(builder, dst, offset), align=self.spec.itemsize)

        if not self.spec.trans_b:
            masks = [self.lane_mask(builder, builder.sub(cols, as_i64(v * lanes))) for v in range(nv)]

            source = self.spec.b_source
            group = source.group if source else 1
            row_stride = builder.udiv(stride, as_i64(group))     # of the stored B

            def copy_row(k):
                rows = [builder.add(builder.mul(k, stride), builder.mul(as_i64(g), row_stride)) for g in range(group)]
                for v, mask in enumerate(masks):
                    vectors = [self.load_vector(builder, src, builder.add(row, as_i64(v * lanes)), mask) for row in rows]
                    store_row(k, v, source.convert(self, builder, vectors) if source else vectors[0])
            emit_loop(builder, 0, kc, copy_row, name="k")
        else:
            self._pack_transposed_b(builder, src, kc, cols, stride, store_row)
        builder.ret_void()
        return function

    def _pack_transposed_b(self, builder, src, kc, cols, stride, store_row):
        """B stored n x k: per vector of columns, lanes x lanes blocks loaded contiguously
        along k and transposed in registers, then a scalar loop over the last kc % lanes
        values of k. Only the vectors holding valid columns are packed, in a runtime loop:
        the microkernel of that width reads no others."""
        lanes = self.blk.lanes
        last_col = builder.sub(cols, as_i64(1))
        blocked_end = builder.sub(kc, builder.urem(kc, as_i64(lanes)))

        def one_vector(v):
            first_col = builder.mul(v, as_i64(lanes))
            col_starts = [builder.mul(smin(builder, builder.add(first_col, as_i64(j)), last_col), stride)
                          for j in range(lanes)]

            def copy_square_block(k0):
                columns = [self.load_vector(builder, src, builder.add(k0, start)) for start in col_starts]
                for i, vector in enumerate(transpose_square(builder, columns)):
                    store_row(builder.add(k0, as_i64(i)), v, vector)

            def copy_row(k):
                vector = ir.Constant(self.vec, None)
                for j, start in enumerate(col_starts):
                    element = builder.load(self.gep(builder, src, builder.add(k, start)), typ=self.elem)
                    vector = builder.insert_element(vector, element, as_i64(j))
                store_row(k, v, vector)

            emit_loop(builder, 0, blocked_end, copy_square_block, lanes, name="kb")
            emit_loop(builder, blocked_end, kc, copy_row, name="k")
        emit_loop(builder, 0, self._tiles(builder, cols, lanes), one_vector, name="v")

    # -- drivers

    def emit_entry(self):
        """void name(a, b, c, workspace, i64 tile_start, i64 tile_end, i64* sizes, extra...)
        with sizes = {m, n, k, batch, a_batch_stride, b_batch_stride, col_tile_start,
        col_tile_end}: one pointer converts faster in a ctypes call than eight integers.
        The call writes the row tiles [tile_start, tile_end) of the column tiles
        [col_tile_start, col_tile_end): threads split C along either axis."""
        extra_types = [PTR] * len(self.spec.epilogue_kinds)
        function, builder = self.new_function(
            self.name, [PTR] * 4 + [I64] * 2 + [PTR] + extra_types, internal=False)
        a, b, c, workspace, tile_start, tile_end, size_array, *extra = function.args
        m, n, k, batch, a_batch, b_batch, col_start, col_end = [
            builder.load(builder.gep(size_array, [as_i64(i)], source_etype=I64), typ=I64) for i in range(8)]
        for pointer in (a, b, workspace):
            pointer.add_attribute("noalias")
        col_tiles = self._tiles(builder, n, self.blk.nr)
        # Clamping makes any range memory-safe; the caller picks disjoint ones.
        sizes = Sizes(m, n, k, self._tiles(builder, m, self.blk.mr), col_tiles,
                      smax(builder, col_start, as_i64(0)), smin(builder, col_end, col_tiles))
        start = smax(builder, tile_start, as_i64(0))
        end = smin(builder, tile_end, sizes.row_tiles)
        workspace = self._aligned(builder, workspace)
        c_stride = builder.mul(m, n)

        def one_matrix(batch_index):
            def offset(pointer, stride):
                return self.gep(builder, pointer, builder.mul(batch_index, stride))
            operands = (offset(a, a_batch), offset(b, b_batch), offset(c, c_stride))
            batched_extra = [offset(p, c_stride) if kind == "tile" else p
                             for kind, p in zip(self.spec.epilogue_kinds, extra)]
            self._emit_blocked(builder, sizes, *operands, workspace, start, end, batched_extra)

        # MXCSR is per thread: each thread running a range of tiles flushes for itself.
        saved_mxcsr = save_and_flush_denormals(builder)
        emit_loop(builder, 0, batch, one_matrix, name="batch")
        restore_mxcsr(builder, saved_mxcsr)
        builder.ret_void()
        self._emit_unit_task(function)

    def _emit_unit_task(self, entry):
        """void name_unit(i64* ctx, i64 unit, i64 slot): unit `unit` of a call the native pool
        runs, on the thread in `slot`. ctx = {kernel (unused here), a, b, c, workspace,
        workspace bytes per slot, unit table, extra...}, the unit table's rows {sizes,
        tile_start, tile_end} (see GemmKernel.run_pointers and native_flow)."""
        function, builder = self.new_function(self.name + "_unit", [PTR, I64, I64], internal=False)
        ctx, unit, slot = function.args
        word = lambda index: builder.load(builder.gep(ctx, [as_i64(index)], source_etype=I64), typ=I64)
        a, b, c, base, stride, table = (word(index) for index in range(1, 7))
        extra = [builder.inttoptr(word(7 + k), PTR) for k in range(len(self.spec.epilogue_kinds))]
        row = builder.gep(builder.inttoptr(table, PTR), [builder.mul(unit, as_i64(3))], source_etype=I64)
        sizes, lo, hi = (builder.load(builder.gep(row, [as_i64(k)], source_etype=I64), typ=I64) for k in range(3))
        workspace = builder.add(base, builder.mul(slot, stride))
        pointers = [builder.inttoptr(value, PTR) for value in (a, b, c, workspace)]
        builder.call(entry, [*pointers, lo, hi, builder.inttoptr(sizes, PTR), *extra])
        builder.ret_void()

    @staticmethod
    def _tiles(builder, size, tile):
        return builder.udiv(builder.add(size, as_i64(tile - 1)), as_i64(tile))

    def _aligned(self, builder, pointer):
        address = builder.ptrtoint(pointer, I64)
        address = builder.and_(builder.add(address, as_i64(_WORKSPACE_ALIGN - 1)),
                               as_i64(-_WORKSPACE_ALIGN))
        return builder.inttoptr(address, PTR)

    def _a_strides(self, builder, sizes):
        """(row, k) element strides of A as stored (a k step spans an OperandSource's group)."""
        if self.spec.trans_a:
            return as_i64(1), sizes.m
        group = self.spec.a_source.group if self.spec.a_source else 1
        return builder.mul(sizes.k, as_i64(group)), as_i64(group)

    def _b_strides(self, builder, sizes):
        """(k, column) element strides of B as stored (a k step spans a BSource's group of rows)."""
        if self.spec.trans_b:
            return as_i64(1), sizes.k
        group = self.spec.b_source.group if self.spec.b_source else 1
        return builder.mul(sizes.n, as_i64(group)), as_i64(1)

    def _emit_blocked(self, builder, sizes, a, b, c, workspace, start, end, extra):
        blk = self.blk
        # A micro-panel is reused once per column tile: with one, packing would only copy.
        packs_a = builder.icmp_signed(">", builder.sub(sizes.col_end, sizes.col_start), as_i64(1))
        if self.spec.a_source:      # the microkernel reads only packed (converted) A
            packs_a = ir.Constant(I1, 1)
        packed_a = workspace
        packed_a_tiles = smin(builder, sizes.row_tiles, as_i64(blk.mb_tiles))
        packed_b = b if self.spec.packed_b else \
            self.gep(builder, workspace, builder.mul(packed_a_tiles, as_i64(blk.kc * blk.mr)))

        def row_block(block_start):
            block_end = smin(builder, builder.add(block_start, as_i64(blk.mb_tiles)), end)

            def k_slice(k0):
                kc = smin(builder, as_i64(blk.kc), builder.sub(sizes.k, k0))
                first = builder.icmp_signed("==", k0, as_i64(0))
                last = builder.icmp_signed(">=", builder.add(k0, as_i64(blk.kc)), sizes.k)
                with builder.if_then(packs_a):
                    self._pack_a_block(builder, sizes, a, packed_a, block_start, block_end, k0, kc)

                def col_block(col_start):
                    col_end = smin(builder, builder.add(col_start, as_i64(blk.nc_tiles)), sizes.col_end)
                    if not self.spec.packed_b:
                        self._pack_b_block(builder, sizes, b, packed_b, col_start, col_end, k0, kc)
                    slice_ = (packs_a, a, packed_a, block_start, k0, packed_b, col_start, kc, first, last)
                    emit_loop(builder, block_start, block_end, lambda rt: emit_loop(
                        builder, col_start, col_end,
                        lambda ct: self._packed_tile(builder, sizes, slice_, c, rt, ct, extra),
                        name="ct"), name="rt")
                emit_loop(builder, sizes.col_start, sizes.col_end, col_block, blk.nc_tiles, name="cb")
            emit_loop(builder, 0, sizes.k, k_slice, blk.kc, name="k0")
        emit_loop(builder, start, end, row_block, blk.mb_tiles, name="rb")

    def _edge(self, builder, size, tile_index, tile):
        """How many of the `tile` rows or columns of tile `tile_index` lie inside `size`."""
        return smin(builder, as_i64(tile), builder.sub(size, builder.mul(tile_index, as_i64(tile))))

    def _a_origin(self, builder, sizes, a, row_tile, k0):
        """Address of A[row_tile * mr, k0] as stored."""
        row_stride, k_stride = self._a_strides(builder, sizes)
        return self.gep(builder, a, builder.add(builder.mul(builder.mul(row_tile, as_i64(self.blk.mr)), row_stride),
                                                builder.mul(k0, k_stride)))

    def _pack_a_block(self, builder, sizes, a, packed_a, block_start, block_end, k0, kc):
        def pack_tile(rt):
            builder.call(self.pack_a(), [self._a_origin(builder, sizes, a, rt, k0),
                                         self._panel(builder, packed_a, rt, block_start, self.blk.mr), kc,
                                         self._edge(builder, sizes.m, rt, self.blk.mr), *self._a_strides(builder, sizes)])
        emit_loop(builder, block_start, block_end, pack_tile, name="pa")

    def _pack_b_block(self, builder, sizes, b, packed_b, col_start, col_end, k0, kc):
        k_stride, col_stride = self._b_strides(builder, sizes)
        runtime_stride = col_stride if self.spec.trans_b else k_stride

        def pack_tile(ct):
            src = self.gep(builder, b, builder.add(builder.mul(k0, k_stride),
                                                   builder.mul(builder.mul(ct, as_i64(self.blk.nr)), col_stride)))
            builder.call(self.pack_b(), [src, self._panel(builder, packed_b, ct, col_start, self.blk.nr), kc,
                                         self._edge(builder, sizes.n, ct, self.blk.nr), runtime_stride])
        emit_loop(builder, col_start, col_end, pack_tile, name="pb")

    def _panel(self, builder, packed, tile, block_start, width):
        """Micro-panels sit kc*width elements apart whatever the current slice depth."""
        return self.gep(builder, packed, builder.mul(builder.sub(tile, block_start),
                                                     as_i64(self.blk.kc * width)))

    def _prepacked_panel(self, builder, sizes, b, ct, k0):
        """Address of the k0-th row of column tile ct's micro-panel in a prepacked B."""
        rows_before = builder.add(builder.mul(ct, sizes.k), k0)
        return self.gep(builder, b, builder.mul(rows_before, as_i64(self.blk.nr)))

    def _packed_tile(self, builder, sizes, slice_, c, rt, ct, extra):
        packs_a, a, packed_a, block_start, k0, packed_b, col_start, kc, first, last = slice_
        row0, col0 = builder.mul(rt, as_i64(self.blk.mr)), builder.mul(ct, as_i64(self.blk.nr))
        row_stride, k_stride = self._a_strides(builder, sizes)
        c_tile = self.gep(builder, c, builder.add(builder.mul(row0, sizes.n), col0))
        b_panel = self._prepacked_panel(builder, sizes, packed_b, ct, k0) if self.spec.packed_b else \
            self._panel(builder, packed_b, ct, col_start, self.blk.nr)
        common = [b_panel, c_tile, kc, first, last, row0, col0,
                  self._edge(builder, sizes.m, rt, self.blk.mr), self._edge(builder, sizes.n, ct, self.blk.nr),
                  sizes.n]
        vectors = self._tiles(builder, common[8], self.blk.lanes)
        a_tile = builder.select(packs_a, self._panel(builder, packed_a, rt, block_start, self.blk.mr),
                                self._a_origin(builder, sizes, a, rt, k0))
        a_row_stride = builder.select(packs_a, as_i64(1), row_stride)
        a_k_stride = builder.select(packs_a, as_i64(self.blk.mr), k_stride)
        self._call_by_width(builder, vectors, [a_tile, *common, a_row_stride, a_k_stride, *extra])

    def _call_by_width(self, builder, vectors, args, narrowest=1):
        """Call the microkernel just wide enough for `vectors` vectors of columns."""
        if narrowest == self.blk.nv:
            builder.call(self.microkernel(narrowest), args)
            return
        with builder.if_else(builder.icmp_signed("<=", vectors, as_i64(narrowest))) as (narrow, wider):
            with narrow:
                builder.call(self.microkernel(narrowest), args)
            with wider:
                self._call_by_width(builder, vectors, args, narrowest + 1)


# ----------------------------------------------------------------------------- Python API

def threads_repaid(flops, threads):
    """How many of `threads` a GEMM of `flops` repays: each must get a hand-off's worth."""
    return max(1, min(threads, int(flops // _MIN_FLOPS_PER_THREAD)))


def split_range(count, parts):
    """`parts` contiguous [start, end) ranges covering range(count), sizes within one."""
    bounds = [count * i // parts for i in range(parts + 1)]
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


@dataclass(frozen=True)
class GemmPlan:
    """How one GEMM call runs its family's kernel: C cut along `split` ("rows" or
    "columns" of tiles) into `units` pieces, which `threads` threads take in turn (the
    calling thread too: a thread slow to start, or descheduled on a busy machine, takes
    fewer). `origin` says who chose it ("model", "measured"); it does not key anything."""
    threads: int
    split: str
    units: int
    origin: str = field(default="model", compare=False)

    def describe(self):
        threads = "1 thread" if self.threads == 1 else f"{self.threads} threads"
        return f"{threads}, {self.units} unit{'s' if self.units > 1 else ''} of {self.split} ({self.origin})"


SINGLE_THREAD = GemmPlan(1, "rows", 1)


class CompiledFamily:
    """The machine code of one GemmFamily: a native entry point at `address` with ctypes
    signature `argtypes` (see GemmEmitter.emit_entry)."""

    def __init__(self, family, blocking, emitter, compiled):
        self.family, self.blocking = family, blocking
        self._compiled = compiled
        self.address = compiled.address(emitter.name)
        self.unit_task = compiled.address(emitter.name + "_unit")
        self.argtypes = ([ctypes.c_void_p] * 4 + [ctypes.c_int64] * 2
                         + [ctypes.c_void_p] * (1 + len(family.epilogue_kinds)))
        self.function = ctypes.CFUNCTYPE(None, *self.argtypes)(self.address)

    def asm(self):
        return self._compiled.asm()


class GemmKernel:
    """A family's kernel bound to one problem's sizes.

    `address`/`argtypes` are the family's native entry point:
        void(T* a, T* b, T* c, void* workspace, i64 tile_start, i64 tile_end, i64* sizes, T* extra...)
    with `sizes` pointing at {m, n, k, batch, a_batch_stride, b_batch_stride, col_tile_start,
    col_tile_end} (a ctypes array; this kernel's `sizes` covers every column). It writes
    the row tiles [tile_start, tile_end) of those column tiles of C in every batch (a row
    tile is `blocking.mr` rows, a column tile `blocking.nr` columns; there are `row_tiles`
    and `col_tiles`), so calls on disjoint ranges may run on different threads at once,
    each with its own workspace of `workspace_bytes`. A GemmPlan says how a call is cut up.
    """

    def __init__(self, spec, native):
        self.spec, self.native, self.blocking = spec, native, native.blocking
        blk = self.blocking
        self.row_tiles = -(-spec.m // blk.mr)
        self.col_tiles = -(-spec.n // blk.nr)
        self.sizes = self._sizes(0, self.col_tiles)
        packed_elements = blk.kc * (blk.mr * min(blk.mb_tiles, self.row_tiles)
                                    + blk.nr * min(blk.nc_tiles, self.col_tiles))
        self.workspace_bytes = packed_elements * spec.itemsize + _WORKSPACE_ALIGN
        self.address, self.argtypes = native.address, native.argtypes
        self._local = threading.local()
        self._units = {}

    def _sizes(self, col_start, col_end):
        spec = self.spec
        return (ctypes.c_int64 * 8)(spec.m, spec.n, spec.k, spec.batch, spec.a_batch_stride, spec.b_batch_stride,
                                    col_start, col_end)

    # -- plans

    @property
    def flops(self):
        spec = self.spec
        return 2 * spec.m * spec.n * spec.k * spec.batch

    def model_plan(self, threads):
        """The cost model: as many threads as the work repays (each must get more than a
        hand-off's worth), over rows unless there are too few row tiles to go round."""
        threads = threads_repaid(self.flops, threads)
        if threads == 1:
            return SINGLE_THREAD
        if self.row_tiles < 2 * threads and self.col_tiles > self.row_tiles:
            return GemmPlan(min(threads, self.col_tiles), "columns", min(threads, self.col_tiles))
        return GemmPlan(min(threads, self.row_tiles), "rows", min(threads, self.row_tiles))

    def candidate_plans(self, threads):
        """Plans worth measuring: one thread, and `threads` threads over either axis in
        one unit per thread or two (smaller units balance better when a core is busy)."""
        plans = [SINGLE_THREAD, self.model_plan(threads)]
        if threads > 1:
            for split, tiles in (("rows", self.row_tiles), ("columns", self.col_tiles)):
                plans += [GemmPlan(threads, split, units) for units in (threads, 2 * threads) if units <= tiles]
        return list(dict.fromkeys(plans))

    def plan_units(self, plan):
        """(sizes, tile_start, tile_end) per unit of `plan`, made once per plan, with the
        units as a native table {sizes, tile_start, tile_end} for the pool's task."""
        key = (plan.split, plan.units)
        found = self._units.get(key)
        if found is None:
            # Threads compiling at once may both build a plan; the first stored is kept for
            # good, because compiled job lists hold raw addresses into its table: replacing
            # it would free memory they still read.
            found = self._units.setdefault(key, self._build_units(plan))
        return found

    def _build_units(self, plan):
        if plan.split == "rows":
            units = [(self.sizes, lo, hi) for lo, hi in split_range(self.row_tiles, plan.units)]
        else:
            units = [(self._sizes(lo, hi), 0, self.row_tiles) for lo, hi in split_range(self.col_tiles, plan.units)]
        table = (ctypes.c_int64 * (3 * len(units)))(
            *[word for sizes, lo, hi in units for word in (ctypes.addressof(sizes), lo, hi)])
        return units, table

    def asm(self):
        return self.native.asm()

    def __call__(self, a, b, *extra, out=None):
        return self.run(a, b, *extra, out=out, threads=1)

    def run(self, a, b, *extra, out=None, threads=1, plan=None):
        """C = epilogue(A @ B) on numpy arrays, run by `plan`, or by the cost model's
        plan for up to `threads` threads."""
        pointers = self._operand_pointers(a, b, extra)
        out = self._output(out)
        pointers.insert(2, native_call.array_data(out))
        self.run_pointers(pointers, plan or self.model_plan(threads))
        return out

    def run_pointers(self, pointers, plan):
        """Run `plan` on data pointers [a, b, c, extra...] (checked by the caller)."""
        units, table = self.plan_units(plan)
        if plan.threads == 1:
            workspace = self._workspace(1)
            for sizes, lo, hi in units:
                self.native.function(*pointers[:3], workspace, lo, hi, sizes, *pointers[3:])
            return
        context = self._context(len(pointers) - 3)
        context[1:4] = pointers[:3]
        context[4], context[6] = self._workspace(native_pool.slots()), ctypes.addressof(table)
        context[7:] = pointers[3:]
        native_pool.run(self.native.unit_task, ctypes.addressof(context), len(units))

    def _context(self, extras):
        """The pool task's context {kernel, a, b, c, workspace, workspace stride, unit
        table, extra...}: per calling thread, like the workspace."""
        context = getattr(self._local, "context", None)
        if context is None:
            context = self._local.context = (ctypes.c_int64 * (7 + extras))(
                self.address, 0, 0, 0, 0, self.workspace_bytes)
        return context

    def _workspace(self, slots):
        """Per calling thread, kept: concurrent calls must not share packed panels. A
        thread of the pool runs in slot s of the caller's workspace, at s workspaces."""
        buffer = getattr(self._local, "workspace", None)
        if buffer is None or buffer.size < slots * self.workspace_bytes:
            buffer = self._local.workspace = np.empty(slots * self.workspace_bytes, np.uint8)
        return buffer.ctypes.data

    def _output(self, out):
        spec = self.spec
        shape = (spec.m, spec.n) if spec.batch == 1 else (spec.batch, spec.m, spec.n)
        if out is None:
            return np.empty(shape, spec.dtype)
        _check_array("out", out, spec.dtype, shape)
        return out

    def _operand_pointers(self, a, b, extra):
        spec = self.spec
        a_shape = (spec.k, spec.m) if spec.trans_a else (spec.m, spec.k)
        b_shape = (spec.n, spec.k) if spec.trans_b else (spec.k, spec.n)
        if spec.family.a_source:
            _check_array("a", a, spec.dtype, (spec.m, spec.family.a_source.group * spec.k))
        else:
            _check_batched("a", a, spec.dtype, a_shape, spec.batch, spec.a_batch_stride)
        if spec.family.packed_b:
            _check_array("b", b, spec.dtype, prepacked_b_shape(self.blocking, spec.k, spec.n))
        elif spec.family.b_source:
            _check_array("b", b, spec.dtype, (spec.family.b_source.group * spec.k, spec.n))
        else:
            _check_batched("b", b, spec.dtype, b_shape, spec.batch, spec.b_batch_stride)
        if len(extra) != len(spec.epilogue_kinds):
            raise TypeError(f"epilogue {spec.epilogue.name if spec.epilogue else None!r} takes "
                            f"{len(spec.epilogue_kinds)} extra arrays, got {len(extra)}")
        out_shape = (spec.m, spec.n) if spec.batch == 1 else (spec.batch, spec.m, spec.n)
        for index, (kind, array) in enumerate(zip(spec.epilogue_kinds, extra)):
            shape = {"columns": (spec.n,), "rows": (spec.m,), "tile": out_shape, "scalar": ()}[kind]
            _check_array(f"extra[{index}] ({kind})", array, spec.dtype, shape)
        return [native_call.array_data(array) for array in (a, b, *extra)]


def _check_array(name, array, dtype, shape):
    if not isinstance(array, np.ndarray) or array.dtype != dtype or not array.flags.c_contiguous:
        raise TypeError(f"{name} must be a C-contiguous {dtype} numpy array")
    if array.shape != tuple(shape) and not (shape == () and array.size == 1):
        raise ValueError(f"{name} has shape {array.shape}, expected {tuple(shape)}")


def _check_batched(name, array, dtype, matrix_shape, batch, stride):
    """Standard strides need the natural shape; others a flat buffer large enough."""
    size = matrix_shape[0] * matrix_shape[1]
    if batch == 1 or stride == 0:
        _check_array(name, array, dtype, matrix_shape)
    elif stride == size:
        _check_array(name, array, dtype, (batch,) + matrix_shape)
    else:
        _check_array(name, array, dtype, array.shape)
        needed = (batch - 1) * stride + size
        if array.size < needed:
            raise ValueError(f"{name} holds {array.size} elements, batch strides need {needed}")


def prepacked_b_shape(blocking, k, n):
    """A prepacked B: per column tile, its k x nr micro-panel (columns past n are zero)."""
    return (-(-n // blocking.nr), k, blocking.nr)


def compile_gemm(m, n, k, dtype="float32", trans_a=False, trans_b=False, batch=1,
                 batch_strides=None, epilogue=None, vector_bits=None, product=None, packed_b=False,
                 a_source=None, b_source=None):
    """A GemmKernel for C[i] = epilogue(op(A[i]) @ op(B[i])), i < batch; cached per process.

    op(A) is A (stored m x k) or, with trans_a, A stored k x m; likewise B (k x n, or n x k
    with trans_b). C is row-major m x n per batch, contiguous. batch_strides gives the
    element strides between batch entries of A and B (default: contiguous; 0 shares B).
    vector_bits forces 256 (AVX2 tiles) or 512; default: the host's width. `product` (an
    InnerProduct) replaces the FMA step; its dtype is then the element type (see gemm_lowp).
    packed_b=True takes B prepacked (prepacked_b_shape; no batch, no transpose); an
    OperandSource a_source or b_source takes A or B stored in its form (m x group * k, or
    group * k x n; no batch, no transpose).
    The machine code is compiled once per family (everything but the sizes, batch and
    batch strides) and shared by every shape of it.
    """
    dtype = np.dtype(dtype).name if product is None else product.dtype
    if product is None and dtype not in FMA:
        raise TypeError(f"compile_gemm supports float32 and float64, not {dtype}")
    if min(m, n, k, batch) < 1:
        raise ValueError(f"gemm dimensions must be positive, got m={m} n={n} k={k} batch={batch}")
    a_stride, b_stride = batch_strides or (m * k, k * n)
    if (packed_b or a_source or b_source) and (batch > 1 or trans_a or trans_b):
        raise ValueError("a prepacked or converted operand is one untransposed matrix")
    family = GemmFamily(dtype, bool(trans_a), bool(trans_b), epilogue,
                        vector_bits or llvm_target.vector_width_bits(), product or FMA[dtype], bool(packed_b),
                        a_source, b_source)
    return _bind(GemmSpec(m, n, k, batch, a_stride, b_stride, family))


@functools.lru_cache(maxsize=None)
def _bind(spec):
    return GemmKernel(spec, compile_family(spec.family))


@llvm_target.compile_once
def compile_family(family):
    """The native kernel of one GemmFamily: compiled once per process (and loaded from the
    persistent compilation cache when one is configured)."""
    from jaxlite.lower import program_cache
    return program_cache.gemm_family(family, _build_family, "gemm")


def _build_family(family):
    blocking = choose_blocking(family.itemsize, family.vector_bits)
    emitter = GemmEmitter(family, blocking, "gemm")
    emitter.emit_entry()
    llvm_ir = llvm_target.add_function_attributes(emitter.module, family.vector_bits)
    # The generator already writes SSA loops, registers and vectors: LLVM's IR passes took
    # half the compile time and changed no inner loop (the backend's own strength reduction
    # and register allocation give the same broadcast-FMA loop; measured on 1024^3 and the
    # MLP shapes), while the vectorizers bloated the packing loops with gathers.
    return CompiledFamily(family, blocking, emitter, llvm_target.compile_ir(llvm_ir, optimize_ir=False))
