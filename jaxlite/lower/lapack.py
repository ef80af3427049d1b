"""numpy's own LAPACK, for generated code: the native svd calls the very `dgesdd` that
np.linalg.svd calls, so jit gives the eager result bit for bit (singular vectors are unique
only up to sign, and only the same algorithm picks the same signs).

numpy does not expose its LAPACK to Python; its linear-algebra extension module links it.
Looking the symbol up through that module's handle (dlsym searches a library's dependencies
too) finds the library numpy calls, wherever it lives: the OpenBLAS in numpy's wheel
(`scipy_dgesdd_64_`, 64-bit integers), or a system or conda LAPACK (`dgesdd_`).

The same goes for dpotrf (cholesky, as np.linalg.cholesky computes it) and BLAS's
strsm/dtrsm (triangular_solve: blocked, unlike a substitution loop).
Generated code calls each by a name of ours (`jaxlite_dgesdd`...), which `register_symbols`
binds to this process's address in the JIT's symbol table: object code in the persistent
cache names the symbol, not an address, so it stays valid in another process.
"""
import ctypes
import functools
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from jaxlite.core import numpy_blas

# The routines generated code calls: dgesdd for svd, dpotrf for cholesky (numpy computes
# both in double precision, also for float32), strsm/dtrsm for triangular_solve.
ROUTINES = ("dgesdd", "dpotrf", "strsm", "dtrsm")


def symbol(routine):
    """The name generated code calls `routine` by."""
    return "jaxlite_" + routine


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
    """strsm for float32, dtrsm for float64."""
    return find("strsm" if np.dtype(dtype) == np.float32 else "dtrsm")


def _int_bits(symbol):
    return 64 if symbol.endswith("64_") or _numpy_lapack_is_ilp64() else 32


def _numpy_lapack_is_ilp64():
    """From numpy's build configuration (`64BITINT` in OpenBLAS's, `ilp64` in MKL's name)."""
    config = getattr(np.__config__, "CONFIG", {})    # numpy >= 1.25
    lapack = config.get("Build Dependencies", {}).get("lapack", {})
    description = " ".join(str(value) for value in lapack.values()).lower()
    return "64bitint" in description or "ilp64" in description


# OpenBLAS's thread count (core/numpy_blas.py), which generated code reads and sets by these names.
GET_THREADS_SYMBOL, SET_THREADS_SYMBOL = "jaxlite_blas_get_threads", "jaxlite_blas_set_threads"


def register_symbols():
    """Bind our names to numpy's LAPACK in the JIT's symbol table (at target initialization,
    before any object code, compiled or loaded, is linked)."""
    for routine in ROUTINES:
        function = find(routine)
        if function is not None:
            llvm.add_symbol(symbol(routine), function.address)
    control = numpy_blas.thread_control()
    if control is not None:
        for name, address in zip((GET_THREADS_SYMBOL, SET_THREADS_SYMBOL), control.addresses):
            llvm.add_symbol(name, address)


@functools.lru_cache(maxsize=None)
def gesdd_workspace(jobz, m, n):
    """The LWORK numpy passes to dgesdd for an m x n matrix: the optimal size from a
    workspace query (which depends only on the shape), at least 1."""
    function = gesdd()
    integer = ctypes.c_int64 if function.int_bits == 64 else ctypes.c_int32
    prototype = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 14, ctypes.c_size_t)
    k = min(m, n)
    ld_vt = max(1, n if jobz == "A" else k)
    ints = {name: integer(value) for name, value in
            dict(m=m, n=n, ld=max(m, 1), ld_vt=ld_vt, lwork=-1, info=0).items()}
    optimal, unused = ctypes.c_double(0.0), ctypes.c_double(0.0)   # a query reads no array
    jobz_text = ctypes.create_string_buffer(jobz.encode())
    pointer = ctypes.addressof
    prototype(function.address)(
        pointer(jobz_text), pointer(ints["m"]), pointer(ints["n"]), pointer(unused), pointer(ints["ld"]),
        pointer(unused), pointer(unused), pointer(ints["ld"]), pointer(unused), pointer(ints["ld_vt"]),
        pointer(optimal), pointer(ints["lwork"]), pointer(unused), pointer(ints["info"]), 1)
    if ints["info"].value != 0:
        raise RuntimeError(f"dgesdd's workspace query failed (info {ints['info'].value})")
    return max(1, int(optimal.value))
