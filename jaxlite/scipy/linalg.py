"""jaxlite.scipy.linalg: scipy.linalg's real-valued API as JAX offers it.

The factorizations come from lax.linalg (cholesky, lu, triangular_solve, svd); expm is
Pade [13/13] with scaling and squaring; the special matrices are built either from index
arithmetic on their arguments (toeplitz, hankel, circulant, ...) or, when only a static
size is given (hilbert, pascal, ...), exactly in Python and rounded once.
"""
import functools as _functools
import math as _math

import numpy as _np

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.core import dtypes as _dtypes
from jaxlite.lax.linalg import adjoint as _adjoint
from jaxlite.lax.linalg import identity_like as _identity_like
from jaxlite.scipy._util import as_inexact as _as_inexact
from jaxlite.transforms.batching import vmap as _vmap
from jaxlite.transforms.custom_derivatives import custom_jvp as _custom_jvp
from jaxlite.transforms.jit import jit as _jit
from jaxlite.lax.linalg import square_factors as _square_factors


def _float_matrix(name, a):
    (a,) = _as_inexact(a)
    if a.ndim < 2:
        raise ValueError(f"{name}: expected a matrix (at least 2 dimensions), got shape {a.shape}")
    return a


def _as_columns(b):
    """b as a matrix (a vector becomes one column), and how to undo that."""
    if b.ndim == 1:
        return b[:, None], lambda x: x[..., 0]
    return b, lambda x: x


# ---------------------------------------------------------------- Cholesky

def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of a Hermitian positive definite a: lower L (a = L L^H) or upper."""
    factor = _lax.cholesky(_float_matrix("cholesky", a))
    return factor if lower else _adjoint(factor)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(factor, lower) for cho_solve."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with a x = b, from cho_factor's (factor, lower)."""
    factor, lower = c_and_lower
    factor, b = _as_inexact(factor, b)
    b, restore = _as_columns(b)
    lower_factor = factor if lower else _adjoint(factor)
    y = _lax.triangular_solve(lower_factor, b, left_side=True, lower=True)
    return restore(_lax.triangular_solve(lower_factor, y, left_side=True, lower=True, transpose_a=True,
                                         conjugate_a=True))


# ---------------------------------------------------------------- LU

def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """(p, l, u) with a = p @ l @ u, or (p @ l, u) with permute_l."""
    a = _float_matrix("lu", a)
    m, n = a.shape[-2:]
    k = min(m, n)
    packed, _, permutation = _lax.lu(a)
    lower, upper = _square_factors(packed)
    lower, upper = lower[..., :, :k], upper[..., :k, :]
    # p[perm[i], i] = 1, so that p @ (l u) puts row i of l u back at row perm[i]
    p = (_jnp.arange(m)[:, None] == permutation[..., None, :]).astype(a.dtype)
    if permute_l:
        return _jnp.matmul(p, lower), upper
    return p, lower, upper


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): L and U packed in one matrix, and LAPACK's pivots (row i swapped with piv[i])."""
    packed, pivots, _ = _lax.lu(_float_matrix("lu_factor", a))
    return packed, pivots


def _pivots_to_permutation(pivots, m):
    permutation = _jnp.broadcast_to(_jnp.arange(m, dtype=pivots.dtype), pivots.shape[:-1] + (m,))
    rows = _jnp.arange(m)
    for i in range(pivots.shape[-1]):
        target = pivots[..., i:i + 1]
        at_i = _jnp.take_along_axis(permutation, target, axis=-1)
        at_target = permutation[..., i:i + 1]
        permutation = _jnp.where(rows == i, at_i, _jnp.where(rows == target, at_target, permutation))
    return permutation


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """x with a x = b (trans=0), a^T x = b (trans=1) or a^H x = b (trans=2), from lu_factor's result."""
    packed, pivots = lu_and_piv
    packed, b = _as_inexact(packed, b)
    b, restore = _as_columns(b)
    lower, upper = _square_factors(packed)
    permutation = _pivots_to_permutation(_jnp.asarray(pivots), packed.shape[-2])
    if trans == 0:
        y = _lax.triangular_solve(lower, _jnp.take_along_axis(b, permutation[..., None], axis=-2),
                                  left_side=True, lower=True, unit_diagonal=True)
        return restore(_lax.triangular_solve(upper, y, left_side=True, lower=False))
    if trans not in (1, 2):
        raise ValueError(f"'trans' must be 0, 1 or 2, got {trans!r}")
    conjugate = trans == 2
    y = _lax.triangular_solve(upper, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conjugate)
    y = _lax.triangular_solve(lower, y, left_side=True, lower=True, transpose_a=True, conjugate_a=conjugate,
                              unit_diagonal=True)
    inverse = _jnp.argsort(permutation, axis=-1)
    return restore(_jnp.take_along_axis(y, inverse[..., None], axis=-2))


# ---------------------------------------------------------------- solves, inverse, determinant

