"""The native FFT routine (lower/fft_kernels.py) called directly on numpy buffers, against numpy.fft.

Each case compiles a routine (~0.3 s), so the lengths are chosen to cover the code paths:
every butterfly (8, 4, 2, 3, 5, 7, an odd radix through the generic butterfly), Bluestein's path
(a prime above MAX_RADIX), a length 1, the real transforms of even and odd lengths, and
strided axes (neighbouring lines as SIMD lanes: 32, 16, 8, 4 and 1 of them) with a batch.
"""
import ctypes

import numpy as np
import pytest

from jaxlite.lower import fft_kernels

COMPLEX = {"float32": np.complex64, "float64": np.complex128}
REAL = {"float32": np.float32, "float64": np.float64}
TOLERANCE = {"float32": 2e-6, "float64": 1e-13}


def _run(kind, precision, batch, n, inner, operand):
    routine = fft_kernels.FftSpec(kind, precision, batch, n, inner).build()
    if kind == "RFFT":
        result = np.empty((batch, n // 2 + 1), COMPLEX[precision])
    elif kind == "IRFFT":
        result = np.empty((batch, n), REAL[precision])
    else:
        result = np.empty(operand.shape, COMPLEX[precision])
    scratch = np.empty(routine.scratch_bytes + 64, np.uint8)
    aligned = -(-scratch.ctypes.data // 64) * 64
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(routine.address)
    call(np.ascontiguousarray(operand).ctypes.data, result.ctypes.data, aligned)
    return result


def _reference(kind, x, n):
    wide = x.astype(np.complex128 if kind != "RFFT" else np.float64)
    return {"FFT": lambda: np.fft.fft(wide, axis=1), "IFFT": lambda: np.fft.ifft(wide, axis=1),
            "RFFT": lambda: np.fft.rfft(wide, axis=1), "IRFFT": lambda: np.fft.irfft(wide, n, axis=1)}[kind]()


CASES = [  # (kind, precision, batch, length, inner)
    ("FFT", "float32", 3, 4 * 2 * 3 * 5 * 7, 1),
    ("IFFT", "float64", 2, 1024, 1),
    ("FFT", "float64", 1, 11 * 31, 1),          # generic odd butterflies
    ("FFT", "float32", 2, 37, 1),               # Bluestein
    ("IFFT", "float64", 1, 1009, 1),            # Bluestein, inverse
    ("FFT", "float32", 2, 1, 1),
    ("FFT", "float32", 2, 1, 16),
    ("FFT", "float32", 1, 8, 64),               # strided: 32 lanes, 2 groups, radix 8
    ("IFFT", "float32", 1, 1024, 32),           # radices 8, 8, 4, 4 on 32 lanes
    ("FFT", "float32", 2, 6, 48),               # 16 lanes, 3 groups a block
    ("IFFT", "float64", 2, 10, 4),              # 4 lanes of complex128
    ("FFT", "float32", 2, 12, 3),               # 1 lane, stride 3
    ("IFFT", "float32", 2, 37, 24),             # Bluestein on 8 lanes
    ("FFT", "float64", 1, 7, 8),                # one pass (a single odd butterfly) on 8 lanes
    ("RFFT", "float32", 3, 24, 1),
    ("RFFT", "float64", 2, 15, 1),
    ("IRFFT", "float32", 3, 30, 1),
    ("IRFFT", "float64", 2, 7, 1),
    ("IRFFT", "float64", 1, 2, 1),
]


@pytest.mark.parametrize("kind,precision,batch,n,inner", CASES)
def test_native_fft_matches_numpy(kind, precision, batch, n, inner):
    rng = np.random.default_rng(n + inner)
    if kind == "RFFT":
        x = rng.standard_normal((batch, n)).astype(REAL[precision])
    elif kind == "IRFFT":
        # Not Hermitian at the edges on purpose: c2r ignores the imaginary parts of X_0 and X_{n/2}.
        half = (batch, n // 2 + 1)
        x = (rng.standard_normal(half) + 1j * rng.standard_normal(half)).astype(COMPLEX[precision])
    else:
        shape = (batch, n, inner)
        x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(COMPLEX[precision])
    expected = _reference(kind, x, n)
    result = _run(kind, precision, batch, n, inner, x)
    scale = max(1.0, np.abs(expected).max())
    assert np.abs(result - expected).max() / scale < TOLERANCE[precision] * np.log2(2 + n)


@pytest.mark.parametrize("n", [1, 2, 7, 31, 32, 37, 1009, 2017, 4096])
def test_factorization_and_bluestein_size(n):
    radices = fft_kernels.factorize(n)
    if radices is not None:
        for leading_fours in (0, 2):
            powers_of_two = [r for r in fft_kernels.factorize(n, leading_fours) if r % 2 == 0]
            assert np.prod(powers_of_two, dtype=np.int64) == n & -n
            assert 2 not in powers_of_two or powers_of_two in ([2], [4, 2], [4, 4, 2])
    if radices is None:
        assert max(p for p in range(2, n + 1) if n % p == 0) > fft_kernels.MAX_RADIX
        size = fft_kernels.good_size(2 * n - 1)
        assert size >= 2 * n - 1 and fft_kernels.factorize(size) is not None
    else:
        assert np.prod(radices, dtype=np.int64) == n and max(radices, default=1) <= fft_kernels.MAX_RADIX
