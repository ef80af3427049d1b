"""jnp.linalg: JAX's list, built on lax.linalg's factorizations (lu, cholesky, qr, eigh, svd)
and lax products.

The factorizations are primitives with their derivatives; everything here is a composition,
so it differentiates, vmaps and compiles through them. All functions map over leading batch
axes as NumPy does.
"""
import math
import operator
from typing import NamedTuple

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axes
from jaxlite.core.array import Array
from jaxlite.core.powers import power_by_squaring
from jaxlite.core.namespace import dir_of_all
from jaxlite.lax import linalg as lax_linalg
from jaxlite.lax.base import as_operand
from jaxlite.lax.linalg import adjoint, identity_like, lu_solve
from jaxlite.lax.linalg import matmul as _matmul
from jaxlite.numpy import (array_api, indexing, manipulation, math_functions, products, reductions, shape_ops,
                           ufuncs)
from jaxlite.transforms.custom_derivatives import custom_jvp
from jaxlite.numpy.util import broadcast_to, check_arraylike, promote_dtypes, promote_to_inexact

__all__ = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot",
           "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
           "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm"]
__dir__ = dir_of_all(globals())


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


def _inexact(name, a):
    check_arraylike(name, a)
    (a,) = promote_to_inexact(name, a)
    return as_operand(a)


