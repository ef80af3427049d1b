"""jaxlite.scipy.fft: the discrete cosine transform (type 2, as jax.scipy.fft implements it).

Computed as a product with the n x n cosine matrix along the transformed axis:
O(n^2) per vector instead of an FFT's O(n log n), exact to float rounding, and
differentiable, batchable and compiled natively like any matrix product.
"""
import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy._util import as_inexact as _as_inexact


def _check(type, norm):
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm not in (None, "ortho"):
        raise ValueError(f"Invalid norm value {norm!r}; should be None or 'ortho'")


def _dct_matrix(n, norm):
    """The DCT-II matrix M (y = M @ x): M[k, j] = 2 cos(pi k (2j + 1) / 2n), scaled to orthonormal."""
    k, j = _np.arange(n)[:, None], _np.arange(n)[None, :]
    matrix = 2 * _np.cos(_np.pi * k * (2 * j + 1) / (2 * n))
    if norm == "ortho":
        matrix[0] *= _np.sqrt(1 / (4 * n))
        matrix[1:] *= _np.sqrt(1 / (2 * n))
    return matrix


def _resized(x, n, axis):
    """x cut or zero-padded to length n along axis."""
    length = x.shape[axis]
    if n is None or n == length:
        return x
    if n < length:
        return _jnp.take(x, _jnp.arange(n), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - length)
    return _jnp.pad(x, pad)


def _apply_along(matrix, x, axis):
    matrix = _jnp.asarray(matrix.astype(_np.dtype(x.dtype)))
    return _jnp.moveaxis(_jnp.tensordot(matrix, x, axes=([1], [axis])), 0, axis)


def dct(x, type=2, n=None, axis=-1, norm=None):
    _check(type, norm)
    x = _resized(_as_inexact(x)[0], n, axis % _jnp.ndim(x))
    return _apply_along(_dct_matrix(x.shape[axis], norm), x, axis % x.ndim)


def idct(x, type=2, n=None, axis=-1, norm=None):
    """The inverse of dct (the DCT-III, scaled so that idct(dct(x)) == x)."""
    _check(type, norm)
    x = _resized(_as_inexact(x)[0], n, axis % _jnp.ndim(x))
    return _apply_along(_np.linalg.inv(_dct_matrix(x.shape[axis], norm)), x, axis % x.ndim)


def _over_axes(transform, x, type, s, axes, norm):
    x = _as_inexact(x)[0]
    axes = range(x.ndim) if axes is None else axes
    sizes = [None] * len(axes) if s is None else s
    for axis, size in zip(axes, sizes):
        x = transform(x, type, size, axis, norm)
    return x


def dctn(x, type=2, s=None, axes=None, norm=None):
    return _over_axes(dct, x, type, s, axes, norm)


def idctn(x, type=2, s=None, axes=None, norm=None):
    return _over_axes(idct, x, type, s, axes, norm)