_TRANSPOSES = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
    """x with op(a) x = b for a triangular a; op is the identity, the transpose or the
    conjugate transpose (trans)."""
    if trans not in _TRANSPOSES:
        raise ValueError(f"Invalid 'trans' value {trans!r}; expected 0, 1, 2, 'N', 'T' or 'C'")
    a, b = _as_inexact(a, b)
    b, restore = _as_columns(b)
    return restore(_lax.triangular_solve(a, b, left_side=True, lower=lower,
                                         transpose_a=_TRANSPOSES[trans], conjugate_a=trans in (2, "C"),
                                         unit_diagonal=unit_diagonal))


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, check_finite=True,
          assume_a="gen"):
    """x with a x = b; assume_a="pos" solves through the Cholesky factor."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of 'gen', 'sym', 'her', 'pos'; got {assume_a!r}")
    a, b = _as_inexact(a, b)
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return _jnp.linalg.solve(a, b)


def inv(a, overwrite_a=False, check_finite=True):
    return _jnp.linalg.inv(_float_matrix("inv", a))


def det(a, overwrite_a=False, check_finite=True):
    return _jnp.linalg.det(_float_matrix("det", a))


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}")
    return _jnp.linalg.svd(_float_matrix("svd", a), full_matrices=full_matrices, compute_uv=compute_uv)


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """(u, p) with a = u p (side="right") or a = p u (side="left"), u orthonormal and p
    positive semidefinite. Both methods go through the SVD here (the decomposition is the
    same; QDWH is an iteration that reaches it without one)."""
    if side not in ("right", "left"):
        raise ValueError(f"side={side!r} is invalid. Must be 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method!r}.")
    a = _float_matrix("polar", a)
    u, s, vh = _jnp.linalg.svd(a, full_matrices=False)
    unitary = _jnp.matmul(u, vh)
    if side == "right":
        return unitary, _jnp.matmul(_adjoint(vh) * s[..., None, :], vh)
    return unitary, _jnp.matmul(u * s[..., None, :], _adjoint(u))


# ---------------------------------------------------------------- matrix exponential

_PADE_ORDER = 13
_PADE_THETA = 5.371920351148152   # the 1-norm up to which [13/13] Pade is accurate to float64


def _pade_coefficients(order):
    """b_k = (2q - k)! q! / ((2q)! k! (q - k)!), the [q/q] Pade approximant of exp."""
    q = order
    return [_math.factorial(2 * q - k) * _math.factorial(q)
            / (_math.factorial(2 * q) * _math.factorial(k) * _math.factorial(q - k)) for k in range(q + 1)]


def _pade13(a):
    """exp(a) ~ (V - U)^-1 (V + U): U gathers the odd powers, V the even ones."""
    b = _pade_coefficients(_PADE_ORDER)
    eye = _identity_like(a)
    a2 = _jnp.matmul(a, a)
    a4 = _jnp.matmul(a2, a2)
    a6 = _jnp.matmul(a4, a2)
    odd_high = _jnp.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
    u = _jnp.matmul(a, odd_high + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = _jnp.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    return _jnp.linalg.solve(v - u, v + u)


def expm(A, *, upper_triangular=False, max_squarings=16):
    """The matrix exponential by scaling and squaring: exp(A) = exp(A / 2^s)^(2^s), with s
    chosen from the 1-norm; NaN where more than max_squarings squarings would be needed."""
    a = _float_matrix("expm", A)
    norm = _jnp.max(_jnp.sum(_jnp.abs(a), axis=-2), axis=-1)
    squarings = _jnp.maximum(0, _jnp.ceil(_jnp.log2(_jnp.maximum(norm, 1e-30) / _PADE_THETA)))
    result = _pade13(a / (2.0 ** squarings)[..., None, None])
    for i in range(max_squarings):
        result = _jnp.where((i < squarings)[..., None, None], _jnp.matmul(result, result), result)
    return _jnp.where((squarings > max_squarings)[..., None, None], _np.nan, result).astype(a.dtype)


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """The Frechet derivative L(A, E) of expm at A in direction E (and expm(A)), read off the
    exponential of the block matrix [[A, E], [0, A]], whose upper right block it is."""
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown method {method!r}")
    a, e = _as_inexact(A, E)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or e.shape != a.shape:
        raise ValueError("expected A and E to be square matrices of the same shape")
    n = a.shape[0]
    block = _jnp.concatenate([_jnp.concatenate([a, e], axis=1),
                              _jnp.concatenate([_jnp.zeros_like(a), a], axis=1)], axis=0)
    exponential = expm(block)
    frechet = exponential[:n, n:]
    return (exponential[:n, :n], frechet) if compute_expm else frechet


# ---------------------------------------------------------------- special matrices

def block_diag(*arrs):
    """The arguments (each at least 2-d) along the diagonal of one matrix, zeros elsewhere."""
    if not arrs:
        raise ValueError("block_diag requires at least one argument.")
    blocks = [_jnp.atleast_2d(_jnp.asarray(a)) for a in arrs]
    if any(b.ndim != 2 for b in blocks):
        raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 dimensions")
    dtype = _dtypes.result_type(*blocks)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        rows.append(_jnp.pad(b.astype(dtype), ((0, 0), (left, right))))
        left += b.shape[1]
    return _jnp.concatenate(rows, axis=0)


def _from_index_table(values, index):
    """values[..., index] for a static integer table of indices."""
    return _jnp.take(values, _jnp.asarray(index), axis=-1)


def _batched_pair(c, r):
    """c and r with their batch axes (all but the last) broadcast together, one dtype."""
    batch = _np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    dtype = _dtypes.result_type(c, r)
    return [_jnp.broadcast_to(v, batch + v.shape[-1:]).astype(dtype) for v in (c, r)]


def toeplitz(c, r=None):
    """T[i, j] = c[i - j] below and on the diagonal, r[j - i] above it."""
    c = _jnp.asarray(c)
    c, r = _batched_pair(c, c if r is None else _jnp.asarray(r))
    values = _jnp.concatenate([_jnp.flip(r[..., 1:], -1), c], axis=-1)
    m, n = c.shape[-1], r.shape[-1]
    return _from_index_table(values, (n - 1) + _np.arange(m)[:, None] - _np.arange(n)[None, :])


def hankel(c, r=None):
    """H[i, j] = c[i + j] while i + j < len(c), r[i + j - len(c) + 1] beyond."""
    c = _jnp.asarray(c)
    c, r = _batched_pair(c, _jnp.zeros_like(c) if r is None else _jnp.asarray(r))
    values = _jnp.concatenate([c, r[..., 1:]], axis=-1)
    m, n = c.shape[-1], r.shape[-1]
    return _from_index_table(values, _np.arange(m)[:, None] + _np.arange(n)[None, :])


def circulant(c):
    """C[i, j] = c[(i - j) mod n]."""
    c = _jnp.asarray(c)
    n = c.shape[-1]
    return _from_index_table(c, (_np.arange(n)[:, None] - _np.arange(n)[None, :]) % n)


def convolution_matrix(a, n, mode="full"):
    """The matrix of x -> convolve(a, x, mode) for x of length n."""
    a = _jnp.asarray(a)
    if a.ndim != 1:
        raise ValueError("convolution_matrix expects a one-dimensional kernel")
    m = a.shape[0]
    if mode == "full":
        start, length = 0, m + n - 1
    elif mode == "same":
        start, length = (min(m, n) - 1) // 2, max(m, n)
    elif mode == "valid":
        start, length = min(m, n) - 1, max(m, n) - min(m, n) + 1
    else:
        raise ValueError(f"Unrecognized mode={mode!r}")
    offsets = _np.arange(start, start + length)[:, None] - _np.arange(n)[None, :]
    padded = _jnp.concatenate([a, _jnp.zeros((1,), a.dtype)])
    return _from_index_table(padded, _np.where((offsets >= 0) & (offsets < m), offsets, m))


def companion(a):
    """The companion matrix of the polynomial with coefficients a (highest power first)."""
    a = _jnp.asarray(a)
    if a.ndim != 1 or a.shape[0] < 2:
        raise ValueError("Incorrect shape for `a`. `a` must be one-dimensional with length at least 2.")
    n = a.shape[0] - 1
    first_row = (-a[1:] / (1.0 * a[0]))[None, :]
    below = _jnp.eye(n - 1, n, dtype=first_row.dtype)
    return _jnp.concatenate([first_row, below], axis=0)


def leslie(f, s):
    """The Leslie matrix: fecundities f in the first row, survival rates s below the diagonal."""
    f, s = _jnp.asarray(f), _jnp.asarray(s)
    if f.ndim != 1 or s.ndim != 1 or s.shape[0] != f.shape[0] - 1:
        raise ValueError("Incorrect lengths for f and s: the length of s must be one less than f")
    dtype = _dtypes.result_type(f, s, 1.0)
    n = f.shape[0]
    below = _jnp.eye(n - 1, n, dtype=dtype) * _jnp.concatenate([s.astype(dtype), _jnp.zeros((1,), dtype)])
    return _jnp.concatenate([f.astype(dtype)[None, :], below], axis=0)


def fiedler(a):
    """F[i, j] = |a[i] - a[j]|."""
    a = _jnp.asarray(a)
    return _jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial a (highest power first)."""
    a = _jnp.asarray(a)
    if a.ndim != 1 or a.shape[0] < 3:
        raise ValueError("Input 'a' must be a 1-D array with at least 3 entries")
    a = a / (1.0 * a[0])
    n = a.shape[0] - 1
    c = _jnp.zeros((n, n), a.dtype)
    c = c.at[_np.arange(3, n, 2), _np.arange(1, n - 2, 2)].set(1)
    c = c.at[_np.arange(2, n, 2), _np.arange(1, n - 1, 2)].set(-a[3::2])
    c = c.at[_np.arange(0, n - 2, 2), _np.arange(2, n, 2)].set(1)
    c = c.at[_np.arange(0, n - 1, 2), _np.arange(1, n, 2)].set(-a[2::2])
    return c.at[_np.array([0, 1]), 0].set(_jnp.stack([-a[1], _jnp.ones((), a.dtype)]))


