"""Native sort and top_k: a stable sort of (key, position) pairs per lane.

A lane is one line along the sorted axis. Each key element is first mapped to an unsigned
integer whose order is the sort order (`ordered_key`), so the merge compares integers
whatever the dtype (and the radix sort splits them into bytes), and the comparison rules of the eager implementation hold by
construction: NaNs after +inf (equal among themselves), -0.0 equal to 0.0, bfloat16 and
float16 ordered as their float32 values. Equal keys keep their order because the merge
takes from the left run on ties: the sort is stable, which satisfies both settings of
`is_stable`. Short lanes are merge sorted (bottom-up, O(n log n)); long ones radix sorted
(least significant byte first, O(n) per byte), which is stable as well.

Several keys sort like lexsort: one stable pass per key, least significant first, each
loading its keys through the permutation found so far. The operands are then gathered
through the final permutation as raw bits (NaN payloads and signed zeros survive).
top_k is the same sort on a descending key, keeping the first k entries and their positions.

The merge is branch-free (selects instead of jumps): the comparison of random keys is
unpredictable, and a mispredicted branch per element costs more than the whole merge step.
"""
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from jaxlite.core import dtypes
from jaxlite.lower.llvm_helpers import I8, I32, I64, as_i64, emit_choice, emit_loop, gep, load, smin, store
from jaxlite.lower.native_routines import Routine, define_routine

# From this length on, a lane is radix sorted: its 4 (or 8) linear passes, 256 counts each,
# beat log2(length) merge passes (measured on 1M float32 in rows of 16 to 256: the merge
# wins at 16, the radix sort from 64 on, 3.7x at 256).
RADIX_MIN_LENGTH = 64


def bits_type(dtype):
    return ir.IntType(8 * np.dtype(dtype).itemsize)


def key_type(dtype):
    return I64 if np.dtype(dtype).itemsize == 8 else I32


def _infinity_bits(dtype):
    unsigned = np.dtype(f"u{np.dtype(dtype).itemsize}")
    return int(np.array(np.inf, dtype).view(unsigned))


def zero_below_bits(dtype):
    """Magnitudes (as bits) under this compare as zero: the subnormals of float32, bfloat16 and
    float64, which XLA:CPU reads as zeros (DAZ); float16's are float32 normals when widened."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return 1
    unsigned = np.dtype(f"u{dtype.itemsize}")
    return int(np.array(dtypes.finfo(dtype).tiny, dtype).view(unsigned))


def ordered_key(b, bits, dtype):
    """An unsigned integer (key_type(dtype)) ordering like the eager sort orders `bits`."""
    dtype = np.dtype(dtype)
    wide = key_type(dtype)
    width = bits.type.width
    sign = ir.Constant(bits.type, 1 << (width - 1))
    if dtypes.is_bool(dtype) or dtypes.is_unsigned(dtype):
        return b.zext(bits, wide) if width < wide.width else bits
    if dtypes.is_int(dtype):
        flipped = b.xor(bits, sign)
        return b.zext(flipped, wide) if width < wide.width else flipped
    # Floats: sign and magnitude become one unsigned order; both zeros (and the subnormals
    # read as zeros) meet at the sign bit.
    magnitude = b.and_(bits, ir.Constant(bits.type, (1 << (width - 1)) - 1))
    negative = b.icmp_signed("<", bits, ir.Constant(bits.type, 0))
    key = b.select(negative, b.not_(bits), b.or_(bits, sign))
    zero = b.icmp_unsigned("<", magnitude, ir.Constant(bits.type, zero_below_bits(dtype)))
    key = b.select(zero, sign, key)
    is_nan = b.icmp_unsigned(">", magnitude, ir.Constant(bits.type, _infinity_bits(dtype)))
    key = b.select(is_nan, ir.Constant(bits.type, (1 << width) - 1), key)
    return b.zext(key, wide) if width < wide.width else key


@dataclass(frozen=True)
class SortSpec:
    """A sort of `len(dtypes)` operands shaped (outer, length, inner) along the middle axis,
    by the first `num_keys`. Results: every operand's first `take` sorted entries, then
    (with_positions) those entries' positions as int32."""
    dtypes: tuple           # numpy dtypes
    outer: int
    length: int
    inner: int
    num_keys: int
    take: int
    descending: bool = False
    with_positions: bool = False

    @property
    def lanes(self):
        return self.outer * self.inner

    def build(self):
        name = "native_sort"
        pointer_count = 2 * len(self.dtypes) + self.with_positions
        module = define_routine(name, pointer_count, self.lanes, _SortEmitter(self).emit_lane)
        passes = max(1, math.ceil(math.log2(max(self.length, 1))))
        work = self.length * (passes * self.num_keys + len(self.dtypes))
        return Routine(module, name, self.lanes, self.scratch_bytes(), work, optimize=False)

    def scratch_bytes(self):
        """Two key buffers (8 bytes an entry) and two position buffers, each one entry longer
        than a lane (the merge reads one past a run's end, and ignores it, rather than branch),
        and the radix sort's counts (256 for each of up to 8 key bytes)."""
        return 2 * (self.length + 1) * (8 + 4) + 4 * 256 * 8


