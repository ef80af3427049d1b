"""jaxlite's public namespaces against JAX 0.10.2's (the checklist of issue 17).

tests/data/jax_public_names.json lists the public names of each JAX namespace (regenerate it with
tests/data/generate_jax_public_names.py where jax is installed). Every JAX name must exist in
jaxlite's counterpart unless MISSING says why not; a MISSING entry that now exists fails too, so
the table shrinks as the work lands. dir() of each jaxlite namespace lists only JAX's names plus
the EXTRA allowances, so helpers and the modules' own imports stay out of tab completion.
"""
import importlib
import json
import pathlib

import pytest

JAX_NAMES = json.loads(
    (pathlib.Path(__file__).parent / "data" / "jax_public_names.json").read_text())["namespaces"]

SCIPY = "owned by the scipy work: issue 17 item 1"
LAXRAND_LAX = "owned by the laxrand work: issue 17 item 3"
LAXRAND_RANDOM = "owned by the laxrand work: issue 17 item 4"
LAXRAND_ITEM5 = "owned by the laxrand work: issue 17 item 5"
LAXRAND_HYGIENE = "owned by the laxrand work: issue 17 item 7 (module imports and helpers)"
LIBS = "owned by the libs work: issue 21"
LIBS_HYGIENE = "owned by the libs work: issue 21 (issue 17 item 7: module imports and helpers)"
MPI = "owned by the mpi work: issue 18 (devices, sharding, multi-process)"
TRANSFORMS = "owned by the transforms work: issue 22"
TRANSFORMS_HYGIENE = "owned by the transforms work: issue 22 (issue 17 item 7 for jax.debug)"
COMPLEX = "complex numbers: issue 16"
LINALG_FFT = "jnp.linalg and jnp.fft: issue 16"
NUMPY_PENDING = "not yet written: issue 17 item 2 (the numpy work)"

# JAX namespace -> why jaxlite has no such module yet. Once the module exists, replace the entry by
# per-name MISSING entries (the test says so).
ABSENT_NAMESPACES = {
    "jax.dtypes": LAXRAND_ITEM5,
    "jax.image": LAXRAND_ITEM5,
    "jax.numpy.fft": LINALG_FFT,
    "jax.ops": LAXRAND_ITEM5,
    **{name: SCIPY for name in JAX_NAMES if name == "jax.scipy" or name.startswith("jax.scipy.")},
}

