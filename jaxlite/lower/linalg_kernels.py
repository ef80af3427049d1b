"""Native cholesky, triangular_solve, lu, svd, eigh, qr (also pivoted) and eig for float32,
float64, complex64 and complex128, batched over leading axes.

Where numpy's LAPACK is a library lapack.py finds, the factorizations call it the way numpy
does, so jit gives eager's bits, and big solves call its BLAS:
  * cholesky: dpotrf (zpotrf), as np.linalg.cholesky calls it (double precision, column-major copy);
  * svd, eigh, qr: dgesdd, dsyevd, dgeqrf + dorgqr (zgesdd, zheevd, zgeqrf + zungqr), as numpy;
  * pivoted qr and eig: dgeqp3 and dgeev (zgeqp3, zgeev), as the eager versions call them;
  * lu of complex matrices: cgetrf/zgetrf, as the eager version;
  * triangular_solve of big (and of all complex) matrices: strsm/dtrsm (ctrsm/ztrsm).
A complex element is handled whole, as the vector of its two parts.
Otherwise each matrix is handled by the textbook algorithm with its innermost loop running
along a row (contiguous), so LLVM's vectorizer turns it into full-width vector code:
  * cholesky: row by row (Cholesky-Banachiewicz), each entry a dot product of two rows;
    a matrix that is not positive definite comes out all NaN, as the eager version's does;
  * triangular_solve (also small matrices with BLAS at hand): substitution on whole rows of
    the right-hand side (row AXPYs); a right-side solve x op(a) = b is the left-side one
    on the transposes, through scratch;
  * lu: right-looking elimination with partial pivoting, the same operations in the same
    order as the eager implementation (first largest |pivot|, divide, then subtract
    products without contraction), so both give the same bits.
"""
import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from jaxlite.core import dtypes, numpy_blas
from jaxlite.lower import lapack, llvm_helpers
from jaxlite.lower.llvm_helpers import (F32, F64, I1, I8, I32, I64, PTR, VOID, as_i64, declare, emit_loop, gep, load,
                                        store)
from jaxlite.lower.native_routines import Routine, define_routine

_FLOAT_TYPES = {np.dtype(np.float32): F32, np.dtype(np.float64): F64}
# A complex element is the vector of its two parts (the interleaved layout of numpy's and of
# split programs' buffers): loads, stores, copies and conversions take it whole.
C64, C128 = ir.VectorType(F32, 2), ir.VectorType(F64, 2)
_LAPACK_TYPES = {**_FLOAT_TYPES, np.dtype(np.complex64): C64, np.dtype(np.complex128): C128}
_CONTRACT = ("contract",)
_SUM = ("reassoc", "contract")


def _float_matrices(*avals):
    return all(np.dtype(aval.dtype) in _FLOAT_TYPES for aval in avals)


def _lapack_matrices(*avals):
    return all(np.dtype(aval.dtype) in _LAPACK_TYPES for aval in avals)


def _is_complex(element):
    return isinstance(element, ir.VectorType)


def _scalar_of(element):
    return element.element if _is_complex(element) else element


def _double_of(element):
    """The type LAPACK computes an element type in (numpy's linalg works in double precision)."""
    return C128 if _is_complex(element) else F64


def _element_bytes(element):
    return 16 if element in (C128,) else 8 if element in (F64, C64) else 4


def _constant(element, value):
    """A real or complex constant of `element`."""
    if not _is_complex(element):
        return ir.Constant(element, value.real if isinstance(value, complex) else value)
    value = complex(value)
    return ir.Constant(element, [ir.Constant(element.element, part) for part in (value.real, value.imag)])


def _conj(b, z):
    """conj(z): its imaginary part negated (a multiplication by (1, -1) rounds nothing)."""
    return b.fmul(z, ir.Constant(z.type, [ir.Constant(z.type.element, 1.0), ir.Constant(z.type.element, -1.0)]))


# numpy's complex LAPACK and BLAS routines, by the name of their real counterparts.
_COMPLEX_ROUTINES = {"dpotrf": "zpotrf", "dgeqrf": "zgeqrf", "dgeqp3": "zgeqp3", "dorgqr": "zungqr", "dsyevd": "zheevd",
                     "dgesdd": "zgesdd", "dgeev": "zgeev", "strsm": "ctrsm", "dtrsm": "ztrsm"}


def _routine(real_routine, element):
    return _COMPLEX_ROUTINES[real_routine] if _is_complex(element) else real_routine


def _batch(shape):
    return math.prod(map(int, shape[:-2]))


class _Matrix:
    """Element (i, j) of one matrix of a batch: a row-major rows x cols block at `base`."""

    def __init__(self, b, pointer, entry, rows, cols, element_type):
        self.b, self.rows, self.cols, self.element_type = b, rows, cols, element_type
        self.base = b.gep(pointer, [b.mul(entry, as_i64(rows * cols))], inbounds=True, source_etype=element_type)

    def offset(self, i, j):
        return self.b.add(self.b.mul(as_i64(i), as_i64(self.cols)), as_i64(j))

    def load(self, i, j):
        return load(self.b, self.base, self.offset(i, j), self.element_type)

    def store(self, value, i, j):
        store(self.b, value, self.base, self.offset(i, j))


class _Symmetrized:
    """(m + m^T) / 2 of a square _Matrix m, read only: (m[i, j] + m[j, i]) * 0.5 in its
    dtype, as the eager cholesky computes it."""

    def __init__(self, matrix):
        self.matrix, self.b, self.rows, self.cols = matrix, matrix.b, matrix.rows, matrix.cols
        self.element_type = matrix.element_type

    def load(self, i, j):
        mirrored = self.matrix.load(j, i)
        return self.average(self.matrix.load(i, j), _conj(self.b, mirrored) if _is_complex(self.element_type) else mirrored)

    def average(self, x, y):
        half = ir.Constant(_scalar_of(self.element_type), 0.5)
        if isinstance(x.type, ir.VectorType):
            half = ir.Constant(x.type, [half] * x.type.count)
        return self.b.fmul(self.b.fadd(x, y), half)


# ---------------------------------------------------------------- calls of numpy's LAPACK

def _call_lapack(b, routine, arguments, characters, one_thread=False):
    """Call numpy's LAPACK or BLAS `routine` (lapack.py) the Fortran way: every argument a
    pointer, then the hidden lengths of its first `characters` arguments (gfortran's
    convention). It runs as in numpy, with IEEE subnormals (a caller may have set FTZ/DAZ);
    on one OpenBLAS thread if asked (as core.numpy_blas.single_threaded does it)."""
    saved = llvm_helpers.save_and_keep_denormals(b, _entry_builder(b))
    function = declare(b.module, lapack.symbol(routine), VOID, [PTR] * len(arguments) + [I64] * characters)
    if one_thread:
        threads = b.call(declare(b.module, lapack.GET_THREADS_SYMBOL, I32, []), [])
        changes = b.icmp_signed("!=", threads, ir.Constant(I32, 1))
        set_threads = declare(b.module, lapack.SET_THREADS_SYMBOL, VOID, [I32])
        with b.if_then(changes):
            b.call(set_threads, [ir.Constant(I32, 1)])
    b.call(function, list(arguments) + [as_i64(1)] * characters)
    if one_thread:
        with b.if_then(changes):
            b.call(set_threads, [threads])
    llvm_helpers.restore_mxcsr(b, saved)