def sort_spec(eqn):
    operand_dtypes = tuple(np.dtype(v.aval.dtype) for v in eqn.inputs)
    if not all(map(_sortable, operand_dtypes)):
        return None
    shape, axis = tuple(map(int, eqn.inputs[0].aval.shape)), eqn.params["dimension"]
    if not _fits_positions(shape[axis]):
        return None
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    return SortSpec(operand_dtypes, outer, shape[axis], inner, eqn.params["num_keys"], shape[axis])


def top_k_spec(eqn):
    aval = eqn.inputs[0].aval
    shape = tuple(map(int, aval.shape))
    if not _sortable(aval.dtype) or not _fits_positions(shape[-1]):
        return None
    return SortSpec((np.dtype(aval.dtype),), math.prod(shape[:-1]), shape[-1], 1, 1,
                    int(eqn.params["k"]), descending=True, with_positions=True)


def _sortable(dtype):
    return np.dtype(dtype).kind in "biuf" or dtypes.is_bfloat16(dtype)


def _fits_positions(length):
    return length < 2 ** 31     # positions are int32


def _digit_slot(b, key, byte):
    """Where byte `byte` of `key` is counted: 256 counts per byte position."""
    digit = b.zext(b.trunc(b.lshr(key, ir.Constant(key.type, 8 * byte)), I8), I64)
    return b.add(digit, as_i64(256 * byte))


def _increment(b, counts, index):
    """counts[index] += 1; returns the count before."""
    address = gep(b, counts, index, I32)
    count = b.load(address, typ=I32)
    b.store(b.add(count, ir.Constant(I32, 1)), address)
    return count


def _exclusive_sum_step(b, counts, index, total):
    """counts[index] becomes the sum of the counts before it; returns the running total."""
    address = gep(b, counts, index, I32)
    count = b.load(address, typ=I32)
    b.store(total, address)
    return b.add(total, count)


