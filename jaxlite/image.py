"""jaxlite.image: resampling images by separable kernels (JAX's jax.image).

Each resized axis is one matrix product: an (input size, output size) weight
matrix whose column j holds the kernel evaluated at the distances between the
input pixels and output pixel j's centre mapped back into the input, normalized
to sum to 1. Downsampling with antialias stretches the kernel by the inverse
scale, so it also low-pass filters. Nearest-neighbour resizing gathers instead.
"""
import enum as _enum

import numpy as _np

import jaxlite.numpy as _jnp
from jaxlite.core.abstract import canonicalize_axis as _canonicalize_axis
from jaxlite.core.namespace import dir_of_all as _dir_of_all
from jaxlite.lax.composites import Precision as _Precision
from jaxlite.lax.base import shape_tuple as _shape_tuple
from jaxlite.numpy.util import promote_dtypes_inexact as _promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
__dir__ = _dir_of_all(globals())


class ResizeMethod(_enum.Enum):
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s):
        for method, names in _NAMES.items():
            if s in names:
                return method
        raise ValueError(f'Unknown resize method "{s}"')


_NAMES = {ResizeMethod.NEAREST: ("nearest",),
          ResizeMethod.LINEAR: ("linear", "bilinear", "trilinear", "triangle"),
          ResizeMethod.LANCZOS3: ("lanczos3",), ResizeMethod.LANCZOS5: ("lanczos5",),
          ResizeMethod.CUBIC: ("cubic", "bicubic", "tricubic"),
          ResizeMethod.CUBIC_PYTORCH: ("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.AREA: ("area",)}


# ---------------------------------------------------------------- kernels of |distance|


def _triangle(x):
    return _jnp.maximum(0, 1 - _jnp.abs(x))


def _lanczos(radius):
    def kernel(x):
        y = radius * _jnp.sin(_np.pi * x) * _jnp.sin(_np.pi * x / radius)
        # sinc(x) sinc(x / radius), with its limit 1 near 0.
        out = _jnp.where(x > 1e-3, y / _jnp.where(x != 0, _np.pi ** 2 * x ** 2, 1), 1)
        return _jnp.where(x > radius, 0.0, out)
    return kernel


def _cubic(a):
    """Keys' cubic convolution kernel: a = -0.5 as Pillow and TensorFlow, -0.75 as OpenCV."""
    def kernel(x):
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return _jnp.where(x >= 2, 0.0, _jnp.where(x >= 1, far, near))
    return kernel


_AREA = "area"   # the overlap of pixel intervals, not a function of distance
_KERNELS = {ResizeMethod.LINEAR: (1, _triangle), ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
            ResizeMethod.LANCZOS5: (5, _lanczos(5.0)), ResizeMethod.CUBIC: (2, _cubic(-0.5)),
            ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)), ResizeMethod.AREA: (1, _AREA)}


# ---------------------------------------------------------------- weights