def _entry_builder(b):
    """A builder at the start of b's function (its allocas do not grow the stack in loops)."""
    allocas = ir.IRBuilder()
    allocas.position_at_start(b.function.entry_basic_block)
    return allocas


def _by_reference(b, value):
    """A pointer to `value` (a Fortran argument passed by reference); a constant is stored
    once in the entry block."""
    allocas = _entry_builder(b)
    slot = allocas.alloca(value.type)
    (allocas if isinstance(value, ir.Constant) else b).store(value, slot)
    return slot


def _fortran_arguments(b, values, int_bits):
    """Pointers to LAPACK arguments: a one-letter str is a CHARACTER, an int or an i64 value
    an INTEGER."""
    integer = ir.IntType(int_bits)

    def value_of(value):
        if isinstance(value, str):
            return ir.Constant(I8, ord(value))
        if isinstance(value, int):
            return ir.Constant(integer, value)
        return b.trunc(value, integer) if int_bits < 64 else value
    return [_by_reference(b, value_of(value)) for value in values]


def _widen(b, element):
    return (lambda x: b.fpext(x, _like(x, F64))) if _scalar_of(element) != F64 else None


def _narrow(b, element):
    return (lambda x: b.fptrunc(x, _like(x, _scalar_of(element)))) if _scalar_of(element) != F64 else None


def _like(value, element):
    """`element`, or a vector of them when value is a vector."""
    return ir.VectorType(element, value.type.count) if isinstance(value.type, ir.VectorType) else element


# ---------------------------------------------------------------- cholesky

@dataclass(frozen=True)
class CholeskySpec:
    dtype: np.dtype
    batch: int
    n: int
    symmetrize: bool = False    # factor (a + a^T) / 2

    def build(self):
        name = "native_cholesky"
        module = define_routine(name, 2, self.batch, self._emit_matrix)
        return Routine(module, name, self.batch, 0, self.n ** 3 / 3)

    def _emit_matrix(self, b, pointers, scratch, entry):
        element = _FLOAT_TYPES[self.dtype]
        a, factor = (_Matrix(b, p, entry, self.n, self.n, element) for p in pointers)
        a = _Symmetrized(a) if self.symmetrize else a
        zero = ir.Constant(element, 0.0)

        def dot(i, j):
            """The sum over k < j of L[i, k] L[j, k] (two rows: vectorizes)."""
            def add_product(k, acc):
                return [b.fadd(acc, b.fmul(factor.load(i, k), factor.load(j, k), flags=_SUM), flags=_SUM)]
            return emit_loop(b, 0, j, add_product, carried=[zero], name="k")[0]

        def row(i, failed):
            def below_diagonal(j):
                factor.store(b.fdiv(b.fsub(a.load(i, j), dot(i, j)), factor.load(j, j)), i, j)
            emit_loop(b, 0, i, below_diagonal, name="j")
            pivot = b.fsub(a.load(i, i), dot(i, i))
            factor.store(b.call(_unary_intrinsic(b.module, "sqrt", element), [pivot]), i, i)
            emit_loop(b, b.add(i, as_i64(1)), self.n, lambda j: factor.store(zero, i, j), name="upper")
            # Not positive definite: a pivot that is not > 0 (or NaN) fails the whole matrix.
            return [b.or_(failed, b.fcmp_unordered("ule", pivot, zero))]
        failed = emit_loop(b, 0, self.n, row, carried=[ir.Constant(I1, 0)])[0]
        with b.if_then(failed):
            _fill_nan(b, factor)


@dataclass(frozen=True)
class PotrfSpec:
    """cholesky as np.linalg.cholesky computes it, so jit gives eager's bits: dpotrf("L") in
    double precision (also for float32) on a column-major copy, the upper triangle zeroed,
    rounded to the dtype. A matrix dpotrf fails on (not positive definite) comes out all
    NaN, as in the eager version. int_bits describes this process's LAPACK (it keys the
    persistent cache). One thread runs the batch, and OpenBLAS runs each call on one
    thread, as the eager version has it (core/numpy_blas.py)."""
    dtype: np.dtype
    batch: int
    n: int
    int_bits: int
    one_thread: bool    # whether numpy's LAPACK is an OpenBLAS whose thread count we can set
    symmetrize: bool    # factor (a + a^T) / 2, computed in the dtype as the eager version does

    def build(self):
        name = "lapack_cholesky"
        module = define_routine(name, 2, self.batch, self._emit_matrix)
        return Routine(module, name, self.batch, _element_bytes(_double_of(_LAPACK_TYPES[self.dtype])) * self.n ** 2, 0)

    def _emit_matrix(self, b, pointers, scratch, entry):
        element, n = _LAPACK_TYPES[self.dtype], self.n
        a, factor = (_Matrix(b, p, entry, n, n, element) for p in pointers)
        # The column-major matrix LAPACK sees, as its row-major transpose.
        work = _Matrix(b, scratch, as_i64(0), n, n, _double_of(element))
        _copy(b, _Symmetrized(a) if self.symmetrize else a, work, transposed=True, convert=_widen(b, element))
        uplo, order, lda, info = _fortran_arguments(b, ["L", n, max(1, n), 0], self.int_bits)
        _call_lapack(b, _routine("dpotrf", element), [uplo, order, work.base, lda, info], characters=1,
                     one_thread=self.one_thread)
        integer = ir.IntType(self.int_bits)
        with b.if_else(b.icmp_signed("==", b.load(info, typ=integer), ir.Constant(integer, 0))) as (then, otherwise):
            with then:
                _copy(b, work, factor, transposed=True, convert=_narrow(b, element))
                _zero_strict_upper(b, factor)
            with otherwise:
                _fill_nan(b, factor)


def _zero_strict_upper(b, matrix):
    zero = _constant(matrix.element_type, 0.0)
    emit_loop(b, 0, matrix.rows, lambda i: emit_loop(
        b, b.add(i, as_i64(1)), matrix.cols, lambda j: matrix.store(zero, i, j), name="j"), name="row")


def _fill_nan(b, matrix):
    nan = _constant(matrix.element_type, complex(np.nan, np.nan) if _is_complex(matrix.element_type) else np.nan)
    emit_loop(b, 0, matrix.rows * matrix.cols, lambda k: store(b, nan, matrix.base, k), name="nan")


