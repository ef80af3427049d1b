"""lax.fft: the discrete Fourier transform over an array's trailing 1 to 3 axes.

Four transforms, as in JAX (FftType): FFT and IFFT (complex to complex; IFFT scaled by
1 / prod(fft_lengths)), RFFT (real to the n // 2 + 1 non-negative frequencies of the last
axis) and IRFFT (back; the imaginary parts of the frequencies 0 and n / 2 ignored). Eagerly
numpy.fft computes them in the operand's precision (numpy 2's pocketfft transforms
complex64 in float32); under jit the native routine of lower/fft_kernels.py does.

All four are linear. The DFT matrix is symmetric, so FFT and IFFT are their own transposes.
RFFT is "embed in C, FFT, keep the first n // 2 + 1 frequencies": its transpose is "pad with
zeros, FFT, take the real part". IRFFT's transpose (with JAX's convention for complex
cotangents, ct_z = d/dx - i d/dy) is conj(RFFT(ct)) / prod(fft_lengths), the frequencies that
IRFFT counts twice (all but 0 and, for even n, n / 2) doubled.
"""
import enum
import math
from typing import Sequence

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import as_operand
from jaxlite.lax.complex_parts import conj, real
from jaxlite.lax.elementwise import convert_element_type, mul
from jaxlite.lax.shapes import broadcast_in_dim, pad
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import bdim_at_front


class FftType(enum.IntEnum):
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}


def _fft_type(fft_type):
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        try:
            return FftType[fft_type.upper()]
        except KeyError:
            raise ValueError(f"Unknown FFT type '{fft_type}'") from None
    raise TypeError(f"Unknown FFT type value '{fft_type}'")


def fft(x, fft_type: "FftType | str", fft_lengths: Sequence[int]):
    """The transform `fft_type` over the last len(fft_lengths) axes of x, whose sizes must be
    fft_lengths (for IRFFT: its last axis fft_lengths[-1] // 2 + 1). Integer and boolean
    operands are converted first: to a real floating dtype for RFFT, to complex otherwise."""
    fft_type = _fft_type(fft_type)
    x = as_operand(x)
    if fft_type is FftType.RFFT:
        if dtypes.is_complex(x.dtype):
            raise ValueError("only real valued inputs supported for rfft")
        x = convert_element_type(x, _computing_float(x.dtype))
    else:
        x = convert_element_type(x, _complex_dtype(x.dtype))
    fft_lengths = tuple(int(n) for n in fft_lengths)
    if not fft_lengths:
        return x
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


def _computing_float(dtype):
    """The real dtype a transform of `dtype` computes in: float64 for 64-bit values (x64),
    float32 for the rest (16-bit floats widen, as the complex64 JAX gives them shows)."""
    return np.dtype(np.float64) if np.dtype(dtype).itemsize == 8 else np.dtype(np.float32)


def _complex_dtype(dtype):
    return complex_dtype(dtype if dtypes.is_complex(dtype) else _computing_float(dtype))


# ---------------------------------------------------------------- the primitive

def _fft_impl(x, fft_type, fft_lengths):
    if 0 in x.shape or 0 in fft_lengths:     # (numpy refuses transforms of length 0)
        aval = _fft_aval(ShapedArray(x.shape, x.dtype), fft_type, fft_lengths)
        return np.zeros(aval.shape, aval.dtype)
    if len(fft_lengths) == 1:   # (numpy's one-axis functions skip fftn's argument handling)
        out = _NUMPY_1D[fft_type](x, n=fft_lengths[0])
    else:
        out = _NUMPY_ND[fft_type](x, s=fft_lengths, axes=tuple(range(-len(fft_lengths), 0)))
    return out.astype(_result_dtype(x.dtype, fft_type), copy=False)


_NUMPY_1D = {FftType.FFT: np.fft.fft, FftType.IFFT: np.fft.ifft, FftType.RFFT: np.fft.rfft,
             FftType.IRFFT: np.fft.irfft}
_NUMPY_ND = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn, FftType.RFFT: np.fft.rfftn,
             FftType.IRFFT: np.fft.irfftn}


def _result_dtype(dtype, fft_type):
    if fft_type is FftType.RFFT:
        return complex_dtype(dtype)
    if fft_type is FftType.IRFFT:
        return real_dtype(dtype)
    return np.dtype(dtype)


def complex_dtype(dtype):
    """complex64 for float32, complex128 for float64 (and each complex dtype for itself)."""
    return np.dtype(dtype) if dtypes.is_complex(dtype) else _COMPLEX_OF[np.dtype(dtype)]


def real_dtype(dtype):
    """The dtype of a complex dtype's parts (float32 for complex64, float64 for complex128)."""
    return _REAL_OF[np.dtype(dtype)]


def _fft_aval(x, fft_type, fft_lengths):
    count = len(fft_lengths)
    if not 1 <= count <= 3:
        raise ValueError(f"lax.fft transforms 1 to 3 axes; got fft_lengths {fft_lengths}")
    if x.ndim < count:
        raise ValueError(f"FFT input shape {x.shape} must have at least as many input dimensions "
                         f"as fft_lengths {fft_lengths}.")
    wanted = _operand_dtypes(fft_type)
    if np.dtype(x.dtype) not in wanted:
        raise TypeError(f"lax.fft {fft_type.name} takes {' or '.join(d.name for d in wanted)} operands, "
                        f"got {x.dtype.name}")
    minor = tuple(x.shape[-count:])
    if fft_type is FftType.IRFFT:
        expected = fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        if minor != expected:
            raise ValueError(f"IRFFT input shape {x.shape} must end in {expected} for fft_lengths "
                             f"{fft_lengths} (the last axis holds fft_lengths[-1] // 2 + 1 frequencies)")
        shape = x.shape[:-count] + fft_lengths
    else:
        if minor != fft_lengths:
            raise ValueError(f"FFT input shape {x.shape} minor dimensions must be equal to fft_lengths "
                             f"{fft_lengths}")
        shape = x.shape[:-1] + (fft_lengths[-1] // 2 + 1,) if fft_type is FftType.RFFT else x.shape
    return ShapedArray(shape, _result_dtype(x.dtype, fft_type))


def _operand_dtypes(fft_type):
    return tuple(_COMPLEX_OF) if fft_type is FftType.RFFT else tuple(_REAL_OF)


fft_p = Primitive("fft")
fft_p.def_impl(_fft_impl)
fft_p.def_abstract_eval(_fft_aval)


def _fft_transpose(ct, x, fft_type, fft_lengths):
    if fft_type is FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type is FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


def _rfft_transpose(ct, fft_lengths):
    widths = [(0, 0, 0)] * (ct.ndim - 1) + [(0, fft_lengths[-1] - ct.shape[-1], 0)]
    padded = pad(ct, convert_element_type(0, ct.dtype), widths)
    return real(fft_p.bind(padded, fft_type=FftType.FFT, fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    spectrum = conj(fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths))
    n = fft_lengths[-1]
    weights = np.full(n // 2 + 1, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    weights /= math.prod(fft_lengths)
    weights = broadcast_in_dim(convert_element_type(weights, spectrum.dtype), spectrum.shape, (spectrum.ndim - 1,))
    return mul(spectrum, weights)


def _fft_batch(args, dims, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    return fft_p.bind(bdim_at_front(x, d, x.shape[d]), fft_type=fft_type, fft_lengths=fft_lengths), 0


ad.deflinear(fft_p, _fft_transpose)
batching.batch_rules[fft_p] = _fft_batch
