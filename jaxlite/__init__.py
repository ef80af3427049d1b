"""jaxlite: a JAX-style functional transformation framework on numpy and llvmlite."""
import sys

from jaxlite import lax, nn, numpy, random, tree, tree_util, typing
from jaxlite import debug, errors
from jaxlite.core.abstract import ShapeDtypeStruct
from jaxlite.core.array import Array
from jaxlite.core.config import config
from jaxlite.core.staging import eval_shape, make_jaxpr
from jaxlite.transforms.ad import grad, jvp, linearize, value_and_grad, vjp
from jaxlite.transforms.checkpoint import checkpoint, checkpoint_policies, remat
from jaxlite.transforms.custom_derivatives import custom_jvp, custom_vjp
from jaxlite.transforms.jacobians import hessian, jacfwd, jacrev
from jaxlite.transforms.batching import vmap
from jaxlite.transforms.jit import clear_caches, disable_jit, jit
from jaxlite.transforms.scopes import named_call, named_scope
from jaxlite.core.trace import ensure_compile_time_eval
from jaxlite.transforms import precision
from jaxlite.compat import JAX_API_VERSION as jax_api_version, install_as_jax
from jaxlite import (api_util, custom_batching, custom_derivatives, experimental, extend, flatten_util,
                     interpreters)

# `from jaxlite.precision import bf16` and `import jaxlite.precision` work, like any submodule.
sys.modules[__name__ + ".precision"] = precision

__version__ = "0.1.0"


def block_until_ready(tree):
    """Wait for every array in a pytree (computation is synchronous here) and return it."""
    return tree
