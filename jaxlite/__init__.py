"""jaxlite: a JAX-style functional transformation framework on numpy and llvmlite."""
import sys

from jaxlite import lax, nn, numpy, random, tree, tree_util
from jaxlite import dtypes, image, ops
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
from jaxlite.transforms.jit import disable_jit, jit
from jaxlite.transforms import precision

# `from jaxlite.precision import bf16` and `import jaxlite.precision` work, like any submodule.
sys.modules[__name__ + ".precision"] = precision

__version__ = "0.1.0"


def block_until_ready(tree):
    """Wait for every array in a pytree (computation is synchronous here) and return it."""
    return tree
