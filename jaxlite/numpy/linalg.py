"""jnp.linalg: norms, and solve / inv / det / slogdet / cholesky built on lax.linalg.

Everything goes through the LU factorization (or Cholesky), whose JVPs make
these differentiable; all functions map over leading batch axes as NumPy does.
"""
import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axes
from jaxlite.core.namespace import dir_of_all
from jaxlite.lax.base import as_operand
from jaxlite.lax.linalg import identity_like, matrix_transpose, permute_rows, square_factors
from jaxlite.lax.linalg import matmul as _matmul
from jaxlite.numpy import reductions, ufuncs
from jaxlite.transforms.custom_derivatives import custom_jvp
from jaxlite.numpy.util import broadcast_to, check_arraylike, promote_dtypes, promote_to_inexact

__all__ = ["cholesky", "det", "inv", "matrix_transpose", "norm", "slogdet", "solve", "svd"]
__dir__ = dir_of_all(globals())


def _matrices(name, *args):
    check_arraylike(name, *args)
    args = promote_to_inexact(name, *args) if len(args) == 1 else _promoted_matrices(name, *args)
    if args[0].ndim < 2 or args[0].shape[-1] != args[0].shape[-2]:
        raise ValueError(f"{name}: the last two axes must be a square matrix, got shape "
                         f"{args[0].shape}")
    return args


def _promoted_matrices(name, a, b):
    """Common inexact dtype without broadcasting shapes (a matrix and a right-hand side)."""
    a, b = promote_dtypes(a, b)
    if not dtypes.is_float(a.dtype):
        a, b = (lax.convert_element_type(x, dtypes.default_float_dtype()) for x in (a, b))
    return [as_operand(a), as_operand(b)]


def cholesky(a, *, upper=False, symmetrize_input=True):
    (a,) = _matrices("cholesky", a)
    factor = lax.cholesky(a, symmetrize_input=symmetrize_input)
    return matrix_transpose(factor) if upper else factor


def solve(a, b):
    """x with a x = b; b is a vector when it is 1-d, else a (batch of) matrices."""
    a, b = _matrices("solve", a, b)
    vector = b.ndim == 1
    if vector:
        b = lax.reshape(b, b.shape + (1,))
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    lu_matrix, _, permutation = lax.lu(a)
    lower, upper = square_factors(lu_matrix)
    y = lax.triangular_solve(lower, permute_rows(b, permutation), left_side=True, lower=True,
                             unit_diagonal=True)
    x = lax.triangular_solve(upper, y, left_side=True, lower=False)
    return lax.reshape(x, x.shape[:-1]) if vector else x


def inv(a):
    (a,) = _matrices("inv", a)
    return solve(a, identity_like(a))


def _lu_diagonal_and_parity(a):
    """The diagonal of U and whether the row permutation is odd."""
    lu_matrix, pivots, _ = lax.lu(a)
    n = a.shape[-1]
    diagonal = lax.reduce_sum(lax.mul(lu_matrix, identity_like(lu_matrix)), (a.ndim - 1,))
    swaps = lax.ne(pivots, lax.broadcast_in_dim(lax.iota(dtypes.int32, n), pivots.shape,
                                                (pivots.ndim - 1,)))
    swap_count = lax.reduce_sum(lax.convert_element_type(swaps, dtypes.int32), (pivots.ndim - 1,))
    odd = lax.eq(lax.rem(swap_count, lax.full_like(swap_count, 2)), lax.full_like(swap_count, 1))
    return diagonal, odd


def _parity_sign(odd, dtype):
    """-1 for an odd permutation, else 1."""
    odd = lax.convert_element_type(odd, dtype)
    return lax.sub(lax.full_like(odd, 1), lax.add(odd, odd))


def det(a):
    (a,) = _matrices("det", a)
    return _det(a)


@custom_jvp
def _det(a):
    diagonal, odd = _lu_diagonal_and_parity(a)
    return lax.mul(_parity_sign(odd, a.dtype), lax.reduce_prod(diagonal, (diagonal.ndim - 1,)))


@_det.defjvp
def _det_jvp(primals, tangents):
    """d det = trace(adj(a) da), with the adjugate even where a is singular (as JAX), where
    det(a) inv(a) is 0 * inf."""
    (a,), (a_dot,) = primals, tangents
    value = _det(a)
    singular = reductions.any(lax.eq(value, lax.full_like(value, 0)))
    adjugate = lax.cond(singular, _adjugate_by_svd, _adjugate_by_inverse, a, value)
    last_two = (a.ndim - 2, a.ndim - 1)
    return value, lax.reduce_sum(lax.mul(matrix_transpose(adjugate), a_dot), last_two)


def _adjugate_by_inverse(a, value):
    return lax.mul(lax.broadcast_in_dim(value, a.shape, tuple(range(a.ndim - 2))), inv(a))


def _adjugate_by_svd(a, value):
    """a = u diag(s) vt gives adj(a) = det(u) det(vt) v diag(c) u^T, c_i the product of the
    other singular values: no division, so exact zeros among them are fine."""
    s, u, vt = lax.svd(a, full_matrices=False)
    n = s.shape[-1]
    rows = lax.broadcast_in_dim(s, s.shape[:-1] + (n, n), tuple(range(s.ndim - 1)) + (s.ndim,))
    diagonal = identity_like(rows)
    others = lax.select_n(lax.convert_element_type(diagonal, dtypes.bool_), rows, lax.full_like(rows, 1))
    c = lax.reduce_prod(others, (rows.ndim - 1,))
    scaled = lax.mul(matrix_transpose(vt), lax.broadcast_in_dim(c, rows.shape, tuple(range(s.ndim - 1)) + (s.ndim,)))
    sign = lax.mul(_det(u), _det(vt))
    return lax.mul(lax.broadcast_in_dim(sign, a.shape, tuple(range(a.ndim - 2))), _matmul(scaled, matrix_transpose(u)))


