"""GEMM code generator: C = epilogue(A @ B) as native code through llvmlite.

The algorithm is Goto's / BLIS's, mirrored for a row-major C. Vectors run along the
rows of C (contiguous in memory), so B is the vector operand and A the broadcast one:

    for each block of row tiles in [tile_start, tile_end)    <- threads split here
      for each kc-deep slice of K
        pack the A rows of the block into kc x mr micro-panels
        for each block of nc_tiles column tiles
          pack B into kc x nr micro-panels (one block sized to stay in L2)
          for each row tile, for each column tile (the A micro-panel stays in L1)
            microkernel: mr x nr accumulators in registers, mr*nv FMAs per k step

M, N, K are static and threads get whole row tiles, so the shape of every edge tile is
static too: the last row tile has M % mr rows, the last column tile N % nr columns. Each
edge shape is compiled as its own microkernel instance, so full tiles carry no masks and
edge tiles never touch memory outside the operands. Small problems skip packing and run
the same microkernel straight on A and B.

The packed panels live in a caller-provided workspace rather than on the stack: they
reach ~1 MB, more than a worker thread's stack may hold, and a runtime can keep one
workspace per thread alive across calls instead of faulting fresh pages in each time.
"""
import ctypes
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import llvmlite.ir as ir
import numpy as np

from jaxlite.lower import llvm_target

I1 = ir.IntType(1)
I64 = ir.IntType(64)
PTR = ir.PointerType()
_ELEMENT_TYPES = {"float32": ir.FloatType(), "float64": ir.DoubleType(), "int32": ir.IntType(32)}
_WORKSPACE_ALIGN = 64
# Below this many operand bytes everything sits in L1/L2 and packing costs more than it saves.
_SMALL_OPERAND_BYTES = 96 * 1024
# Handing a range to a pool thread costs ~50-80 us, the time of ~5 MFLOP here: a thread
# must get more work than that to pay for itself.
_MIN_FLOPS_PER_THREAD = 8e6


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
    """Where an epilogue runs: builder, row/column index values, and its arguments."""

    def __init__(self, emitter, builder, row, col, valid, args):
        self.builder, self.row, self.col = builder, row, col
        self.args = args
        self._emitter, self._valid = emitter, valid

    def load(self, arg_index):
        """The vector of argument `arg_index` matching this accumulator."""
        kind, pointer = self.args[arg_index]
        emitter, builder = self._emitter, self.builder
        if kind in ("scalar", "rows"):
            address = emitter.gep(builder, pointer, self.row) if kind == "rows" else pointer
            return splat(builder, builder.load(address, typ=emitter.elem), emitter.vec)
        offset = self.col
        if kind == "tile":
            offset = builder.add(builder.mul(self.row, as_i64(emitter.spec.n)), self.col)
        return emitter.load_vector(builder, pointer, offset, self._valid)

    def with_args(self, args):
        return EpilogueContext(self._emitter, self.builder, self.row, self.col, self._valid, args)


def _add_argument(ctx, acc):
    return ctx.builder.fadd(acc, ctx.load(0))


def _relu(ctx, acc):
    # select(acc < 0, 0, acc) keeps NaN, as max(x, 0) does in JAX.
    zero = ir.Constant(acc.type, None)
    return ctx.builder.select(ctx.builder.fcmp_ordered("<", acc, zero), zero, acc)


def _scale(ctx, acc):
    return ctx.builder.fmul(acc, ctx.load(0))


BIAS = Epilogue("bias", ("columns",), _add_argument)
RELU = Epilogue("relu", (), _relu)
SCALE = Epilogue("scale", ("scalar",), _scale)
RESIDUAL = Epilogue("residual", ("tile",), _add_argument)


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


# ----------------------------------------------------------------------------- IR helpers

def declare(module, name, return_type, arg_types):
    """The declaration of an LLVM intrinsic (or external function), made once per module."""
    existing = module.globals.get(name)
    return existing or ir.Function(module, ir.FunctionType(return_type, arg_types), name)


def as_i64(value):
    return ir.Constant(I64, value) if isinstance(value, int) else value


