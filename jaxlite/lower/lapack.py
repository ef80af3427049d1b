"""numpy's own LAPACK, for generated code: the native svd calls the very `dgesdd` that
np.linalg.svd calls, so jit gives the eager result bit for bit (singular vectors are unique
only up to sign, and only the same algorithm picks the same signs).

numpy does not expose its LAPACK to Python; its linear-algebra extension module links it.
Looking the symbol up through that module's handle (dlsym searches a library's dependencies
too) finds the library numpy calls, wherever it lives: the OpenBLAS in numpy's wheel
(`scipy_dgesdd_64_`, 64-bit integers), or a system or conda LAPACK (`dgesdd_`).

The same goes for dpotrf (cholesky, as np.linalg.cholesky computes it) and BLAS's
strsm/dtrsm (triangular_solve: blocked, unlike a substitution loop).
Generated code calls each by a name of ours (`jaxlite_numpy_dgesdd`...), which `register_symbols`
binds to this process's address in the JIT's symbol table: object code in the persistent
cache names the symbol, not an address, so it stays valid in another process.
"""
import ctypes
import functools
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from jaxlite.core import numpy_blas

# The routines generated code calls: dgesdd for svd, dpotrf for cholesky, dsyevd for eigh,
# dgeqrf and dorgqr for qr, dgeev for eig, dgeqp3 for pivoted qr (numpy computes all in double
# precision, also for float32), their complex128 twins for complex values, strsm/dtrsm (and
# ctrsm/ztrsm) for triangular_solve and cgetrf/zgetrf for the lu of complex values.
ROUTINES = ("dgesdd", "dpotrf", "dsyevd", "dgeqrf", "dorgqr", "strsm", "dtrsm", "dgeev", "dgeqp3",
            "zgesdd", "zpotrf", "zheevd", "zgeqrf", "zungqr", "ctrsm", "ztrsm", "zgeev", "zgeqp3", "cgetrf", "zgetrf")


# Every name bound here starts so: llvm_target binds them when code naming one is linked.
SYMBOL_PREFIX = "jaxlite_numpy_"


def symbol(routine):
    """The name generated code calls `routine` by."""
    return SYMBOL_PREFIX + routine


def _exported_names(routine):
    # numpy's wheels name their ILP64 OpenBLAS symbols with a `64_` suffix (and since numpy 2,
    # a `scipy_` prefix); builds against a system LAPACK use the plain Fortran name.
    return (f"scipy_{routine}_64_", f"{routine}_64_", f"scipy_{routine}_", f"{routine}_")


@dataclass(frozen=True)
class LapackFunction:
    address: int
    int_bits: int       # the width of LAPACK's INTEGER: 64 in ILP64 builds


@functools.lru_cache(maxsize=None)
def find(routine):
    """numpy's LAPACK or BLAS `routine`, or None when numpy's LAPACK is not a library we can
    find (a numpy with its bundled lapack_lite keeps those symbols private)."""
    for name in _exported_names(routine):
        function = getattr(numpy_blas.library(), name, None)
        if function is not None:
            return LapackFunction(ctypes.cast(function, ctypes.c_void_p).value, _int_bits(name))
    return None


def gesdd():
    return find("dgesdd")


def potrf():
    return find("dpotrf")


def trsm(dtype):
    """strsm, dtrsm, ctrsm or ztrsm: BLAS's for the dtype."""
    return find(_TRSM[np.dtype(dtype)])


def getrf_routine(dtype):
    """cgetrf or zgetrf: the lu of complex matrices (in their own precision, as eager)."""
    return "cgetrf" if np.dtype(dtype) == np.complex64 else "zgetrf"


_TRSM = {np.dtype(np.float32): "strsm", np.dtype(np.float64): "dtrsm", np.dtype(np.complex64): "ctrsm",
         np.dtype(np.complex128): "ztrsm"}


def _int_bits(symbol):
    return 64 if symbol.endswith("64_") or _numpy_lapack_is_ilp64() else 32


def _numpy_lapack_is_ilp64():
    """From numpy's build configuration (`64BITINT` in OpenBLAS's, `ilp64` in MKL's name)."""
    config = getattr(np.__config__, "CONFIG", {})    # numpy >= 1.25
    lapack = config.get("Build Dependencies", {}).get("lapack", {})
    description = " ".join(str(value) for value in lapack.values()).lower()
    return "64bitint" in description or "ilp64" in description


# OpenBLAS's thread count (core/numpy_blas.py), which generated code reads and sets by these names.
GET_THREADS_SYMBOL, SET_THREADS_SYMBOL = SYMBOL_PREFIX + "blas_get_threads", SYMBOL_PREFIX + "blas_set_threads"


def register_symbols():
    """Bind our names to numpy's LAPACK in the JIT's symbol table (before the first object
    code calling one, compiled or loaded, is linked: llvm_target._bind_lapack)."""
    for routine in ROUTINES:
        function = find(routine)
        if function is not None:
            llvm.add_symbol(symbol(routine), function.address)
    control = numpy_blas.thread_control()
    if control is not None:
        for name, address in zip((GET_THREADS_SYMBOL, SET_THREADS_SYMBOL), control.addresses):
            llvm.add_symbol(name, address)


