"""The primitives between complex values and their real parts: real, imag, complex, conj.

Transposes follow JAX's convention: a cotangent c of a complex value pairs with a tangent v
as Re(c * v), with no conjugation, so every transpose is the plain transpose of a linear map
of real pairs. imag(v) = Re(-1j * v) makes imag's transpose -1j * ct; x + 1j y pairs with c
as Re(c) x - Im(c) y, so complex's transpose is (real(ct), -imag(ct)).
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.lax.base import COMPLEX, FLOAT, INEXACT, as_operand, as_operands, check_dtype, elementwise_aval
from jaxlite.lax.base import naryop_primitive, unary_primitive
from jaxlite.lax.elementwise import full_like, neg, unbroadcast
from jaxlite.transforms import ad

real_p = unary_primitive("real", np.real, COMPLEX, out_dtype=dtypes.real_dtype)


def real(x):
    return real_p.bind(as_operand(x))


imag_p = unary_primitive("imag", np.imag, COMPLEX, out_dtype=dtypes.real_dtype)


def imag(x):
    return imag_p.bind(as_operand(x))


def _complex_impl(x, y):
    x, y = np.broadcast_arrays(x, y)
    out = np.empty(x.shape, dtypes.complex_dtype(x.dtype))
    out.real, out.imag = x, y
    return out


complex_p = naryop_primitive("complex", _complex_impl, FLOAT, out_dtype=dtypes.complex_dtype)


def _complex_aval(x, y):
    for position, aval in enumerate((x, y)):
        if aval.dtype not in (dtypes.float32, dtypes.float64):
            raise TypeError(f"complex does not accept dtype {aval.dtype.name} at position {position}: "
                            "its parts must be float32 or float64")
    return elementwise_aval("complex", (x, y), FLOAT, dtypes.complex_dtype)


complex_p.def_abstract_eval(_complex_aval)


def complex(x, y):
    """x + 1j * y for float32 or float64 parts."""
    return complex_p.bind(*as_operands(x, y))


def _conj_aval(x, input_dtype):
    check_dtype("conj", x, INEXACT)
    return x.update(dtype=dtypes.complex_dtype(x.dtype), weak_type=x.weak_type)


def _conj_impl(x, input_dtype):
    return np.conjugate(x).astype(dtypes.complex_dtype(x.dtype), copy=False)    # (a real x widens)


conj_p = unary_primitive("conj", _conj_impl, INEXACT)
conj_p.def_abstract_eval(_conj_aval)


def conj(x):
    """The complex conjugate; as JAX, a real x gives a complex result."""
    x = as_operand(x)
    return conj_p.bind(x, input_dtype=x.dtype)


def _zeros_of(x):
    return full_like(x, 0)


ad.deflinear(real_p, lambda ct, x: [complex(ct, _zeros_of(ct))])
ad.deflinear(imag_p, lambda ct, x: [complex(_zeros_of(ct), neg(ct))])
ad.deflinear(complex_p, lambda ct, x, y: [
    unbroadcast(real(ct), x.aval) if ad.is_undefined(x) else None,
    unbroadcast(neg(imag(ct)), y.aval) if ad.is_undefined(y) else None])


def _conj_transpose(ct, x, input_dtype):
    if dtypes.is_complex(input_dtype):
        return [conj(ct)]
    return [real(ct)]


ad.deflinear(conj_p, _conj_transpose)
