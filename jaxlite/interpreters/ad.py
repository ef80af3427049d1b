"""Forward and reverse mode rule tables and helpers, as jax.interpreters.ad names them."""
from jaxlite.transforms.ad import JVPTrace, JVPTracer, UndefinedPrimal, Zero, defbilinear, defjvp
from jaxlite.transforms.ad import add_tangents as add_jaxvals
from jaxlite.transforms.ad import instantiate as instantiate_zeros
from jaxlite.transforms.ad import is_undefined as is_undefined_primal
from jaxlite.transforms.ad import jvp_rules as primitive_jvps
from jaxlite.transforms.ad import transpose_rules as primitive_transposes
