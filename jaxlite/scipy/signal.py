"""jaxlite.scipy.signal: N-d convolve and correlate (as conv_general_dilated), their 2-d
forms, detrend, and fftconvolve (on jnp.fft). stft, istft, csd and welch are not written yet."""
import numpy as _np

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.scipy._util import as_inexact as _as_inexact

_MODES = ("full", "same", "valid")


def _inputs(name, in1, in2, mode):
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {_MODES}, got {mode!r}")
    if _np.ndim(in1) != _np.ndim(in2):
        raise ValueError("in1 and in2 must have the same number of dimensions")
    in1, in2 = _as_inexact(in1, in2)
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"{name}: in1 and in2 must be non-empty")
    return in1, in2


def _larger_second(in1, in2):
    """Whether 'valid' mode must swap the inputs (in2 at least as large in every axis)."""
    if all(a >= b for a, b in zip(in1.shape, in2.shape)):
        return False
    if all(b >= a for a, b in zip(in1.shape, in2.shape)):
        return True
    raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")


def _cross_correlation(in1, in2, padding):
    """sum_k in1[i + k] in2[k] over the padded in1, as a one-channel convolution."""
    lhs = in1.reshape((1, 1) + in1.shape)
    rhs = in2.reshape((1, 1) + in2.shape)
    out = _lax.conv_general_dilated(lhs, rhs, (1,) * in1.ndim, padding)
    return out.reshape(out.shape[2:])


def _correlate(in1, in2, mode, same_start):
    """Cross-correlation in the given mode; `same_start(k)` is where 'same' mode's window
    begins in the full result along an axis whose kernel has length k."""
    if mode == "full":
        padding = [(k - 1, k - 1) for k in in2.shape]
    elif mode == "same":
        padding = [(k - 1 - same_start(k), same_start(k)) for k in in2.shape]
    else:
        padding = [(0, 0)] * in1.ndim
    return _cross_correlation(in1, in2, padding)


def _flip_all(x):
    return _lax.rev(x, tuple(range(x.ndim)))


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-d convolution of in1 and in2 (same number of dimensions)."""
    in1, in2 = _inputs("convolve", in1, in2, mode)
    if mode == "valid" and _larger_second(in1, in2):
        in1, in2 = in2, in1
    return _correlate(in1, _flip_all(in2), mode, lambda k: (k - 1) // 2)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-d cross-correlation of in1 and in2 (same number of dimensions), sum_n in1[n + k]
    conj(in2[n]) as scipy's."""
    in1, in2 = _inputs("correlate", in1, in2, mode)
    in2 = _jnp.conj(in2)
    if mode == "valid" and _larger_second(in1, in2):
        return _flip_all(_correlate(in2, in1, mode, None))
    return _correlate(in1, in2, mode, lambda k: (k - 1) // 2)


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if _np.ndim(in1) != 2 or _np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d convolution, as scipy.signal.convolve2d with zero fill."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d cross-correlation, as scipy.signal.correlate2d with zero fill (whose 'same'
    window is centred one step later than correlate's along even-length kernel axes). As
    scipy's, 'valid' mode with the larger in2 is the flipped correlate2d(in2, in1), which
    conjugates in1."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = _inputs("correlate2d", in1, in2, mode)
    if mode == "valid" and _larger_second(in1, in2):
        return _flip_all(_correlate(in2, _jnp.conj(in1), mode, None))
    return _correlate(in1, _jnp.conj(in2), mode, lambda k: k // 2)


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """data minus its mean (type "constant") or minus its least-squares line along axis,
    fitted separately between the breakpoints bp (type "linear")."""
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (data,) = _as_inexact(data)
    if type in ("constant", "c"):
        return data - _jnp.mean(data, axis, keepdims=True)
    data = _jnp.moveaxis(data, axis, -1)
    n = data.shape[-1]
    edges = sorted(set([0] + [int(b) for b in _np.atleast_1d(bp)] + [n]))
    if edges[0] < 0 or edges[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along given axis.")
    pieces = [_minus_line(data[..., lo:hi]) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
    return _jnp.moveaxis(_jnp.concatenate(pieces, axis=-1), -1, axis)


def _minus_line(segment):
    """segment minus its least-squares line along the last axis."""
    t = _jnp.arange(segment.shape[-1], dtype=segment.dtype)
    t_centered = t - _jnp.mean(t)
    y_mean = _jnp.mean(segment, -1, keepdims=True)
    spread = _jnp.sum(t_centered * t_centered)
    slope = _jnp.sum(t_centered * (segment - y_mean), -1, keepdims=True) / _jnp.where(spread > 0, spread, 1)
    return segment - y_mean - slope * t_centered


def fftconvolve(in1, in2, mode="full", axes=None):
    """The convolution of in1 and in2 along `axes` (default all) by FFTs: real inputs by
    rfftn/irfftn, complex ones by fftn/ifftn; the other axes must match and are mapped over."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}")
    in1, in2 = _jnp.asarray(in1), _jnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    dtype = _jnp.result_type(in1, in2)
    if not _jnp.issubdtype(dtype, _jnp.inexact):
        dtype = _jnp.result_type(dtype, 1.0)
    in1, in2 = in1.astype(dtype), in2.astype(dtype)
    axes = tuple(range(in1.ndim)) if axes is None else tuple(a % in1.ndim for a in _np.atleast_1d(axes))
    mapped = tuple(a for a in range(in1.ndim) if a not in axes)
    if any(in1.shape[a] != in2.shape[a] for a in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} in2.shape={in2.shape} "
                         f"axes={mapped}")
    full = [in1.shape[a] + in2.shape[a] - 1 for a in axes]
    if _jnp.issubdtype(dtype, _jnp.complexfloating):
        out = _jnp.fft.ifftn(_jnp.fft.fftn(in1, full, axes) * _jnp.fft.fftn(in2, full, axes), full, axes)
    else:
        out = _jnp.fft.irfftn(_jnp.fft.rfftn(in1, full, axes) * _jnp.fft.rfftn(in2, full, axes), full, axes)
    return _centered(out.astype(dtype), axes, _fft_mode_lengths(in1, in2, mode, axes))


def _fft_mode_lengths(in1, in2, mode, axes):
    """The result's lengths along `axes` in `mode`: n1 + n2 - 1, n1, or |n1 - n2| + 1."""
    if mode == "full":
        return [in1.shape[a] + in2.shape[a] - 1 for a in axes]
    if mode == "same":
        return [in1.shape[a] for a in axes]
    first, second = [in1.shape[a] for a in axes], [in2.shape[a] for a in axes]
    if not (all(a >= b for a, b in zip(first, second)) or all(b >= a for a, b in zip(first, second))):
        raise ValueError("For 'valid' mode, One input must be at least as large as the other in every dimension.")
    return [abs(a - b) + 1 for a, b in zip(first, second)]


def _centered(x, axes, lengths):
    """The centred window of `lengths` along `axes` (starting at (n - length) // 2, as scipy)."""
    for axis, length in zip(axes, lengths):
        start = (x.shape[axis] - length) // 2
        x = _lax.slice_in_dim(x, start, start + length, axis=axis)
    return x
