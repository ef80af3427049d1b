"""jaxlite.lax: the primitives, each declared once with all its rules."""
from jaxlite.lax.control_flow import cond, fori_loop, map, scan, switch, while_loop
from jaxlite.lax.elementwise import (
    abs, add, add_any, atan2, bitcast_convert_type, bitwise_and, bitwise_not, bitwise_or,
    bitwise_xor, cbrt, ceil, clamp, convert_element_type, cos, div, eq, exp, exp2, expm1, floor,
    acos, acosh, asin, asinh, atan, atanh, clz, cosh, population_count, shift_left,
    shift_right_arithmetic, shift_right_logical, sinh, tan,
    full_like, ge, gt, integer_pow, is_finite, le, log, log1p, logistic, lt, max, min, mul, ne, neg,
    nextafter, pow, reduce_precision, rem, round, rsqrt, select_n, sign, sin, sqrt, square, sub, tanh)
from jaxlite.lax.parallel import all_gather, axis_index, pmax, pmean, pmin, psum
from jaxlite.lax.reductions import (
    argmax, argmin, reduce_and, reduce_max, reduce_min, reduce_or, reduce_prod, reduce_sum, reduce_xor)
from jaxlite.lax.shapes import (
    broadcast, broadcast_in_dim, broadcasted_iota, concatenate, expand_dims, full, index_in_dim,
    iota, pad, reshape, rev, slice, slice_in_dim, squeeze, transpose)
from jaxlite.lax.dot import dot, dot_general

from jaxlite.lax.gradients import stop_gradient
from jaxlite.lax.special import digamma, erf, erf_inv, erfc, lgamma, polygamma
from jaxlite.lax.cumulative import cumlogsumexp, cummax, cummin, cumprod, cumsum
from jaxlite.lax.random_bits import fma, threefry2x32
from jaxlite.lax.slicing import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, dynamic_index_in_dim,
    dynamic_slice, dynamic_slice_in_dim, dynamic_update_index_in_dim, dynamic_update_slice,
    dynamic_update_slice_in_dim, gather, scatter,
    scatter_add, scatter_max, scatter_min, scatter_mul)
from jaxlite.lax.sorting import sort, sort_key_val, top_k
from jaxlite.lax.linalg import cholesky, lu, svd, triangular_solve
from jaxlite.lax.convolution import conv_general_dilated
from jaxlite.lax.windowed import reduce_window
