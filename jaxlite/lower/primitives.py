"""The lax primitives the compiler recognizes by identity, imported from one place.

The pattern-matching passes (passes, rewrites, epilogues, quantized) and the step policy
(step_policy) compare an equation's primitive with these objects, never with a name.
How fusion computes a primitive is not here: each lax block declares that itself
(fusion_rules).
"""
from jaxlite.callback import io_callback_p, pure_callback_p
from jaxlite.debug import debug_callback_p
from jaxlite.lax.complex_parts import complex_p, conj_p, imag_p, real_p
from jaxlite.lax.control_flow.conditionals import cond_p
from jaxlite.lax.control_flow.loops import scan_p, while_p
from jaxlite.lax.dot import dot_general_p
from jaxlite.lax.cumulative import cumprod_p, cumsum_p
from jaxlite.lax.elementwise import (abs_p, add_any_p, add_p, convert_element_type_p, div_p, eq_p, exp_p, gt_p, log_p,
                                     max_p, min_p, mul_p, neg_p, round_p, select_n_p, sub_p)
from jaxlite.lax.linalg import cholesky_p, eig_p, eigh_p, geqrf_p, lu_p, qr_p, qr_pivoted_p, svd_p, triangular_solve_p
from jaxlite.lax.parallel import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p, ppermute_p, psum_p,
                                  psum_scatter_p)
from jaxlite.lax.reductions import reduce_max_p, reduce_prod_p
from jaxlite.lax.rng import rng_uniform_p
from jaxlite.lax.shapes import broadcast_in_dim_p, reshape_p, transpose_p
from jaxlite.lax.sorting import sort_p, top_k_p
from jaxlite.lax.special import polygamma_p

__all__ = ["abs_p", "add_any_p", "add_p", "all_gather_p", "all_to_all_p", "axis_index_p", "broadcast_in_dim_p",
           "cholesky_p", "complex_p", "cond_p", "conj_p", "convert_element_type_p", "cumprod_p", "cumsum_p", "debug_callback_p", "div_p",
           "dot_general_p", "eig_p", "eigh_p", "eq_p", "exp_p", "geqrf_p", "gt_p", "imag_p", "io_callback_p",
           "log_p", "lu_p", "max_p", "min_p", "qr_p", "qr_pivoted_p",
           "mul_p", "neg_p", "pmax_p", "pmin_p", "polygamma_p", "ppermute_p", "psum_p", "psum_scatter_p",
           "pure_callback_p", "real_p", "reduce_max_p", "reduce_prod_p", "reshape_p", "rng_uniform_p", "round_p", "scan_p", "select_n_p", "sort_p",
           "sub_p", "svd_p", "top_k_p", "transpose_p", "triangular_solve_p", "while_p"]
