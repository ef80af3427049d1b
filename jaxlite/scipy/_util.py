"""Promotion helpers the jaxlite.scipy modules share."""
from jaxlite import numpy as jnp
from jaxlite.core import dtypes


def inexact_dtype(*args):
    """The dtype the arguments promote to, integers and bools going to a float (complex stays
    complex), as JAX's promote_args_inexact gives it."""
    return dtypes.to_inexact_dtype(dtypes.result_type(*args))


def as_inexact(*args):
    """The arguments as arrays of their common inexact dtype (shapes left as they are)."""
    arrays = [jnp.asarray(a) for a in args]
    dtype = inexact_dtype(*arrays)
    return [a.astype(dtype) for a in arrays]
