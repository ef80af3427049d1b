"""Polynomials as 1-D coefficient arrays, highest power first (numpy's poly1d convention)."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.numpy import creation, joining, linalg, reductions, shape_ops
from jaxlite.numpy.convolve import convolve
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast, promote_dtypes


def _inexact(name, *arrays):
    """Arrays in their common dtype, made inexact, without broadcasting their shapes."""
    check_arraylike(name, *arrays)
    arrays = promote_dtypes(*arrays)
    dtype = arrays[0].dtype if dtypes.is_float(arrays[0].dtype) else dtypes.default_float_dtype()
    return [lax.convert_element_type(a, dtype) for a in arrays]


def _coefficients(name, *polys):
    polys = _inexact(name, *polys)
    for p in polys:
        if p.ndim != 1:
            raise ValueError(f"{name}: polynomial coefficients must be 1-D, got shape {p.shape}")
    return polys


def polyval(p, x, *, unroll=16):
    """Horner's rule, in the promoted dtype of p and x (integers stay integers)."""
    check_arraylike("polyval", p, x)
    p, x = promote_dtypes(p, x)
    if p.ndim != 1:
        raise ValueError(f"polyval: p must be 1-D, got shape {p.shape}")
    out = lax.full(x.shape, 0, x.dtype)
    for i in range(p.shape[0]):
        out = lax.add(lax.mul(out, x), lax.broadcast(p[i], x.shape))
    return out


def _left_pad(p, length):
    return joining.pad(p, [(length - p.shape[0], 0)]) if p.shape[0] < length else p


def polyadd(a1, a2):
    check_arraylike("polyadd", a1, a2)
    a1, a2 = (shape_ops.ravel(a) for a in promote_dtypes(a1, a2))
    n = max(a1.shape[0], a2.shape[0])
    return lax.add(_left_pad(a1, n), _left_pad(a2, n))


def polysub(a1, a2):
    (a2,) = promote_and_broadcast("polysub", a2)
    return polyadd(a1, lax.neg(a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
    a1, a2 = _coefficients("polymul", shape_ops.ravel(creation.asarray(a1)),
                           shape_ops.ravel(creation.asarray(a2)))
    if trim_leading_zeros:
        a1, a2 = (_trim_leading(a) for a in (a1, a2))
    if a1.shape[0] == 0 or a2.shape[0] == 0:
        return creation.zeros((1,), a1.dtype)
    return convolve(a1, a2, mode="full")


def _trim_leading(p):
    from jaxlite.numpy.manipulation import trim_zeros
    trimmed = trim_zeros(p, "f")
    return trimmed if trimmed.shape[0] else p[-1:]


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder by long division (the remainder keeps u's length)."""
    u, v = _coefficients("polydiv", u, v)
    if trim_leading_zeros:
        v = _trim_leading(v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = lax.div(lax.full((), 1, u.dtype), v[0])
    quotient = creation.zeros((max(m - n + 1, 1),), u.dtype)
    remainder = u
    for k in range(m - n + 1):
        d = lax.mul(scale, remainder[k])
        quotient = quotient.at[k].set(d)
        remainder = remainder.at[k:k + n + 1].add(lax.neg(lax.mul(d, v)))
    return quotient, remainder


def polyder(p, m=1):
    (p,) = _coefficients("polyder", p)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    for _ in range(m):
        n = p.shape[0]
        powers = lax.convert_element_type(creation.arange(n - 1, 0, -1), p.dtype)
        p = lax.mul(p[:-1], powers)
    return p


def polyint(p, m=1, k=None):
    (p,) = _coefficients("polyint", p)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    constants = creation.zeros((m,), p.dtype) if k is None else lax.convert_element_type(
        shape_ops.ravel(creation.asarray(k)), p.dtype)
    if constants.shape[0] == 1 and m > 1:
        constants = lax.broadcast(constants[0], (m,))
    if constants.shape[0] != m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    for i in range(m):
        n = p.shape[0]
        powers = lax.convert_element_type(creation.arange(n, 0, -1), p.dtype)
        p = shape_ops.concatenate([lax.div(p, powers), constants[i:i + 1]])
    return p


def poly(seq_of_zeros):
    """The monic polynomial with the given real roots (matrices need eigenvalues: issue 16)."""
    (zeros,) = _inexact("poly", seq_of_zeros)
    if zeros.ndim != 1:
        raise ValueError("poly: the roots must be a 1-D array here (the characteristic "
                         "polynomial of a matrix needs eigenvalues, which need complex numbers)")
    out = creation.ones((1,), zeros.dtype)
    for i in range(zeros.shape[0]):
        out = convolve(out, shape_ops.stack([lax.full((), 1, zeros.dtype), lax.neg(zeros[i])]))
    return out


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares fit of a degree-`deg` polynomial, solved through the SVD of the
    column-scaled Vandermonde matrix. full=True adds (residuals, rank, singular values, rcond);
    cov=True adds the coefficients' covariance (scaled by the residual variance unless
    cov='unscaled')."""
    from jaxlite.numpy.manipulation import vander
    x, y = _inexact("polyfit", x, y)
    deg = int(deg)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1 or x.shape[0] == 0:
        raise TypeError("expected 1D vector for x")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise TypeError("expected 1D or 2D array for y, with as many rows as x")
    rcond = x.shape[0] * float(np.finfo(x.dtype).eps) if rcond is None else rcond
    lhs, rhs = vander(x, deg + 1), y
    if w is not None:
        (w,) = _inexact("polyfit", w)
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    column_scale = lax.sqrt(reductions.sum(lhs * lhs, axis=0))
    u, s, vt = linalg.svd(lhs / column_scale, full_matrices=False)
    kept = s > rcond * reductions.max(s)
    inverse_s = lax.select_n(kept, lax.full_like(s, 0), lax.div(lax.full_like(s, 1), s))
    along_rows = (lambda v: v) if rhs.ndim == 1 else (lambda v: v[:, None])
    scaled = shape_ops.transpose(vt) @ ((shape_ops.transpose(u) @ rhs) * along_rows(inverse_s))
    coefficients = scaled / along_rows(column_scale)
    if not (full or cov):
        return coefficients
    residuals = reductions.sum(lax.square(rhs - lhs @ coefficients), axis=0)
    if full:
        rank = reductions.sum(kept.astype(dtypes.int32))
        return coefficients, residuals[None] if residuals.ndim == 0 else residuals, rank, s, \
            lax.full((), rcond, x.dtype)
    right = shape_ops.transpose(vt) * inverse_s
    unscaled = (right @ shape_ops.transpose(right)) / (column_scale[:, None] * column_scale[None, :])
    if cov == "unscaled":
        return coefficients, unscaled
    if x.shape[0] <= deg + 1:
        raise ValueError("the number of data points must exceed order to scale the covariance "
                         "matrix")
    factor = residuals / (x.shape[0] - deg - 1)
    if rhs.ndim == 1:
        return coefficients, unscaled * factor
    return coefficients, unscaled[:, :, None] * factor
