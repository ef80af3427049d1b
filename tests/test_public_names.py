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
LIBS = "owned by the libs work: issue 21"
MPI = "owned by the mpi work: issue 18 (devices, sharding, multi-process)"
TRANSFORMS = "owned by the transforms work: issue 22"
TRANSFORMS_HYGIENE = "owned by the transforms work: issue 22 (issue 17 item 7 for jax.debug)"
COMPLEX = "complex numbers: issue 16"

# JAX namespace -> why jaxlite has no such module yet. Once the module exists, replace the entry by
# per-name MISSING entries (the test says so).
ABSENT_NAMESPACES = {
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
            allow_f16_reductions array_garbage_collection_guard check_tracer_leaks
            closure_convert
            default_prng_impl ds
            empty_ref enable_custom_prng
            export ffi free_ref
            jax2tf_associative_scan_reductions legacy_prng_key
            make_user_context monitoring no_execution
            no_tracing print_environment_info profiler
            ref softmax_custom_jvp thread_guard threefry_partitionable
            transfer_guard_device_to_device transfer_guard_device_to_host
            transfer_guard_host_to_device
        """,
        LIBS: "lib",
        "array API interchange, with from_dlpack: issue 17 item 2": "dlpack",
        "the package version lives in __version__; JAX's jax.version module has no counterpart":
            "version",
    },
    "jax.debug": {
        TRANSFORMS: """
            DebugEffect OrderedDebugEffect inspect_array_sharding log
            visualize_array_sharding visualize_sharding
        """,
    },
    "jax.lax": {
        MPI: """
            device_put_p pbroadcast pcast precv psend ragged_all_to_all ragged_all_to_all_p
            sharding_constraint_p with_sharding_constraint
        """,
        "JAX primitives whose functions jaxlite's lax computes as compositions of other primitives "
        "(the functions exist; jaxprs show their parts)": """
            approx_top_k_p clamp_p copy_p eq_to_p le_to_p lt_to_p optimization_barrier_p reduce_p
            reduce_window_p scatter_sub_p select_and_gather_add_p select_and_scatter_add_p
            select_and_scatter_p split_p stack_p stage_p tile_p unstack_p
        """,
    },
    "jax.sharding": {
        MPI: """
            AbstractDevice ManualAxisType auto_axes explicit_axes get_abstract_mesh
            get_mesh make_single_device_sharding reshard set_mesh use_abstract_mesh
        """,
    },
}

# JAX namespace -> {reason: names jaxlite's module shows in dir() beyond JAX's}.
EXTRA = {
    "jax": {
        "jaxlite's bf16/int8 precision transforms (DESIGN.md), no JAX counterpart": "precision",
        "JAX's submodules that `import jax` does not import itself; jaxlite imports them": (
            "ad_checkpoint extend flatten_util"),
        "the opt-in that lets `import jax` resolve to jaxlite (issue 21), and the JAX API version it follows":
            "install_as_jax jax_api_version",
    },
    "jax.scipy": {
        "JAX's submodules that `import jax.scipy` does not import itself; jaxlite.scipy imports them":
            "optimize spatial",
    },
    "jax.scipy.spatial": {
        "JAX's submodule that `import jax.scipy.spatial` does not import itself; jaxlite's imports it":
            "transform",
    },
    "jax.debug": {
        TRANSFORMS_HYGIENE: """
            Array EVAL_TRACE FlatCallback Primitive Tracer ad as_array_argument batch_sequentially
            batching builtins current_trace debug_callback_p pdb sys tree_flatten
        """,
    },
    "jax.lax": {
        SCIPY + " (to be made private or explained)": "regularized_incomplete_beta",
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
