"""The native FFT routine (lower/fft_kernels.py) called directly on numpy buffers, against numpy.fft.

Each case compiles a routine (~0.3 s), so the lengths are chosen to cover the code paths:
every butterfly (4, 2, 3, 5, 7, an odd radix through the generic butterfly), Bluestein's path
(a prime above MAX_RADIX), a length 1, the real transforms of even and odd lengths, and
multidimensional blocks (the gathered, strided axes) with a batch.
"""
import ctypes

import numpy as np
import pytest

from jaxlite.lower import fft_kernels

COMPLEX = {"float32": np.complex64, "float64": np.complex128}
REAL = {"float32": np.float32, "float64": np.float64}
TOLERANCE = {"float32": 2e-6, "float64": 1e-13}


def _run(kind, precision, batch, lengths, operand):
    routine = fft_kernels.FftSpec(kind, precision, batch, tuple(lengths)).build()
    lead = operand.shape[:operand.ndim - len(lengths)]
    if kind == "RFFT":
        result = np.empty(lead + tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,), COMPLEX[precision])
    elif kind == "IRFFT":
        result = np.empty(lead + tuple(lengths), REAL[precision])
    else:
        result = np.empty(operand.shape, COMPLEX[precision])
    scratch = np.empty(routine.scratch_bytes + 64, np.uint8)
    aligned = -(-scratch.ctypes.data // 64) * 64
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(routine.address)
    call(np.ascontiguousarray(operand).ctypes.data, result.ctypes.data, aligned)
    return result


def _reference(kind, x, lengths):
    axes = tuple(range(-len(lengths), 0))
    wide = x.astype(np.complex128 if kind != "RFFT" else np.float64)
    return {"FFT": lambda: np.fft.fftn(wide, axes=axes), "IFFT": lambda: np.fft.ifftn(wide, axes=axes),
            "RFFT": lambda: np.fft.rfftn(wide, axes=axes),
            "IRFFT": lambda: np.fft.irfftn(wide, s=lengths, axes=axes)}[kind]()


CASES = [  # (kind, precision, batch, lengths)
    ("FFT", "float32", 3, (4 * 2 * 3 * 5 * 7,)),
    ("IFFT", "float64", 2, (1024,)),
    ("FFT", "float64", 1, (11 * 31,)),          # generic odd butterflies
    ("FFT", "float32", 2, (37,)),               # Bluestein
    ("IFFT", "float64", 1, (1009,)),            # Bluestein, inverse
    ("FFT", "float32", 2, (1,)),
    ("FFT", "float64", 2, (6, 10, 4)),          # strided axes
    ("FFT", "float32", 2, (3, 6, 12)),          # strided axes in blocks of 8 lines and of 4
    ("RFFT", "float32", 1, (8, 14)),            # the complex block's rows (8) block by 8, the real ones (14) would not
    ("IRFFT", "float32", 2, (12, 30)),
    ("RFFT", "float32", 3, (24,)),
    ("RFFT", "float64", 2, (15,)),
    ("RFFT", "float64", 2, (6, 8)),
    ("IRFFT", "float32", 3, (30,)),
    ("IRFFT", "float64", 2, (5, 7)),
    ("IRFFT", "float64", 1, (2,)),
]


@pytest.mark.parametrize("kind,precision,batch,lengths", CASES)
def test_native_fft_matches_numpy(kind, precision, batch, lengths):
    rng = np.random.default_rng(sum(lengths))
    shape = (batch,) + lengths
    if kind == "RFFT":
        x = rng.standard_normal(shape).astype(REAL[precision])
    elif kind == "IRFFT":
        # Not Hermitian at the edges on purpose: c2r ignores the imaginary parts of X_0 and X_{n/2}.
        half = shape[:-1] + (lengths[-1] // 2 + 1,)
        x = (rng.standard_normal(half) + 1j * rng.standard_normal(half)).astype(COMPLEX[precision])
    else:
        x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(COMPLEX[precision])
    expected = _reference(kind, x, lengths)
    result = _run(kind, precision, batch, lengths, x)
    scale = max(1.0, np.abs(expected).max())
    assert np.abs(result - expected).max() / scale < TOLERANCE[precision] * np.log2(2 + np.prod(lengths))


@pytest.mark.parametrize("n", [1, 2, 7, 31, 32, 37, 1009, 2017, 4096])
def test_factorization_and_bluestein_size(n):
    radices = fft_kernels.factorize(n)
    if radices is None:
        assert max(p for p in range(2, n + 1) if n % p == 0) > fft_kernels.MAX_RADIX
        size = fft_kernels.good_size(2 * n - 1)
        assert size >= 2 * n - 1 and fft_kernels.factorize(size) is not None
    else:
        assert np.prod(radices, dtype=np.int64) == n and max(radices, default=1) <= fft_kernels.MAX_RADIX