def _static_matrix(values):
    """A matrix computed exactly in Python (integers or fractions), in the default float type."""
    return _jnp.asarray(_np.array(values, dtype=_np.float64), _dtypes.default_float_dtype())


def hilbert(n):
    """H[i, j] = 1 / (i + j + 1)."""
    return _static_matrix([[1 / (i + j + 1) for j in range(n)] for i in range(n)])


def invhilbert(n):
    """The exact inverse of hilbert(n), whose entries are integers."""
    def entry(i, j):
        sign = -1 if (i + j) % 2 else 1
        return (sign * (i + j + 1) * _math.comb(n + i, n - j - 1) * _math.comb(n + j, n - i - 1)
                * _math.comb(i + j, i) ** 2)
    return _static_matrix([[entry(i, j) for j in range(n)] for i in range(n)])


def _pascal_kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be 'symmetric', 'lower', or 'upper'; got {kind!r}")
    return kind


def pascal(n, kind=None):
    """Pascal's matrix: binomial coefficients, symmetric, lower or upper triangular."""
    kind = _pascal_kind(kind)
    lower = [[_math.comb(i, j) for j in range(n)] for i in range(n)]
    if kind == "lower":
        return _static_matrix(lower)
    if kind == "upper":
        return _static_matrix(_np.array(lower).T)
    return _static_matrix([[_math.comb(i + j, i) for j in range(n)] for i in range(n)])


def invpascal(n, kind=None):
    """The exact inverse of pascal(n, kind), an integer matrix."""
    kind = _pascal_kind(kind)
    lower = _np.array([[(-1) ** (i + j) * _math.comb(i, j) for j in range(n)] for i in range(n)],
                      dtype=object)
    if kind == "lower":
        return _static_matrix(lower)
    if kind == "upper":
        return _static_matrix(lower.T)
    return _static_matrix(lower.T.dot(lower))


def hadamard(n, dtype=int):
    """Sylvester's Hadamard matrix of order n, a power of 2."""
    if n < 1 or n & (n - 1):
        raise ValueError("n must be a positive integer, and n must be a power of 2")
    h = _np.array([[1]])
    while h.shape[0] < n:
        h = _np.block([[h, h], [h, -h]])
    return _jnp.asarray(h, dtype)


def helmert(n, full=False):
    """Helmert's orthogonal matrix: row k contrasts the first k entries with entry k."""
    rows = [[1 / _math.sqrt(n)] * n] if full else []
    for k in range(1, n):
        scale = 1 / _math.sqrt(k * (k + 1))
        rows.append([scale] * k + [-k * scale] + [0.0] * (n - k - 1))
    return _static_matrix(_np.array(rows).reshape(len(rows), n))