def _fill_identity(b, matrix):
    one, zero = _constant(matrix.element_type, 1.0), _constant(matrix.element_type, 0.0)

    def fill_row(i):
        emit_loop(b, 0, matrix.cols, lambda j: matrix.store(b.select(b.icmp_signed("==", i, j), one, zero), i, j),
                  name="j")
    emit_loop(b, 0, matrix.rows, fill_row, name="row")


def _unary_intrinsic(module, name, element):
    """llvm.<name>.f32 or .f64, declared once per module."""
    name = f"llvm.{name}." + ("f32" if isinstance(element, ir.FloatType) else "f64")
    return declare(module, name, element, [element])


def cholesky_spec(eqn):
    """numpy's dpotrf where lapack.py finds it (eager's bits), else the hand-written routine."""
    aval = eqn.inputs[0].aval
    if not _lapack_matrices(aval):
        return None
    dtype, batch, n = np.dtype(aval.dtype), _batch(aval.shape), int(aval.shape[-1])
    symmetrize = eqn.params["symmetrize_input"]
    function = lapack.find("zpotrf") if dtypes.is_complex(dtype) else lapack.potrf()
    if function is None:
        return CholeskySpec(dtype, batch, n, symmetrize) if _float_matrices(aval) else None
    return PotrfSpec(dtype, batch, n, function.int_bits, numpy_blas.thread_control() is not None, symmetrize)


# ---------------------------------------------------------------- triangular_solve

@dataclass(frozen=True)
class TriangularSolveSpec:
    """op(a) x = b (left_side) or x op(a) = b for a batch of m x m triangles a."""
    dtype: np.dtype
    batch: int
    m: int
    rhs: int              # columns of b (left side) or rows of b (right side)
    left_side: bool
    lower: bool
    transpose_a: bool
    unit_diagonal: bool

    def build(self):
        name = "native_triangular_solve"
        module = define_routine(name, 3, self.batch, self._emit_matrix)
        scratch = 0 if self.left_side else self.m * self.rhs * self.dtype.itemsize
        return Routine(module, name, self.batch, scratch, self.m * self.m * self.rhs)

    def _emit_matrix(self, b, pointers, scratch, entry):
        """Solves t w = w in place on a contiguous m x rhs w: x itself on the left side, the
        transpose of b in scratch on the right (x op(a) = b is op(a)^T x^T = b^T)."""
        element = _FLOAT_TYPES[self.dtype]
        m, rhs = self.m, self.rhs
        a = _Matrix(b, pointers[0], entry, m, m, element)
        rhs_in = _Matrix(b, pointers[1], entry, *((m, rhs) if self.left_side else (rhs, m)), element)
        out = _Matrix(b, pointers[2], entry, *((m, rhs) if self.left_side else (rhs, m)), element)
        work = out if self.left_side else _Matrix(b, scratch, as_i64(0), m, rhs, element)
        _copy(b, rhs_in, work, transposed=not self.left_side)
        t_transposed = self.transpose_a != (not self.left_side)
        t_lower = self.lower != t_transposed

        def t(i, k):
            return a.load(k, i) if t_transposed else a.load(i, k)

        def solve_row(step):
            i = step if t_lower else b.sub(as_i64(m - 1), step)
            known = (as_i64(0), i) if t_lower else (b.add(i, as_i64(1)), as_i64(m))

            def eliminate(k):
                coefficient = t(i, k)
                emit_loop(b, 0, rhs, lambda c: work.store(
                    b.fsub(work.load(i, c), b.fmul(coefficient, work.load(k, c), flags=_CONTRACT),
                           flags=_CONTRACT), i, c), name="c")
            emit_loop(b, *known, eliminate, name="k")
            if not self.unit_diagonal:
                diagonal = t(i, i)
                emit_loop(b, 0, rhs, lambda c: work.store(b.fdiv(work.load(i, c), diagonal), i, c), name="d")
        emit_loop(b, 0, m, solve_row)
        if not self.left_side:
            _copy(b, work, out, transposed=True)


