"""Promotion helpers the jaxlite.scipy modules share."""
from jaxlite import numpy as jnp
from jaxlite.core import dtypes


def inexact_dtype(*args):
    """The dtype the arguments promote to, integers and bools going to the default float
    (complex stays complex, as JAX's promote_args_inexact keeps it)."""
    dtype = dtypes.result_type(*args)
    return dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()


def as_inexact(*args):
    """The arguments as arrays of their common inexact dtype (shapes left as they are)."""
    arrays = [jnp.asarray(a) for a in args]
    dtype = inexact_dtype(*arrays)
    return [a.astype(dtype) for a in arrays]