def slogdet(a):
    """(sign, log|det|): a sum of logs, so it neither overflows nor underflows."""
    (a,) = _matrices("slogdet", a)
    return _slogdet(a)


@custom_jvp
def _slogdet(a):
    diagonal, odd = _lu_diagonal_and_parity(a)
    last = (diagonal.ndim - 1,)
    sign = lax.mul(_parity_sign(odd, a.dtype), lax.reduce_prod(lax.sign(diagonal), last))
    return sign, lax.reduce_sum(lax.log(lax.abs(diagonal)), last)


@_slogdet.defjvp
def _slogdet_jvp(primals, tangents):
    """d log|det a| = trace(solve(a, da)) as JAX: through a's LU, and for 1x1 and 2x2 matrices
    (which JAX writes out) trace(adj(a) da) / det(a). At a singular matrix the zero pivot or
    determinant then gives JAX's infinities and NaNs, where the LU's own JVP gave NaN throughout."""
    (a,), (a_dot,) = primals, tangents
    sign, logabsdet = _slogdet(a)
    if a.shape[-1] <= 2:
        determinant, adjugate_t = _small_determinant_and_adjugate_t(a)
        derivative = lax.div(reductions.sum(lax.mul(adjugate_t, a_dot), axis=(-2, -1)), determinant)
    else:
        derivative = reductions.sum(lax.mul(solve(a, a_dot), identity_like(a)), axis=(-2, -1))
    return (sign, logabsdet), (lax.full_like(sign, 0), derivative)


def _small_determinant_and_adjugate_t(a):
    """det(a) and adj(a)^T written out for a 1x1 or 2x2 matrix."""
    if a.shape[-1] == 1:
        return a[..., 0, 0], lax.full_like(a, 1)
    p, q, r, s = a[..., 0, 0], a[..., 0, 1], a[..., 1, 0], a[..., 1, 1]
    entries = [lax.expand_dims(e, (e.ndim,)) for e in (s, lax.neg(r), lax.neg(q), p)]
    adjugate_t = lax.reshape(lax.concatenate(entries, a.ndim - 2), a.shape)
    return lax.sub(lax.mul(p, s), lax.mul(q, r)), adjugate_t


# ---------------------------------------------------------------- norm

def _vector_norm(x, ord, axis, keepdims):
    magnitude = ufuncs.absolute(x)
    if ord is None or ord == 2:
        return ufuncs.sqrt(reductions.sum(ufuncs.square(magnitude), axis, keepdims=keepdims))
    if ord == np.inf:
        return reductions.max(magnitude, axis, keepdims=keepdims)
    if ord == -np.inf:
        return reductions.min(magnitude, axis, keepdims=keepdims)
    if ord == 0:
        nonzero = lax.convert_element_type(lax.ne(x, lax.full_like(x, 0)), x.dtype)
        return reductions.sum(nonzero, axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(magnitude, axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    powered = reductions.sum(ufuncs.power(magnitude, float(ord)), axis, keepdims=keepdims)
    return ufuncs.power(powered, 1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    rows, cols = axes
    magnitude = ufuncs.absolute(x)
    if ord in (None, "fro"):
        result = ufuncs.sqrt(reductions.sum(ufuncs.square(magnitude), axes))
    elif ord in (1, -1):
        column_sums = reductions.sum(magnitude, rows, keepdims=True)
        result = (reductions.max if ord == 1 else reductions.min)(column_sums, axes)
    elif ord in (np.inf, -np.inf):
        row_sums = reductions.sum(magnitude, cols, keepdims=True)
        result = (reductions.max if ord == np.inf else reductions.min)(row_sums, axes)
    elif ord in (2, -2, "nuc"):
        singular_values = svd(lax.transpose(x, _axes_last(x.ndim, axes)), compute_uv=False)
        pick = {2: reductions.max, -2: reductions.min, "nuc": reductions.sum}[ord]
        result = pick(singular_values, axis=-1)
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        result = lax.expand_dims(result, tuple(sorted(axes)))
    return result


def _axes_last(ndim, axes):
    """A permutation moving the two matrix axes to the end, in order."""
    return tuple(d for d in range(ndim) if d not in axes) + tuple(axes)


def svd(a, full_matrices=True, compute_uv=True):
    """NumPy's (u, s, vh), or s alone with compute_uv=False."""
    check_arraylike("svd", a)
    (a,) = promote_to_inexact("svd", a)
    s, u, vt = lax.svd(a, full_matrices=full_matrices and compute_uv)
    return (u, s, vt) if compute_uv else s


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norms over one axis, matrix norms over two (NumPy's defaults and orders)."""
    (x,) = promote_to_inexact("norm", x)
    if axis is None:
        if ord is None:
            flat = ufuncs.sqrt(reductions.sum(ufuncs.square(ufuncs.absolute(x))))
            return lax.reshape(flat, (1,) * x.ndim) if keepdims else flat
        if x.ndim not in (1, 2):
            raise ValueError(f"norm: improper number of dimensions {x.ndim} to norm with ord={ord!r}")
        axis = tuple(range(x.ndim))
    axes = canonicalize_axes(axis if isinstance(axis, (tuple, list)) else (axis,), x.ndim)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"norm: axis must name one or two axes, got {axis}")