def _weights(input_size, output_size, scale, translation, kernel, antialias, edge_padding, radius):
    dtype = _jnp.result_type(scale, translation)
    inv_scale = 1.0 / scale
    kernel_scale = _jnp.maximum(inv_scale, 1.0) if antialias else 1.0
    # The input coordinate of each output pixel's centre.
    sample = (_jnp.arange(output_size, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale - 0.5
    reach = radius if edge_padding else 0
    positions = _jnp.arange(-reach, input_size + reach, dtype=dtype)
    if kernel is _AREA:
        left = _jnp.arange(output_size, dtype=dtype) * inv_scale - translation * inv_scale
        pixel = _jnp.arange(input_size, dtype=dtype)
        weights = _jnp.maximum(0.0, _jnp.minimum((left + inv_scale)[None, :], (pixel + 1.0)[:, None])
                               - _jnp.maximum(left[None, :], pixel[:, None]))
    else:
        weights = kernel(_jnp.abs(sample[None, :] - positions[:, None]) / kernel_scale)
    if edge_padding:
        # Taps beyond the edges read the edge pixel: move their weight onto it.
        rows = _jnp.clip(positions.astype(_np.int32), 0, input_size - 1)
        cols = _jnp.broadcast_to(_jnp.arange(output_size)[None, :], weights.shape)
        weights = _jnp.zeros((input_size, output_size), dtype).at[rows[:, None], cols].add(weights)
    weights = _normalized(weights)
    if not edge_padding:
        # An output pixel whose centre falls outside the input gets nothing.
        inside = (sample >= -0.5) & (sample <= input_size - 0.5)
        weights = _jnp.where(inside[None, :], weights, 0)
    return weights


def _normalized(weights):
    total = _jnp.sum(weights, axis=0, keepdims=True)
    safe = _jnp.where(total != 0, total, 1)
    return _jnp.where(_jnp.abs(total) > 1000.0 * float(_np.finfo(_np.float32).eps), weights / safe, 0)


def _resample(x, shape, spatial_dims, scale, translation, kernel, antialias, edge_padding, radius):
    for i, d in enumerate(spatial_dims):
        d = _canonicalize_axis(d, x.ndim)
        w = _weights(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias, edge_padding,
                     radius).astype(x.dtype)
        x = _jnp.moveaxis(_jnp.tensordot(x, w, axes=([d], [0])), -1, d)
    return x


def _check_rank(shape, image):
    if len(shape) != image.ndim:
        raise ValueError(f"shape must have length equal to the number of dimensions of x;  "
                         f"{shape} vs {image.shape}")


def _method_and_kernel(method, antialias):
    method = ResizeMethod.from_string(method) if isinstance(method, str) else method
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC   # PyTorch's antialiased cubic is Keys' a = -0.5
    radius, kernel = _KERNELS[method]
    return method, radius, kernel, method == ResizeMethod.CUBIC_PYTORCH


# ---------------------------------------------------------------- public functions


def scale_and_translate(image, shape, spatial_dims, scale, translation, method, antialias=True,
                        precision=_Precision.HIGHEST):
    """Resample so that input coordinate x lands at output coordinate x * scale + translation
    along each of spatial_dims (pixel centres at half-integers)."""
    shape = _shape_tuple(shape)
    _check_rank(shape, image)
    method = ResizeMethod.from_string(method) if isinstance(method, str) else method
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for scale_and_translate.")
    method, radius, kernel, edge_padding = _method_and_kernel(method, antialias)
    (image,) = _promote_dtypes_inexact(image)
    scale, translation = _promote_dtypes_inexact(scale, translation)
    return _resample(image, shape, spatial_dims, scale, translation, kernel, antialias, edge_padding, radius)


def resize(image, shape, method, antialias=True, precision=_Precision.HIGHEST):
    """The image resampled to `shape` by `method` (a ResizeMethod or its name)."""
    shape = _shape_tuple(shape)
    image = _jnp.asarray(image)
    _check_rank(shape, image)
    method = ResizeMethod.from_string(method) if isinstance(method, str) else method
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    method, radius, kernel, edge_padding = _method_and_kernel(method, antialias)
    (image,) = _promote_dtypes_inexact(image)
    # Unchanged axes are skipped: every kernel interpolates, so an identity warp is exact.
    dims = tuple(d for d in range(image.ndim) if image.shape[d] != shape[d])
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _resample(image, shape, dims, scale, [0.0] * len(dims), kernel, antialias, edge_padding, radius)


def _resize_nearest(x, shape):
    for d in range(x.ndim):
        if x.shape[d] == shape[d]:
            continue
        centres = (_np.arange(shape[d], dtype=_np.float32) + 0.5) * x.shape[d] / shape[d]
        x = _jnp.take(x, _np.floor(centres.astype(_np.float32)).astype(_np.int32), axis=d)
    return x
