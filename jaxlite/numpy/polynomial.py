"""Polynomials as 1-D coefficient arrays, highest power first (numpy's poly1d convention)."""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.numpy import creation, joining, linalg, reductions, shape_ops
from jaxlite.numpy.convolve import convolve
from jaxlite.core import errors
from jaxlite.core.trace import Tracer
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast, promote_dtypes, promote_dtypes_inexact


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
    """The monic polynomial with the given roots, or the characteristic polynomial of a square
    matrix (from its eigenvalues: complex coefficients then, as in JAX)."""
    check_arraylike("poly", seq_of_zeros)
    (zeros,) = promote_dtypes_inexact(seq_of_zeros)
    zeros = joining.atleast_1d(zeros)
    if zeros.ndim == 2 and zeros.shape[0] == zeros.shape[1] and zeros.shape[0]:
        zeros = linalg.eigvals(zeros)
    if zeros.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if zeros.shape[0] == 0:
        return creation.ones((), zeros.dtype)
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


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial with coefficients p (highest power first), always complex:
    the eigenvalues of its companion matrix. Leading zeros are stripped (which needs concrete
    coefficients), or with strip_zeros=False each gives a NaN root, sorted last."""
    check_arraylike("roots", p)
    (p,) = promote_dtypes_inexact(p)
    p = joining.atleast_1d(p)
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    if p.shape[0] < 2:
        return creation.zeros((0,), dtypes.complex_dtype(p.dtype))
    is_zero = lax.eq(p, lax.full_like(p, 0))
    leading = lax.select_n(reductions.all(is_zero), reductions.argmin(is_zero), lax.full((), p.shape[0], dtypes.int32))
    if strip_zeros:
        return _companion_eigenvalues(p[_concrete_count(leading):])
    return _roots_with_leading_zeros(p, leading)


def _concrete_count(leading):
    if isinstance(leading, Tracer) and leading.to_concrete_value() is None:
        raise errors.ConcretizationTypeError(
            f"Abstract tracer value encountered where a concrete value is expected: jnp.roots strips "
            f"the leading zeros of traced coefficients {leading.aval.str_short()}, whose count sets the "
            "result's size. Fix: pass strip_zeros=False under jit (each leading zero then gives a NaN root).")
    return int(leading.to_concrete_value() if isinstance(leading, Tracer) else leading)


def _companion_eigenvalues(p):
    """The eigenvalues of the companion matrix: -p[1:] / p[0] in its first row, ones below
    the diagonal."""
    n = p.shape[0] - 1
    if n < 1:
        return creation.zeros((0,), dtypes.complex_dtype(p.dtype))
    below = lax.convert_element_type(
        lax.eq(lax.broadcasted_iota(dtypes.int32, (n - 1, n), 1), lax.broadcasted_iota(dtypes.int32, (n - 1, n), 0)),
        p.dtype)
    first = lax.neg(lax.div(p[1:], p[0]))
    return linalg.eigvals(lax.concatenate([lax.reshape(first, (1, n)), below], 0))


def _roots_with_leading_zeros(p, leading):
    """The leading zeros rolled to the end (an all-zero p taken as ones): their roots, which
    come out 0 (or NaN), are sorted after the others and made NaN."""
    n = p.shape[0]
    p = lax.select_n(lax.eq(leading, n), p, lax.full_like(p, 1))
    positions = lax.rem(lax.add(lax.iota(dtypes.int32, n), leading), lax.full((), n, dtypes.int32))
    found = _companion_eigenvalues(p[positions])
    _, found = lax.sort_key_val(lax.eq(found, lax.full_like(found, 0)), found)
    kept = lax.lt(lax.iota(dtypes.int32, n - 1), lax.sub(lax.full((), n - 1, dtypes.int32), leading))
    return lax.select_n(kept, lax.full_like(found, complex(np.nan, np.nan)), found)
