"""jaxlite.numpy: the NumPy API on jaxlite arrays, built from lax primitives."""
from jaxlite.core import dtypes as _dtypes
from jaxlite.core.array import Array as ndarray
from jaxlite.core.namespace import dir_hiding_submodules as _dir_hiding_submodules
from jaxlite.core.dtypes import promote_types, result_type
from numpy.exceptions import ComplexWarning
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
                                          angle, imag, isclose, log2, log10, logaddexp, logaddexp2,
                                          rad2deg, radians, real, rint, signbit, sinc, sinh, tan,
                                          trunc, where)
from jaxlite.numpy.statistics import (average, count_nonzero, median, nanmax, nanmean, nanmin,
                                      nanprod, nanstd, nansum, nanvar, percentile, ptp, quantile)
from jaxlite.numpy.einsum import einsum, einsum_path
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
from jaxlite.numpy.scalar_types import (bool_, complex64, complex128, complexfloating, finfo,
                                        float16, float32, float64, floating, generic, iinfo, inexact,
                                        int8, int16, int32, int64, integer, issubdtype, number,
                                        signedinteger, uint8, uint16, uint32, uint64, unsignedinteger)
from jaxlite.numpy import scalar_types as _scalar_types
from jaxlite.numpy.util import broadcast_arrays, broadcast_to
from jaxlite.numpy import fft, linalg
from jaxlite.numpy.indexing import (ix_, put_along_axis, ravel_multi_index, take, take_along_axis,
                                    unravel_index)
from jaxlite.numpy.sorting import (argsort, argwhere, compress, extract, flatnonzero, lexsort,
                                   nonzero, searchsorted, sort, sort_complex, unique)
from jaxlite.numpy.convolve import convolve, correlate
from jaxlite.numpy.array_api import (__array_api_version__, __array_namespace_info__, astype,
                                     bitwise_count, can_cast, concat, cumulative_prod,
                                     from_dlpack, isdtype, isscalar, matrix_transpose, matvec,
                                     permute_dims, unique_all, unique_counts, unique_inverse,
                                     unique_values, unstack, vecdot, vecmat)
from jaxlite.numpy.cumulative import ediff1d, gradient, trapezoid, unwrap
from jaxlite.numpy.float_parts import (divmod, fabs, frexp, gcd, isneginf, isposinf, lcm, ldexp,
                                       modf, nan_to_num, spacing)
from jaxlite.numpy.histograms import (bincount, digitize, histogram, histogram2d,
                                      histogram_bin_edges, histogramdd, interp)
from jaxlite.numpy.index_tricks import (c_, diag_indices, diag_indices_from, index_exp, indices,
                                        mask_indices, mgrid, ogrid, r_, s_, tril_indices,
                                        tril_indices_from, triu_indices, triu_indices_from)
from jaxlite.numpy.inspection import (array_equal, array_equiv, broadcast_shapes, iscomplex,
                                      iscomplexobj, isreal, isrealobj, iterable, ndim, shape,
                                      size)
from jaxlite.numpy.io import (array_repr, array_str, frombuffer, fromfile, fromiter, fromstring,
                              get_printoptions, load, printoptions, save, savez,
                              set_printoptions)
from jaxlite.numpy.manipulation import (append, apply_along_axis, apply_over_axes,
                                        argpartition, block, choose, copy, delete, diag,
                                        diagflat, diagonal, dsplit, fill_diagonal, fromfunction,
                                        insert, packbits, partition, piecewise, place, put,
                                        resize, rollaxis, select, trim_zeros, unpackbits, vander)
from jaxlite.numpy.polynomial import (poly, polyadd, polyder, polydiv, polyfit, polyint, polymul,
                                      polysub, polyval, roots)
from jaxlite.numpy.setops import intersect1d, isin, setdiff1d, setxor1d, union1d
from jaxlite.numpy.statistics import (corrcoef, cov, nanargmax, nanargmin, nanmedian,
                                      nanpercentile, nanquantile)
from jaxlite.numpy.custom_ufunc import frompyfunc, ufunc
from jaxlite.numpy.vectorization import vectorize
from jaxlite.numpy.windows import bartlett, blackman, hamming, hanning, i0, kaiser

_install_array_methods()

bool = bool_
dtype = _dtypes.DtypeConstructor

# The array API's spellings of existing functions.
pow = power
atan2 = arctan2
bitwise_invert = invert

# Scalar type aliases, as JAX defines them (64-bit names; they narrow with x64 off).
float_ = double = float64
single = float32
complex_ = cdouble = complex128
csingle = complex64
int_ = int64
uint = uint64
character, flexible, object_ = _dtypes.np.character, _dtypes.np.flexible, _dtypes.np.object_

e = 2.718281828459045
pi = 3.141592653589793
euler_gamma = 0.5772156649015329
inf = float("inf")
nan = float("nan")
newaxis = None



def __getattr__(name):
    # bfloat16, float8_e4m3fn, int4, ...: made on first use, which imports ml_dtypes (see core.dtypes).
    if name in _dtypes.ML_DTYPE_NAMES:
        return getattr(_scalar_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__dir__ = _dir_hiding_submodules(globals(), public_submodules=("fft", "linalg"), lazy_names=_dtypes.ML_DTYPE_NAMES)
