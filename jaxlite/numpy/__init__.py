"""jaxlite.numpy: the NumPy API on jaxlite arrays, built from lax primitives."""
from jaxlite.core import dtypes as _dtypes
from jaxlite.core.array import Array as ndarray
from jaxlite.core.dtypes import (bfloat16, bool_, float16, float32, float64, int8, int16, int32,
                                 int64, promote_types, result_type, uint8, uint16, uint32, uint64)
from jaxlite.numpy.array_methods import install as _install_array_methods
from jaxlite.numpy.creation import (arange, array, asarray, empty, empty_like, eye, full,
                                    full_like, identity, linspace, ones, ones_like, zeros,
                                    zeros_like)
from jaxlite.numpy.products import dot, matmul
from jaxlite.numpy.reductions import (all, amax, amin, any, argmax, argmin, max, mean, min, prod,
                                      std, sum, var)
from jaxlite.numpy.shape_ops import (concatenate, expand_dims, moveaxis, ravel, reshape, squeeze,
                                     stack, swapaxes, transpose)
from jaxlite.numpy.ufuncs import (abs, absolute, add, arctan2, around, bitwise_and, bitwise_not,
                                  bitwise_or, bitwise_xor, cbrt, ceil, cos, divide, equal, exp,
                                  exp2, expm1, floor, floor_divide, greater, greater_equal, invert,
                                  isfinite, isinf, isnan, less, less_equal, log, log1p,
                                  logical_and, logical_not, logical_or, logical_xor, maximum,
                                  minimum, mod, multiply, negative, nextafter, not_equal, positive,
                                  power, reciprocal, remainder, round, sign, sin, sqrt, square,
                                  subtract, tanh, true_divide)
from jaxlite.numpy.util import broadcast_arrays, broadcast_to
from jaxlite.numpy import linalg
from jaxlite.numpy.indexing import (ix_, put_along_axis, ravel_multi_index, take, take_along_axis,
                                    unravel_index)
from jaxlite.numpy.sorting import (argsort, argwhere, compress, extract, flatnonzero, lexsort,
                                   nonzero, searchsorted, sort, unique, where)
from jaxlite.numpy.convolve import convolve, correlate

_install_array_methods()

bool = bool_
dtype = _dtypes.np.dtype
