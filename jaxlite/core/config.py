"""Global options, set with `jaxlite.config.update(name, value)` as in JAX, or for a block
with their context managers (`with jaxlite.debug_nans(True): ...`).

Each option may also come from an environment variable of the same name in upper
case (JAX_ENABLE_X64=1), read once at import.
"""
import os
from contextlib import contextmanager

_DEFAULTS = {
    "jax_enable_x64": False,
    "jax_log_compiles": False,
    "jax_explain_cache_misses": False,
    "jax_compilation_cache_dir": None,
    "jax_disable_jit": False,
    "jax_traceback_filtering": "auto",  # "off": keep jaxlite's own frames in tracebacks
    # Re-run a step that produced a nan (an inf) eagerly and raise FloatingPointError naming
    # the primitive (jit: the function as if not jitted; eager: each primitive is checked).
    "jax_debug_nans": False,
    "jax_debug_infs": False,
    "jax_numpy_dtype_promotion": "standard",   # "strict": mixed dtypes need explicit casts
    "jax_numpy_rank_promotion": "allow",        # "warn"/"raise" when jnp broadcasts ranks up
    "jax_transfer_guard": None,                 # "disallow": jit refuses numpy arguments
    "jax_default_matmul_precision": None,       # float32 matmuls are computed in float32
    "jax_num_cpu_devices": -1,                  # one device here, whatever is asked
    "jaxlite_dump_passes": False,
    "jaxlite_autotune": True,           # measure close-call GEMM plans once (lower/autotune.py)
    "jaxlite_autotune_max_flops": 32_000_000,   # ... those of at most this many FLOPs
}

_CHOICES = {
    "jax_numpy_dtype_promotion": ("standard", "strict"),
    "jax_numpy_rank_promotion": ("allow", "warn", "raise"),
    "jax_transfer_guard": (None, "allow", "log", "disallow", "log_explicit", "disallow_explicit"),
    "jax_default_matmul_precision": (None, "default", "high", "highest", "bfloat16", "tensorfloat32",
                                     "float32", "bfloat16_3x", "fastest"),
}

# JAX's options that mean nothing for one CPU process (accelerators, XLA, export, caches
# jaxlite keeps otherwise): accepted and kept, so scripts written for JAX run unchanged.
_ACCEPTED_WITHOUT_EFFECT = {
    "jax_platforms": None, "jax_platform_name": "", "jax_default_device": None, "jax_default_prng_impl":
    "threefry2x32", "jax_threefry_partitionable": True, "jax_enable_checks": False, "jax_check_tracer_leaks":
    False, "jax_remat3": False, "jax_scan3": False, "jax_custom_vjp3": False, "jax_use_direct_linearize": True,
    "jax_softmax_custom_jvp": False, "jax_enable_custom_prng": False, "jax_debug_key_reuse": False,
    "jax_log_checkpoint_residuals": False, "jax_transfer_guard_host_to_device": None,
    "jax_transfer_guard_device_to_host": None, "jax_transfer_guard_device_to_device": None,
    "jax_enable_compilation_cache": True, "jax_persistent_cache_min_compile_time_secs": 1.0,
    "jax_persistent_cache_min_entry_size_bytes": 0, "jax_compilation_cache_max_size": -1,
    "jax_raise_persistent_cache_errors": False, "jax_dump_ir_to": "", "jax_dump_ir_modes": "stablehlo",
    "jax_logging_level": "NOTSET", "jax_debug_log_modules": "", "jax_pprint_use_color": True,
    "jax_cpu_enable_async_dispatch": True, "jax_cpu_collectives_implementation": "gloo",
    "jax_disable_most_optimizations": False, "jax_optimization_level": "UNKNOWN",
    "jax_memory_fitting_level": "O2", "jax_exec_time_optimization_effort": 0.0,
    "jax_memory_fitting_effort": 0.0, "jax_random_seed_offset": 0, "jax_legacy_prng_key": "allow",
    "jax_mutable_array_checks": True, "jax_check_static_indices": False, "jax_allow_f16_reductions": True,
    "jax_include_full_tracebacks_in_locations": True, "jax_traceback_in_locations_limit": 100,
    "jax_tracer_error_num_traceback_frames": 5, "jax_captured_constants_warn_bytes": 2_000_000_000,
    "jax_captured_constants_report_frames": 0, "jax_use_simplified_jaxpr_constants": False,
    "jax_use_shardy_partitioner": True, "jax_distributed_debug": False, "jax_thread_guard": False,
    "jax_compiler_enable_remat_pass": True, "jax_high_dynamic_range_gumbel": False,
    "jax_error_checking_behavior_nan": "ignore", "jax_error_checking_behavior_divide": "ignore",
    "jax_error_checking_behavior_oob": "ignore", "jax_enable_pgle": False, "jax_no_tracing": False,
    "jax_no_execution": False, "jax_sort_devices_by_process_index": True, "jax_cuda_visible_devices": "all",
    "jax_rocm_visible_devices": "all", "jax_xla_backend": "", "jax_backend_target": "",
}


def _from_environment(name, default):
    raw = os.environ.get(name.upper())
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return raw


class Config:
    """Attribute access reads an option (`config.jax_enable_x64`); `update` changes it."""

    def __init__(self):
        defaults = {**_ACCEPTED_WITHOUT_EFFECT, **_DEFAULTS}
        self._values = {name: _from_environment(name, default) for name, default in defaults.items()}
        self._listeners = []

    @property
    def values(self):
        return dict(self._values)

    def update(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        choices = _CHOICES.get(name)
        if choices is not None and value not in choices:
            raise ValueError(f"new enum value must be in {list(choices)}, got {value!r} of type "
                             f"{type(value)} for {name}.")
        self._values[name] = value
        for listener in self._listeners:
            listener(name, value)

    def read(self, name):
        return self._values[name]

    def on_change(self, listener):
        """Register `listener(name, value)`, e.g. to drop caches that depend on an option."""
        self._listeners.append(listener)

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)


config = Config()


def _state_context_manager(name):
    """JAX's context manager for one option: `with debug_nans(True):` sets it for the block."""
    @contextmanager
    def manager(new_val=True):
        previous = config.read(name)
        config.update(name, new_val)
        try:
            yield
        finally:
            config.update(name, previous)
    manager.__name__ = name[len("jax_"):]
    manager.__doc__ = f"Set the option {name!r} for the duration of a with-block."
    return manager


debug_nans = _state_context_manager("jax_debug_nans")
debug_infs = _state_context_manager("jax_debug_infs")
numpy_dtype_promotion = _state_context_manager("jax_numpy_dtype_promotion")
numpy_rank_promotion = _state_context_manager("jax_numpy_rank_promotion")
log_compiles = _state_context_manager("jax_log_compiles")
explain_cache_misses = _state_context_manager("jax_explain_cache_misses")
transfer_guard = _state_context_manager("jax_transfer_guard")
default_matmul_precision = _state_context_manager("jax_default_matmul_precision")
enable_x64 = _state_context_manager("jax_enable_x64")
enable_checks = _state_context_manager("jax_enable_checks")
checking_leaks = _state_context_manager("jax_check_tracer_leaks")
debug_key_reuse = _state_context_manager("jax_debug_key_reuse")