def _square(name, a):
    a = _inexact(name, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: the last two axes must be a square matrix, got shape {a.shape}")
    return a


def _at_least_matrix(name, a):
    a = _inexact(name, a)
    if a.ndim < 2:
        raise ValueError(f"{name}: needs an array of at least two dimensions, got shape {a.shape}")
    return a


def _promoted_pair(name, a, b):
    """Common inexact dtype without broadcasting shapes (a matrix and a right-hand side)."""
    check_arraylike(name, a, b)
    a, b = promote_dtypes(a, b)
    if not dtypes.is_inexact(a.dtype):
        a, b = (lax.convert_element_type(x, dtypes.to_inexact_dtype(a.dtype)) for x in (a, b))
    return as_operand(a), as_operand(b)


def _batch_broadcast(x, batch):
    return broadcast_to(x, batch + x.shape[-2:])


def _last_two(x):
    return (x.ndim - 2, x.ndim - 1)


# ---------------------------------------------------------------- factorizations

def cholesky(a, *, upper=False, symmetrize_input=True):
    a = _square("cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return adjoint(factor) if upper else factor


def eig(a):
    """EigResult(eigenvalues, right eigenvectors as columns), complex also for real a."""
    a = _inexact("eig", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The input to eig must be a square matrix. Got shape {a.shape}.")
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    a = _inexact("eigvals", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The input to eigvals must be a square matrix. Got shape {a.shape}.")
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def _uplo_lower(uplo):
    if uplo not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {uplo}")
    return uplo != "U"


def eigh(a, UPLO=None, symmetrize_input=True):
    """EighResult(eigenvalues ascending, eigenvectors as columns) of symmetric matrices."""
    a = _inexact("eigh", a)
    v, w = lax_linalg.eigh(a, lower=_uplo_lower(UPLO), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    return eigh(a, UPLO, symmetrize_input).eigenvalues


_QR_MODES = ("reduced", "complete", "r", "raw")


def qr(a, mode="reduced"):
    """QRResult(Q, R) ("reduced": thin, "complete": square Q), R alone ("r"), or LAPACK's
    packed Householder form (h, tau) ("raw", h transposed as NumPy gives it)."""
    if mode not in _QR_MODES:
        raise ValueError(f"Unsupported QR decomposition mode {mode!r}")
    a = _at_least_matrix("qr", a)
    if mode == "raw":
        h, tau = lax_linalg.geqrf(a)
        return QRResult(lax_linalg.matrix_transpose(h), tau)
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """SVDResult(U, S, Vh), or S alone with compute_uv=False; hermitian matrices through eigh."""
    a = _at_least_matrix("svd", a)
    if hermitian:
        return _hermitian_svd(a, compute_uv, subset_by_index)
    result = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index)
    return SVDResult(*result) if compute_uv else result


def _hermitian_svd(a, compute_uv, subset_by_index):
    """|w| for eigenvalues w in descending order (ties keep eigh's order reversed, as a stable
    ascending sort reversed), with u the eigenvectors and vh = (u sign(w))^H."""
    v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
    s = lax.abs(w)
    last = s.ndim - 1
    if not compute_uv:
        return lax.rev(lax.sort(s, dimension=last), (last,))
    order = lax.broadcasted_iota(dtypes.int32, s.shape, last)
    s, order, sign = (lax.rev(x, (last,)) for x in lax.sort((s, order, lax.sign(w)), dimension=last, num_keys=1))
    u = indexing.take_along_axis(v, lax.expand_dims(order, (last,)), axis=-1)
    vh = adjoint(ufuncs.multiply(u, lax.expand_dims(lax.convert_element_type(sign, u.dtype), (last,))))
    return SVDResult(u, s, vh)


def svdvals(x, /):
    return svd(x, compute_uv=False)


# ---------------------------------------------------------------- solves, inverses, determinants

def solve(a, b):
    """x with a x = b; b is a (batch of) vector(s) when it is 1-d, else a (batch of) matrices."""
    a, b = _promoted_pair("solve", a, b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"solve: the last two axes of a must be a square matrix, got shape {a.shape}")
    vector = b.ndim == 1
    if vector:
        b = lax.reshape(b, b.shape + (1,))
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"Invalid shapes for solve: {a.shape}, {b.shape[:-1] if vector else b.shape}: b must be "
                         "a vector of a's size or a (batch of) matrices with as many rows")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = lu_solve(_batch_broadcast(a, batch), _batch_broadcast(b, batch))
    return lax.reshape(x, x.shape[:-1]) if vector else x


def inv(a):
    a = _square("inv", a)
    return solve(a, identity_like(a))


def _lu_diagonal_and_parity(a):
    """The diagonal of U and whether the row permutation is odd."""
    lu_matrix, pivots, _ = lax_linalg.lu(a)
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
    """As JAX computes it (the same roundings, and +0 at a singular matrix): 2x2 and 3x3
    determinants written out, larger ones sign * exp(log|det|) from slogdet."""
    a = _square("det", a)
    if a.shape[-1] == 2:
        return _small_determinant_and_adjugate_t(a)[0]
    if a.shape[-1] == 3:
        return _determinant_3x3(a)
    return _det(a)


def _determinant_3x3(a):
    """The six products of the rule of Sarrus, summed in JAX's order."""
    e = lambda i, j: a[..., i, j]
    positive = [lax.mul(lax.mul(e(0, k), e(1, (k + 1) % 3)), e(2, (k + 2) % 3)) for k in range(3)]
    negative = [lax.mul(lax.mul(e(0, 2), e(1, 1)), e(2, 0)), lax.mul(lax.mul(e(0, 0), e(1, 2)), e(2, 1)),
                lax.mul(lax.mul(e(0, 1), e(1, 0)), e(2, 2))]
    total = lax.add(lax.add(positive[0], positive[1]), positive[2])
    for term in negative:
        total = lax.sub(total, term)
    return total


@custom_jvp
def _det(a):
    sign, log_abs = _slogdet(a, "lu")
    return lax.mul(sign, lax.convert_element_type(lax.exp(log_abs), sign.dtype))


@_det.defjvp
def _det_jvp(primals, tangents):
    """d det = trace(adj(a) da), with the adjugate even where a is singular (as JAX), where
    det(a) inv(a) is 0 * inf."""
    (a,), (a_dot,) = primals, tangents
    value = _det(a)
    singular = reductions.any(lax.eq(value, lax.full_like(value, 0)))
    adjugate = lax.cond(singular, _adjugate_by_svd, _adjugate_by_inverse, a, value)
    return value, lax.reduce_sum(lax.mul(lax_linalg.matrix_transpose(adjugate), a_dot), _last_two(a))


def _adjugate_by_inverse(a, value):
    return lax.mul(lax.broadcast_in_dim(value, a.shape, tuple(range(a.ndim - 2))), inv(a))


def _adjugate_by_svd(a, value):
    """a = u diag(s) vt gives adj(a) = det(u) det(vt) v diag(c) u^T, c_i the product of the
    other singular values: no division, so exact zeros among them are fine."""
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    n = s.shape[-1]
    rows = lax.broadcast_in_dim(s, s.shape[:-1] + (n, n), tuple(range(s.ndim - 1)) + (s.ndim,))
    diagonal = identity_like(rows)
    others = lax.select_n(lax.convert_element_type(diagonal, dtypes.bool_), rows, lax.full_like(rows, 1))
    c = lax.reduce_prod(others, (rows.ndim - 1,))
    scaled = lax.mul(adjoint(vt), lax.broadcast_in_dim(lax.convert_element_type(c, a.dtype), rows.shape,
                                                       tuple(range(s.ndim - 1)) + (s.ndim,)))
    sign = lax.mul(_det(u), _det(vt))
    return lax.mul(lax.broadcast_in_dim(sign, a.shape, tuple(range(a.ndim - 2))),
                   _matmul(scaled, adjoint(u)))


def slogdet(a, *, method=None):
    """SlogdetResult(sign, log|det|): a sum of logs, so it neither overflows nor underflows;
    from the LU factors (method None or "lu") or the QR factors ("qr")."""
    a = _square("slogdet", a)
    if method not in (None, "lu", "qr"):
        raise ValueError(f"Unknown slogdet method {method!r}. Supported methods are 'lu' (`None`), and 'qr'.")
    return SlogdetResult(*_slogdet(a, method or "lu"))


def _slogdet_value(a, method):
    if method == "lu" and 0 < a.shape[-1] <= 2:
        # Written out for 1x1 and 2x2, as JAX (the sign of a zero determinant is its own).
        determinant = _small_determinant_and_adjugate_t(a)[0]
        return lax.sign(determinant), lax.log(lax.abs(determinant))
    diagonal, sign = _qr_diagonal_and_sign(a) if method == "qr" else _lu_diagonal_and_sign(a)
    last = (diagonal.ndim - 1,)
    sign = lax.mul(sign, lax.reduce_prod(lax.sign(diagonal), last))
    # +0 at a singular matrix, as JAX (the product of signs can be -0).
    singular = reductions.any(lax.eq(diagonal, lax.full_like(diagonal, 0)), axis=-1)
    sign = lax.select_n(singular, sign, lax.full_like(sign, 0))
    return sign, lax.reduce_sum(lax.log(lax.abs(diagonal)), last)


_slogdet = custom_jvp(_slogdet_value, nondiff_argnums=(1,))


@_slogdet.defjvp
def _slogdet_jvp(method, primals, tangents):
    """d log|det a| = trace(solve(a, da)) as JAX: through a's LU, and for 1x1 and 2x2 matrices
    (which JAX writes out) trace(adj(a) da) / det(a). At a singular matrix the zero pivot or
    determinant then gives JAX's infinities and NaNs; the sign is piecewise constant."""
    (a,), (a_dot,) = primals, tangents
    sign, log_abs = _slogdet(a, method)
    if 0 < a.shape[-1] <= 2:
        determinant, adjugate_t = _small_determinant_and_adjugate_t(a)
        derivative = lax.div(reductions.sum(lax.mul(adjugate_t, a_dot), axis=(-2, -1)), determinant)
    else:
        derivative = trace(lu_solve(a, a_dot))
    if not dtypes.is_complex(a.dtype):
        return (sign, log_abs), (lax.full_like(sign, 0), derivative)
    # The phase turns with the imaginary part: d sign = i Im(d) sign, d log|det| = Re(d).
    log_abs_dot = lax.real(derivative)
    return (sign, log_abs), (lax.mul(lax.sub(derivative, lax.convert_element_type(log_abs_dot, a.dtype)), sign),
                             log_abs_dot)


def _small_determinant_and_adjugate_t(a):
    """det(a) and adj(a)^T written out for a 1x1 or 2x2 matrix."""
    if a.shape[-1] == 1:
        return a[..., 0, 0], lax.full_like(a, 1)
    p, q, r, s = a[..., 0, 0], a[..., 0, 1], a[..., 1, 0], a[..., 1, 1]
    entries = [lax.expand_dims(e, (e.ndim,)) for e in (s, lax.neg(r), lax.neg(q), p)]
    adjugate_t = lax.reshape(lax.concatenate(entries, a.ndim - 2), a.shape)
    return lax.sub(lax.mul(p, s), lax.mul(q, r)), adjugate_t


def _lu_diagonal_and_sign(a):
    diagonal, odd = _lu_diagonal_and_parity(a)
    return diagonal, _parity_sign(odd, a.dtype)


def _qr_diagonal_and_sign(a):
    """R's diagonal and det(Q): each Householder reflection that acts (tau != 0) flips the sign."""
    h, tau = lax_linalg.geqrf(a)
    n = a.shape[-1]
    diagonal = lax.reduce_sum(lax.mul(h, identity_like(h)), (a.ndim - 1,))
    acting = lax.ne(lax.slice_in_dim(tau, 0, max(n - 1, 0), axis=tau.ndim - 1), lax.full((), 0, tau.dtype))
    flips = lax.reduce_sum(lax.convert_element_type(acting, dtypes.int32), (tau.ndim - 1,))
    return diagonal, _parity_sign(lax.eq(lax.rem(flips, lax.full_like(flips, 2)), lax.full_like(flips, 1)), a.dtype)


def _default_rtol(x, factor):
    """factor * max(m, n) * eps of x's dtype."""
    return factor * max(x.shape[-2:]) * float(dtypes.finfo(x.dtype).eps)


def _cutoff(rtol, s):
    """rtol (a scalar or one per matrix) times each matrix's largest singular value s[..., :1]."""
    rtol = lax.convert_element_type(as_operand(rtol), s.dtype)
    return ufuncs.multiply(rtol[..., None], s[..., :1])


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse: singular values at most rtol times the largest count
    as zero (rtol defaults to 10 max(m, n) eps; rcond is its older name)."""
    a = _at_least_matrix("pinv", a)
    if rcond is not None:
        rtol = rcond
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return lax.full(a.shape[:-2] + (n, m), 0, a.dtype)
    if rtol is None:
        rtol = _default_rtol(a, 10.0)
    return _pinv(a, rtol, bool(hermitian))


def _pinv_value(a, rtol, hermitian):
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    s = math_functions.where(ufuncs.greater(s, _cutoff(rtol, s)), s, np.inf)
    scaled_uh = ufuncs.divide(adjoint(u), lax.convert_element_type(s, u.dtype)[..., None])
    return _matmul(adjoint(vh), scaled_uh)


_pinv = custom_jvp(_pinv_value, nondiff_argnums=(1, 2))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    """The derivative of the pseudo-inverse p of a (Golub and Pereyra):
    -p da p + (1 - p a) da^H p^H p + p p^H da^H (1 - a p)."""
    (a,), (a_dot,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    a_dot_h = adjoint(a_dot)
    p_h = adjoint(p)
    first = lax.neg(_matmul(_matmul(p, a_dot), p))
    second = _matmul(_matmul(lax.sub(identity_like(_matmul(p, a)), _matmul(p, a)), a_dot_h), _matmul(p_h, p))
    third = _matmul(_matmul(p, p_h), _matmul(a_dot_h, lax.sub(identity_like(_matmul(a, p)), _matmul(a, p))))
    return p, lax.add(lax.add(first, second), third)


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
    """The number of singular values above rtol times the largest (rtol defaults to
    max(m, n) eps; tol is its older name); a vector's rank is 1 unless it is all zeros."""
    M = _inexact("matrix_rank", M)
    if tol is not None:
        rtol = tol
    if M.ndim < 2:
        return lax.convert_element_type(reductions.any(lax.ne(M, lax.full_like(M, 0))), dtypes.int32)
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = _default_rtol(M, 1.0)
    if s.shape[-1] == 0:
        return lax.full(s.shape[:-1], 0, dtypes.int32)
    above = ufuncs.greater(s, _cutoff(rtol, s))
    return lax.reduce_sum(lax.convert_element_type(above, dtypes.int32), (above.ndim - 1,))


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """(x, residuals, rank, s): the least-squares solution through the SVD, singular values
    below rcond times the largest counting as zero (rcond defaults to max(m, n) eps).
    Residuals are the squared norms of b - a x; with numpy_resid, empty where NumPy's are
    (rank < n or m <= n), which needs concrete values."""
    a, b = _promoted_pair("lstsq", a, b)
    if a.ndim != 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    vector = b.ndim == 1
    b = lax.reshape(b, b.shape + (1,)) if vector else b
    if b.ndim != 2:
        raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"Leading dimensions of input arrays must match, got shapes {a.shape} and {b.shape}")
    m, n = a.shape
    x, rank, s = _lstsq_solution(a, b, rcond)
    if numpy_resid and (int(rank) < n or m <= n):
        residuals = lax.full((0,), 0, a.dtype)
    else:
        residuals = lax.reduce_sum(lax.square(lax.abs(lax.sub(b, _matmul(a, x)))), (0,))
    return (lax.reshape(x, (n,)) if vector else x), residuals, rank, s


def _lstsq_solution(a, b, rcond):
    m, n = a.shape
    if a.size == 0:
        return lax.full((n, b.shape[1]), 0, a.dtype), lax.full((), 0, dtypes.int32), lax.full((0,), 0, a.dtype)
    eps = float(dtypes.finfo(a.dtype).eps)
    if rcond is None:
        rcond = eps * max(m, n)
    else:   # a negative rcond means machine precision, as in NumPy
        rcond = as_operand(rcond)
        rcond = lax.select_n(ufuncs.less(rcond, 0), lax.convert_element_type(rcond, a.dtype), lax.full((), eps, a.dtype))
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    kept = ufuncs.greater_equal(s, ufuncs.multiply(lax.convert_element_type(rcond, s.dtype), s[0]))
    rank = lax.reduce_sum(lax.convert_element_type(kept, dtypes.int32), (0,))
    safe_s = lax.select_n(kept, lax.full_like(s, 1), s)
    inverse_s = lax.select_n(kept, lax.full_like(s, 0), lax.div(lax.full_like(s, 1), safe_s))
    scaled = ufuncs.multiply(lax.convert_element_type(inverse_s, a.dtype)[:, None], _matmul(adjoint(u), b))
    return _matmul(adjoint(vt), scaled), rank, s


def cond(x, p=None):
    """The condition number in the p-norm: the ratio of extreme singular values for p None, 2
    and -2 (any shape), else norm(x, p) norm(inv(x), p) (square x; inf where x is singular)."""
    x = _at_least_matrix("cond", x)
    if p in (None, 2, -2):
        s = svdvals(x)
        last = s.ndim - 1
        largest, smallest = (lax.squeeze(lax.slice_in_dim(s, i, i + 1, axis=last), (last,)) for i in (0, s.shape[-1] - 1))
        return lax.div(smallest, largest) if p == -2 else lax.div(largest, smallest)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got arr.shape={x.shape}")
    r = lax.mul(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))
    # A singular x gives NaN through inv; NumPy (and JAX) call its condition number inf.
    x_has_nan = reductions.any(ufuncs.isnan(x), axis=(-2, -1))
    return lax.select_n(lax.bitwise_and(ufuncs.isnan(r), lax.bitwise_not(x_has_nan)), r, lax.full_like(r, np.inf))


def matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring; n = 0 gives the identity, n < 0 powers of inv(a)."""
    check_arraylike("matrix_power", a)
    a = as_operand(a)
    try:
        n = operator.index(n)
    except TypeError as error:
        raise TypeError(f"exponent must be an integer, got {n}") from error
    if a.ndim < 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-2] != a.shape[-1]:
        raise TypeError(f"Last 2 dimensions of the array must be square, got shape {a.shape}")
    if n == 0:
        return identity_like(a)
    if n < 0:
        a, n = inv(a), -n
    return power_by_squaring(a, n, _matmul)


# ---------------------------------------------------------------- norms

def _vector_norm(x, ord, axis, keepdims):
    magnitude = ufuncs.absolute(x)
    if isinstance(ord, str):
        raise ValueError(f"Invalid order {ord!r} for vector norm.")
    if ord is None or ord == 2:
        return ufuncs.sqrt(reductions.sum(lax.square(magnitude), axis, keepdims=keepdims))
    if ord == np.inf:
        return reductions.max(magnitude, axis, keepdims=keepdims)
    if ord == -np.inf:
        return reductions.min(magnitude, axis, keepdims=keepdims)
    if ord == 0:
        nonzero = lax.convert_element_type(lax.ne(x, lax.full_like(x, 0)), magnitude.dtype)
        return reductions.sum(nonzero, axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(magnitude, axis, keepdims=keepdims)
    powered = reductions.sum(ufuncs.power(magnitude, float(ord)), axis, keepdims=keepdims)
    return ufuncs.power(powered, 1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    rows, cols = axes
    magnitude = ufuncs.absolute(x)
    if ord in (None, "fro"):
        result = ufuncs.sqrt(reductions.sum(lax.square(magnitude), axes))
    elif ord in (1, -1):
        column_sums = reductions.sum(magnitude, rows, keepdims=True)
        result = (reductions.max if ord == 1 else reductions.min)(column_sums, axes)
    elif ord in (np.inf, -np.inf):
        row_sums = reductions.sum(magnitude, cols, keepdims=True)
        result = (reductions.max if ord == np.inf else reductions.min)(row_sums, axes)
    elif ord in (2, -2, "nuc"):
        singular_values = svdvals(lax.transpose(x, _axes_last(x.ndim, axes)))
        pick = {2: reductions.max, -2: reductions.min, "nuc": reductions.sum}[ord]
        result = pick(singular_values, axis=-1)
    else:
        raise ValueError(f"Invalid order {ord!r} for matrix norm.")
    if keepdims:
        result = lax.expand_dims(result, tuple(sorted(axes)))
    return result


def _axes_last(ndim, axes):
    """A permutation moving the two matrix axes to the end, in order."""
    return tuple(d for d in range(ndim) if d not in axes) + tuple(axes)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norms over one axis, matrix norms over two (NumPy's defaults and orders)."""
    x = _inexact("norm", x)
    if axis is None:
        if ord is None:
            return vector_norm(x, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError(f"Improper number of dimensions to norm: {x.ndim} with ord={ord!r}")
        axis = tuple(range(x.ndim))
    axes = canonicalize_axes(axis if isinstance(axis, (tuple, list)) else (axis,), x.ndim)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to compute a "
                     "vector-norm, or two axes to compute a matrix-norm.")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The vector norm over `axis` (all axes, as one flattened vector, when None)."""
    x = _inexact("vector_norm", x)
    if axis is None:
        result = _vector_norm(lax.reshape(x, (x.size,)), ord, 0, False)
        return lax.reshape(result, (1,) * x.ndim) if keepdims else result
    return _vector_norm(x, ord, canonicalize_axes(axis if isinstance(axis, (tuple, list)) else (axis,), x.ndim),
                        keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The matrix norm over the last two axes."""
    return norm(x, ord, axis=(-2, -1), keepdims=keepdims)


# ---------------------------------------------------------------- products and shapes

def matrix_transpose(x, /):
    check_arraylike("matrix_transpose", x)
    x = as_operand(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={x.ndim}")
    return lax_linalg.matrix_transpose(x)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    return products.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    return array_api.vecdot(x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None, out_sharding=None):
    return products.tensordot(x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type)


def outer(x1, x2, /):
    check_arraylike("outer", x1, x2)
    x1, x2 = as_operand(x1), as_operand(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={x1.ndim} x2.ndim={x2.ndim}")
    return products.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    check_arraylike("cross", x1, x2)
    x1, x2 = as_operand(x1), as_operand(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
                         f"x1.shape[axis]={x1.shape[axis]} and x2.shape[axis]={x2.shape[axis]}")
    return products.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
    check_arraylike("diagonal", x)
    x = as_operand(x)
    if x.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    return manipulation.diagonal(x, offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    return products.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices in the cheapest order (the first and last may be
    vectors), the order found by the classic dynamic program over split points."""
    check_arraylike("multi_dot", *arrays)
    arrays = [as_operand(x) for x in arrays]
    shapes = [x.shape for x in arrays]
    if not arrays or any(x.ndim != 2 for x in arrays[1:-1]) or any(x.ndim not in (1, 2) for x in (arrays[0], arrays[-1])):
        raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the first and "
                         f"last array which may be 1 or 2 dimensional. Got array shapes {shapes}")
    if len(arrays) == 1:
        return arrays[0]
    first_vector, last_vector = arrays[0].ndim == 1, arrays[-1].ndim == 1
    matrices = list(arrays)
    if first_vector:
        matrices[0] = lax.reshape(matrices[0], (1,) + matrices[0].shape)
    if last_vector:
        matrices[-1] = lax.reshape(matrices[-1], matrices[-1].shape + (1,))
    result = _chain_product(matrices, _chain_order([x.shape[0] for x in matrices] + [matrices[-1].shape[1]]),
                            0, len(matrices) - 1)
    if first_vector:
        result = lax.squeeze(result, (0,))
    if last_vector:
        result = lax.squeeze(result, (result.ndim - 1,))
    return result


def _chain_order(dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (matrix k is dims[k] x dims[k+1])."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                          for k in range(i, j))
    return split


def _chain_product(matrices, split, i, j):
    if i == j:
        return matrices[i]
    k = split[i][j]
    return products.matmul(_chain_product(matrices, split, i, k), _chain_product(matrices, split, k + 1, j))


def tensorinv(a, ind=2):
    """The inverse of a as the matrix of its first `ind` axes against the rest."""
    check_arraylike("tensorinv", a)
    a = as_operand(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    rows, cols = a.shape[:ind], a.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise ValueError("tensorinv is only possible when the product of the first `ind` dimensions equals "
                         f"that of the remaining dimensions. got arr.shape={a.shape} with ind={ind}.")
    flat = lax.reshape(a, (math.prod(rows), math.prod(cols)))
    return lax.reshape(inv(flat), cols + rows)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) = b; `axes` of a are moved to the end first."""
    check_arraylike("tensorsolve", a, b)
    a, b = as_operand(a), as_operand(b)
    if axes is not None:
        axes = canonicalize_axes(axes, a.ndim)
        a = shape_ops.moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    out_shape = a.shape[b.ndim:]
    if a.shape[:b.ndim] != b.shape:
        raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                         f"got a.shape={a.shape}, b.shape={b.shape}")
    x = solve(lax.reshape(a, (b.size, math.prod(out_shape))), lax.reshape(b, (b.size,)))
    return lax.reshape(x, out_shape)