# JAX namespace -> {reason: the JAX names jaxlite lacks for that reason (space separated)}.
MISSING = {
    "jax": {
        MPI: """
            NamedSharding P Shard auto_pcast copy_to_host_async default_device host_count host_id
            host_ids live_arrays make_array_from_callback make_array_from_process_local_data
            make_array_from_single_device_arrays memory process_indices
            remove_size_one_mesh_axis_from_type reshard set_mesh smap
        """,
        TRANSFORMS: """
            Ref allow_f16_reductions array_garbage_collection_guard check_tracer_leaks
            checking_leaks closure_convert custom_gradient
            debug_infs debug_key_reuse debug_nans default_matmul_precision default_prng_impl ds
            effects_barrier empty_ref enable_checks enable_custom_prng enable_x64
            explain_cache_misses export ffi free_ref freeze fwd_and_bwd
            jacobian jax2tf_associative_scan_reductions legacy_prng_key linear_transpose
            log_compiles make_user_context monitoring new_ref no_execution
            no_tracing numpy_dtype_promotion numpy_rank_promotion print_environment_info profiler
            pure_callback ref softmax_custom_jvp stages thread_guard threefry_partitionable
            transfer_guard transfer_guard_device_to_device transfer_guard_device_to_host
            transfer_guard_host_to_device typeof
        """,
        LIBS: "ad lib",
        LAXRAND_ITEM5: "dtypes float0 image ops",
        SCIPY: "scipy",
        "array API interchange, with from_dlpack: issue 17 item 2": "dlpack",
        "the package version lives in __version__; JAX's jax.version module has no counterpart":
            "version",
    },
    "jax.debug": {
        TRANSFORMS: """
            DebugEffect OrderedDebugEffect breakpoint inspect_array_sharding log
            visualize_array_sharding visualize_sharding
        """,
    },
    "jax.lax": {
        LAXRAND_LAX: """
            AccuracyMode ConvDimensionNumbers ConvGeneralDilatedDimensionNumbers DotAlgorithm
            DotAlgorithmPreset DotDimensionNumbers FftType PrecisionLike
            RaggedDotDimensionNumbers RandomAlgorithm RoundingMethod Tolerance abs_p acos_p
            acosh_p add_p after_all after_all_p all_gather_p all_to_all all_to_all_p and_p
            approx_max_k approx_min_k approx_top_k_p argmax_p argmin_p asin_p asinh_p
            associative_scan atan2_p atan_p atanh_p axis_index_p axis_size batch_matmul bessel_i0e
            bessel_i0e_p bessel_i1e bessel_i1e_p betainc bitcast_convert_type_p broadcast_in_dim_p
            broadcast_like broadcast_shapes broadcast_to_rank cbrt_p ceil_p clamp_p clz_p collapse
            complex complex_p composite concatenate_p cond_p conj conj_p conv
            conv_dimension_numbers conv_general_dilated_local conv_general_dilated_p
            conv_general_dilated_patches conv_general_permutations conv_general_shape_tuple
            conv_shape_tuple conv_transpose conv_transpose_shape_tuple conv_with_general_padding
            convert_element_type_p copy_p cos_p cosh_p create_token create_token_p cumlogsumexp_p
            cummax_p cummin_p cumprod_p cumsum_p custom_linear_solve custom_root dce_sink
            dce_sink_p device_put_p digamma_p div_p dot_general_p dtype dynamic_slice_p
            dynamic_update_slice_p empty eq_p eq_to_p erf_inv_p erf_p erfc_p exp2_p exp_p expm1_p
            fft fft_p floor_p gather_p ge_p gt_p igamma igamma_grad_a igamma_grad_a_p igamma_p
            igammac igammac_p imag imag_p index_take integer_pow_p iota_p is_finite_p le_p le_to_p
            lgamma_p linear_solve_p log1p_p log_p logistic_p lt_p lt_to_p max_p min_p mul_p mulhi
            mulhi_p ne_p neg_p nextafter_p not_p optimization_barrier optimization_barrier_p or_p
            pad_p padtype_to_pads pbroadcast pcast platform_dependent pmax_p pmin_p polygamma_p
            population_count_p pow_p ppermute ppermute_p precv psend pshuffle psum_p psum_scatter
            pswapaxes ragged_all_to_all ragged_all_to_all_p ragged_dot ragged_dot_general
            random_gamma_grad real real_p reciprocal reduce reduce_and_p reduce_max_p reduce_min_p
            reduce_or_p reduce_p reduce_precision reduce_precision_p reduce_prod_p reduce_sum_p
            reduce_window_max_p reduce_window_min_p reduce_window_p reduce_window_shape_tuple
            reduce_window_sum_p reduce_xor_p regularized_incomplete_beta_p rem_p reshape_p rev_p
            rng_bit_generator rng_bit_generator_p rng_uniform rng_uniform_p round_p rsqrt_p
            scaled_dot scan_p scatter_add_p scatter_apply scatter_max_p scatter_min_p
            scatter_mul_p scatter_p scatter_sub scatter_sub_p select select_and_gather_add_p
            select_and_scatter_add_p select_and_scatter_p select_n_p shape_as_value
            sharding_constraint_p shift_left_p shift_right_arithmetic_p shift_right_logical_p
            sign_p sin_p sinh_p slice_p sort_p split split_p sqrt_p square_p squeeze_p stack
            stack_p stage stage_p stop_gradient_p sub_p tan_p tanh_p tile tile_p top_k_p
            transpose_p unstack unstack_p while_p with_sharding_constraint xor_p zeta zeta_p
        """,
    },
    "jax.nn": {
        LAXRAND_ITEM5: """
            dot_product_attention get_scaled_dot_general_config log1mexp logmeanexp
            scaled_dot_general scaled_matmul sparse_plus sparse_sigmoid tanh
        """,
    },
    "jax.numpy": {
        COMPLEX: "ComplexWarning angle cdouble complex_ csingle roots sort_complex",
        LINALG_FFT: "fft",
        "needs the modified Bessel function i0 (lax.bessel_i0e): owned by the scipy work, "
        "issue 17 item 1": "i0 kaiser",
        "ml_dtypes' narrow types: jaxlite's dtype lattice and compiler carry only the dtypes "
        "DESIGN.md lists (float8/float6/float4/int4 arrays are not supported)": """
            float4_e2m1fn float6_e2m3fn float6_e3m2fn float8_e3m4 float8_e4m3 float8_e4m3b11fnuz
            float8_e8m0fnu int1 int2
            int4 uint1 uint2 uint4
        """,
        NUMPY_PENDING: "einsum_path from_dlpack frompyfunc ufunc",
    },
    "jax.numpy.linalg": {
        LINALG_FFT: """
            cond cross diagonal eig eigh eigvals eigvalsh lstsq matmul matrix_norm matrix_power
            matrix_rank multi_dot outer pinv qr svdvals tensordot tensorinv tensorsolve trace
            vecdot vector_norm
        """,
    },
    "jax.random": {
        LAXRAND_RANDOM: """
            ball beta binomial chisquare clone dirichlet double_sided_maxwell f gamma
            generalized_normal geometric key_dtype key_impl loggamma maxwell multinomial
            multivariate_normal orthogonal poisson random_gamma_p t triangular wald
        """,
    },
    "jax.sharding": {
        MPI: """
            AbstractDevice ManualAxisType auto_axes explicit_axes get_abstract_mesh
            get_mesh make_single_device_sharding reshard set_mesh use_abstract_mesh
        """,
    },
    "jax.flatten_util": {},
    "jax.nn.initializers": {},
    "jax.tree": {},
    "jax.typing": {},
    "jax.tree_util": {
        LIBS: "default_registry",
    },
}