def call(routine, values, characters):
    """Call numpy's LAPACK `routine` from Python (for eager code that must compute what
    generated code computes): a numpy array is passed by its data (Fortran-ordered where
    LAPACK reads a matrix), a str is a CHARACTER, an int an INTEGER, a float a DOUBLE
    PRECISION or COMPLEX*16 (each boxed in room for the latter). Returns the arguments as
    passed, to read the INTEGERs and numbers the routine wrote (INFO last)."""
    function = find(routine)
    integer = ctypes.c_int64 if function.int_bits == 64 else ctypes.c_int32

    def box(value):
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, str):
            return ctypes.create_string_buffer(value.encode())
        return integer(value) if isinstance(value, int) else (ctypes.c_double * 2)(value)
    boxes = [box(value) for value in values]
    prototype = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(values), *[ctypes.c_size_t] * characters)
    prototype(function.address)(*[x.ctypes.data if isinstance(x, np.ndarray) else ctypes.addressof(x) for x in boxes],
                                *[1] * characters)
    return boxes


def _query(routine, values, characters):
    """Call `routine` with a workspace query's arguments (arrays a query does not read are
    single numbers); returns the boxed arguments, to read the sizes the query wrote."""
    boxes = call(routine, values, characters)
    if boxes[-1].value != 0:
        raise RuntimeError(f"{routine}'s workspace query failed (info {boxes[-1].value})")
    return boxes


def _optimal(size):
    """A size a query wrote: an INTEGER, or the real part of a DOUBLE PRECISION or COMPLEX*16."""
    return max(1, int(size.value if isinstance(size, ctypes._SimpleCData) else size[0]))


@functools.lru_cache(maxsize=None)
def gesdd_workspace(jobz, m, n, complex_values=False):
    """The LWORK numpy passes to dgesdd (zgesdd) for an m x n matrix: the optimal size from a
    workspace query (which depends only on the shape), at least 1."""
    k = min(m, n)
    ld_u = max(m, 1)
    ld_vt = max(1, n if jobz == "A" else k if jobz == "S" else 1)
    rwork = [0.0] if complex_values else []
    boxes = _query("zgesdd" if complex_values else "dgesdd",
                   [jobz, m, n, 0.0, ld_u, 0.0, 0.0, ld_u, 0.0, ld_vt, 0.0, -1, *rwork, 0.0, 0], 1)
    return _optimal(boxes[10])


@functools.lru_cache(maxsize=None)
def syevd_workspace(n, complex_values=False):
    """(LWORK, LIWORK) of dsyevd("V") for an n x n matrix, from a workspace query; for
    zheevd("V"), (LWORK, LRWORK, LIWORK)."""
    if complex_values:
        boxes = _query("zheevd", ["V", "L", n, 0.0, max(n, 1), 0.0, 0.0, -1, 0.0, -1, 0, -1, 0], 2)
        return _optimal(boxes[6]), _optimal(boxes[8]), _optimal(boxes[10])
    boxes = _query("dsyevd", ["V", "L", n, 0.0, max(n, 1), 0.0, 0.0, -1, 0, -1, 0], 2)
    return _optimal(boxes[6]), _optimal(boxes[8])


@functools.lru_cache(maxsize=None)
def qr_workspace(m, n, q_cols, complex_values=False, pivoting=False):
    """An LWORK enough for dgeqrf (dgeqp3 with pivoting) on m x n and dorgqr making q_cols
    columns of Q (zgeqrf, zgeqp3, zungqr): the larger of their optimal sizes (a larger LWORK
    changes none of the routines' blocking)."""
    k = min(m, n)
    z = "z" if complex_values else "d"
    if pivoting:
        rwork = [0.0] if complex_values else []
        factor = _query(z + "geqp3", [m, n, 0.0, max(m, 1), 0, 0.0, 0.0, -1, *rwork, 0], 0)[6]
    else:
        factor = _query(z + "geqrf", [m, n, 0.0, max(m, 1), 0.0, 0.0, -1, 0], 0)[5]
    if q_cols == 0:
        return _optimal(factor)
    product = _query("zungqr" if complex_values else "dorgqr", [m, q_cols, k, 0.0, max(m, 1), 0.0, 0.0, -1, 0], 0)[6]
    return max(_optimal(factor), _optimal(product))


@functools.lru_cache(maxsize=None)
def geev_workspace(n, left, complex_values=False):
    """The LWORK numpy's eig passes to dgeev (zgeev) with right eigenvectors, and left ones
    if asked: the optimal size from a workspace query."""
    jobvl = "V" if left else "N"
    if complex_values:
        boxes = _query("zgeev", [jobvl, "V", n, 0.0, max(n, 1), 0.0, 0.0, max(n, 1), 0.0, max(n, 1), 0.0, -1,
                                 0.0, 0], 2)
        return _optimal(boxes[10])
    boxes = _query("dgeev", [jobvl, "V", n, 0.0, max(n, 1), 0.0, 0.0, 0.0, max(n, 1), 0.0, max(n, 1), 0.0, -1, 0],
                   2)
    return _optimal(boxes[11])