# ---------------------------------------------------------------- QR

def _reflector(x, pivot=0):
    """The unit v for which (I - 2 v v^H) x = -phase(x_p) |x| e_p, p the pivot index (LAPACK's
    sign choice, so that forming v never cancels; the phase is x_p's sign for real x); v = 0
    when x is 0. x is zero before the pivot, which may be traced."""
    norm = _jnp.sqrt(_jnp.sum(_jnp.abs(x) ** 2, axis=-1, keepdims=True))
    first = _lax.dynamic_index_in_dim(x, pivot, axis=-1)
    magnitude = _jnp.abs(first)
    phase = _jnp.where(magnitude > 0, first / _jnp.where(magnitude > 0, magnitude, 1), 1).astype(x.dtype)
    v = x - (_jnp.arange(x.shape[-1]) == pivot) * (-phase * norm)
    v_norm = _jnp.sqrt(_jnp.sum(_jnp.abs(v) ** 2, axis=-1, keepdims=True))
    return _jnp.where(v_norm > 0, v / _jnp.where(v_norm > 0, v_norm, 1.0), 0.0)


def _reflect_rows(a, v, start):
    """(I - 2 v v^H) applied from the left to the rows start: of a."""
    block = a[..., start:, :]
    projection = _jnp.sum(_jnp.conj(v)[..., :, None] * block, axis=-2, keepdims=True)
    return a.at[..., start:, :].set(block - 2 * v[..., :, None] * projection)


def _reflect_columns(a, v, start):
    """(I - 2 v v^H) applied from the right to the columns start: of a."""
    block = a[..., :, start:]
    projection = _jnp.sum(block * v[..., None, :], axis=-1, keepdims=True)
    return a.at[..., :, start:].set(block - 2 * projection * _jnp.conj(v)[..., None, :])


