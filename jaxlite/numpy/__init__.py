"""jaxlite.numpy: the NumPy API on jaxlite arrays, built from lax primitives."""
from jaxlite.core import dtypes as _dtypes
from jaxlite.core.array import Array as ndarray
from jaxlite.core.namespace import dir_hiding_submodules as _dir_hiding_submodules
from jaxlite.core.dtypes import promote_types, result_type
from jaxlite.numpy.array_methods import install as _install_array_methods
from jaxlite.numpy.creation import (arange, array, asarray, empty, empty_like, eye, full,
                                    full_like, geomspace, identity, linspace, logspace, meshgrid,
                                    ones, ones_like, tri, tril, triu, zeros, zeros_like)
from jaxlite.numpy.cumulative import (cumprod, cumsum, cumulative_sum, diff, nancumprod,
                                      nancumsum)
from jaxlite.numpy.joining import (array_split, atleast_1d, atleast_2d, atleast_3d, column_stack,
                                   dstack, flip, fliplr, flipud, hsplit, hstack, pad, repeat, roll,
                                   rot90, split, tile, vsplit, vstack)
from jaxlite.numpy.math_functions import (acos, acosh, allclose, arccos, arccosh, arcsin,
                                          arcsinh, arctan, arctanh, asin, asinh, atan, atanh,
                                          clip, conj, conjugate, copysign, cosh, deg2rad, degrees,
                                          float_power, fmax, fmin, fmod, heaviside, hypot,
                                          imag, isclose, log2, log10, logaddexp, logaddexp2,
                                          rad2deg, radians, real, rint, signbit, sinc, sinh, tan,
                                          trunc, where)
from jaxlite.numpy.statistics import (average, count_nonzero, median, nanmax, nanmean, nanmin,
                                      nanprod, nanstd, nansum, nanvar, percentile, ptp, quantile)
from jaxlite.numpy.einsum import einsum
from jaxlite.numpy.products import (cross, dot, inner, kron, matmul, outer, tensordot, trace,
                                    vdot)
from jaxlite.numpy.reductions import (all, amax, amin, any, argmax, argmin, max, mean, min, prod,
                                      std, sum, var)
from jaxlite.numpy.shape_ops import (concatenate, expand_dims, moveaxis, ravel, reshape, squeeze,
                                     stack, swapaxes, transpose)
from jaxlite.numpy.ufuncs import (abs, absolute, add, arctan2, around, bitwise_and,
                                  bitwise_left_shift, bitwise_not, bitwise_right_shift, left_shift,
                                  right_shift,
                                  bitwise_or, bitwise_xor, cbrt, ceil, cos, divide, equal, exp,
                                  exp2, expm1, floor, floor_divide, greater, greater_equal, invert,
                                  isfinite, isinf, isnan, less, less_equal, log, log1p,
                                  logical_and, logical_not, logical_or, logical_xor, maximum,
                                  minimum, mod, multiply, negative, nextafter, not_equal, positive,
                                  power, reciprocal, remainder, round, sign, sin, sqrt, square,
                                  subtract, tanh, true_divide)
from jaxlite.numpy.scalar_types import (bfloat16, bool_, complexfloating, finfo, float16, float32,
                                        float64, floating, generic, iinfo, inexact, int8, int16,
                                        int32, int64, integer, issubdtype, number, signedinteger,
                                        uint8, uint16, uint32, uint64, unsignedinteger)
from jaxlite.numpy.util import broadcast_arrays, broadcast_to
from jaxlite.numpy import linalg
from jaxlite.numpy.indexing import (ix_, put_along_axis, ravel_multi_index, take, take_along_axis,
                                    unravel_index)
from jaxlite.numpy.sorting import (argsort, argwhere, compress, extract, flatnonzero, lexsort,
                                   nonzero, searchsorted, sort, unique)
from jaxlite.numpy.convolve import convolve, correlate

_install_array_methods()

bool = bool_
dtype = _dtypes.np.dtype

__dir__ = _dir_hiding_submodules(globals(), public_submodules=("fft", "linalg"))