@dataclass(frozen=True)
class TrsmSpec:
    """triangular_solve by numpy's BLAS (strsm, dtrsm, ctrsm or ztrsm, by the dtype: lapack.py)
    on the row-major operands as stored, after copying b to x (trsm solves in place).

    Column-major BLAS sees each row-major matrix as its transpose, and op(a) x = b transposed
    is x^T op(a)^T = b^T: the side and the stored triangle swap, op stays.

    Each right-hand side is solved alone, so the work goes in chunks of _TRSM_CHUNK of them,
    which the native pool spreads over its threads, each calling OpenBLAS on one thread (as
    cholesky: core/numpy_blas.py). Threaded by OpenBLAS instead, 512 x 512 took 1.5 ms, and
    5-7 ms as often with other processes running on the machine. trsm's bits depend neither
    on its threads nor on the chunks (measured)."""
    dtype: np.dtype
    batch: int
    m: int
    rhs: int
    left_side: bool
    lower: bool
    transpose_a: bool
    unit_diagonal: bool
    int_bits: int
    one_thread: bool    # whether numpy's LAPACK is an OpenBLAS whose thread count we can set
    conjugate_a: bool = False   # op(a) = a^H (with transpose_a; a conjugate alone has no BLAS op)

    @property
    def _chunks(self):
        return max(1, -(-self.rhs // _TRSM_CHUNK))

    def build(self):
        name = "blas_triangular_solve"
        entries = self.batch * self._chunks
        module = define_routine(name, 3, entries, self._emit_chunk)
        return Routine(module, name, entries, 0, self.m * self.m * min(self.rhs, _TRSM_CHUNK))

    def _emit_chunk(self, b, pointers, scratch, entry):
        element, m = _LAPACK_TYPES[self.dtype], self.m
        matrix, chunk = b.sdiv(entry, as_i64(self._chunks)), b.srem(entry, as_i64(self._chunks))
        shapes = [(m, m)] + [(m, self.rhs) if self.left_side else (self.rhs, m)] * 2
        a, rhs, x = (_Matrix(b, p, matrix, rows, cols, element) for p, (rows, cols) in zip(pointers, shapes))
        start = b.mul(chunk, as_i64(_TRSM_CHUNK))
        end = b.add(start, as_i64(_TRSM_CHUNK))
        stop = b.select(b.icmp_signed("<", end, as_i64(self.rhs)), end, as_i64(self.rhs))
        blocks = ((0, m), (start, stop)) if self.left_side else ((start, stop), (0, m))
        _copy_block(b, rhs, x, *blocks)
        if m * self.rhs == 0:
            return
        count = b.sub(stop, start)
        op = ("C" if self.conjugate_a else "T") if self.transpose_a else "N"
        characters = ("R" if self.left_side else "L", "U" if self.lower else "L", op, "U" if self.unit_diagonal else "N")
        sizes = (count, m, max(1, m), self.rhs) if self.left_side else (m, count, max(1, m), m)
        *flags, rows, cols, lda, ldb = _fortran_arguments(b, characters + sizes, self.int_bits)
        alpha = _by_reference(b, _constant(element, 1.0))
        solved = gep(b, x.base, x.offset(*(block[0] for block in blocks)), element)
        routine = _routine("strsm" if _scalar_of(element) == F32 else "dtrsm", element)
        _call_lapack(b, routine, flags + [rows, cols, alpha, a.base, lda, solved, ldb], characters=4,
                     one_thread=self.one_thread)


_TRSM_CHUNK = 128


def _copy_block(b, source, target, rows, cols, transposed=False, convert=None):
    """target = source over the (start, stop) ranges rows x cols, or into the transposed
    places (each element passed through `convert` if given)."""
    def copy_element(i, j):
        value = source.load(i, j)
        target.store(convert(value) if convert else value, *((j, i) if transposed else (i, j)))
    emit_loop(b, *rows, lambda i: emit_loop(b, *cols, lambda j: copy_element(i, j), name="j"), name="row")


def _copy(b, source, target, transposed, convert=None):
    """target = source, or its transpose (each element passed through `convert` if given)."""
    if not transposed or _is_complex(source.element_type):
        _copy_block(b, source, target, (0, source.rows), (0, source.cols), transposed, convert)
        return
    # Element by element, a transpose stores (or loads) along a column: ~1.4 ns an element at
    # 512 x 512, 3x the whole copy's cost in 8 x 8 tiles transposed in vector registers.
    rows, cols = (extent // _TILE * _TILE for extent in (source.rows, source.cols))
    emit_loop(b, 0, rows, lambda i: emit_loop(
        b, 0, cols, lambda j: _transpose_tile(b, source, target, i, j, convert), step=_TILE, name="tile_j"),
        step=_TILE, name="tile_i")
    _copy_block(b, source, target, (rows, source.rows), (0, source.cols), True, convert)
    _copy_block(b, source, target, (0, rows), (cols, source.cols), True, convert)


_TILE = 8


def _transpose_tile(b, source, target, i, j, convert):
    """target[j:j+8, i:i+8] = source[i:i+8, j:j+8]^T: eight row vectors, then for each bit h
    of the position in the tile, the off-diagonal h x h blocks of every 2h x 2h block swap
    (after the three exchanges, row and column bits have traded places). A _Symmetrized
    source averages that with the tile at (j, i), read as it is stored."""
    matrix = source.matrix if isinstance(source, _Symmetrized) else source
    vector = ir.VectorType(matrix.element_type, _TILE)

    def row(r, first, second):
        return b.load(gep(b, matrix.base, matrix.offset(b.add(first, as_i64(r)), second), matrix.element_type),
                      typ=vector, align=1)
    rows = [row(r, i, j) for r in range(_TILE)]
    h = _TILE // 2
    while h:
        for r in (r for r in range(_TILE) if not r & h):
            low = [c if not c & h else _TILE + c - h for c in range(_TILE)]
            high = [c + h if not c & h else _TILE + c for c in range(_TILE)]
            rows[r], rows[r + h] = [b.shuffle_vector(rows[r], rows[r + h], ir.Constant(ir.VectorType(I32, _TILE), mask))
                                    for mask in (low, high)]
        h //= 2
    if matrix is not source:
        rows = [source.average(rows[r], row(r, j, i)) for r in range(_TILE)]
    for r, values in enumerate(rows):
        b.store(convert(values) if convert else values,
                gep(b, target.base, target.offset(b.add(j, as_i64(r)), i), target.element_type), align=1)


def triangular_solve_spec(eqn):
    """BLAS's trsm for big matrices (where lapack.py finds it), else the substitution routine."""
    a, rhs = (v.aval for v in eqn.inputs)
    if not _lapack_matrices(a, rhs):
        return None
    params = eqn.params
    columns = rhs.shape[-1] if params["left_side"] else rhs.shape[-2]
    shape = (np.dtype(a.dtype), _batch(a.shape), int(a.shape[-1]), int(columns))
    flags = tuple(params[name] for name in ("left_side", "lower", "transpose_a", "unit_diagonal"))
    function = lapack.trsm(a.dtype)
    if not _float_matrices(a):      # complex: BLAS's trsm at any size, which has no conjugate-only op(a)
        if function is None or params["conjugate_a"] and not params["transpose_a"]:
            return None
        return TrsmSpec(*shape, *flags, function.int_bits, numpy_blas.thread_control() is not None,
                        params["conjugate_a"])
    if function is None or shape[2] ** 2 * shape[3] < _TRSM_MIN_WORK:
        return TriangularSolveSpec(*shape, *flags)
    return TrsmSpec(*shape, *flags, function.int_bits, numpy_blas.thread_control() is not None)


# Below ~80^3 multiply-adds a matrix, the substitution loops beat BLAS's trsm (its blocking
# and call costs do not pay; and they split a batch over the pool's threads, where
# numpy's BLAS calls run one after the other). Measured: m = rhs = 64, batch 16: 0.17 ms
# against 0.27; m = rhs = 96: 0.43 against 0.36; 512: 3.2 against 1.1.
_TRSM_MIN_WORK = 2 ** 19


# ---------------------------------------------------------------- lu

@dataclass(frozen=True)
class LuSpec:
    dtype: np.dtype
    batch: int
    m: int
    n: int

    def build(self):
        name = "native_lu"
        module = define_routine(name, 4, self.batch, self._emit_matrix)
        return Routine(module, name, self.batch, 0, self.m * self.n * min(self.m, self.n))

    def _emit_matrix(self, b, pointers, scratch, entry):
        element = _FLOAT_TYPES[self.dtype]
        m, n, steps = self.m, self.n, min(self.m, self.n)
        a, lu = (_Matrix(b, p, entry, m, n, element) for p in pointers[:2])
        pivots = _Matrix(b, pointers[2], entry, 1, steps, I32)
        permutation = _Matrix(b, pointers[3], entry, 1, m, I32)
        _copy(b, a, lu, transposed=False)
        emit_loop(b, 0, m, lambda i: permutation.store(b.trunc(i, I32), 0, i))

        def eliminate(k):
            p = self._pivot_row(b, lu, k)
            pivots.store(b.trunc(p, I32), 0, k)
            emit_loop(b, 0, n, lambda j: _swap(b, lu, (k, j), (p, j)), name="swap")
            _swap(b, permutation, (0, k), (0, p))
            pivot = lu.load(k, k)
            below = (b.add(k, as_i64(1)), m)
            # A zero pivot leaves its (zero) column unscaled, as LAPACK's getrf: no 0/0 NaNs.
            zero_pivot = b.fcmp_ordered("==", pivot, ir.Constant(pivot.type, 0.0))
            emit_loop(b, *below, lambda i: lu.store(
                b.select(zero_pivot, lu.load(i, k), b.fdiv(lu.load(i, k), pivot)), i, k), name="scale")

            def update_row(i):
                multiplier = lu.load(i, k)
                emit_loop(b, b.add(k, as_i64(1)), n, lambda j: lu.store(
                    b.fsub(lu.load(i, j), b.fmul(multiplier, lu.load(k, j))), i, j), name="j")
            emit_loop(b, *below, update_row, name="update")
        emit_loop(b, 0, steps, eliminate, name="k")

    @staticmethod
    def _pivot_row(b, lu, k):
        """The first row i >= k with the largest |lu[i, k]|, a NaN counting as largest (np.argmax)."""
        fabs = _unary_intrinsic(b.module, "fabs", lu.element_type)

        def candidate(i, best, best_row):
            value = b.call(fabs, [lu.load(i, k)])
            is_nan = b.fcmp_unordered("uno", value, value)
            best_is_nan = b.fcmp_unordered("uno", best, best)
            better = b.or_(b.fcmp_ordered(">", value, best), b.and_(is_nan, b.not_(best_is_nan)))
            return [b.select(better, value, best), b.select(better, i, best_row)]
        first = b.call(fabs, [lu.load(k, k)])
        return emit_loop(b, b.add(k, as_i64(1)), lu.rows, candidate, carried=[first, k], name="p")[1]


def _swap(b, matrix, first, second):
    x, y = matrix.load(*first), matrix.load(*second)
    matrix.store(y, *first)
    matrix.store(x, *second)


@dataclass(frozen=True)
class GetrfSpec:
    """lu of complex matrices as the eager version computes it: LAPACK's cgetrf/zgetrf (in
    the dtype) on a column-major copy; its 1-based row interchanges become the 0-based int32
    pivots, and applied in order to the identity, the permutation."""
    dtype: np.dtype
    batch: int
    m: int
    n: int
    int_bits: int
    one_thread: bool

    def build(self):
        name = "lapack_lu"
        module = define_routine(name, 4, self.batch, self._emit_matrix)
        scratch = self.dtype.itemsize * self.m * self.n + 8 * min(self.m, self.n) + 64
        return Routine(module, name, self.batch, scratch, self.m * self.n * min(self.m, self.n))

    def _emit_matrix(self, b, pointers, scratch, entry):
        element, (m, n), steps = _LAPACK_TYPES[self.dtype], (self.m, self.n), min(self.m, self.n)
        a, lu = (_Matrix(b, p, entry, m, n, element) for p in pointers[:2])
        pivots = _Matrix(b, pointers[2], entry, 1, steps, I32)
        permutation = _Matrix(b, pointers[3], entry, 1, m, I32)
        emit_loop(b, 0, m, lambda i: permutation.store(b.trunc(i, I32), 0, i))
        if m * n == 0:
            return
        work = _Matrix(b, scratch, as_i64(0), n, m, element)       # column-major m x n
        integer = ir.IntType(self.int_bits)
        interchanges = _Matrix(b, gep(b, scratch, self.dtype.itemsize * m * n, I8), as_i64(0), 1, steps, integer)
        _copy(b, a, work, transposed=True)
        rows, cols, lda, info = _fortran_arguments(b, [m, n, m, 0], self.int_bits)
        _call_lapack(b, lapack.getrf_routine(self.dtype), [rows, cols, work.base, lda, interchanges.base, info], characters=0,
                     one_thread=self.one_thread)
        _copy(b, work, lu, transposed=True)

        def interchange(k):
            p = b.sub(b.sext(interchanges.load(0, k), I64) if self.int_bits < 64 else interchanges.load(0, k),
                      as_i64(1))
            pivots.store(b.trunc(p, I32), 0, k)
            _swap(b, permutation, (0, k), (0, p))
        emit_loop(b, 0, steps, interchange, name="k")


def lu_spec(eqn):
    """The hand-written elimination for real matrices; complex ones call LAPACK's getrf, as eager."""
    aval = eqn.inputs[0].aval
    dtype = np.dtype(aval.dtype)
    if dtypes.is_complex(dtype):
        function = lapack.find(lapack.getrf_routine(dtype))
        if function is None:
            return None
        return GetrfSpec(dtype, _batch(aval.shape), *map(int, aval.shape[-2:]), function.int_bits,
                         numpy_blas.thread_control() is not None)
    if not _float_matrices(aval):
        return None
    return LuSpec(dtype, _batch(aval.shape), *map(int, aval.shape[-2:]))


# ---------------------------------------------------------------- svd

@dataclass(frozen=True)
class SvdSpec:
    """(s, u, vt) of a batch of m x n matrices, as np.linalg.svd computes them: dgesdd in
    double precision (also for float32) on a column-major copy, jobz "A" (full factors),
    "S" (thin) or "N" (s alone, as np.linalg.svd(compute_uv=False)), with the LWORK numpy's workspace query gives (LAPACK's blocking depends on
    it); results rounded to the dtype and made row-major. A matrix LAPACK fails on (one
    holding NaN, or no convergence) comes out all NaN, as in numpy's buffers and in JAX.
    OpenBLAS runs each call on one thread, as the eager version has it (core/numpy_blas.py).
    lwork and int_bits describe this process's LAPACK, so they key the persistent cache."""
    dtype: np.dtype
    batch: int
    m: int
    n: int
    full_matrices: bool
    compute_uv: bool
    lwork: int
    int_bits: int
    one_thread: bool = False    # whether numpy's LAPACK is an OpenBLAS whose thread count we can set

    @property
    def jobz(self):
        return ("A" if self.full_matrices else "S") if self.compute_uv else "N"

    def build(self):
        name = "native_svd"
        module = define_routine(name, 4 if self.compute_uv else 2, self.batch, self._emit_matrix)
        # One thread, as numpy runs the batch (LAPACK calls from several threads at once
        # would share OpenBLAS's threads).
        return Routine(module, name, self.batch, self._scratch_layout()[1], 0)

    @property
    def _factor_shapes(self):
        """(rows, cols) of u and vt (for jobz "N", the single unread doubles LAPACK is passed)."""
        m, n, k = self.m, self.n, min(self.m, self.n)
        if not self.compute_uv:
            return (1, 1), (1, 1)
        return ((m, m), (n, n)) if self.full_matrices else ((m, k), (k, n))

    @property
    def _complex(self):
        return dtypes.is_complex(self.dtype)

    def _scratch_layout(self):
        """Byte offsets in scratch of LAPACK's arguments, and the total size."""
        (_, u_cols), (vt_rows, _) = self._factor_shapes
        k, big = min(self.m, self.n), max(self.m, self.n)
        z = 16 if self._complex else 8
        sizes = {"ints": 8 * (1 + len(_GESDD_INTS)), "a": z * self.m * self.n, "s": 8 * k, "u": z * self.m * u_cols,
                 "vt": z * vt_rows * self.n, "work": z * self.lwork, "iwork": self.int_bits * k}
        if self._complex:   # zgesdd's RWORK, as large as LAPACK's documentation asks for any jobz
            sizes["rwork"] = 8 * max(7 * k, 5 * k * k + 5 * k, 2 * big * k + 2 * k * k + k)
        return _scratch_regions(sizes)

    def _emit_matrix(self, b, pointers, scratch, entry):
        element = _LAPACK_TYPES[self.dtype]
        double, real = _double_of(element), _scalar_of(element)
        m, n, k = self.m, self.n, min(self.m, self.n)
        (u_rows, u_cols), (vt_rows, vt_cols) = self._factor_shapes
        shapes = [(m, n), (1, k)] + ([(u_rows, u_cols), (vt_rows, vt_cols)] if self.compute_uv else [])
        a, *results = (_Matrix(b, p, entry, rows, cols, real if position == 1 else element)
                       for position, (p, (rows, cols)) in enumerate(zip(pointers, shapes)))
        if k == 0:      # LAPACK returns at once; numpy makes the full factors identities
            for factor in results[1:]:
                _fill_identity(b, factor)
            return
        region = _region_pointers(b, scratch, self._scratch_layout()[0])
        # Column-major LAPACK matrices, seen as their row-major transposes.
        work_a, work_u, work_vt = (_Matrix(b, region[name], as_i64(0), rows, cols, double)
                                   for name, rows, cols in (("a", n, m), ("u", u_cols, m), ("vt", vt_cols, vt_rows)))
        work_s = _Matrix(b, region["s"], as_i64(0), 1, k, F64)
        _copy(b, a, work_a, transposed=True, convert=_widen(b, element))
        info = self._emit_gesdd_call(b, region)
        with b.if_else(b.icmp_signed("==", info, ir.Constant(info.type, 0))) as (succeeded, failed):
            with succeeded:
                for work, result in zip((work_s, work_u, work_vt), results):
                    _copy(b, work, result, transposed=work is not work_s, convert=_narrow(b, result.element_type))
            with failed:
                for result in results:
                    _fill_nan(b, result)

    def _emit_gesdd_call(self, b, region):
        """Call dgesdd (zgesdd) on the scratch regions; returns its INFO."""
        ints = self._store_ints(b, region["ints"])
        rwork = [region["rwork"]] if self._complex else []
        _call_lapack(b, "zgesdd" if self._complex else "dgesdd",
                     [region["ints"], ints["m"], ints["n"], region["a"], ints["ld"], region["s"], region["u"], ints["ld"],
                      region["vt"], ints["ld_vt"], region["work"], ints["lwork"], *rwork, region["iwork"], ints["info"]],
                     characters=1, one_thread=self.one_thread)
        return b.load(ints["info"], typ=ir.IntType(self.int_bits))

    def _store_ints(self, b, base):
        """jobz (a character) in the first slot, then LAPACK's integer arguments: pointers by name."""
        integer = ir.IntType(self.int_bits)
        b.store(ir.Constant(I8, ord(self.jobz)), base)
        vt_rows = self._factor_shapes[1][0]
        values = dict(m=self.m, n=self.n, ld=max(self.m, 1), ld_vt=max(vt_rows, 1), lwork=self.lwork, info=0)
        pointers = {name: gep(b, base, 1 + slot, I64) for slot, name in enumerate(_GESDD_INTS)}
        for name, value in values.items():
            b.store(ir.Constant(integer, value), pointers[name])
        return pointers


_GESDD_INTS = ("m", "n", "ld", "ld_vt", "lwork", "info")    # after jobz's slot, 8 bytes each


def svd_spec(eqn):
    aval = eqn.inputs[0].aval
    if not _lapack_matrices(aval):
        return None
    function = lapack.find("zgesdd") if dtypes.is_complex(aval.dtype) else lapack.gesdd()
    if function is None:
        return None
    m, n = map(int, aval.shape[-2:])
    full_matrices, compute_uv = eqn.params["full_matrices"], eqn.params["compute_uv"]
    spec = SvdSpec(np.dtype(aval.dtype), _batch(aval.shape), m, n, full_matrices, compute_uv, 1, function.int_bits,
                   numpy_blas.thread_control() is not None)
    lwork = lapack.gesdd_workspace(spec.jobz, m, n, spec._complex) if min(m, n) else 1
    return dataclasses.replace(spec, lwork=lwork)


# ---------------------------------------------------------------- eigh and qr

def _scratch_regions(sizes):
    """Byte offsets of named scratch regions of the given byte sizes (64-byte aligned), and the total."""
    offsets, total = {}, 0
    for region, size in sizes.items():
        offsets[region] = total
        total += -(-size // 64) * 64
    return offsets, total


def _region_pointers(b, scratch, offsets):
    return {name: b.gep(scratch, [as_i64(offset)], inbounds=True, source_etype=I8) for name, offset in offsets.items()}


@dataclass(frozen=True)
class EighSpec:
    """(v, w) as np.linalg.eigh computes them: dsyevd("V", uplo) in double precision (also
    for float32) on a column-major copy, with the LWORK and LIWORK of a workspace query;
    results rounded to the dtype and made row-major. A matrix LAPACK fails on comes out all
    NaN, as in the eager version. One thread runs the batch, OpenBLAS on one thread, as
    the eager version runs it (core/numpy_blas.py)."""
    dtype: np.dtype
    batch: int
    n: int
    lower: bool
    lwork: int
    liwork: int
    int_bits: int
    one_thread: bool
    lrwork: int = 0     # zheevd's RWORK (complex matrices)

    def build(self):
        name = "lapack_eigh"
        module = define_routine(name, 3, self.batch, self._emit_matrix)
        return Routine(module, name, self.batch, self._layout()[1], 0)

    def _layout(self):
        n = self.n
        z = _element_bytes(_double_of(_LAPACK_TYPES[self.dtype]))
        return _scratch_regions({"a": z * n * n, "w": 8 * n, "work": z * self.lwork, "rwork": 8 * self.lrwork,
                                 "iwork": self.int_bits // 8 * self.liwork})

    def _emit_matrix(self, b, pointers, scratch, entry):
        element, n = _LAPACK_TYPES[self.dtype], self.n
        if n == 0:
            return
        a, v = (_Matrix(b, p, entry, n, n, element) for p in pointers[:2])
        w = _Matrix(b, pointers[2], entry, 1, n, _scalar_of(element))
        region = _region_pointers(b, scratch, self._layout()[0])
        work_a = _Matrix(b, region["a"], as_i64(0), n, n, _double_of(element))
        work_w = _Matrix(b, region["w"], as_i64(0), 1, n, F64)
        _copy(b, a, work_a, transposed=True, convert=_widen(b, element))
        jobz, uplo, order, lda, lwork, liwork, lrwork, info = _fortran_arguments(
            b, ["V", "L" if self.lower else "U", n, n, self.lwork, self.liwork, self.lrwork, 0], self.int_bits)
        rwork = [region["rwork"], lrwork] if _is_complex(element) else []
        _call_lapack(b, _routine("dsyevd", element), [jobz, uplo, order, work_a.base, lda, work_w.base, region["work"],
                                                      lwork, *rwork, region["iwork"], liwork, info],
                     characters=2, one_thread=self.one_thread)
        _copy_or_nan(b, info, self.int_bits, [(work_a, v, True), (work_w, w, False)])


def _copy_or_nan(b, info, int_bits, copies):
    """Where LAPACK's INFO is 0 copy each (work, result, transposed), rounded to the result's
    type, else fill the results with NaN."""
    integer = ir.IntType(int_bits)
    succeeded = b.icmp_signed("==", b.load(info, typ=integer), ir.Constant(integer, 0))
    with b.if_else(succeeded) as (then, otherwise):
        with then:
            for work, result, transposed in copies:
                _copy(b, work, result, transposed=transposed, convert=_narrow(b, result.element_type))
        with otherwise:
            for _, result, _ in copies:
                _fill_nan(b, result)


def _lapack_operand(eqn, real_routine):
    """(the aval, its element type, numpy's LAPACK routine for it) of an equation's operand,
    or None where the routine does not apply (another dtype, or no such routine found)."""
    aval = eqn.inputs[0].aval
    if not _lapack_matrices(aval):
        return None
    element = _LAPACK_TYPES[np.dtype(aval.dtype)]
    function = lapack.find(_routine(real_routine, element))
    return None if function is None else (aval, element, function)


def eigh_spec(eqn):
    found = _lapack_operand(eqn, "dsyevd")
    if found is None:
        return None
    aval, element, function = found
    n = int(aval.shape[-1])
    if _is_complex(element):
        lwork, lrwork, liwork = lapack.syevd_workspace(n, complex_values=True)
    else:
        (lwork, liwork), lrwork = lapack.syevd_workspace(n), 0
    return EighSpec(np.dtype(aval.dtype), _batch(aval.shape), n, eqn.params["lower"], lwork, liwork,
                    function.int_bits, numpy_blas.thread_control() is not None, lrwork)


@dataclass(frozen=True)
class QrSpec:
    """qr (q_cols > 0: q with q_cols columns and r with r_rows rows) or geqrf (q_cols = 0:
    the packed h and taus) as np.linalg.qr computes them: dgeqrf in double precision on a
    column-major copy, then dorgqr on its first columns (all m of them for a full q, the
    rest made unit columns), with workspace-queried LWORK, on one OpenBLAS thread as the
    eager version runs it. With pivoting, dgeqp3 factors instead (every column free), and
    its 1-based column order is the permutation, a third result (as the eager version,
    which calls the same routines)."""
    dtype: np.dtype
    batch: int
    m: int
    n: int
    q_cols: int
    r_rows: int
    lwork: int
    int_bits: int
    one_thread: bool
    pivoting: bool = False

    def build(self):
        name = "lapack_qr"
        module = define_routine(name, 3 + self.pivoting, self.batch, self._emit_matrix)
        return Routine(module, name, self.batch, self._layout()[1], 0)

    def _layout(self):
        m, n = self.m, self.n
        z = _element_bytes(_double_of(_LAPACK_TYPES[self.dtype]))
        return _scratch_regions({"a": z * m * n, "tau": z * max(1, min(m, n)), "q": z * m * self.q_cols,
                                 "work": z * self.lwork, "jpvt": 8 * max(1, n), "rwork": 16 * max(1, n)})

    def _emit_matrix(self, b, pointers, scratch, entry):
        element = _LAPACK_TYPES[self.dtype]
        double = _double_of(element)
        m, n, k = self.m, self.n, min(self.m, self.n)
        a = _Matrix(b, pointers[0], entry, m, n, element)
        region = _region_pointers(b, scratch, self._layout()[0])
        work_a = _Matrix(b, region["a"], as_i64(0), n, m, double)     # column-major m x n
        tau = _Matrix(b, region["tau"], as_i64(0), 1, k, double)
        _copy(b, a, work_a, transposed=True, convert=_widen(b, element))
        sizes = _fortran_arguments(b, [m, n, max(1, m), self.lwork, 0, self.q_cols, k], self.int_bits)
        rows, cols, lda, lwork, info, q_cols, reflectors = sizes
        if k and self.pivoting:
            columns = _Matrix(b, region["jpvt"], as_i64(0), 1, n, ir.IntType(self.int_bits))
            emit_loop(b, 0, n, lambda j: columns.store(ir.Constant(columns.element_type, 0), 0, j))    # all free
            rwork = [region["rwork"]] if _is_complex(element) else []
            _call_lapack(b, _routine("dgeqp3", element), [rows, cols, work_a.base, lda, columns.base, tau.base,
                                                          region["work"], lwork, *rwork, info],
                         characters=0, one_thread=self.one_thread)
        elif k:
            _call_lapack(b, _routine("dgeqrf", element), [rows, cols, work_a.base, lda, tau.base, region["work"], lwork, info],
                         characters=0, one_thread=self.one_thread)
        if self.pivoting:
            permutation = _Matrix(b, pointers[3], entry, 1, n, I32)
            emit_loop(b, 0, n, lambda j: permutation.store(
                b.sub(b.trunc(columns.load(0, j), I32), ir.Constant(I32, 1)) if k else b.trunc(j, I32), 0, j))
        narrow = _narrow(b, element)
        if not self.q_cols:
            h, taus = _Matrix(b, pointers[1], entry, m, n, element), _Matrix(b, pointers[2], entry, 1, k, element)
            _copy(b, work_a, h, transposed=True, convert=narrow)
            _copy(b, tau, taus, transposed=False, convert=narrow)
            return
        q = _Matrix(b, pointers[1], entry, m, self.q_cols, element)
        r = _Matrix(b, pointers[2], entry, self.r_rows, n, element)
        _copy_block(b, work_a, r, (0, n), (0, self.r_rows), transposed=True, convert=narrow)
        _zero_strict_lower(b, r)
        if not k:
            _fill_identity(b, q)
            return
        work_q = _Matrix(b, region["q"], as_i64(0), self.q_cols, m, double)
        _copy_block(b, work_a, work_q, (0, min(n, self.q_cols)), (0, m))
        _call_lapack(b, _routine("dorgqr", element), [rows, q_cols, reflectors, work_q.base, lda, tau.base, region["work"], lwork,
                                   info], characters=0, one_thread=self.one_thread)
        _copy(b, work_q, q, transposed=True, convert=narrow)


def _zero_strict_lower(b, matrix):
    zero = _constant(matrix.element_type, 0.0)
    emit_loop(b, 0, matrix.rows, lambda i: emit_loop(
        b, 0, b.select(b.icmp_signed("<", i, as_i64(matrix.cols)), i, as_i64(matrix.cols)),
        lambda j: matrix.store(zero, i, j), name="j"), name="row")


def _qr_spec(eqn, q_cols, r_rows, pivoting=False):
    found = _lapack_operand(eqn, "dorgqr") and _lapack_operand(eqn, "dgeqp3" if pivoting else "dgeqrf")
    if found is None:
        return None
    aval, element, function = found
    m, n = map(int, aval.shape[-2:])
    lwork = lapack.qr_workspace(m, n, q_cols, _is_complex(element), pivoting) if min(m, n) else 1
    return QrSpec(np.dtype(aval.dtype), _batch(aval.shape), m, n, q_cols, r_rows, lwork, function.int_bits,
                  numpy_blas.thread_control() is not None, pivoting)


def qr_spec(eqn, pivoting=False):
    m, n = map(int, eqn.inputs[0].aval.shape[-2:])
    k = m if eqn.params["full_matrices"] else min(m, n)
    return _qr_spec(eqn, k, k, pivoting)


def qr_pivoted_spec(eqn):
    return qr_spec(eqn, pivoting=True)


def geqrf_spec(eqn):
    return _qr_spec(eqn, 0, 0)


# ---------------------------------------------------------------- eig

@dataclass(frozen=True)
class EigSpec:
    """[w, vl (if left), vr (if right)] as the eager eig computes them: dgeev (zgeev for
    complex matrices) in double precision on a column-major copy, right eigenvectors always
    computed (as np.linalg.eig, so the eigenvalues are its bits), left ones by geev too when
    asked (eager forms them from vr's inverse: equal to rounding), with numpy's
    workspace-queried LWORK; results complex, rounded to the dtype, row-major. A real matrix's
    eigenvectors come as geev packs them (a conjugate pair as the real and imaginary parts
    of its first vector, in two columns) and are unpacked as numpy unpacks them. A matrix
    LAPACK fails on comes out all NaN."""
    dtype: np.dtype         # the matrices' (the results are its complex dtype)
    batch: int
    n: int
    left: bool
    right: bool
    lwork: int
    int_bits: int
    one_thread: bool

    def build(self):
        name = "lapack_eig"
        module = define_routine(name, 2 + self.left + self.right, self.batch, self._emit_matrix)
        return Routine(module, name, self.batch, self._layout()[1], self.n ** 3)

    @property
    def _complex(self):
        return dtypes.is_complex(self.dtype)

    def _layout(self):
        n, z = self.n, 16 if self._complex else 8
        return _scratch_regions({"a": z * n * n, "w": 16 * n, "vl": z * (n * n if self.left else 1), "vr": z * n * n,
                                 "work": z * self.lwork, "rwork": 16 * n})

    def _emit_matrix(self, b, pointers, scratch, entry):
        element, n = _LAPACK_TYPES[self.dtype], self.n
        if n == 0:
            return
        result = C64 if _scalar_of(element) == F32 else C128
        a = _Matrix(b, pointers[0], entry, n, n, element)
        w = _Matrix(b, pointers[1], entry, 1, n, result)
        vectors = [_Matrix(b, p, entry, n, n, result) for p in pointers[2:]]
        region = _region_pointers(b, scratch, self._layout()[0])
        double = _double_of(element)
        work_a = _Matrix(b, region["a"], as_i64(0), n, n, double)
        work_vl, work_vr = (_Matrix(b, region[name], as_i64(0), n, n, double) for name in ("vl", "vr"))
        _copy(b, a, work_a, transposed=True, convert=_widen(b, element))
        jobvl, jobvr, order, lda, ld_vl, lwork, info = _fortran_arguments(
            b, ["V" if self.left else "N", "V", n, n, n if self.left else 1, self.lwork, 0], self.int_bits)
        if self._complex:
            eigenvalues = [region["w"]]
            tail = [region["work"], lwork, region["rwork"], info]
        else:       # wr in the first n doubles of region w, wi in the next n
            eigenvalues = [region["w"], gep(b, region["w"], n, F64)]
            tail = [region["work"], lwork, info]
        _call_lapack(b, _routine("dgeev", element), [jobvl, jobvr, order, work_a.base, lda, *eigenvalues,
                                                     work_vl.base, ld_vl, work_vr.base, lda, *tail],
                     characters=2, one_thread=self.one_thread)
        computed = ([work_vl] if self.left else []) + ([work_vr] if self.right else [])
        integer = ir.IntType(self.int_bits)
        succeeded = b.icmp_signed("==", b.load(info, typ=integer), ir.Constant(integer, 0))
        with b.if_else(succeeded) as (then, otherwise):
            with then:
                self._emit_results(b, region["w"], w, zip(computed, vectors))
            with otherwise:
                for matrix in [w] + vectors:
                    _fill_nan(b, matrix)

    def _emit_results(self, b, eigenvalues, w, vector_pairs):
        narrow = _narrow(b, w.element_type)
        if self._complex:
            _copy(b, _Matrix(b, eigenvalues, as_i64(0), 1, self.n, C128), w, transposed=False, convert=narrow)
            for work, vectors in vector_pairs:
                _copy(b, work, vectors, transposed=True, convert=narrow)
            return
        parts = _Matrix(b, eigenvalues, as_i64(0), 2, self.n, F64)
        emit_loop(b, 0, self.n, lambda j: w.store(_pair(b, parts.load(0, j), parts.load(1, j), narrow), 0, j))
        for work, vectors in vector_pairs:
            emit_loop(b, 0, self.n, lambda j: self._emit_unpacked_column(b, parts.load(1, j), j, work, vectors,
                                                                         narrow), name="column")

    def _emit_unpacked_column(self, b, imaginary, j, work, vectors, narrow):
        """Column j of the complex eigenvectors from geev's real columns (work's rows): a real
        eigenvalue's column is real; a pair's first (wi > 0) is columns j + i j+1, its second
        (wi < 0) the conjugate, columns j-1 - i j."""
        zero = ir.Constant(F64, 0.0)
        first, second = b.fcmp_ordered(">", imaginary, zero), b.fcmp_ordered("<", imaginary, zero)
        real_column = b.select(second, b.sub(j, as_i64(1)), j)
        imaginary_column = b.select(first, b.add(j, as_i64(1)), j)

        def row(i):
            im = work.load(imaginary_column, i)
            im = b.select(first, im, b.select(second, b.fneg(im), zero))
            vectors.store(_pair(b, work.load(real_column, i), im, narrow), i, j)
        emit_loop(b, 0, self.n, row, name="row")


def _pair(b, re, im, narrow):
    """The complex element (re, im) of two doubles, rounded by `narrow` if given."""
    pair = b.insert_element(b.insert_element(ir.Constant(C128, None), re, as_i64(0)), im, as_i64(1))
    return narrow(pair) if narrow else pair


def eig_spec(eqn):
    found = _lapack_operand(eqn, "dgeev")
    if found is None:
        return None
    aval, element, function = found
    n, left = int(aval.shape[-1]), eqn.params["compute_left_eigenvectors"]
    lwork = lapack.geev_workspace(n, left, _is_complex(element)) if n else 1
    return EigSpec(np.dtype(aval.dtype), _batch(aval.shape), n, left, eqn.params["compute_right_eigenvectors"],
                   lwork, function.int_bits, numpy_blas.thread_control() is not None)
