"""The thread count of numpy's OpenBLAS, for the Cholesky factorization, which eager and jit
run on one OpenBLAS thread (numpy's LAPACK dpotrf, lax/linalg.py and lower/linalg_kernels.py).

Why one thread: OpenBLAS's threaded potrf waits for its threads by spinning. On this
2-core machine shared with other processes, measured at 512 x 512: 2.1-2.4 ms on one
thread, 2.9 ms with two and at times 10-1000 ms (a spinning thread waits for one the
scheduler does not run). Quiet, the second thread saves ~0.3 ms of 1.5. And potrf's
threaded and one-thread versions round differently from n = 128 on, so eager and jit
must choose alike to give the same bits.

numpy does not expose OpenBLAS's thread count; its linear-algebra extension module links
the library, so the functions are looked up through that module's handle (`library`, which
lower/lapack.py finds LAPACK through too). A numpy on another LAPACK has no such functions:
nothing is changed.
"""
import contextlib
import ctypes
import functools
from dataclasses import dataclass

_NAMES = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads"))


@dataclass(frozen=True)
class ThreadControl:
    get: object     # int get()
    set: object     # void set(int)

    @property
    def addresses(self):
        return [ctypes.cast(function, ctypes.c_void_p).value for function in (self.get, self.set)]


@functools.lru_cache(maxsize=None)
def library():
    """numpy's linear-algebra extension module, whose handle finds the symbols of the LAPACK
    it links (dlsym searches a library's dependencies too); None for a numpy laid out otherwise."""
    try:
        from numpy.linalg import _umath_linalg
        return ctypes.CDLL(_umath_linalg.__file__)
    except (ImportError, AttributeError, OSError):
        return None


@functools.lru_cache(maxsize=None)
def thread_control():
    """numpy's OpenBLAS thread-count functions, or None."""
    for get_name, set_name in _NAMES:
        get, set_ = (getattr(library(), name, None) for name in (get_name, set_name))
        if get is not None and set_ is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            set_.restype, set_.argtypes = None, [ctypes.c_int]
            return ThreadControl(get, set_)
    return None


@contextlib.contextmanager
def single_threaded():
    """OpenBLAS on one thread inside the block. The count is put back only by whoever changed
    it: two threads in such blocks at once leave it as it was before both."""
    control = thread_control()
    threads = control.get() if control is not None else 1
    if threads != 1:
        control.set(1)
    try:
        yield
    finally:
        if threads != 1:
            control.set(threads)
