"""jaxlite.lax: the primitives, each declared once with all its rules."""
from jaxlite.core.namespace import dir_hiding_submodules as _dir_hiding_submodules
from jaxlite.lax.control_flow import (cond, custom_linear_solve, custom_root, fori_loop, linear_solve_p, map,
                                      scan, switch, while_loop)
from jaxlite.lax.elementwise import (
    abs, add, add_any, atan2, bitcast_convert_type, bitwise_and, bitwise_not, bitwise_or,
    bitwise_xor, cbrt, ceil, clamp, convert_element_type, cos, div, eq, exp, exp2, expm1, floor,
    acos, acosh, asin, asinh, atan, atanh, clz, cosh, population_count, shift_left,
    shift_right_arithmetic, shift_right_logical, sinh, tan,
    full_like, ge, gt, integer_pow, is_finite, le, log, log1p, logistic, lt, max, min, mul, ne, neg,
    nextafter, pow, reduce_precision, rem, round, rsqrt, select_n, sign, sin, sqrt, square, sub, tanh)
from jaxlite.lax.parallel import (all_gather, all_to_all, axis_index, axis_size, pmax, pmean, pmin, ppermute,
                                  pshuffle, psum, psum_scatter, pswapaxes)
from jaxlite.lax.reductions import (
    argmax, argmin, reduce_and, reduce_max, reduce_min, reduce_or, reduce_prod, reduce_sum, reduce_xor)
from jaxlite.lax.shapes import (
    broadcast, broadcast_in_dim, broadcasted_iota, concatenate, expand_dims, full, index_in_dim,
    iota, pad, reshape, rev, slice, slice_in_dim, squeeze, transpose)
from jaxlite.lax.dot import Precision, dot, dot_general
from jaxlite.lax.complex_parts import complex, complex_p, conj, conj_p, imag, imag_p, real, real_p

from jaxlite.lax.gradients import stop_gradient
from jaxlite.lax.special import digamma, erf, erf_inv, erfc, lgamma, polygamma
from jaxlite.lax.special_series import (bessel_i0e, bessel_i1e, betainc, igamma, igamma_grad_a,
                                        igammac, random_gamma_grad, regularized_incomplete_beta, zeta)
from jaxlite.lax.cumulative import cumlogsumexp, cummax, cummin, cumprod, cumsum
from jaxlite.lax.fft import FftType, fft
from jaxlite.lax.random_bits import fma, threefry2x32
from jaxlite.lax.other import (
    AccuracyMode, ConvGeneralDilatedDimensionNumbers, DotAlgorithm, DotAlgorithmPreset, DotDimensionNumbers,
    PrecisionLike, Tolerance, batch_matmul, conv_general_dilated_local, index_take, platform_dependent,
    scatter_apply, shape_as_value, stage)
from jaxlite.lax.ragged import RaggedDotDimensionNumbers, ragged_dot, ragged_dot_general
from jaxlite.lax.scaled_dot import scaled_dot
from jaxlite.lax.rng import RandomAlgorithm, mulhi, mulhi_p, rng_bit_generator, rng_bit_generator_p, rng_uniform, rng_uniform_p
from jaxlite.lax.slicing import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, dynamic_index_in_dim,
    dynamic_slice, dynamic_slice_in_dim, dynamic_update_index_in_dim, dynamic_update_slice,
    dynamic_update_slice_in_dim, gather, scatter,
    scatter_add, scatter_max, scatter_min, scatter_mul)
from jaxlite.lax.sorting import sort, sort_key_val, top_k
from jaxlite.lax.tokens import after_all, after_all_p, create_token, create_token_p, dce_sink, dce_sink_p
from jaxlite.lax.named_composite import composite
from jaxlite.lax.linalg import cholesky, lu, svd, triangular_solve
from jaxlite.lax.convolution import conv_general_dilated
from jaxlite.lax.windowed import reduce_window
from jaxlite.lax.composites import (
    ConvDimensionNumbers, Precision, RoundingMethod, approx_max_k, approx_min_k, associative_scan,
    broadcast_like, broadcast_shapes, broadcast_to_rank, collapse, conv, conv_dimension_numbers,
    conv_general_dilated_patches, conv_general_permutations, conv_general_shape_tuple,
    conv_shape_tuple, conv_transpose, conv_transpose_shape_tuple, conv_with_general_padding, dtype,
    empty, optimization_barrier, padtype_to_pads, reciprocal, reduce,
    reduce_window_shape_tuple, scatter_sub, select, split, stack, tile, unstack)

# JAX exports its primitives (jax.lax.add_p, ...) for code that inspects jaxprs.
from jaxlite.lax.control_flow.conditionals import (
    cond_p)
from jaxlite.lax.control_flow.loops import (
    scan_p, while_p)
from jaxlite.lax.convolution import (
    conv_general_dilated_p)
from jaxlite.lax.cumulative import (
    cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p)
from jaxlite.lax.dot import (
    dot_general_p)
from jaxlite.lax.fft import (
    fft_p)
from jaxlite.lax.elementwise import (
    abs_p, acos_p, acosh_p, add_p, and_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p,
    bitcast_convert_type_p, cbrt_p, ceil_p, clz_p, convert_element_type_p, cos_p, cosh_p, div_p,
    eq_p, exp2_p, exp_p, expm1_p, floor_p, ge_p, gt_p, integer_pow_p, is_finite_p, le_p, log1p_p,
    log_p, logistic_p, lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p,
    population_count_p, pow_p, reduce_precision_p, rem_p, round_p, rsqrt_p, select_n_p, shift_left_p,
    shift_right_arithmetic_p, shift_right_logical_p, sign_p, sin_p, sinh_p, sqrt_p, square_p,
    sub_p, tan_p, tanh_p, xor_p)
from jaxlite.lax.gradients import (
    stop_gradient_p)
from jaxlite.lax.parallel import (
    all_gather_p, all_to_all_p, ppermute_p, axis_index_p, pmax_p, pmin_p, psum_p)
from jaxlite.lax.reductions import (
    argmax_p, argmin_p, reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p, reduce_prod_p,
    reduce_sum_p, reduce_xor_p)
from jaxlite.lax.shapes import (
    broadcast_in_dim_p, concatenate_p, iota_p, pad_p, reshape_p, rev_p, slice_p, squeeze_p,
    transpose_p)
from jaxlite.lax.slicing import (
    dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_add_p, scatter_max_p, scatter_min_p,
    scatter_mul_p, scatter_p)
from jaxlite.lax.sorting import (
    sort_p, top_k_p)
from jaxlite.lax.special_series import (
    bessel_i0e_p, bessel_i1e_p, igamma_grad_a_p, igamma_p, igammac_p, regularized_incomplete_beta_p, zeta_p)
from jaxlite.lax.special import (
    digamma_p, erf_inv_p, erf_p, erfc_p, lgamma_p, polygamma_p)
from jaxlite.lax.windowed import (
    reduce_window_max_p, reduce_window_min_p, reduce_window_sum_p)

# jaxlite's own lax functions that JAX keeps elsewhere (jax.lax.linalg) or privately: usable, unlisted.
__dir__ = _dir_hiding_submodules(globals(), public_submodules=("linalg",), unlisted=(
    "add_any", "cholesky", "fma", "lu", "svd", "threefry2x32", "triangular_solve"))