# JAX namespace -> {reason: names jaxlite's module shows in dir() beyond JAX's}.
EXTRA = {
    "jax": {
        "jaxlite's bf16/int8 precision transforms (DESIGN.md), no JAX counterpart": "precision",
        "the opt-in that runs JAX code on jaxlite (issue 21), and the JAX API version it follows":
            "install_as_jax jax_api_version",
        "JAX submodules that dir(jax) shows only once imported (jaxlite imports them eagerly)":
            "ad_checkpoint extend flatten_util",
    },
    "jax.debug": {
        TRANSFORMS_HYGIENE: """
            Primitive ad as_array_argument batching builtins debug_callback_p np tree_flatten
            tree_unflatten
        """,
    },
    "jax.lax": {
        "owned by the mpi work: issue 18 (an implementation module)": "process_collectives",
        LAXRAND_HYGIENE: """
            add_any base cholesky control_flow convolution cumulative elementwise fma gradients lu
            parallel random_bits reductions shapes slicing sorting special svd threefry2x32
            triangular_solve windowed
        """,
    },
    "jax.nn": {
        LAXRAND_HYGIENE: """
            broadcast_to canonicalize_axis dtypes erfc jnp lax np promote_and_broadcast
            promote_to_inexact
        """,
    },
    "jax.nn.initializers": {
        LAXRAND_HYGIENE: """
            dtypes jnp math random
        """,
    },
    "jax.random": {
        LAXRAND_HYGIENE: """
            Sequence Tracer broadcast_shapes canonicalize_axis dtypes erf erf_inv jnp lax math np
            promote_to_inexact shape_tuple
        """,
    },
}

PRESENT_NAMESPACES = sorted(name for name in JAX_NAMES if name not in ABSENT_NAMESPACES)


def jaxlite_module(jax_namespace):
    return importlib.import_module("jaxlite" + jax_namespace[len("jax"):])


def table_names(table, namespace):
    """{name: reason} from a {reason: names} table entry, checking no name is listed twice."""
    by_name = {}
    for reason, names in table.get(namespace, {}).items():
        for name in names.split():
            assert name not in by_name, f"{namespace}.{name} is listed twice in the table"
            by_name[name] = reason
    return by_name


def test_every_jax_namespace_is_covered():
    assert set(MISSING) | set(ABSENT_NAMESPACES) | set(EXTRA) <= set(JAX_NAMES)
    assert set(PRESENT_NAMESPACES) <= set(MISSING) | set(EXTRA) | {"jax.numpy"}


@pytest.mark.parametrize("namespace", PRESENT_NAMESPACES)
def test_jax_names_exist(namespace):
    module = jaxlite_module(namespace)
    excluded = table_names(MISSING, namespace)
    missing = [name for name in JAX_NAMES[namespace]
               if name not in excluded and not hasattr(module, name)]
    assert not missing, f"jaxlite{namespace[3:]} lacks JAX's names: {' '.join(missing)}"


@pytest.mark.parametrize("namespace", PRESENT_NAMESPACES)
def test_missing_table_is_honest(namespace):
    module = jaxlite_module(namespace)
    excluded = table_names(MISSING, namespace)
    not_jax = sorted(set(excluded) - set(JAX_NAMES[namespace]))
    assert not not_jax, f"MISSING[{namespace!r}] lists names JAX does not have: {not_jax}"
    landed = sorted(name for name in excluded if hasattr(module, name))
    assert not landed, f"now present, remove from MISSING[{namespace!r}]: {' '.join(landed)}"


@pytest.mark.parametrize("namespace", PRESENT_NAMESPACES)
def test_dir_lists_only_public_api(namespace):
    shown = {name for name in dir(jaxlite_module(namespace)) if not name.startswith("_")}
    allowed = table_names(EXTRA, namespace)
    unexplained = sorted(shown - set(JAX_NAMES[namespace]) - set(allowed))
    assert not unexplained, (f"dir(jaxlite{namespace[3:]}) shows names JAX's namespace does not "
                             f"have (make them private or explain them in EXTRA): {unexplained}")
    hidden = sorted(name for name in JAX_NAMES[namespace]
                    if name not in shown and hasattr(jaxlite_module(namespace), name))
    assert not hidden, f"present but not in dir() (a public submodule to list?): {hidden}"
    gone = sorted(set(allowed) - shown)
    assert not gone, f"no longer shown, remove from EXTRA[{namespace!r}]: {' '.join(gone)}"


def exists_in_this_tree(jax_namespace):
    """Whether this checkout has the module (an editable install elsewhere may also offer it)."""
    import jaxlite
    relative = pathlib.Path(*jax_namespace.split(".")[1:])
    package = pathlib.Path(jaxlite.__file__).parent
    return (package / relative).with_suffix(".py").exists() or (package / relative).is_dir()


@pytest.mark.parametrize("namespace", sorted(ABSENT_NAMESPACES))
def test_absent_namespaces_are_absent(namespace):
    if not exists_in_this_tree(namespace):
        return
    pytest.fail(f"jaxlite{namespace[3:]} exists now: replace ABSENT_NAMESPACES[{namespace!r}] "
                f"by per-name MISSING entries")