def _householder_qr(a):
    """(q, r) with a = q r, one reflection per column (q is m x m)."""
    m, n = a.shape[-2:]
    r, q = a, _identity_like(_jnp.zeros(a.shape[:-2] + (m, m), a.dtype))
    for k in range(min(m - 1, n)):
        v = _reflector(r[..., k:, k])
        r, q = _reflect_rows(r, v, k), _reflect_columns(q, v, k)
    return q, _jnp.triu(r)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """The QR decomposition: (q, r) for mode "full" or "economic", (r,) for mode "r"; with
    pivoting (LAPACK's geqp3), the column permutation p last, a[:, p] = q r."""
    if mode not in ("full", "r", "economic"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    a = _float_matrix("qr", a)
    if pivoting:
        q, r, p = _lax.linalg.qr(a, pivoting=True, full_matrices=mode != "economic")
        return (r, p) if mode == "r" else (q, r, p)
    q, r = _householder_qr(a)
    k = min(a.shape[-2:])
    if mode == "economic":
        q, r = q[..., :, :k], r[..., :k, :]
    return (r,) if mode == "r" else (q, r)


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
    """(c @ q, r) for mode "right", (q @ c, r) for mode "left", with the economic q (and the
    column permutation last with pivoting)."""
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    a, c = _as_inexact(a, c)
    q, r, *permutation = qr(a, mode="economic", pivoting=pivoting)
    c_matrix = c if c.ndim > 1 else (c[None, :] if mode == "right" else c[:, None])
    product = _jnp.matmul(c_matrix, q) if mode == "right" else _jnp.matmul(q, c_matrix)
    return ((product if c.ndim > 1 else product.reshape(-1)), r, *permutation)


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """h = q^H a q, zero below the first subdiagonal, by Householder similarity transforms;
    (h, q) with calc_q."""
    a = _float_matrix("hessenberg", a)
    n = a.shape[-1]
    if a.shape[-2] != n:
        raise ValueError(f"hessenberg expects a square matrix, got shape {a.shape}")
    rows = _jnp.arange(n)

    def reduce_column(k, hq):
        # one loop body for every column (not one unrolled step each): jit compiles it once
        h, q = hq
        column = _lax.dynamic_index_in_dim(h, k, axis=-1, keepdims=False)
        v = _reflector(_jnp.where(rows > k, column, 0), k + 1)
        return _reflect_columns(_reflect_rows(h, v, 0), v, 0), _reflect_columns(q, v, 0)

    h, q = _lax.fori_loop(0, max(n - 2, 0), reduce_column, (a, _identity_like(a)))
    h = _jnp.where(_hessenberg_mask(n), h, 0)
    return (h, q) if calc_q else h


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
    """X with A X + X B = C, from the Kronecker form (I kron A + B^T kron I) vec(X) = vec(C)
    (exact; its cost grows as (m n)^3, meant for the small systems this is used for)."""
    if method not in ("schur", "eigen"):
        raise ValueError(f"Unknown method {method!r}")
    a, b, c = _as_inexact(A, B, C)
    m, n = c.shape
    system = (_jnp.kron(_jnp.eye(n, dtype=a.dtype), a) + _jnp.kron(_jnp.swapaxes(b, 0, 1), _jnp.eye(m, dtype=a.dtype)))
    flat = _jnp.linalg.solve(system, _jnp.ravel(_jnp.swapaxes(c, 0, 1)))
    return _jnp.swapaxes(flat.reshape(n, m), 0, 1)


# ---------------------------------------------------------------- symmetric eigenproblem

def _round_robin(n):
    """n - 1 rounds of n / 2 disjoint pairs (p < q) of 0 ... n - 1 (n even), together every
    pair once: the circle method, player 0 fixed while the others rotate."""
    players, rounds = list(range(n)), []
    for _ in range(n - 1):
        rounds.append([sorted((players[i], players[n - 1 - i])) for i in range(n // 2)])
        players = [players[0], players[-1]] + players[1:-1]
    return _np.array(rounds, dtype=_np.int32)


def _rotate(x, p, q, c, s, axis):
    """x with its rows (axis 0) or columns (axis 1) p, q replaced by c x_p - s x_q, s x_p + c x_q."""
    if axis == 1:
        return _jnp.swapaxes(_rotate(_jnp.swapaxes(x, 0, 1), p, q, c, s, 0), 0, 1)
    xp, xq = x[p], x[q]
    return x.at[p].set(c[:, None] * xp - s[:, None] * xq).at[q].set(s[:, None] * xp + c[:, None] * xq)


def _jacobi_round(a, v, pairs):
    """One round of disjoint Jacobi rotations, each zeroing a[p, q] of its pair."""
    p, q = pairs[:, 0], pairs[:, 1]
    # both triangles' entry: rounding lets them drift apart, and either alone biases the angle
    app, aqq, apq = a[p, p], a[q, q], (a[p, q] + a[q, p]) / 2
    rotate = apq != 0
    theta = (aqq - app) / (2 * _jnp.where(rotate, apq, 1.0))
    t = _jnp.where(theta >= 0, 1.0, -1.0) / (_jnp.abs(theta) + _jnp.sqrt(theta * theta + 1))
    t = _jnp.where(rotate, t, 0.0).astype(a.dtype)
    c = 1 / _jnp.sqrt(t * t + 1)
    s = t * c
    a = _rotate(_rotate(a, p, q, c, s, 0), p, q, c, s, 1)
    # what the rotation makes of the pair's 2 x 2 block, exactly: the off-diagonal entries
    # vanish and the diagonal moves by t a_pq (computing these through the products above
    # leaves rounding behind that later rotations would have to chase)
    a = a.at[p, q].set(0).at[q, p].set(0).at[p, p].set(app - t * apq).at[q, q].set(aqq + t * apq)
    return a, _rotate(v, p, q, c, s, 1)


_JACOBI_MAX_SWEEPS = 30


def _jacobi_eigh(a):
    """(eigenvalues ascending, eigenvectors as columns) of one symmetric matrix, by cyclic
    Jacobi rotations in round-robin order (n/2 independent rotations per step), sweeping
    until the off-diagonal part is negligible."""
    n = a.shape[-1]
    size = n + n % 2   # an odd size gets a decoupled extra index, which rotations never touch
    padded = _jnp.pad(a, ((0, size - n), (0, size - n)))
    rounds = _jnp.asarray(_round_robin(size)) if size > 1 else None
    eps = float(_np.finfo(a.dtype).eps)

    off_mask = 1 - _jnp.eye(size, dtype=a.dtype)

    def off_diagonal(x):
        return _jnp.sum((x * off_mask) ** 2)

    def unconverged(state):
        sweep, x, _ = state
        return (sweep < _JACOBI_MAX_SWEEPS) & (off_diagonal(x) > (eps * eps / 4) * _jnp.sum(x * x))

    def sweep(state):
        count, x, vectors = state

        def one_round(r, carry):
            return _jacobi_round(*carry, _lax.dynamic_index_in_dim(rounds, r, keepdims=False))
        x, vectors = _lax.fori_loop(0, size - 1, one_round, (x, vectors))
        return count + 1, x, vectors

    vectors = _jnp.eye(size, dtype=a.dtype)
    if rounds is not None:
        _, padded, vectors = _lax.while_loop(unconverged, sweep, (0, padded, vectors))
    values = _jnp.einsum("ii->i", padded)[:n]
    order = _jnp.argsort(values)
    return values[order], vectors[:n, :n][:, order]


@_custom_jvp
def _symmetric_eigh(a):
    return _jit(_jacobi_eigh)(a)


@_symmetric_eigh.defjvp
def _symmetric_eigh_jvp(primals, tangents):
    """dw = diag(V^T dA V); dV = V (F * (V^T dA V)), F_ij = 1 / (w_j - w_i) off the diagonal."""
    (a,), (a_dot,) = primals, tangents
    w, v = _symmetric_eigh(a)
    rotated = _jnp.matmul(_jnp.matmul(v.T, a_dot), v)
    gaps = w[None, :] - w[:, None]
    off = 1 - _jnp.eye(w.shape[0], dtype=w.dtype)
    inverse_gaps = off / _jnp.where(off > 0, gaps, 1.0)
    return (w, v), (_jnp.einsum("ii->i", rotated), _jnp.matmul(v, inverse_gaps * rotated))


def _batched(fun, a, *static):
    """fun(matrix, *static) over the leading (batch) axes of a stack of matrices."""
    mapped = lambda x: fun(x, *static)
    for _ in range(a.ndim - 2):
        mapped = _vmap(mapped)
    return mapped(a)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a real symmetric or
    complex Hermitian matrix, read from its lower (or upper) triangle (a complex one through
    lax.linalg.eigh; a real one by Jacobi rotations)."""
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    a = _float_matrix("eigh", a)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"eigh expects square matrices, got shape {a.shape}")
    if _dtypes.is_complex(a.dtype):
        v, w = _lax.linalg.eigh(a, lower=lower, symmetrize_input=False)
        return w if eigvals_only else (w, v)
    triangle = _jnp.tril(a) if lower else _jnp.triu(a)
    symmetric = triangle + _jnp.swapaxes(triangle, -1, -2) - a * _identity_like(a)
    w, v = _batched(_symmetric_eigh, symmetric)
    return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None, key=None):
    """Eigenvalues (and eigenvectors) of the symmetric tridiagonal matrix with diagonal d and
    off-diagonal e; select="i" keeps those of indices select_range[0] ... select_range[1]."""
    d, e = _as_inexact(d, e)
    if d.ndim != 1 or e.shape != (d.shape[0] - 1,):
        raise ValueError(f"expected d of shape (n,) and e of shape (n - 1,), got {d.shape} and {e.shape}")
    if select not in ("a", "i"):
        raise NotImplementedError(f"select={select!r} is not implemented (only 'a' and 'i')")
    n = d.shape[0]
    above = _jnp.eye(n, n, 1, dtype=d.dtype) * _jnp.pad(e, (1, 0))
    matrix = _jnp.eye(n, dtype=d.dtype) * d + above + above.T
    w, v = _symmetric_eigh(matrix)
    if select == "i":
        low, high = (int(i) for i in select_range)
        w, v = w[low:high + 1], v[:, low:high + 1]
    return w if eigvals_only else (w, v)


def dft(n, scale=None, *, dtype=None):
    """The n x n discrete Fourier transform matrix, exp(-2 pi i jk / n), divided by n for
    scale="n" or sqrt(n) for "sqrtn". The angle uses jk mod n, exact in integers."""
    if scale not in (None, "n", "sqrtn"):
        raise ValueError(f"scale must be None, 'n' or 'sqrtn', got {scale!r}")
    dtype = _dtypes.canonicalize_dtype(dtype or _dtypes.default_complex_dtype())
    k = _np.arange(n)
    turns = (_np.outer(k, k) % max(n, 1)) / max(n, 1)
    matrix = _np.exp(-2j * _np.pi * turns)
    divisor = {None: 1, "n": n, "sqrtn": _math.sqrt(n)}[scale]
    return _jnp.asarray((matrix / divisor).astype(dtype))


# ---------------------------------------------------------------- Schur decomposition
#
# The shifted QR algorithm on the Hessenberg form, built from lax loops so that jit compiles
# it whole. Each step takes the active window [lo, hi] (below hi everything has converged,
# h[lo, lo - 1] is zero), forms the shift polynomial M of the window (H - mu I for the
# complex single shift; H^2 - s H + t I, Francis's real double shift, for real matrices)
# with the identity outside it, and replaces H by Q^H H Q with Q from M's QR decomposition.
# That explicit step costs a dense QR (O(n^3)) where LAPACK's implicit bulge chase costs
# O(n^2); in exchange every step is one well-tested factorization, and the similarity is by
# an exactly unitary Q, so the result's backward error stays at rounding level.

_SCHUR_STEPS_PER_EIGENVALUE = 30
_EXCEPTIONAL_EVERY = 10   # as LAPACK's xLAHQR: a made-up shift now and then breaks cycles


def _hessenberg_mask(n):
    return _np.arange(n)[:, None] <= _np.arange(n)[None, :] + 1


def _deflate_negligible(h, eps):
    """h with the subdiagonal entries that are negligible next to their diagonal neighbours
    (LAPACK's criterion) set to zero."""
    diagonal, sub = _jnp.diagonal(h), _jnp.diagonal(h, -1)
    scale = _jnp.abs(diagonal[1:]) + _jnp.abs(diagonal[:-1])
    tiny = _np.finfo(_dtypes.real_dtype(h.dtype)).tiny
    negligible = (_jnp.abs(sub) <= eps * scale) | (_jnp.abs(sub) < tiny)
    return _jnp.where(_jnp.diag(negligible, k=-1), 0, h)


def _window_start(h, hi):
    """The first row of the unreduced block that ends at row hi."""
    k = _jnp.arange(1, h.shape[-1], dtype=_np.int32)
    split = (_jnp.diagonal(h, -1) == 0) & (k <= hi)
    return _jnp.max(_jnp.where(split, k, 0))


def _complex_shift(a, b, c, d, exceptional):
    """Wilkinson's shift: the eigenvalue of [[a, b], [c, d]] nearer d."""
    half_gap = (a - d) / 2
    root = _jnp.sqrt(half_gap * half_gap + b * c)
    mean = (a + d) / 2
    near, far = mean + root, mean - root
    wilkinson = _jnp.where(_jnp.abs(near - d) <= _jnp.abs(far - d), near, far)
    return _jnp.where(exceptional, d + 0.75 * _jnp.abs(c), wilkinson)


def _real_shifts(a, b, c, d, above, exceptional):
    """(s, t): the sum and product of the eigenvalues of [[a, b], [c, d]], or LAPACK's
    exceptional pair built from the last two subdiagonal entries (c and `above`)."""
    x = _jnp.abs(c) + _jnp.abs(above)
    centre = 0.75 * x + d
    return (_jnp.where(exceptional, 2 * centre, a + d),
            _jnp.where(exceptional, centre * centre + 0.4375 * x * x, a * d - b * c))


def _qr_step(h, z, lo, hi, count, real):
    """One explicitly shifted QR step on the window [lo, hi] of h (z accumulates Q)."""
    n = h.shape[-1]
    index = _jnp.arange(n)
    inside = (index >= lo) & (index <= hi)
    window = _jnp.where(inside[:, None] & inside[None, :], h, 0)
    largest = _jnp.max(_jnp.abs(window))
    window = window / _jnp.where(largest > 0, largest, 1)   # (Q does not change, M cannot overflow)
    a, b = window[hi - 1, hi - 1], window[hi - 1, hi]
    c, d = window[hi, hi - 1], window[hi, hi]
    exceptional = count % _EXCEPTIONAL_EVERY == _EXCEPTIONAL_EVERY - 1
    identity_inside = _jnp.diag(inside).astype(h.dtype)
    if real:
        s, t = _real_shifts(a, b, c, d, window[hi - 1, hi - 2], exceptional)
        shifted = _jnp.matmul(window, window) - s * window + t * identity_inside
    else:
        shifted = window - _complex_shift(a, b, c, d, exceptional) * identity_inside
    q, _ = _jnp.linalg.qr(shifted + _jnp.diag(~inside).astype(h.dtype))
    h = _jnp.matmul(_jnp.matmul(_adjoint(q), h), q)
    return _jnp.where(_hessenberg_mask(n), h, 0), _jnp.matmul(z, q)


def _shifted_qr(h, z, real):
    """(t, z): h reduced to (quasi-)triangular form, z times the accumulated rotations."""
    n = h.shape[-1]
    eps = float(_np.finfo(_dtypes.real_dtype(h.dtype)).eps)
    # a real window of two rows has converged: its block is standardized afterwards
    converged_size = 2 if real else 1
    max_steps = _SCHUR_STEPS_PER_EIGENVALUE * max(10, n)

    def unfinished(state):
        _, _, hi, count = state
        return (hi > 0) & (count < max_steps)

    def iteration(state):
        h, z, hi, count = state
        h = _deflate_negligible(h, eps)
        lo = _window_start(h, hi)
        done = hi - lo + 1 <= converged_size
        h, z = _lax.cond(done, lambda hz: hz, lambda hz: _qr_step(*hz, lo, hi, count, real), (h, z))
        return h, z, _jnp.where(done, lo - 1, hi), count + (~done).astype(count.dtype)

    h, z, _, _ = _lax.while_loop(unfinished, iteration, (h, z, _jnp.int32(n - 1), _jnp.int32(0)))
    return _deflate_negligible(h, eps), z


def _rotation_matrix(n, k, cosine, sine, dtype):
    """The identity with the rotation [[cosine, -sine], [sine, cosine]] in rows/columns k, k + 1."""
    index = _jnp.arange(n)
    at_k, at_next = index == k, index == k + 1
    pair = (at_k | at_next).astype(dtype)
    rotation = _jnp.diag(1 - pair + cosine * pair)
    return rotation + sine * (at_next[:, None] & at_k[None, :]) - sine * (at_k[:, None] & at_next[None, :])


def _standard_block_rotation(a, b, c, d):
    """(cosine, sine, real_eigenvalues) of the rotation that brings the 2 x 2 block
    [[a, b], [c, d]] to LAPACK's standard form: upper triangular when its eigenvalues are
    real (the first column turned onto the eigenvector of the eigenvalue on a's side), else
    with equal diagonal entries (and then b c < 0)."""
    half_gap = (a - d) / 2
    discriminant = half_gap * half_gap + b * c
    real = discriminant >= 0
    sign_gap = _jnp.where(half_gap >= 0, 1, -1).astype(a.dtype)
    toward_a = half_gap + sign_gap * _jnp.sqrt(_jnp.where(real, discriminant, 0))
    length = _jnp.hypot(toward_a, c)
    safe_length = _jnp.where(length > 0, length, 1)
    sigma = b + c
    tau = _jnp.hypot(sigma, a - d)
    safe_tau = _jnp.where(tau > 0, tau, 1)
    complex_cosine = _jnp.sqrt(0.5 * (1 + _jnp.abs(sigma) / safe_tau))
    complex_sine = -(half_gap / (safe_tau * complex_cosine)) * _jnp.where(sigma >= 0, 1, -1)
    cosine = _jnp.where(real, toward_a / safe_length, _jnp.where(tau > 0, complex_cosine, 1))
    sine = _jnp.where(real, c / safe_length, _jnp.where(tau > 0, complex_sine, 0))
    return cosine, sine, real


def _standardize_blocks(t, z):
    """The real Schur form's 2 x 2 blocks in standard form (as LAPACK's xLANV2 leaves them)."""
    n = t.shape[-1]

    def standardize(k, tz):
        t, z = tz
        a, b, c, d = t[k, k], t[k, k + 1], t[k + 1, k], t[k + 1, k + 1]
        cosine, sine, real = _standard_block_rotation(a, b, c, d)
        block = c != 0
        cosine, sine = _jnp.where(block, cosine, 1), _jnp.where(block, sine, 0)
        rotation = _rotation_matrix(n, k, cosine, sine, t.dtype)
        t = _jnp.matmul(_jnp.matmul(rotation.T, t), rotation)
        # exactly what the rotation makes: a zero below a real pair, equal diagonals otherwise
        t = t.at[k + 1, k].set(_jnp.where(block & real, 0, t[k + 1, k]))
        mean = (t[k, k] + t[k + 1, k + 1]) / 2
        equal = block & ~real
        t = t.at[k, k].set(_jnp.where(equal, mean, t[k, k])).at[k + 1, k + 1].set(
            _jnp.where(equal, mean, t[k + 1, k + 1]))
        return t, _jnp.matmul(z, rotation)

    return _lax.fori_loop(0, n - 1, standardize, (t, z))


def _schur_matrix(a, real):
    if a.shape[-1] == 1:
        return a, _identity_like(a)
    h, z = hessenberg(a, calc_q=True)
    t, z = _shifted_qr(h, z, real)
    if real:
        return _standardize_blocks(t, z)
    return _jnp.triu(t), z


@_functools.partial(_custom_jvp, nondiff_argnums=(1,))
def _schur_form(a, real):
    return _batched(_jit(_schur_matrix, static_argnums=1), a, real)


@_schur_form.defjvp
def _schur_form_jvp(real, primals, tangents):
    raise NotImplementedError("Differentiation rule for 'schur' not implemented")


def schur(a, output="real"):
    """(t, z) with a = z t z^H, z unitary and t upper triangular (output "complex") or, for a
    real a and output "real", quasi upper triangular: 2 x 2 blocks on the diagonal for the
    complex conjugate eigenvalue pairs, in LAPACK's standard form. Batched over leading axes;
    not differentiable (as in JAX)."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got output={output!r}.")
    a = _jnp.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {a.shape}.")
    if not _dtypes.is_inexact(a.dtype):
        raise TypeError(f"schur does not accept dtype {a.dtype} at position 0. Accepted dtypes at "
                        "position 0 are subtypes of floating, complexfloating.")
    if output == "complex":
        a = a.astype(_dtypes.complex_dtype(a.dtype))
    if a.shape[-1] == 0:
        return a, a
    return _schur_form(a, not _dtypes.is_complex(a.dtype))


def _promote_complex(*arrays):
    dtype = _dtypes.complex_dtype(_dtypes.result_type(*(_as_inexact(*arrays))))
    return [_jnp.asarray(x).astype(dtype) for x in arrays]


def _rsf2csf_matrix(t, z):
    """Each 2 x 2 block of the real Schur form t split by the unitary rotation that puts the
    block's eigenvalue with positive imaginary part first (scipy's recipe), bottom up."""
    n = t.shape[-1]
    eps = _np.finfo(_dtypes.real_dtype(t.dtype)).eps
    for m in range(n - 1, 0, -1):
        a, b, c, d = t[m - 1, m - 1], t[m - 1, m], t[m, m - 1], t[m, m]
        block = _jnp.abs(c) > eps * (_jnp.abs(a) + _jnp.abs(d))
        half_gap = (a - d) / 2
        # (the where()s keep every derivative finite where no block is split)
        discriminant = _jnp.where(block, half_gap * half_gap + b * c, 1)
        mu = half_gap + _jnp.sqrt(discriminant)   # an eigenvalue minus d
        squared_radius = _jnp.real(mu * _jnp.conj(mu) + c * _jnp.conj(c))
        safe_radius = _jnp.sqrt(_jnp.where(block & (squared_radius > 0), squared_radius, 1))
        cosine = _jnp.where(block, mu / safe_radius, 1)
        sine = _jnp.where(block, c / safe_radius, 0)
        rotation = _jnp.stack([_jnp.stack([_jnp.conj(cosine), sine]), _jnp.stack([-sine, cosine])])
        t = t.at[m - 1:m + 1, m - 1:].set(_jnp.matmul(rotation, t[m - 1:m + 1, m - 1:]))
        t = t.at[:m + 1, m - 1:m + 1].set(_jnp.matmul(t[:m + 1, m - 1:m + 1], _adjoint(rotation)))
        z = z.at[:, m - 1:m + 1].set(_jnp.matmul(z[:, m - 1:m + 1], _adjoint(rotation)))
        t = t.at[m, m - 1].set(_jnp.where(block, 0, t[m, m - 1]))
    return _jnp.triu(t), z


def rsf2csf(T, Z, check_finite=True):
    """(t, z), the complex Schur form, from a real Schur form T and its Z (a = Z T Z^T)."""
    t, z = _jnp.asarray(T), _jnp.asarray(Z)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if z.ndim < 2 or z.shape[-1] != z.shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if t.shape[-1] != z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {z.shape} vs. T: {t.shape}")
    t, z = _promote_complex(t, z)
    return _jnp.vectorize(_rsf2csf_matrix, signature="(n,n),(n,n)->(n,n),(n,n)")(t, z)


def _square_matrix(a):
    a = _jnp.asarray(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError("expected square array_like input")
    return a


def _by_superdiagonals(t, diagonal, entry):
    """The upper triangular f with diagonal `diagonal` whose superdiagonals are filled one
    after the other: entry(f, t, d) gives superdiagonal d from the d - 1 before it."""
    n = t.shape[-1]
    f = _jnp.diag(diagonal)
    for d in range(1, n):
        rows = _np.arange(n - d)
        f = f.at[rows, rows + d].set(entry(f, t, d))
    return f


def _sqrt_superdiagonal(r, t, d):
    """r_ij = (t_ij - sum_{i<k<j} r_ik r_kj) / (r_ii + r_jj), j = i + d: r r = t (and 0
    where the numerator is, as JAX: a zero matrix's root is zero)."""
    roots = _jnp.diagonal(r)
    numerator = _jnp.diagonal(t, d) - _jnp.diagonal(_jnp.matmul(r, r), d)
    return _jnp.where(numerator == 0, 0, numerator / (roots[:-d] + roots[d:]))


def sqrtm(A, blocksize=1):
    """The principal square root of A (complex), from the complex Schur form: the triangular
    root of t, column band after band, rotated back."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    t, z = schur(_square_matrix(A), output="complex")
    root = _by_superdiagonals(t, _jnp.sqrt(_jnp.diagonal(t)), _sqrt_superdiagonal)
    return _jnp.matmul(_jnp.matmul(z, root), _adjoint(z))


def _parlett_superdiagonal(f, t, d):
    """Parlett's recurrence (Golub and Van Loan 11.1.1), from f t = t f at (i, j = i + d):
    f_ij (t_jj - t_ii) = (t f - f t)_ij while f_ij is still zero. Where t_ii = t_jj the sum is
    left undivided, as JAX leaves it."""
    values = _jnp.diagonal(t)
    gaps = values[d:] - values[:-d]
    numerator = _jnp.diagonal(_jnp.matmul(t, f) - _jnp.matmul(f, t), d)
    return _jnp.where(gaps != 0, numerator / _jnp.where(gaps != 0, gaps, 1), numerator)


def funm(A, func, disp=True):
    """func(A) for a function of the eigenvalues, by Parlett's recurrence on the complex Schur
    form; with disp=False (f, err), err estimating ||f - func(A)||_1 / ||A||_1 as scipy does."""
    a = _square_matrix(A)
    t, z = rsf2csf(*schur(a))
    f = _by_superdiagonals(t, func(_jnp.diagonal(t)).astype(t.dtype), _parlett_superdiagonal)
    f = _jnp.matmul(_jnp.matmul(z, f), _adjoint(z))
    if disp:
        return f
    tol = float(_np.finfo(_dtypes.real_dtype(f.dtype)).eps)
    values = _jnp.diagonal(t)
    gaps = _jnp.abs(values[None, :] - values[:, None])
    upper = _np.triu(_np.ones(gaps.shape, bool), 1)
    smallest_gap = _jnp.min(_jnp.where(upper, gaps, _jnp.abs(t[0, 0])))
    smallest_gap = _jnp.where(smallest_gap == 0, tol, smallest_gap)
    estimate = _jnp.minimum(1, _jnp.maximum(tol, (tol / smallest_gap) * _jnp.linalg.norm(_jnp.triu(t, 1), 1)))
    return f, _jnp.where(_jnp.any(_jnp.isinf(f)), _np.inf, estimate)
