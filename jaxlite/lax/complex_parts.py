"""conj: the complex conjugate. jaxlite's arrays are real (no complex dtype), so it is the
identity on them, with JAX's name and primitive (libraries register rules for conj_p)."""
import numpy as np

from jaxlite.core.primitive import compiler_rewrites
from jaxlite.lax.base import NUMBER, as_operand, unary_primitive
from jaxlite.lax.elementwise import convert_element_type
from jaxlite.transforms import ad

conj_p = unary_primitive("conj", np.conjugate, NUMBER)


def conj(x):
    return conj_p.bind(as_operand(x))


ad.deflinear(conj_p, lambda ct, x: [conj(ct)])
# Compiled as a copy: the real part of a real array is itself.
compiler_rewrites[conj_p] = lambda x, memory_orders=None: convert_element_type(x, x.dtype)
