"""jaxlite.scipy.signal: N-d convolve and correlate (as conv_general_dilated), their 2-d
forms, detrend, fftconvolve (on jnp.fft), and the windowed-FFT family: stft, istft, csd and
welch, whose windows scipy.signal.get_window computes (static, as in JAX)."""
import operator as _operator
import warnings as _warnings

import numpy as _np

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.core import dtypes as _dtypes
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


# ---------------------------------------------------------------- windowed FFTs (scipy's spectral helper)

def _window(window, nperseg, input_length, dtype):
    """(window values, nperseg), as scipy's _triage_segments settles them: a named window of
    nperseg (256 by default, no longer than the input), or the given 1-d window's values."""
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        if nperseg > input_length:
            _warnings.warn(f"nperseg = {nperseg} is greater than input length  = {input_length}, "
                           f"using nperseg = {input_length}")
            nperseg = input_length
        import scipy.signal
        return _jnp.asarray(scipy.signal.get_window(window, nperseg)).astype(dtype), nperseg
    values = _jnp.asarray(window)
    if values.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < values.shape[-1]:
        raise ValueError("window is longer than input signal")
    if nperseg is not None and nperseg != values.shape[0]:
        raise ValueError("value specified for nperseg is different from length of window")
    return values.astype(_jnp.result_type(values, dtype)), values.shape[0]


def _static_int(value, what):
    try:
        return _operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a static integer, got {value!r}") from None


def _extend(x, n, boundary):
    """x with n samples added at both ends of its last axis, as scipy's boundary extensions."""
    if boundary == "odd":
        left = 2 * x[..., :1] - _jnp.flip(x[..., 1:n + 1], -1)
        right = 2 * x[..., -1:] - _jnp.flip(x[..., -n - 1:-1], -1)
        return _jnp.concatenate([left, x, right], axis=-1)
    modes = {"even": {"mode": "reflect"}, "constant": {"mode": "edge"}, "zeros": {"mode": "constant"}}
    return _jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], **modes[boundary])


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _segments(x, nperseg, step):
    """The segments x[..., k step : k step + nperseg] along a new second-to-last axis."""
    count = (x.shape[-1] - nperseg) // step + 1
    index = _np.arange(count)[:, None] * step + _np.arange(nperseg)[None, :]
    return x[..., index]


def _segment_detrend(detrend_type, axis):
    """The detrending applied to each segment (the segments along the last axis)."""
    if isinstance(detrend_type, str):
        return lambda d: detrend(d, axis=-1, type=detrend_type)
    if callable(detrend_type):
        if axis in (-1, None):
            return detrend_type
        # scipy shows the function the segments along the data's own axis
        return lambda d: _jnp.moveaxis(detrend_type(_jnp.moveaxis(d, -1, axis)), axis, -1)
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_type}")


def _windowed_fft(x, win, detrend_func, nperseg, step, nfft, onesided):
    frames = detrend_func(_segments(x, nperseg, step)) * win
    if onesided:
        return _jnp.fft.rfft(frames.real, n=nfft)
    return _jnp.fft.fft(frames, n=nfft)


def _match_lengths(x, y):
    """x and y (signal axis last) zero-padded to the longer one's length."""
    n = max(x.shape[-1], y.shape[-1])
    pad = lambda a: _jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, n - a.shape[-1])])
    return pad(x), pad(y)


def _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
                     scaling, axis, mode, boundary=None, padded=False):
    """(frequencies, segment times, the windowed FFTs (mode "stft") or the cross spectra
    conj(X) Y (mode "psd"), frequencies before the segment axis, which is last)."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARIES)}")
    x = _jnp.asarray(x)
    axis = _static_int(axis, "axis") % max(x.ndim, 1)
    if y is None:
        (x,) = _as_inexact(x)
        outer = x.shape[:axis] + x.shape[axis + 1:]
    else:
        x, y = _as_inexact(x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        try:
            outer = _np.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:], y.shape[:axis] + y.shape[axis + 1:])
        except ValueError:
            raise ValueError("x and y cannot be broadcast together.") from None
    result_dtype = _dtypes.complex_dtype(x.dtype)
    real_dtype = _dtypes.real_dtype(result_dtype)
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg")
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    if x.size == 0 or (y is not None and y.size == 0):
        length = x.shape[axis] if y is None else min(x.shape[axis], y.shape[axis])
        shape = outer[:axis] + (length,) + outer[axis:]
        return _jnp.zeros(shape, real_dtype), _jnp.zeros(shape, real_dtype), _jnp.zeros(shape, result_dtype)
    win, nperseg = _window(window, nperseg, x.shape[axis], real_dtype)
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft")
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    signals = [_jnp.moveaxis(x, axis, -1)] if y is None else list(_match_lengths(_jnp.moveaxis(x, axis, -1),
                                                                               _jnp.moveaxis(y, axis, -1)))
    if boundary is not None:
        signals = [_extend(s, nperseg // 2, boundary) for s in signals]
    if padded:
        extra = (-(signals[0].shape[-1] - nperseg) % step) % nperseg
        signals = [_jnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(0, extra)]) for s in signals]
    if scaling == "density":
        scale = 1.0 / (fs * _jnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / _jnp.sum(win) ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = _jnp.sqrt(scale)
    onesided = return_onesided
    if onesided and any(_dtypes.is_complex(s.dtype) for s in signals):
        _warnings.warn("Input data is complex, switching to return_onesided=False")
        onesided = False
    fftfreq = _jnp.fft.rfftfreq if onesided else _jnp.fft.fftfreq
    freqs = fftfreq(nfft, 1 / fs).astype(real_dtype)
    detrend_func = _segment_detrend(detrend_type, axis)
    spectra = [_windowed_fft(s, win, detrend_func, nperseg, step, nfft, onesided) for s in signals]
    if mode == "stft":
        result = spectra[0]
    else:
        result = _jnp.conj(spectra[0]) * spectra[-1]
    result = result * scale
    if onesided and mode == "psd":
        # the negative frequencies' power, folded onto the positive ones (not 0 or Nyquist)
        folded = _np.ones(result.shape[-1])
        folded[1:None if nfft % 2 else -1] = 2
        result = result * folded.astype(real_dtype)
    length = signals[0].shape[-1]
    times = _np.arange(nperseg / 2, length - nperseg / 2 + 1, step)
    if boundary is not None:
        times = times - nperseg / 2
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    # the segment axis stays last, the frequencies go where the signal's axis was
    return freqs, _jnp.asarray(times, real_dtype) / fs, _jnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
    """(f, t, Zxx): the short-time Fourier transform of x along axis, scaled as scipy's
    ('spectrum' scaling: each segment divided by the window's sum)."""
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                            "spectrum", axis, "stft", boundary, padded)