class _SortEmitter:
    def __init__(self, spec):
        self.spec, self.dtypes = spec, spec.dtypes

    def emit_lane(self, b, pointers, scratch, lane):
        spec = self.spec
        count = len(self.dtypes)
        operands, results = pointers[:count], pointers[count:]
        outer_index, inner_index = b.udiv(lane, as_i64(spec.inner)), b.urem(lane, as_i64(spec.inner))
        in_base = b.add(b.mul(outer_index, as_i64(spec.length * spec.inner)), inner_index)
        out_base = b.add(b.mul(outer_index, as_i64(spec.take * spec.inner)), inner_index)
        buffers = self._buffers(b, scratch)
        positions = buffers[2]
        emit_loop(b, 0, spec.length, lambda j: store(b, b.trunc(j, I32), positions, j))
        for k in reversed(range(spec.num_keys)):
            positions = self._sort_by_key(b, operands[k], self.dtypes[k], in_base, positions, buffers)
        self._gather(b, operands, results, in_base, out_base, positions)

    def _buffers(self, b, scratch):
        """keys_a, keys_b, positions_a, positions_b and the radix sort's counts in the scratch area."""
        entries = self.spec.length + 1
        offsets = [0, 8 * entries, 16 * entries, 20 * entries, 24 * entries]
        return [gep(b, scratch, offset, I8) for offset in offsets]

    def _element(self, b, operand, dtype, in_base, position):
        offset = b.add(in_base, b.mul(b.zext(position, I64), as_i64(self.spec.inner)))
        return load(b, operand, offset, bits_type(dtype))

    def _sort_by_key(self, b, operand, dtype, in_base, order, buffers):
        """Stably sorts the lane's positions (given in `order`) by this operand's keys;
        returns the buffer holding the sorted positions."""
        keys_a, keys_b, positions_a, positions_b, _ = buffers
        wide = key_type(dtype)

        def load_key(j):
            position = load(b, order, j, I32)
            key = ordered_key(b, self._element(b, operand, dtype, in_base, position), dtype)
            store(b, b.not_(key) if self.spec.descending else key, keys_a, j)
            store(b, position, positions_a, j)
        emit_loop(b, 0, self.spec.length, load_key)
        if self.spec.length >= RADIX_MIN_LENGTH:
            return self._radix_sort(b, wide, (keys_a, positions_a), (keys_b, positions_b), buffers[4])
        return self._merge_sort(b, wide, (keys_a, positions_a), (keys_b, positions_b))

    def _merge_sort(self, b, wide, src, dst):
        """Bottom-up: runs of 1, 2, 4, ... merged pairwise, back and forth between the buffers."""
        passes = math.ceil(math.log2(self.spec.length)) if self.spec.length > 1 else 0

        def merge_pass(number, src_keys, src_positions, dst_keys, dst_positions):
            width = b.shl(as_i64(1), number)
            self._merge_pass(b, wide, width, (src_keys, src_positions), (dst_keys, dst_positions))
            return dst_keys, dst_positions, src_keys, src_positions
        return emit_loop(b, 0, passes, merge_pass, carried=src + dst, name="pass")[1]

    def _radix_sort(self, b, wide, src, dst, counts):
        """Least significant byte first, each pass a stable counting sort. One read counts every
        byte; a byte that all keys share (the high bytes of narrow keys, often) is skipped."""
        byte_count = wide.width // 8
        emit_loop(b, 0, 256 * byte_count, lambda d: store(b, ir.Constant(I32, 0), counts, d), name="clear")

        def count(j):
            key = load(b, src[0], j, wide)
            for byte in range(byte_count):
                _increment(b, counts, _digit_slot(b, key, byte))
        emit_loop(b, 0, self.spec.length, count, name="count")
        first_key = load(b, src[0], as_i64(0), wide)
        for byte in range(byte_count):
            slot = _digit_slot(b, first_key, byte)
            shared = b.icmp_signed("==", load(b, counts, slot, I32), ir.Constant(I32, self.spec.length))
            merged = emit_choice(b, shared, lambda: list(src + dst),
                                 lambda: self._radix_pass(b, wide, byte, src, dst, counts))
            src, dst = tuple(merged[:2]), tuple(merged[2:])
        return src[1]

    def _radix_pass(self, b, wide, byte, src, dst, counts):
        """Moves (key, position) pairs from src to dst ordered stably by one byte of the keys."""
        first = as_i64(256 * byte)
        emit_loop(b, first, b.add(first, as_i64(256)),
                  lambda d, total: [_exclusive_sum_step(b, counts, d, total)],
                  carried=[ir.Constant(I32, 0)], name="offsets")

        def move(j):
            slot = _digit_slot(b, load(b, src[0], j, wide), byte)
            target = b.zext(_increment(b, counts, slot), I64)
            for source, destination, element in zip(src, dst, (wide, I32)):
                store(b, load(b, source, j, element), destination, target)
        emit_loop(b, 0, self.spec.length, move, name="scatter")
        return list(dst + src)

    def _merge_pass(self, b, wide, width, src, dst):
        length = as_i64(self.spec.length)

        def merge_pair(lo):
            mid = smin(b, b.add(lo, width), length)
            hi = smin(b, b.add(mid, width), length)
            self._merge(b, wide, src, dst, lo, mid, hi)
        emit_loop(b, 0, length, merge_pair, step=b.add(width, width), name="pair")

    @staticmethod
    def _merge(b, wide, src, dst, lo, mid, hi):
        """Merges src[lo:mid] and src[mid:hi] into dst[lo:hi], taking the left run on ties."""
        (src_keys, src_positions), (dst_keys, dst_positions) = src, dst

        def step(t, left, right):
            left_key, right_key = load(b, src_keys, left, wide), load(b, src_keys, right, wide)
            left_done = b.icmp_signed(">=", left, mid)
            right_smaller = b.icmp_unsigned("<", right_key, left_key)
            take_right = b.and_(b.icmp_signed("<", right, hi), b.or_(left_done, right_smaller))
            store(b, b.select(take_right, right_key, left_key), dst_keys, t)
            position = b.select(take_right, load(b, src_positions, right, I32), load(b, src_positions, left, I32))
            store(b, position, dst_positions, t)
            step_right = b.zext(take_right, I64)
            return b.add(left, b.sub(as_i64(1), step_right)), b.add(right, step_right)
        emit_loop(b, lo, hi, step, carried=(lo, mid), name="merge")

    def _gather(self, b, operands, results, in_base, out_base, positions):
        spec = self.spec

        def copy(j):
            position = load(b, positions, j, I32)
            out = b.add(out_base, b.mul(j, as_i64(spec.inner)))
            for operand, result, dtype in zip(operands, results, self.dtypes):
                store(b, self._element(b, operand, dtype, in_base, position), result, out)
            if spec.with_positions:
                store(b, position, results[-1], out)
        emit_loop(b, 0, spec.take, copy, name="gather")
