"""jnp.fft: NumPy's discrete Fourier transforms on lax.fft, with JAX's signatures and errors.

Each transform moves the axes it works on to the end (lax.fft transforms trailing axes),
zero-pads or truncates them to the requested lengths `s`/`n`, and scales by `norm`:
"backward" (the default) leaves the forward transforms unscaled and the inverse ones scaled by
1/N (lax.fft's IFFT and IRFFT already are); "ortho" scales both by 1/sqrt(N); "forward" the
forward transforms by 1/N. lax.fft takes at most 3 axes: more are done 3 at a time, the real
transform on the group holding the last axis.
"""
import math
import operator

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.core.namespace import dir_of_all
from jaxlite.lax.fft import FftType
from jaxlite.numpy.creation import asarray
from jaxlite.numpy.joining import roll
from jaxlite.numpy.shape_ops import moveaxis
from jaxlite.numpy.util import check_arraylike

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift",
           "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]
__dir__ = dir_of_all(globals())

_NORMS = ("backward", "ortho", "forward")
_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
_MAX_LAX_AXES = 3


def _check_norm(norm):
    if norm is not None and norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')


def _fft_core(name, fft_type, a, s, axes, norm):
    check_arraylike(f"jax.numpy.fft.{name}", a)
    _check_norm(norm)
    a = asarray(a)
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n < 1 for n in s):
            raise ValueError("Shape should be positive.")
        if axes is not None and len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
    given_axes = axes
    if axes is None:
        axes = range(a.ndim) if s is None else range(a.ndim - len(s), a.ndim)
    axes = [canonicalize_axis(axis, a.ndim) for axis in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes {given_axes}.")
    if not axes:
        return lax.fft(a, fft_type, ())
    lengths = list(s) if s is not None else _default_lengths(fft_type, a, axes)
    a = _resized(a, axes, _input_lengths(fft_type, lengths))
    trailing = list(range(a.ndim - len(axes), a.ndim))
    if axes == trailing:        # (the common case: no transposes to trace or run eagerly)
        return _normalized(_transform(a, fft_type, tuple(lengths)), fft_type, math.prod(lengths), norm)
    out = _transform(moveaxis(a, axes, trailing), fft_type, tuple(lengths))
    return moveaxis(_normalized(out, fft_type, math.prod(lengths), norm), trailing, axes)


def _default_lengths(fft_type, a, axes):
    lengths = [a.shape[axis] for axis in axes]
    if fft_type is FftType.IRFFT:
        lengths[-1] = 2 * (lengths[-1] - 1)
    return lengths


def _input_lengths(fft_type, lengths):
    """The operand's lengths along the axes: IRFFT reads n // 2 + 1 frequencies of the last."""
    if fft_type is FftType.IRFFT:
        return lengths[:-1] + [lengths[-1] // 2 + 1]
    return lengths


def _resized(a, axes, lengths):
    """a zero-padded or truncated to `lengths` along `axes`."""
    for axis, n in zip(axes, lengths):
        have = a.shape[axis]
        if have > n:
            a = lax.slice_in_dim(a, 0, n, axis=axis)
        elif have < n:
            widths = [(0, 0, 0)] * a.ndim
            widths[axis] = (0, n - have, 0)
            a = lax.pad(a, lax.convert_element_type(0, a.dtype), widths)
    return a


def _transform(x, fft_type, lengths):
    """lax.fft over the trailing len(lengths) axes, in groups of at most 3 axes: the real
    transforms on the group with the last axis (after the others for IRFFT, before for RFFT)."""
    if len(lengths) <= _MAX_LAX_AXES:
        return lax.fft(x, fft_type, lengths)
    complex_type = FftType.IFFT if fft_type in (FftType.IFFT, FftType.IRFFT) else FftType.FFT
    last, rest = lengths[-_MAX_LAX_AXES:], lengths[:-_MAX_LAX_AXES]
    if fft_type is FftType.IRFFT:
        x = _over_leading(x, complex_type, rest, len(last))
        return lax.fft(x, fft_type, last)
    if fft_type is FftType.RFFT:
        x = lax.fft(x, fft_type, last)
        return _over_leading(x, complex_type, rest, len(last))
    return _over_leading(lax.fft(x, fft_type, last), complex_type, rest, len(last))


def _over_leading(x, fft_type, lengths, after):
    """The complex transform of the len(lengths) axes that precede the last `after` axes."""
    group = list(range(x.ndim - after - len(lengths), x.ndim - after))
    moved = list(range(x.ndim - len(lengths), x.ndim))
    return moveaxis(_transform(moveaxis(x, group, moved), fft_type, lengths), moved, group)


def _normalized(x, fft_type, count, norm):
    inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
    if norm == "ortho":
        factor = math.sqrt(count) if inverse else 1 / math.sqrt(count)
    elif norm == "forward":
        factor = count if inverse else 1 / count
    else:
        return x
    return lax.mul(x, lax.convert_element_type(factor, x.dtype))


def _single_axis(name, axis):
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"jax.numpy.fft.{name} does not support multiple axes. Please use "
                         f"jax.numpy.fft.{name}n. Got axis = {axis}.")
    return [axis]


def _two_axes(name, axes):
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{name} only supports 2 axes. Got axes = {axes}.")
    return axes


def _one_dimensional(name, fft_type):
    def transform(a, n=None, axis=-1, norm=None):
        return _fft_core(name, fft_type, a, None if n is None else [n], _single_axis(name, axis), norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"numpy.fft.{name} as JAX has it: the transform along one axis, of length n."
    return transform


def _two_dimensional(name, fft_type):
    def transform(a, s=None, axes=(-2, -1), norm=None):
        return _fft_core(name, fft_type, a, s, _two_axes(name, axes), norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"numpy.fft.{name} as JAX has it: the transform over two axes (the last two)."
    return transform


def _n_dimensional(name, fft_type):
    def transform(a, s=None, axes=None, norm=None):
        return _fft_core(name, fft_type, a, s, axes, norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"numpy.fft.{name} as JAX has it: the transform over `axes` (default all, or the last len(s))."
    return transform


fft = _one_dimensional("fft", FftType.FFT)
ifft = _one_dimensional("ifft", FftType.IFFT)
rfft = _one_dimensional("rfft", FftType.RFFT)
irfft = _one_dimensional("irfft", FftType.IRFFT)
fft2 = _two_dimensional("fft2", FftType.FFT)
ifft2 = _two_dimensional("ifft2", FftType.IFFT)
rfft2 = _two_dimensional("rfft2", FftType.RFFT)
irfft2 = _two_dimensional("irfft2", FftType.IRFFT)
fftn = _n_dimensional("fftn", FftType.FFT)
ifftn = _n_dimensional("ifftn", FftType.IFFT)
rfftn = _n_dimensional("rfftn", FftType.RFFT)
irfftn = _n_dimensional("irfftn", FftType.IRFFT)


def hfft(a, n=None, axis=-1, norm=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: a real spectrum of
    length n (default 2 (m - 1))."""
    _check_norm(norm)
    check_arraylike("jax.numpy.fft.hfft", a)
    return irfft(lax.conj(asarray(a)), n, axis, _SWAPPED_NORM[norm])


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of hfft: the first n // 2 + 1 entries of the inverse FFT of a real signal."""
    _check_norm(norm)
    return lax.conj(rfft(a, n, axis, _SWAPPED_NORM[norm]))


# ---------------------------------------------------------------- frequencies and shifts

def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an FFT of length n with sample spacing d:
    [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n d)."""
    n = operator.index(n)
    cycles = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) if n > 0 else np.arange(0)
    return _frequencies("fftfreq", cycles, n, d, dtype, device)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The non-negative sample frequencies of an RFFT of length n: [0, ..., n // 2] / (n d)."""
    n = operator.index(n)
    return _frequencies("rfftfreq", np.arange(0, n // 2 + 1) if n > 0 else np.arange(0), n, d, dtype, device)


def _frequencies(name, cycles, n, d, dtype, device):
    if isinstance(d, (list, tuple)) or np.ndim(d) != 0:
        raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. Got d = {d}.")
    dtype = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float_dtype()
    compute = dtype if dtypes.is_float(dtype) or dtypes.is_complex(dtype) else dtypes.default_float_dtype()
    values = asarray(cycles.astype(np.float64), dtype=compute, device=device)
    spacing = lax.convert_element_type(asarray(d), compute)
    return lax.convert_element_type(lax.div(values, lax.mul(spacing, lax.convert_element_type(n, compute))), dtype)


def fftshift(x, axes=None):
    """x rolled so that the zero frequency is in the middle: by n // 2 along each of `axes`."""
    return _shifted("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of fftshift: rolled by -(n // 2)."""
    return _shifted("ifftshift", x, axes, -1)


def _shifted(name, x, axes, direction):
    check_arraylike(f"jax.numpy.fft.{name}", x)
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(axes)
    shifts = tuple(direction * (x.shape[canonicalize_axis(axis, x.ndim)] // 2) for axis in axes)
    return roll(x, shifts, axes)