def splat(builder, scalar, vector_type):
    lanes = vector_type.count
    single = builder.insert_element(ir.Constant(vector_type, None), scalar, as_i64(0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    return builder.shuffle_vector(single, ir.Constant(vector_type, None), zeros)


def smin(builder, x, y):
    return builder.select(builder.icmp_signed("<", x, y), x, y)


def smax(builder, x, y):
    return builder.select(builder.icmp_signed(">", x, y), x, y)


def transpose_square(builder, rows):
    """Transpose n vectors of n lanes (n a power of two) in log2(n) shuffle stages.

    The stage with half-width h swaps, between rows j and j + h (bit h of j clear), the
    lane blocks of width h that sit on the wrong side of the diagonal.
    """
    rows, n = list(rows), len(rows)
    index_type = ir.VectorType(ir.IntType(32), n)
    h = n // 2
    while h:
        low = [i if not i & h else n + i - h for i in range(n)]
        high = [i + h if not i & h else n + i for i in range(n)]
        for j in range(n):
            if not j & h:
                x, y = rows[j], rows[j + h]
                rows[j] = builder.shuffle_vector(x, y, ir.Constant(index_type, low))
                rows[j + h] = builder.shuffle_vector(x, y, ir.Constant(index_type, high))
        h //= 2
    return rows


def emit_loop(builder, start, stop, body, step=1, carried=(), name="i"):
    """Emit `for i in range(start, stop, step)`.

    `body(i, *carried)` emits one iteration and returns the next carried values (loop
    phis: accumulators stay in registers instead of going through memory). Returns the
    carried values after the loop.
    """
    start, stop, step = as_i64(start), as_i64(stop), as_i64(step)
    preheader = builder.block
    head = builder.append_basic_block(name + ".head")
    loop = builder.append_basic_block(name + ".body")
    done = builder.append_basic_block(name + ".done")
    builder.branch(head)
    builder.position_at_end(head)
    index = builder.phi(I64, name)
    index.add_incoming(start, preheader)
    phis = []
    for value in carried:
        phi = builder.phi(value.type)
        phi.add_incoming(value, preheader)
        phis.append(phi)
    builder.cbranch(builder.icmp_signed("<", index, stop), loop, done)
    builder.position_at_end(loop)
    updated = body(index, *phis)
    latch = builder.block
    index.add_incoming(builder.add(index, step), latch)
    for phi, value in zip(phis, updated or ()):
        phi.add_incoming(value, latch)
    builder.branch(head)
    builder.position_at_end(done)
    return phis


def emit_choice(builder, condition, if_true, if_false):
    """The values of `if_true()` where `condition` holds, else of `if_false()`."""
    with builder.if_else(condition) as (then, otherwise):
        with then:
            true_values, true_block = if_true(), builder.block
        with otherwise:
            false_values, false_block = if_false(), builder.block
    merged = []
    for true_value, false_value in zip(true_values, false_values):
        phi = builder.phi(true_value.type)
        phi.add_incoming(true_value, true_block)
        phi.add_incoming(false_value, false_block)
        merged.append(phi)
    return merged


# ----------------------------------------------------------------------------- the generator

@dataclass(frozen=True)
class GemmSpec:
    """Everything static about one kernel; the kernel cache key."""
    m: int
    n: int
    k: int
    dtype: str
    trans_a: bool
    trans_b: bool
    batch: int
    a_batch_stride: int
    b_batch_stride: int
    epilogue: Epilogue | None
    vector_bits: int
    product: InnerProduct

    @property
    def itemsize(self):
        return np.dtype(self.dtype).itemsize

    @property
    def a_strides(self):
        """(row, k) element strides of A as stored."""
        return (1, self.m) if self.trans_a else (self.k, 1)

    @property
    def b_strides(self):
        """(k, column) element strides of B as stored."""
        return (1, self.k) if self.trans_b else (self.n, 1)

    @property
    def epilogue_kinds(self):
        return self.epilogue.arg_kinds if self.epilogue else ()


@dataclass(frozen=True)
class TileKernel:
    """One microkernel instance: tile shape and how it reads A and B."""
    mr: int
    nv: int
    valid_last: int     # valid lanes of the last vector (all lanes for a full tile)
    a_row_stride: int
    a_k_stride: int
    b_k_stride: int
    b_packed: bool      # packed B is zero-padded, so edge lanes may be loaded


class GemmEmitter:
    """Builds the LLVM module of one GemmSpec."""

    def __init__(self, spec, blocking, name):
        self.spec, self.blk, self.name = spec, blocking, name
        self.elem = _ELEMENT_TYPES[spec.dtype]
        self.vec = ir.VectorType(self.elem, blocking.lanes)
        self.module = ir.Module(name=name)
        kind = "i" if isinstance(self.elem, ir.IntType) else "f"
        self.vector_suffix = suffix = f"v{blocking.lanes}{kind}{8 * spec.itemsize}"
        # The i32 alignment operand is the older form; newer LLVMs upgrade it on parsing.
        mask = ir.VectorType(I1, blocking.lanes)
        self.masked_load = self.intrinsic(f"llvm.masked.load.{suffix}.p0", self.vec,
                                          [PTR, ir.IntType(32), mask, self.vec])
        self.masked_store = self.intrinsic(f"llvm.masked.store.{suffix}.p0", ir.VoidType(),
                                           [self.vec, PTR, ir.IntType(32), mask])
        self._functions = {}
        self.row_tiles = -(-spec.m // blocking.mr)
        self.col_tiles = -(-spec.n // blocking.nr)
        self.row_shapes = self._row_shapes()
        self.col_shapes = self._col_shapes()

    def intrinsic(self, name, return_type, arg_types):
        return declare(self.module, name, return_type, arg_types)

    def add(self, builder, x, y):
        return builder.add(x, y) if isinstance(self.elem, ir.IntType) else builder.fadd(x, y)

    def _row_shapes(self):
        """(full, edge) rows per row tile; edge is None when mr divides M."""
        edge = self.spec.m % self.blk.mr
        return self.blk.mr, (edge or None)

    def _col_shapes(self):
        """(full, edge) as (vectors, valid lanes of the last vector) per column tile."""
        edge_columns = self.spec.n % self.blk.nr
        full = (self.blk.nv, self.blk.lanes)
        if not edge_columns:
            return full, None
        vectors = -(-edge_columns // self.blk.lanes)
        return full, (vectors, edge_columns - (vectors - 1) * self.blk.lanes)

    @property
    def packs_b(self):
        """Whether to run the blocked, packing path at all."""
        spec = self.spec
        operand_bytes = (spec.m * spec.k + spec.k * spec.n) * spec.itemsize
        return spec.trans_b or spec.k > self.blk.kc or operand_bytes > _SMALL_OPERAND_BYTES

    @property
    def packs_a(self):
        """A micro-panel is reused once per column tile: with one, packing only copies."""
        return self.packs_b and self.col_tiles > 1

    def workspace_bytes(self):
        if not self.packs_b:
            return 0
        a_elements = self._packed_a_elements()
        b_elements = self.blk.kc * self.blk.nr * min(self.blk.nc_tiles, self.col_tiles)
        return (a_elements + b_elements) * self.spec.itemsize + _WORKSPACE_ALIGN

    def _packed_a_elements(self):
        return self.blk.kc * self.blk.mr * min(self.blk.mb_tiles, self.row_tiles) if self.packs_a else 0

    # -- element and vector access

    def gep(self, builder, pointer, offset):
        return builder.gep(pointer, [as_i64(offset)], source_etype=self.elem)

    def lane_mask(self, valid):
        return ir.Constant(ir.VectorType(I1, self.blk.lanes),
                           [int(lane < valid) for lane in range(self.blk.lanes)])

    def load_vector(self, builder, pointer, offset, valid=None, lane_stride=1):
        """Vector at pointer[offset + lane * lane_stride]; lanes >= valid are zero, not read."""
        valid = self.blk.lanes if valid is None else valid
        address = self.gep(builder, pointer, offset)
        if lane_stride == 1 and valid == self.blk.lanes:
            return builder.load(address, typ=self.vec, align=self.spec.itemsize)
        if lane_stride == 1:
            return builder.call(self.masked_load, [address, ir.Constant(ir.IntType(32), self.spec.itemsize),
                                                   self.lane_mask(valid), ir.Constant(self.vec, None)])
        vector = ir.Constant(self.vec, None)
        for lane in range(valid):
            address = self.gep(builder, pointer, builder.add(as_i64(offset), as_i64(lane * lane_stride)))
            vector = builder.insert_element(vector, builder.load(address, typ=self.elem), as_i64(lane))
        return vector

    def store_vector(self, builder, vector, pointer, offset, valid):
        """Store the lanes below `valid`; the others leave memory untouched."""
        address = self.gep(builder, pointer, offset)
        if valid == self.blk.lanes:
            builder.store(vector, address, align=self.spec.itemsize)
        else:
            builder.call(self.masked_store, [vector, address, ir.Constant(ir.IntType(32), self.spec.itemsize),
                                             self.lane_mask(valid)])

    def new_function(self, name, arg_types, internal=True):
        function = ir.Function(self.module, ir.FunctionType(ir.VoidType(), arg_types), name)
        if internal:
            function.linkage = "internal"
        builder = ir.IRBuilder(function.append_basic_block("entry"))
        return function, builder

    # -- microkernel

    def microkernel(self, tile):
        """void(a, b, c, i64 kc, i1 first, i1 last, i64 row0, i64 col0, extra...)"""
        key = ("kernel", tile)
        if key not in self._functions:
            self._functions[key] = self._emit_microkernel(tile, f"tile_{len(self._functions)}")
        return self._functions[key]

    def _emit_microkernel(self, tile, name):
        extra_types = [PTR] * len(self.spec.epilogue_kinds)
        function, builder = self.new_function(
            name, [PTR, PTR, PTR, I64, I1, I1, I64, I64] + extra_types)
        # Kept out of line so the register allocator sees the tile loop alone.
        function.attributes.add("noinline")
        a, b, c, kc, first, last, row0, col0, *extra = function.args
        zero = ir.Constant(self.vec, None)
        acc = [zero] * (tile.mr * tile.nv)
        unroll = 4
        main_end = builder.sub(kc, builder.urem(kc, as_i64(unroll)))

        def unrolled_steps(k, *acc):
            for step in range(unroll):
                acc = self._fma_step(builder, tile, a, b, builder.add(k, as_i64(step)), acc)
            return acc

        acc = emit_loop(builder, 0, main_end, unrolled_steps, unroll, acc, "k")
        acc = emit_loop(builder, main_end, kc,
                        lambda k, *acc: self._fma_step(builder, tile, a, b, k, acc), 1, acc, "k_rest")
        self._store_tile(builder, tile, c, first, last, row0, col0, extra, acc)
        builder.ret_void()
        return function

    def _fma_step(self, builder, tile, a, b, k, acc):
        """acc[r][v] += A[r, k] * B[k, v*lanes : (v+1)*lanes] for the whole tile."""
        lanes = self.blk.lanes
        b_row = builder.mul(k, as_i64(tile.b_k_stride))
        b_vectors = [self.load_vector(builder, b, builder.add(b_row, as_i64(v * lanes)),
                                      self._valid_lanes(tile, v) if not tile.b_packed else None)
                     for v in range(tile.nv)]
        a_column = builder.mul(k, as_i64(tile.a_k_stride))
        updated = []
        for r in range(tile.mr):
            address = self.gep(builder, a, builder.add(a_column, as_i64(r * tile.a_row_stride)))
            a_value = splat(builder, builder.load(address, typ=self.elem), self.vec)
            for v in range(tile.nv):
                updated.append(self.spec.product.multiply_add(
                    self, builder, a_value, b_vectors[v], acc[r * tile.nv + v]))
        return updated

    def _valid_lanes(self, tile, v):
        return tile.valid_last if v == tile.nv - 1 else self.blk.lanes

    def _store_tile(self, builder, tile, c, first, last, row0, col0, extra, acc):
        """C = acc on the first K slice, C += acc after; the epilogue on the last one."""
        places = [(r, v, r * self.spec.n + v * self.blk.lanes, self._valid_lanes(tile, v))
                  for r in range(tile.mr) for v in range(tile.nv)]

        def add_c():
            return [self.add(builder, value, self.load_vector(builder, c, offset, valid))
                    for value, (_, _, offset, valid) in zip(acc, places)]

        acc = emit_choice(builder, first, lambda: acc, add_c)
        if self.spec.epilogue is not None:
            def apply_epilogue():
                return [self._apply_epilogue(builder, value, row0, col0, r, v, valid, extra)
                        for value, (r, v, _, valid) in zip(acc, places)]
            acc = emit_choice(builder, last, apply_epilogue, lambda: acc)
        for value, (_, _, offset, valid) in zip(acc, places):
            self.store_vector(builder, value, c, offset, valid)

    def _apply_epilogue(self, builder, value, row0, col0, r, v, valid, extra):
        row = builder.add(row0, as_i64(r))
        col = builder.add(col0, as_i64(v * self.blk.lanes))
        args = tuple(zip(self.spec.epilogue_kinds, extra))
        return self.spec.epilogue.apply(EpilogueContext(self, builder, row, col, valid, args), value)

    # -- packing

    def pack_a(self, rows):
        """void(src at A[row0, k0], dst, i64 kc): dst[k*rows + r] = A[row0 + r, k0 + k]."""
        key = ("pack_a", rows)
        if key not in self._functions:
            function, builder = self.new_function(f"pack_a_{rows}", [PTR, PTR, I64])
            src, dst, kc = function.args
            row_stride, k_stride = self.spec.a_strides

            def copy_column(k):
                for r in range(rows):
                    address = self.gep(builder, src, builder.add(builder.mul(k, as_i64(k_stride)),
                                                                 as_i64(r * row_stride)))
                    value = builder.load(address, typ=self.elem)
                    builder.store(value, self.gep(builder, dst, builder.add(builder.mul(k, as_i64(rows)),
                                                                           as_i64(r))))
            emit_loop(builder, 0, kc, copy_column, name="k")
            builder.ret_void()
            self._functions[key] = function
        return self._functions[key]

    def pack_b(self, vectors, valid_last):
        """void(src at B[k0, col0], dst, i64 kc): dst[k*width + j] = B[k0 + k, col0 + j],
        zero past the valid columns so the microkernel may load whole vectors."""
        key = ("pack_b", vectors, valid_last)
        if key not in self._functions:
            function, builder = self.new_function(f"pack_b_{vectors}_{valid_last}", [PTR, PTR, I64])
            src, dst, kc = function.args
            k_stride, col_stride = self.spec.b_strides
            lanes = self.blk.lanes

            def store_row(k, v, vector):
                dst_offset = builder.add(builder.mul(k, as_i64(vectors * lanes)), as_i64(v * lanes))
                builder.store(vector, self.gep(builder, dst, dst_offset), align=self.spec.itemsize)

            def copy_row(k):
                row = builder.mul(k, as_i64(k_stride))
                for v in range(vectors):
                    valid = valid_last if v == vectors - 1 else lanes
                    offset = builder.add(row, as_i64(v * lanes * col_stride))
                    store_row(k, v, self.load_vector(builder, src, offset, valid, col_stride))

            def copy_square_blocks(k0):
                """lanes x lanes blocks of a transposed B: contiguous loads along k, a
                register transpose, contiguous stores, instead of one scalar per element."""
                for v in range(vectors):
                    valid = valid_last if v == vectors - 1 else lanes
                    columns = [self.load_vector(builder, src, builder.add(k0, as_i64((v * lanes + j) * col_stride)))
                               if j < valid else ir.Constant(self.vec, None) for j in range(lanes)]
                    for i, vector in enumerate(transpose_square(builder, columns)):
                        store_row(builder.add(k0, as_i64(i)), v, vector)

            blocked_end = as_i64(0)
            if self.spec.trans_b:
                blocked_end = builder.sub(kc, builder.urem(kc, as_i64(lanes)))
                emit_loop(builder, 0, blocked_end, copy_square_blocks, lanes, name="kb")
            emit_loop(builder, blocked_end, kc, copy_row, name="k")
            builder.ret_void()
            self._functions[key] = function
        return self._functions[key]

    # -- drivers

    def emit_entry(self):
        """void name(a, b, c, workspace, i64 tile_start, i64 tile_end, extra...)"""
        extra_types = [PTR] * len(self.spec.epilogue_kinds)
        function, builder = self.new_function(
            self.name, [PTR, PTR, PTR, PTR, I64, I64] + extra_types, internal=False)
        a, b, c, workspace, tile_start, tile_end, *extra = function.args
        for pointer in (a, b, workspace):
            pointer.add_attribute("noalias")
        # Clamping makes any range memory-safe; the caller picks disjoint ones.
        start = smax(builder, tile_start, as_i64(0))
        end = smin(builder, tile_end, as_i64(self.row_tiles))
        workspace = self._aligned(builder, workspace)
        spec = self.spec

        def one_matrix(batch_index):
            def offset(pointer, stride):
                return self.gep(builder, pointer, builder.mul(batch_index, as_i64(stride)))
            operands = (offset(a, spec.a_batch_stride), offset(b, spec.b_batch_stride),
                        offset(c, spec.m * spec.n))
            batched_extra = [offset(p, spec.m * spec.n) if kind == "tile" else p
                             for kind, p in zip(spec.epilogue_kinds, extra)]
            if self.packs_b:
                self._emit_blocked(builder, *operands, workspace, start, end, batched_extra)
            else:
                self._emit_direct(builder, *operands, start, end, batched_extra)

        saved_mxcsr = self._flush_subnormals(builder)
        emit_loop(builder, 0, spec.batch, one_matrix, name="batch")
        builder.call(self._mxcsr_intrinsic("ld"), [saved_mxcsr])
        builder.ret_void()

    def _flush_subnormals(self, builder):
        """Set FTZ and DAZ for this call, as XLA:CPU runs: subnormal operands slow FMAs ~14x.
        MXCSR is per thread, so each thread running a range sets its own. Returns the slot
        holding the caller's MXCSR, to restore before returning."""
        saved, flushed = builder.alloca(ir.IntType(32)), builder.alloca(ir.IntType(32))
        builder.call(self._mxcsr_intrinsic("st"), [saved])
        flush_to_zero, denormals_are_zero = 0x8000, 0x0040
        builder.store(builder.or_(builder.load(saved, typ=ir.IntType(32)),
                                  ir.Constant(ir.IntType(32), flush_to_zero | denormals_are_zero)),
                      flushed)
        builder.call(self._mxcsr_intrinsic("ld"), [flushed])
        return saved

    def _mxcsr_intrinsic(self, direction):
        return self.intrinsic(f"llvm.x86.sse.{direction}mxcsr", ir.VoidType(), [PTR])

    def _aligned(self, builder, pointer):
        address = builder.ptrtoint(pointer, I64)
        address = builder.and_(builder.add(address, as_i64(_WORKSPACE_ALIGN - 1)),
                               as_i64(-_WORKSPACE_ALIGN))
        return builder.inttoptr(address, PTR)

    def _dispatch(self, builder, index, count, shapes, emit):
        """emit(shape) under a branch on whether `index` is the last of `count` tiles."""
        full, edge = shapes
        if edge is None:
            emit(full)
            return
        with builder.if_else(builder.icmp_signed("==", index, as_i64(count - 1))) as (then, otherwise):
            with then:
                emit(edge)
            with otherwise:
                emit(full)

    def _dispatch_tile(self, builder, row_tile, col_tile, emit):
        """emit(rows, vectors, valid_last) for the shape of tile (row_tile, col_tile)."""
        self._dispatch(builder, row_tile, self.row_tiles, self.row_shapes,
                       lambda rows: self._dispatch(builder, col_tile, self.col_tiles, self.col_shapes,
                                                   lambda cols: emit(rows, *cols)))

    def _tile_origin_c(self, builder, c, row_tile, col_tile):
        rows = builder.mul(row_tile, as_i64(self.blk.mr * self.spec.n))
        return self.gep(builder, c, builder.add(rows, builder.mul(col_tile, as_i64(self.blk.nr))))

    def _emit_direct(self, builder, a, b, c, start, end, extra):
        """No packing: the microkernel reads A and B where they are."""
        row_stride, k_stride = self.spec.a_strides
        true = ir.Constant(I1, 1)

        def row_tile(rt):
            a_tile = self._a_origin(builder, a, rt, as_i64(0))

            def col_tile(ct):
                def call(rows, vectors, valid_last):
                    tile = TileKernel(rows, vectors, valid_last, row_stride, k_stride,
                                      self.spec.n, b_packed=False)
                    b_tile = self.gep(builder, b, builder.mul(ct, as_i64(self.blk.nr)))
                    builder.call(self.microkernel(tile), [
                        a_tile, b_tile, self._tile_origin_c(builder, c, rt, ct), as_i64(self.spec.k),
                        true, true, builder.mul(rt, as_i64(self.blk.mr)),
                        builder.mul(ct, as_i64(self.blk.nr)), *extra])
                self._dispatch_tile(builder, rt, ct, call)
            emit_loop(builder, 0, self.col_tiles, col_tile, name="ct")
        emit_loop(builder, start, end, row_tile, name="rt")

    def _emit_blocked(self, builder, a, b, c, workspace, start, end, extra):
        blk = self.blk
        packed_a = workspace
        packed_b = self.gep(builder, workspace, self._packed_a_elements())

        def row_block(block_start):
            block_end = smin(builder, builder.add(block_start, as_i64(blk.mb_tiles)), end)

            def k_slice(k0):
                kc = smin(builder, as_i64(blk.kc), builder.sub(as_i64(self.spec.k), k0))
                first = builder.icmp_signed("==", k0, as_i64(0))
                last = builder.icmp_signed(">=", builder.add(k0, as_i64(blk.kc)), as_i64(self.spec.k))
                if self.packs_a:
                    self._pack_a_block(builder, a, packed_a, block_start, block_end, k0, kc)

                def col_block(col_start):
                    col_end = smin(builder, builder.add(col_start, as_i64(blk.nc_tiles)),
                                   as_i64(self.col_tiles))
                    self._pack_b_block(builder, b, packed_b, col_start, col_end, k0, kc)
                    panels = (a, packed_a, block_start, k0, packed_b, col_start)
                    emit_loop(builder, block_start, block_end, lambda rt: emit_loop(
                        builder, col_start, col_end,
                        lambda ct: self._packed_tile(builder, panels, c, rt, ct, kc, first, last, extra),
                        name="ct"), name="rt")
                emit_loop(builder, 0, self.col_tiles, col_block, blk.nc_tiles, name="cb")
            emit_loop(builder, 0, self.spec.k, k_slice, blk.kc, name="k0")
        emit_loop(builder, start, end, row_block, blk.mb_tiles, name="rb")

    def _a_origin(self, builder, a, row_tile, k0):
        """Address of A[row_tile * mr, k0] as stored."""
        row_stride, k_stride = self.spec.a_strides
        return self.gep(builder, a, builder.add(builder.mul(row_tile, as_i64(self.blk.mr * row_stride)),
                                                builder.mul(k0, as_i64(k_stride))))

    def _pack_a_block(self, builder, a, packed_a, block_start, block_end, k0, kc):
        def pack_tile(rt):
            src = self._a_origin(builder, a, rt, k0)
            dst = self._panel(builder, packed_a, rt, block_start, self.blk.mr)
            self._dispatch(builder, rt, self.row_tiles, self.row_shapes,
                           lambda rows: builder.call(self.pack_a(rows), [src, dst, kc]))
        emit_loop(builder, block_start, block_end, pack_tile, name="pa")

    def _pack_b_block(self, builder, b, packed_b, col_start, col_end, k0, kc):
        k_stride, col_stride = self.spec.b_strides

        def pack_tile(ct):
            src = self.gep(builder, b, builder.add(builder.mul(k0, as_i64(k_stride)),
                                                   builder.mul(ct, as_i64(self.blk.nr * col_stride))))
            dst = self._panel(builder, packed_b, ct, col_start, self.blk.nr)
            self._dispatch(builder, ct, self.col_tiles, self.col_shapes,
                           lambda cols: builder.call(self.pack_b(*cols), [src, dst, kc]))
        emit_loop(builder, col_start, col_end, pack_tile, name="pb")

    def _panel(self, builder, packed, tile, block_start, width):
        """Micro-panels sit kc*width elements apart whatever the current slice depth."""
        return self.gep(builder, packed, builder.mul(builder.sub(tile, block_start),
                                                     as_i64(self.blk.kc * width)))

    def _packed_tile(self, builder, panels, c, rt, ct, kc, first, last, extra):
        a, packed_a, block_start, k0, packed_b, col_start = panels
        if self.packs_a:
            a_tile = self._panel(builder, packed_a, rt, block_start, self.blk.mr)
        else:
            a_tile = self._a_origin(builder, a, rt, k0)

        def call(rows, vectors, valid_last):
            a_strides = (1, rows) if self.packs_a else self.spec.a_strides
            tile = TileKernel(rows, vectors, valid_last, *a_strides, vectors * self.blk.lanes,
                              b_packed=True)
            builder.call(self.microkernel(tile), [
                a_tile, self._panel(builder, packed_b, ct, col_start, self.blk.nr),
                self._tile_origin_c(builder, c, rt, ct), kc, first, last,
                builder.mul(rt, as_i64(self.blk.mr)), builder.mul(ct, as_i64(self.blk.nr)), *extra])
        self._dispatch_tile(builder, rt, ct, call)


# ----------------------------------------------------------------------------- Python API

_pool_lock = threading.Lock()
_pool = None


def _thread_pool():
    """One pool for the process: starting threads per call would cost ~50 us each."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2,
                                       thread_name_prefix="jaxlite-gemm")
        return _pool


def split_range(count, parts):
    """`parts` contiguous [start, end) ranges covering range(count), sizes within one."""
    bounds = [count * i // parts for i in range(parts + 1)]
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


class GemmKernel:
    """A compiled GEMM.

    Native entry point at `address`, with ctypes signature `argtypes`:
        void(T* a, T* b, T* c, void* workspace, i64 tile_start, i64 tile_end, T* extra...)
    It writes the row tiles [tile_start, tile_end) of C in every batch (a row tile is
    `blocking.mr` rows; there are `row_tiles`), so calls on disjoint ranges may run on
    different threads at once, each with its own workspace of `workspace_bytes`.
    """

    def __init__(self, spec, blocking, emitter, compiled):
        self.spec, self.blocking = spec, blocking
        self.row_tiles = emitter.row_tiles
        self.workspace_bytes = emitter.workspace_bytes()
        self._compiled = compiled
        self.address = compiled.address(emitter.name)
        self.argtypes = ([ctypes.c_void_p] * 4 + [ctypes.c_int64] * 2
                         + [ctypes.c_void_p] * len(spec.epilogue_kinds))
        self._function = ctypes.CFUNCTYPE(None, *self.argtypes)(self.address)
        self._local = threading.local()

    def asm(self):
        return self._compiled.asm()

    def __call__(self, a, b, *extra, out=None):
        return self.run(a, b, *extra, out=out, threads=1)

    def run(self, a, b, *extra, out=None, threads=1):
        """C = epilogue(A @ B) on numpy arrays, the row tiles split over up to `threads`
        threads (fewer when the problem is too small to repay the hand-off)."""
        pointers = self._operand_pointers(a, b, extra)
        out = self._output(out)
        pointers.insert(2, out.ctypes.data)
        spec = self.spec
        flops = 2 * spec.m * spec.n * spec.k * spec.batch
        threads = max(1, min(threads, int(flops // _MIN_FLOPS_PER_THREAD)))
        ranges = split_range(self.row_tiles, threads)
        pending = [_thread_pool().submit(self._run_range, pointers, lo, hi) for lo, hi in ranges[1:]]
        self._run_range(pointers, *ranges[0])
        for future in pending:
            future.result()
        return out

    def _run_range(self, pointers, tile_start, tile_end):
        workspace = self._workspace()
        self._function(*pointers[:3], workspace, tile_start, tile_end, *pointers[3:])

    def _workspace(self):
        """Per calling thread, kept: concurrent calls must not share packed panels."""
        buffer = getattr(self._local, "workspace", None)
        if buffer is None:
            buffer = self._local.workspace = np.empty(max(self.workspace_bytes, 1), np.uint8)
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
        _check_batched("a", a, spec.dtype, a_shape, spec.batch, spec.a_batch_stride)
        _check_batched("b", b, spec.dtype, b_shape, spec.batch, spec.b_batch_stride)
        if len(extra) != len(spec.epilogue_kinds):
            raise TypeError(f"epilogue {spec.epilogue.name if spec.epilogue else None!r} takes "
                            f"{len(spec.epilogue_kinds)} extra arrays, got {len(extra)}")
        out_shape = (spec.m, spec.n) if spec.batch == 1 else (spec.batch, spec.m, spec.n)
        for index, (kind, array) in enumerate(zip(spec.epilogue_kinds, extra)):
            shape = {"columns": (spec.n,), "rows": (spec.m,), "tile": out_shape, "scalar": ()}[kind]
            _check_array(f"extra[{index}] ({kind})", array, spec.dtype, shape)
        return [array.ctypes.data for array in (a, b, *extra)]


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


def compile_gemm(m, n, k, dtype="float32", trans_a=False, trans_b=False, batch=1,
                 batch_strides=None, epilogue=None, vector_bits=None, product=None):
    """A GemmKernel for C[i] = epilogue(op(A[i]) @ op(B[i])), i < batch; cached per process.

    op(A) is A (stored m x k) or, with trans_a, A stored k x m; likewise B (k x n, or n x k
    with trans_b). C is row-major m x n per batch, contiguous. batch_strides gives the
    element strides between batch entries of A and B (default: contiguous; 0 shares B).
    vector_bits forces 256 (AVX2 tiles) or 512; default: the host's width. `product` (an
    InnerProduct) replaces the FMA step; its dtype is then the element type (see gemm_lowp).
    """
    dtype = np.dtype(dtype).name if product is None else product.dtype
    if product is None and dtype not in FMA:
        raise TypeError(f"compile_gemm supports float32 and float64, not {dtype}")
    if min(m, n, k, batch) < 1:
        raise ValueError(f"gemm dimensions must be positive, got m={m} n={n} k={k} batch={batch}")
    a_stride, b_stride = batch_strides or (m * k, k * n)
    spec = GemmSpec(m, n, k, dtype, bool(trans_a), bool(trans_b), batch, a_stride, b_stride,
                    epilogue, vector_bits or llvm_target.vector_width_bits(), product or FMA[dtype])
    return _compile(spec)


@functools.lru_cache(maxsize=None)
def _compile(spec):
    from jaxlite.lower import program_cache
    return program_cache.gemm_kernel(spec, _build, "gemm")


def _build(spec):
    blocking = choose_blocking(spec.itemsize, spec.vector_bits)
    emitter = GemmEmitter(spec, blocking, "gemm")
    emitter.emit_entry()
    llvm_ir = llvm_target.add_function_attributes(emitter.module, spec.vector_bits)
    return GemmKernel(spec, blocking, emitter, llvm_target.compile_ir(llvm_ir))