def _median_bias(n):
    """The median of n chi-squared(2) periodograms over their mean (scipy's bias factor)."""
    even = 2 * _np.arange(1, (n - 1) // 2 + 1)
    return 1 + _np.sum(1.0 / (even + 1) - 1.0 / even)


def _average_segments(spectra, average):
    if average == "median":
        bias = _median_bias(spectra.shape[-1])
        if _dtypes.is_complex(spectra.dtype):
            median = _jnp.median(spectra.real, axis=-1) + 1j * _jnp.median(spectra.imag, axis=-1)
        else:
            median = _jnp.median(spectra, axis=-1)
        return (median / bias).astype(spectra.dtype)
    if average == "mean":
        return _jnp.mean(spectra, axis=-1)
    raise ValueError(f'average must be "median" or "mean", got {average}')


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant",
        return_onesided=True, scaling="density", axis=-1, average="mean"):
    """(f, Pxy): Welch's estimate of the cross spectral density of x and y (of x with itself
    for y=None), the periodograms of overlapping windowed segments averaged."""
    freqs, _, spectra = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                         return_onesided, scaling, axis, "psd")
    if y is not None:
        spectra = spectra.astype(_dtypes.complex_dtype(spectra.dtype))
    if spectra.ndim >= 2 and spectra.size > 0:
        if spectra.shape[-1] > 1:
            spectra = _average_segments(spectra, average)
        else:
            spectra = spectra.reshape(spectra.shape[:-1])
    return freqs, spectra


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant",
          return_onesided=True, scaling="density", axis=-1, average="mean"):
    """(f, Pxx): Welch's estimate of the power spectral density of x."""
    freqs, spectra = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                         scaling, axis, average)
    return freqs, spectra.real


def _overlap_add(frames, step):
    """sum_k frames[..., k, :] placed at k step along a new last axis."""
    count, length = frames.shape[-2:]
    index = _np.arange(count)[:, None] * step + _np.arange(length)[None, :]
    out = _jnp.zeros(frames.shape[:-2] + (step * (count - 1) + length,), frames.dtype)
    return out.at[..., index].add(frames)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, input_onesided=True,
          boundary=True, time_axis=-1, freq_axis=-2):
    """(t, x): the inverse of stft, by overlap-add of the inverse-transformed segments
    weighted by the window and normalised by the summed squared window."""
    zxx = _jnp.asarray(Zxx)
    if zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis, time_axis = freq_axis % zxx.ndim, time_axis % zxx.ndim
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    zxx = zxx.astype(_dtypes.complex_dtype(_as_inexact(zxx)[0].dtype))
    default_length = 2 * (zxx.shape[freq_axis] - 1) if input_onesided else zxx.shape[freq_axis]
    nperseg = _static_int(nperseg or default_length, "nperseg")
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        # an odd nperseg from a one-sided input: no padding in the forward transform
        nfft = default_length + (1 if input_onesided and nperseg == default_length + 1 else 0)
    nfft = _static_int(nfft, "nfft")
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = _static_int(noverlap or nperseg // 2, "noverlap")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    outer = [a for a in range(zxx.ndim) if a not in (freq_axis, time_axis)]
    zxx = _jnp.transpose(zxx, outer + [time_axis, freq_axis])
    inverse = _jnp.fft.irfft if input_onesided else _jnp.fft.ifft
    frames = inverse(zxx, n=nfft, axis=-1)[..., :nperseg]
    real_dtype = _dtypes.real_dtype(zxx.dtype)
    if isinstance(window, (str, tuple)):
        win, _ = _window(window, nperseg, nperseg, real_dtype)
    else:
        win = _jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
    frames = frames * _jnp.sum(win)          # undoes stft's 'spectrum' scaling
    x = _overlap_add(frames * win, nperseg - noverlap)
    norm = _overlap_add(_jnp.broadcast_to(win * win, (frames.shape[-2], nperseg)), nperseg - noverlap)
    if boundary:
        x, norm = x[..., nperseg // 2:-(nperseg // 2)], norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / _jnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != zxx.ndim - 1:
        x = _jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    return _jnp.arange(x.shape[0], dtype=real_dtype) / fs, x
