"""jaxlite: a JAX-style functional transformation framework on numpy and llvmlite."""
import sys as _sys

from jaxlite import lax, nn, numpy, random, tree, tree_util, typing
from jaxlite import dtypes, image, ops
from jaxlite.dtypes import float0
from jaxlite import ad, ad_checkpoint, debug, errors, experimental
from jaxlite.callback import pure_callback
from jaxlite.core.abstract import ShapeDtypeStruct
from jaxlite.core.array import Array
from jaxlite.core.config import (checking_leaks, config, debug_infs, debug_key_reuse, debug_nans,
                                 default_matmul_precision, enable_checks, enable_x64, explain_cache_misses,
                                 log_compiles, numpy_dtype_promotion, numpy_rank_promotion, transfer_guard)
from jaxlite.core.ref import Ref, freeze, new_ref
from jaxlite.core.staging import eval_shape, make_jaxpr, typeof
from jaxlite.core.namespace import dir_hiding_submodules as _dir_hiding_submodules
from jaxlite.transforms.ad import fwd_and_bwd, grad, jvp, linear_transpose, linearize, value_and_grad, vjp
from jaxlite.transforms.checkpoint import checkpoint, checkpoint_policies, remat
from jaxlite.transforms.custom_derivatives import custom_jvp, custom_vjp
from jaxlite.transforms.custom_gradient import custom_gradient
from jaxlite.transforms.jacobians import hessian, jacfwd, jacrev
from jaxlite.transforms.jacobians import jacrev as jacobian
from jaxlite.transforms.batching import vmap
from jaxlite.transforms.jit import clear_caches, disable_jit, jit
from jaxlite.transforms.scopes import named_call, named_scope
from jaxlite.core.trace import ensure_compile_time_eval
from jaxlite.transforms import precision, stages
from jaxlite import distributed, sharding
from jaxlite._sharding import (Device, default_backend, device_count, device_get, device_put, devices,
                               local_device_count, local_devices, make_mesh, process_count, process_index)
from jaxlite.transforms.shard_map import pmap, shard_map
from jaxlite.compat import JAX_API_VERSION as jax_api_version, install_as_jax
from jaxlite import api_util, custom_batching, custom_derivatives, extend, flatten_util, interpreters

# `from jaxlite.precision import bf16` and `import jaxlite.precision` work, like any submodule.
_sys.modules[__name__ + ".precision"] = precision
_sys.modules[__name__ + ".stages"] = stages

# jaxlite.scipy is imported on first use: most programs never need it, and every one would pay its
# import time.
_LAZY_SUBMODULES = ("scipy",)


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# jaxlite.core stays shown: JAX has jax.core (its API is the libs work, issue 21).
__dir__ = _dir_hiding_submodules(globals(), public_submodules=(
    "ad", "ad_checkpoint", "api_util", "core", "custom_batching", "custom_derivatives", "debug", "distributed",
    "dtypes", "errors", "experimental", "extend", "flatten_util", "image", "interpreters", "lax", "nn",
    "numpy", "ops", "precision", "random", "scipy", "sharding", "stages", "tree", "tree_util", "typing"),
    lazy_names=_LAZY_SUBMODULES)

__version__ = "0.1.0"


def effects_barrier():
    """Wait until the side effects (callbacks) of computations already run are done: jaxlite
    runs them synchronously, so they are."""


def block_until_ready(tree):
    """Wait for every array in a pytree (computation is synchronous here) and return it."""
    return tree
