"""One-dimensional convolve and correlate, as a conv_general_dilated of one channel."""
from jaxlite import lax
from jaxlite.numpy.util import check_arraylike, promote_dtypes_inexact


def _correlate(name, a, v, mode, flip):
    check_arraylike(name, a, v)
    # As JAX: integers and bools convolve in floating point.
    a, v = (lax.base.as_operand(x) for x in promote_dtypes_inexact(a, v))
    if a.ndim != 1 or v.ndim != 1 or not a.size or not v.size:
        raise ValueError(f"{name}: a and v must be non-empty and one-dimensional, got shapes "
                         f"{a.shape} and {v.shape}")
    if flip:
        # Convolution commutes: slide the shorter kernel, flipped, over the longer input.
        if v.size > a.size:
            a, v = v, a
        v = lax.rev(v, (0,))
    n = v.size
    if mode == "full":
        padding = [(n - 1, n - 1)]
    elif mode == "same":
        padding = [(n - 1 - (n - 1) // 2, (n - 1) // 2)] if flip else [(n // 2, (n - 1) - n // 2)]
    elif mode == "valid":
        padding = [(0, 0)]
    else:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    out = lax.conv_general_dilated(lax.reshape(a, (1, 1, a.size)), lax.reshape(v, (1, 1, n)), (1,), padding)
    return lax.reshape(out, (out.shape[-1],))


def convolve(a, v, mode="full"):
    return _correlate("convolve", a, v, mode, flip=True)


def correlate(a, v, mode="valid"):
    """sum_n a[n + k] conj(v[n]), as numpy and JAX."""
    from jaxlite.numpy.math_functions import conjugate
    return _correlate("correlate", a, conjugate(v), mode, flip=False)
