"""jax.lax.linalg: the factorization primitives (cholesky, triangular_solve, lu, eigh, qr,
geqrf, svd) and compositions of them (householder_product).

Each works on the last two axes and maps over any leading (batch) axes, so the
batching rules only move the vmapped axis to the front. The derivatives are
the standard matrix identities, written with triangular solves and matmuls.
"""
import enum
import math

import numpy as np

from jaxlite.core import dtypes, numpy_blas
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.namespace import dir_of_all
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import INEXACT, INTEGER, as_operand, check_dtype
from jaxlite.lax.complex_parts import complex as make_complex, conj, imag, real
from jaxlite.lax.reductions import argmax, reduce_sum
from jaxlite.lax.dot import dot_general
from jaxlite.lax.elementwise import abs as magnitude
from jaxlite.lax.elementwise import (add, convert_element_type, div, eq, full_like, ge, gt, le, lt,
                                     mul, neg, select_n, square, sub)
from jaxlite.lax.shapes import broadcast_in_dim, broadcasted_iota, full, pad, slice, transpose
from jaxlite.lax.slicing import take_along_axis
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import bdim_at_front

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_p", "cholesky_update",
           "eig", "eig_p", "eigh", "eigh_p", "geqrf", "geqrf_p", "householder_product", "lu", "lu_p",
           "lu_pivots_to_permutation", "ormqr", "qr", "qr_p", "svd", "svd_p", "symmetric_product", "symmetrize",
           "triangular_solve", "triangular_solve_p", "tridiagonal_solve"]
__dir__ = dir_of_all(globals())


def _check_matrices(name, x, square=True):
    check_dtype(name, x, INEXACT)
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise ValueError(f"{name} needs {kind} in its last two axes, got shape {x.shape}")


def matmul(a, b):
    """Batched matrix product over equal leading axes."""
    batch = tuple(range(a.ndim - 2))
    return dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), (batch, batch)))


def matrix_transpose(x):
    return transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _triangle_mask(shape, lower, strict=False):
    """A boolean mask of the lower (or upper) triangle of the last two axes."""
    rows = broadcasted_iota(dtypes.int32, shape, len(shape) - 2)
    cols = broadcasted_iota(dtypes.int32, shape, len(shape) - 1)
    if lower:
        return (gt if strict else ge)(rows, cols)
    return (lt if strict else le)(rows, cols)


def triangle(x, lower, strict=False):
    """The lower (or upper) triangle of x's last two axes, zeros elsewhere."""
    return select_n(_triangle_mask(x.shape, lower, strict), full_like(x, 0), x)


def _batch_all_to_front(primitive):
    """Move every batch axis to the front (broadcasting unbatched operands)."""
    def rule(args, dims, **params):
        size = batching.batch_size(args, dims)
        out = primitive.bind(*(bdim_at_front(x, d, size) for x, d in zip(args, dims)), **params)
        return out, ([0] * len(out) if primitive.multiple_results else 0)
    batching.batch_rules[primitive] = rule


# ---------------------------------------------------------------- cholesky

def _or_nan_per_matrix(decompose, x):
    """decompose(x) (a list of arrays) over x's batch; where LAPACK fails (numpy raises for
    the whole batch), matrix by matrix, a failed matrix giving NaNs in every result, as in JAX."""
    try:
        return decompose(x)
    except np.linalg.LinAlgError:
        per_matrix = [_decompose_or_nan(decompose, matrix) for matrix in x.reshape((-1,) + x.shape[-2:])]
        return [np.stack(parts).reshape(x.shape[:-2] + parts[0].shape) for parts in zip(*per_matrix)]


def _decompose_or_nan(decompose, matrix):
    try:
        return decompose(matrix)
    except np.linalg.LinAlgError:
        # The results' shapes, from a matrix every decomposition takes.
        return [np.full_like(result, complex(np.nan, np.nan) if result.dtype.kind == "c" else np.nan)
                for result in decompose(np.eye(*matrix.shape, dtype=matrix.dtype))]


def _cholesky_impl(x, symmetrize_input):
    """Lower Cholesky factor; matrices that are not positive definite give NaNs, as in JAX.
    numpy's LAPACK runs on one thread, as under jit (core/numpy_blas.py says why)."""
    if symmetrize_input:
        x = (x + np.conj(np.swapaxes(x, -1, -2))) * x.dtype.type(0.5)
    with numpy_blas.single_threaded():
        return _or_nan_per_matrix(lambda a: [np.linalg.cholesky(a)], x)[0]


def _cholesky_aval(x, symmetrize_input):
    _check_matrices("cholesky", x)
    return x.strip_weak_type()


cholesky_p = Primitive("cholesky")
cholesky_p.def_impl(_cholesky_impl)
cholesky_p.def_abstract_eval(_cholesky_aval)


def cholesky(x, symmetrize_input=True):
    """The lower-triangular L with L L^T = x (x symmetric positive definite), of (x + x^T) / 2
    with symmetrize_input. The primitive symmetrizes itself (the same operations either way),
    so that jit does it in the routine's copy of x instead of in a kernel of its own (0.3 ms
    at 512 x 512: a transposed read). A matrix that is not positive definite gives NaNs in the
    lower triangle and zeros above it, as in JAX."""
    factor = cholesky_p.bind(as_operand(x), symmetrize_input=bool(symmetrize_input))
    return triangle(factor, lower=True)


def _cholesky_jvp(primals, tangents, symmetrize_input):
    """L_dot = L phi(L^-1 A_dot L^-H), phi taking the lower triangle with half the diagonal."""
    (x,), (x_dot,) = primals, tangents
    L = cholesky_p.bind(x, symmetrize_input=symmetrize_input)
    if symmetrize_input:
        x_dot = symmetrize(x_dot)
    inner = triangular_solve(L, x_dot, left_side=True, lower=True)
    inner = triangular_solve(L, inner, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    strictly_lower = triangle(inner, lower=True, strict=True)
    diagonal = sub(triangle(inner, lower=True), strictly_lower)
    phi = add(strictly_lower, mul(diagonal, convert_element_type(0.5, x.dtype)))
    return L, matmul(L, phi)


ad.jvp_rules[cholesky_p] = _cholesky_jvp
_batch_all_to_front(cholesky_p)   # (the batch axis may sit between the matrix axes)


# ---------------------------------------------------------------- triangular_solve

def _op(a, transpose_a, conjugate_a):
    a = np.conj(a) if conjugate_a else a
    return np.swapaxes(a, -1, -2) if transpose_a else a


def _triangular_solve_impl(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri = tri.copy()
        idx = np.arange(a.shape[-1])
        tri[..., idx, idx] = 1
    compute = np.promote_types(a.dtype, np.float32)
    tri = _op(tri, transpose_a, conjugate_a).astype(compute)
    b = b.astype(compute)
    lower = lower != bool(transpose_a)  # whether op(a) is lower triangular
    if left_side:
        return _solve_or_substitute(tri, b, lower).astype(a.dtype)
    return np.swapaxes(_solve_or_substitute(np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2), not lower),
                       -1, -2).astype(a.dtype)


def _solve_or_substitute(tri, b, lower):
    """tri^-1 b; a singular triangle gives the infs and NaNs substitution does (as JAX and
    the compiled routine) where np.linalg.solve would raise LinAlgError."""
    try:
        return np.linalg.solve(tri, b)
    except np.linalg.LinAlgError:
        pass
    n = tri.shape[-1]
    x = np.zeros(np.broadcast_shapes(tri.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in (range(n) if lower else range(n - 1, -1, -1)):
            known = np.einsum("...j,...jk->...k", tri[..., i, :], x)
            x[..., i, :] = (b[..., i, :] - known) / tri[..., i, i:i + 1]
    return x


def _triangular_solve_aval(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_matrices("triangular_solve", a)
    _check_matrices("triangular_solve", b, square=False)
    m = a.shape[-1]
    solved = b.shape[-2] if left_side else b.shape[-1]
    if a.dtype != b.dtype or a.shape[:-2] != b.shape[:-2] or solved != m:
        raise TypeError(f"triangular_solve: a {a.str_short()} and b {b.str_short()} need equal "
                        f"dtypes and batch axes, and b's {'rows' if left_side else 'columns'} "
                        f"must match a's size {m}")
    return b.strip_weak_type()


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.def_impl(_triangular_solve_impl)
triangular_solve_p.def_abstract_eval(_triangular_solve_aval)


def triangular_solve(a, b, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                     unit_diagonal=False):
    """x with op(a) x = b (left_side) or x op(a) = b, op(a) = a or a^T; a triangular.

    Only the named triangle of `a` is read; conjugate_a solves with conj(op(a)) (a no-op on real a).
    """
    a, b = as_operand(a), as_operand(b)
    conjugate_a = bool(conjugate_a) and dtypes.is_complex(a.dtype)
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
                                   conjugate_a=conjugate_a, unit_diagonal=bool(unit_diagonal))


def _triangular_solve_jvp(primals, tangents, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    (a, b), (a_dot, b_dot) = primals, tangents
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                  unit_diagonal=unit_diagonal)
    x = triangular_solve_p.bind(a, b, **params)
    x_dot = ad.Zero(ad.tangent_aval(x.aval))
    if not ad.is_zero(b_dot):
        x_dot = triangular_solve_p.bind(a, b_dot, **params)
    if not ad.is_zero(a_dot):
        # op(a) x = b gives op(a_dot) x + op(a) x_dot = 0 (x op(a) = b likewise on the right).
        a_dot = triangle(a_dot, lower, strict=unit_diagonal)
        a_dot = conj(a_dot) if conjugate_a else a_dot
        op_a_dot = matrix_transpose(a_dot) if transpose_a else a_dot
        product = matmul(op_a_dot, x) if left_side else matmul(x, op_a_dot)
        x_dot = ad.add_tangents(x_dot, neg(triangular_solve_p.bind(a, product, **params)))
    return x, x_dot


def _triangular_solve_transpose(ct, a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """b -> op(a)^-1 b is linear; its transpose solves with op(a)^T (conjugation stays)."""
    if ad.is_undefined(a):
        raise NotImplementedError("triangular_solve is linear only in b")
    if ad.is_zero(ct):
        return [None, None]
    return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                          transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                          unit_diagonal=unit_diagonal)]


ad.jvp_rules[triangular_solve_p] = _triangular_solve_jvp
ad.transpose_rules[triangular_solve_p] = _triangular_solve_transpose
_batch_all_to_front(triangular_solve_p)


# ---------------------------------------------------------------- lu

def _lu_impl(a):
    """Partial pivoting: for complex matrices LAPACK's getrf (as JAX; jit calls it too), for
    real ones vectorized over the batch axes (one Python step per column)."""
    if dtypes.is_complex(a.dtype):
        from jaxlite.lower import lapack
        if lapack.find(lapack.getrf_routine(a.dtype)) is not None:
            with numpy_blas.single_threaded():
                return _each_matrix(_getrf, a)
    m, n = a.shape[-2:]
    lu = np.array(a, dtype=np.promote_types(a.dtype, np.float32))
    batch = lu.shape[:-2]
    flat = lu.reshape((math.prod(batch), m, n))
    rows = np.arange(flat.shape[0])
    perm = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    pivots = np.zeros((flat.shape[0], min(m, n)), np.int32)
    for k in range(min(m, n)):
        p = k + np.argmax(np.abs(flat[:, k:, k]), axis=1)
        pivots[:, k] = p
        _swap_rows(flat, rows, k, p)
        _swap_rows(perm[:, :, None], rows, k, p)
        pivot = flat[:, k, k:k + 1]
        # A zero pivot (its column is zero below it too) leaves the column as it is, as
        # LAPACK's getrf does: det is then 0, not NaN.
        with np.errstate(divide="ignore", invalid="ignore"):
            flat[:, k + 1:, k] = np.where(pivot == 0, flat[:, k + 1:, k], flat[:, k + 1:, k] / pivot)
        flat[:, k + 1:, k + 1:] -= flat[:, k + 1:, k:k + 1] * flat[:, k:k + 1, k + 1:]
    return [flat.reshape(lu.shape).astype(a.dtype), pivots.reshape(batch + (min(m, n),)),
            perm.astype(np.int32).reshape(batch + (m,))]


def _getrf(matrix):
    """[lu, pivots, permutation] of one complex matrix by cgetrf/zgetrf."""
    from jaxlite.lower import lapack
    m, n = matrix.shape
    lu = np.array(matrix, order="F")      # getrf overwrites it
    interchanges = np.zeros(min(m, n), np.int64 if lapack.find(lapack.getrf_routine(matrix.dtype)).int_bits == 64
                            else np.int32)
    if m * n:
        lapack.call(lapack.getrf_routine(matrix.dtype), [m, n, lu, m, interchanges, 0], 0)
    pivots = (interchanges - 1).astype(np.int32)
    permutation = np.arange(m, dtype=np.int32)
    for k, p in enumerate(pivots):
        permutation[[k, p]] = permutation[[p, k]]
    return [np.ascontiguousarray(lu), pivots, permutation]


def _swap_rows(x, batch, k, p):
    """Swap row k with row p[b] in every matrix x[b], in place."""
    row_k, row_p = x[batch, k].copy(), x[batch, p].copy()
    x[batch, k], x[batch, p] = row_p, row_k


def _lu_aval(a):
    _check_matrices("lu", a, square=False)
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    return [a.strip_weak_type(), ShapedArray(batch + (min(m, n),), dtypes.int32),
            ShapedArray(batch + (m,), dtypes.int32)]


lu_p = Primitive("lu", multiple_results=True)
lu_p.def_impl(_lu_impl)
lu_p.def_abstract_eval(_lu_aval)


def lu(a):
    """(lu, pivots, permutation) with a[permutation] = L U; L unit lower, U upper, packed in lu."""
    return tuple(lu_p.bind(as_operand(a)))


def permute_rows(x, permutation):
    """x[..., permutation, :] for a batch of row permutations."""
    indices = broadcast_in_dim(permutation, x.shape, tuple(range(x.ndim - 1)))
    return take_along_axis(x, indices, x.ndim - 2, mode="clip")


def square_factors(lu_matrix):
    """The unit lower L (m x m) and upper U (n x n) packed in an m x n lu result.

    For a non-square matrix the factors are completed to squares with identity
    blocks, so that both are invertible and triangular solves apply.
    """
    m, n = lu_matrix.shape[-2:]
    k = min(m, n)
    batch = lu_matrix.shape[:-2]
    no_pad = [(0, 0, 0)] * len(batch)
    zero = convert_element_type(0, lu_matrix.dtype)
    l = triangle(slice(lu_matrix, (0,) * lu_matrix.ndim, batch + (m, k)), lower=True, strict=True)
    u = triangle(slice(lu_matrix, (0,) * lu_matrix.ndim, batch + (k, n)), lower=False)
    l = pad(l, zero, no_pad + [(0, 0, 0), (0, m - k, 0)])
    l = add(l, identity_like(l))
    if n > k:
        u = pad(u, zero, no_pad + [(0, n - k, 0), (0, 0, 0)])
        below_k = ge(broadcasted_iota(dtypes.int32, u.shape, u.ndim - 2), full(u.shape, k, dtypes.int32))
        u = add(u, mul(identity_like(u), convert_element_type(below_k, u.dtype)))
    return l, u


def identity_like(x):
    """The identity matrix in the last two axes of x, broadcast over the rest."""
    rows = broadcasted_iota(dtypes.int32, x.shape, x.ndim - 2)
    cols = broadcasted_iota(dtypes.int32, x.shape, x.ndim - 1)
    return convert_element_type(eq(rows, cols), x.dtype)


def _lu_jvp(primals, tangents):
    """P A = L U gives P A_dot = L_dot U + L U_dot; with X = L^-1 P A_dot U^-1,
    L_dot = L strict_lower(X) and U_dot = upper(X) U (L, U completed to squares)."""
    (a,), (a_dot,) = primals, tangents
    lu_matrix, pivots, permutation = lu_p.bind(a)
    l, u = square_factors(lu_matrix)
    x = triangular_solve(l, permute_rows(a_dot, permutation), left_side=True, lower=True,
                         unit_diagonal=True)
    x = triangular_solve(u, x, left_side=False, lower=False)
    lu_dot = add(matmul(l, triangle(x, lower=True, strict=True)), matmul(triangle(x, lower=False), u))
    zeros = [ad.Zero(ad.tangent_aval(v.aval)) for v in (pivots, permutation)]
    return [lu_matrix, pivots, permutation], [lu_dot] + zeros


ad.jvp_rules[lu_p] = _lu_jvp
_batch_all_to_front(lu_p)


# ---------------------------------------------------------------- solves and slices shared by the rules

def lu_solve(a, b):
    """a^-1 b for square a (b a batch of matrices with a's batch axes), by a's LU factors."""
    lu_matrix, _, permutation = lu(a)
    lower, upper = square_factors(lu_matrix)
    y = triangular_solve(lower, permute_rows(b, permutation), left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(upper, y, left_side=True, lower=False)


def adjoint(x):
    """The conjugate transpose of x's last two axes."""
    return matrix_transpose(conj(x) if dtypes.is_complex(x.dtype) else x)


def real_part(x):
    return real(x) if dtypes.is_complex(x.dtype) else x


def _block(x, rows=None, cols=None):
    """x[..., rows[0]:rows[1], cols[0]:cols[1]] (a None range takes the whole axis)."""
    m, n = x.shape[-2:]
    (r0, r1), (c0, c1) = rows or (0, m), cols or (0, n)
    batch = x.shape[:-2]
    return slice(x, (0,) * len(batch) + (r0, c0), batch + (r1, c1))


def _concatenate_last(parts, axis):
    from jaxlite.lax.shapes import concatenate
    return concatenate(parts, parts[0].ndim + axis)


def _reciprocal_off_diagonal(gaps):
    """1 / gaps off the diagonal and 0 on it, as 1 / (gaps + I) - I: the diagonal of gaps
    is zero, and equal values off it give inf, as JAX's rules do."""
    eye = identity_like(gaps)
    return sub(div(full_like(gaps, 1), add(gaps, eye)), eye)


# ---------------------------------------------------------------- eigh

def _eigh_aval(x, lower):
    _check_matrices("eigh", x)
    base = x.strip_weak_type()
    return [base, base.update(shape=x.shape[:-1], dtype=dtypes.real_dtype(x.dtype))]


def _eigh_impl(x, lower):
    """numpy's (LAPACK's syevd, in float64 also for float32, on one OpenBLAS thread as under
    jit); eigenvalues ascending; a matrix LAPACK fails on gives NaNs, as in JAX."""
    def decompose(matrix):
        w, v = np.linalg.eigh(matrix, UPLO="L" if lower else "U")
        return [v, w]
    with numpy_blas.single_threaded():
        return _or_nan_per_matrix(decompose, x)


eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.def_impl(_eigh_impl)
eigh_p.def_abstract_eval(_eigh_aval)


class EighImplementation(enum.Enum):
    """Which eigh algorithm runs: on CPU LAPACK's (QR); the others are TPU/GPU ones in JAX."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


def symmetrize(x):
    """(x + x^H) / 2."""
    return mul(add(x, adjoint(x)), convert_element_type(0.5, x.dtype))


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True, subset_by_index=None,
         implementation=None):
    """(v, w): the eigenvectors (columns of v) and ascending eigenvalues w of the symmetric
    (Hermitian) matrices x, of which only the `lower` (else upper) triangle is read."""
    x = as_operand(x)
    n = x.shape[-1] if x.ndim else 0
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError("eigh: subset_by_index is not supported on CPU (as in JAX)")
    if implementation not in (None, EighImplementation.QR):
        raise NotImplementedError(f"eigh: the {implementation} implementation is not supported on CPU "
                                  "(as in JAX)")
    if symmetrize_input:
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise TypeError(f"eigh needs square matrices in its last two axes, got shape {x.shape}")
        x = symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower))
    return v, w


def _eigh_jvp(primals, tangents, lower):
    """w_dot = diag(v^H a_dot v), v_dot = v (F o v^H a_dot v), F_ij = 1 / (w_j - w_i): first
    order perturbation theory for distinct eigenvalues. Equal eigenvalues give inf in F (as
    in JAX): their eigenvectors are not differentiable, only their span."""
    (a,), (a_dot,) = primals, tangents
    v, w = eigh_p.bind(symmetrize(a), lower=lower)
    w_full = convert_element_type(w, a.dtype)
    gaps = sub(_broadcast_last(w_full, a.shape, row=True), _broadcast_last(w_full, a.shape, row=False))
    projected = matmul(matmul(adjoint(v), a_dot), v)
    return [v, w], [matmul(v, mul(_reciprocal_off_diagonal(gaps), projected)), _diagonal(real_part(projected))]


ad.jvp_rules[eigh_p] = _eigh_jvp
_batch_all_to_front(eigh_p)


# ---------------------------------------------------------------- qr

def _qr_aval(x, full_matrices):
    _check_matrices("qr", x, square=False)
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    base = x.strip_weak_type()
    return [base.update(shape=x.shape[:-2] + (m, k)), base.update(shape=x.shape[:-2] + (k, n))]


def _qr_impl(x, full_matrices):
    """numpy's (LAPACK's geqrf and orgqr, in float64 also for float32, on one OpenBLAS thread
    as under jit)."""
    with numpy_blas.single_threaded():
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q, r]


qr_p = Primitive("qr", multiple_results=True)
qr_p.def_impl(_qr_impl)
qr_p.def_abstract_eval(_qr_aval)


def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
    """(q, r) with x = q r, q orthonormal columns (m x m, or m x min(m, n) unless
    full_matrices) and r upper triangular (trapezoidal); with pivoting, (q, r, p) with
    x[..., p] = q r and |diag(r)| non-increasing."""
    x = as_operand(x)
    if pivoting:
        return tuple(qr_pivoted_p.bind(x, full_matrices=bool(full_matrices)))
    q, r = qr_p.bind(x, full_matrices=bool(full_matrices))
    return q, r


def _thin_qr_jvp(q, r, x_dot):
    """(q_dot, r_dot) of x = q r, x m x n with m >= n and q m x n: with
    C = q^H x_dot r^-1, r_dot = (C - Omega) r and q_dot = q (Omega - C) + x_dot r^-1, where
    Omega = tril(C, -1) - tril(C, -1)^H is the skew part keeping q^H q = I and r triangular."""
    x_dot_r_inv = triangular_solve(r, x_dot, left_side=False, lower=False)
    c = matmul(adjoint(q), x_dot_r_inv)
    below = triangle(c, lower=True, strict=True)
    # The skew part's diagonal is imaginary for complex x: i Im(diag C) keeps diag(r) real.
    omega = add(sub(below, adjoint(below)), mul(identity_like(c), sub(c, convert_element_type(real_part(c), c.dtype))))
    q_dot = add(matmul(q, sub(omega, c)), x_dot_r_inv)
    return q_dot, matmul(sub(c, omega), r)


def _wide_qr_jvp(x, q, r, x_dot):
    """m < n: x = [x1 x2] with x1 = q r1 square, and r2 = q^H x2."""
    m = x.shape[-2]
    q_dot, r1_dot = _thin_qr_jvp(q, _block(r, cols=(0, m)), _block(x_dot, cols=(0, m)))
    n = x.shape[-1]
    r2_dot = add(matmul(adjoint(q_dot), _block(x, cols=(m, n))), matmul(adjoint(q), _block(x_dot, cols=(m, n))))
    return q_dot, _concatenate_last([r1_dot, r2_dot], -1)


def _completed_q_jvp(q, q_dot_thin):
    """The derivative of the m - n columns that complete a tall q's first n to a square
    orthogonal matrix, as LAPACK's Householder construction fixes them: with
    Z = q_pn (q_nn - I)^-1 (q_nn the top n rows of the first n columns, q_pn the rest),
    q_mp_dot = q_dot_mn Z^H - (q_mn + q_mp Z) (q_dot_pn - Z q_dot_nn)^H."""
    m, n = q.shape[-2], q_dot_thin.shape[-1]
    q_mn, q_mp = _block(q, cols=(0, n)), _block(q, cols=(n, m))
    q_nn, q_pn = _block(q_mn, rows=(0, n)), _block(q_mn, rows=(n, m))
    z_h = lu_solve(adjoint(sub(q_nn, identity_like(q_nn))), adjoint(q_pn))
    z = adjoint(z_h)
    q_dot_nn, q_dot_pn = _block(q_dot_thin, rows=(0, n)), _block(q_dot_thin, rows=(n, m))
    tail = matmul(add(q_mn, matmul(q_mp, z)), adjoint(sub(q_dot_pn, matmul(z, q_dot_nn))))
    return _concatenate_last([q_dot_thin, sub(matmul(q_dot_thin, z_h), tail)], -1)


def _qr_tangents(x, q, r, x_dot, full_matrices):
    m, n = x.shape[-2:]
    if m < n:
        return _wide_qr_jvp(x, q, r, x_dot)
    if not full_matrices or m == n:
        return _thin_qr_jvp(q, r, x_dot)
    q_dot_thin, r_dot_nn = _thin_qr_jvp(_block(q, cols=(0, n)), _block(r, rows=(0, n)), x_dot)
    r_dot = pad(r_dot_nn, convert_element_type(0, r.dtype), [(0, 0, 0)] * (r.ndim - 2) + [(0, m - n, 0), (0, 0, 0)])
    return _completed_q_jvp(q, q_dot_thin), r_dot


def _qr_jvp(primals, tangents, full_matrices):
    (x,), (x_dot,) = primals, tangents
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    return [q, r], list(_qr_tangents(x, q, r, x_dot, full_matrices))


ad.jvp_rules[qr_p] = _qr_jvp
_batch_all_to_front(qr_p)


# ---------------------------------------------------------------- geqrf and householder_product

def _geqrf_aval(x):
    _check_matrices("geqrf", x, square=False)
    base = x.strip_weak_type()
    return [base, base.update(shape=x.shape[:-2] + (min(x.shape[-2:]),))]


def _geqrf_impl(x):
    """numpy's qr(mode="raw") (LAPACK's geqrf in float64), its column-major h made (m, n)."""
    with numpy_blas.single_threaded():
        h, tau = np.linalg.qr(x, mode="raw")
    return [np.swapaxes(h, -1, -2).astype(x.dtype), tau.astype(x.dtype)]


geqrf_p = Primitive("geqrf", multiple_results=True)
geqrf_p.def_impl(_geqrf_impl)
geqrf_p.def_abstract_eval(_geqrf_aval)
_batch_all_to_front(geqrf_p)


def geqrf(x):
    """(h, taus): LAPACK's packed QR, R on and above h's diagonal and the Householder vectors
    below it (householder_product makes Q of them)."""
    h, taus = geqrf_p.bind(as_operand(x))
    return h, taus


def householder_product(a, taus):
    """The first n columns of H_0 H_1 ... H_{k-1} for a (m x n, m >= n) holding Householder
    vectors below its diagonal (unit diagonal implied) and k taus: H_i = I - tau_i v_i v_i^H."""
    a, taus = as_operand(a), as_operand(taus)
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    if m < n or k > n or taus.shape[:-1] != a.shape[:-2]:
        raise ValueError(f"householder_product needs a of shape [..., m, n] with m >= n and taus of shape "
                         f"[..., k] with k <= n, got {a.shape} and {taus.shape}")
    rows = broadcasted_iota(dtypes.int32, a.shape[:-2] + (m, 1), a.ndim - 2)
    q = _block(identity_like(full(a.shape[:-2] + (m, m), 0, a.dtype)), cols=(0, n))
    for i in reversed(range(k)):
        column = _block(a, cols=(i, i + 1))
        unit = convert_element_type(eq(rows, full(rows.shape, i, dtypes.int32)), a.dtype)
        v = select_n(gt(rows, full(rows.shape, i, dtypes.int32)), unit, column)
        tau = broadcast_in_dim(slice(taus, (0,) * (taus.ndim - 1) + (i,), taus.shape[:-1] + (i + 1,)),
                               rows.shape, tuple(range(a.ndim - 2)) + (a.ndim - 1,))
        q = sub(q, matmul(mul(tau, v), matmul(adjoint(v), q)))
    return q


# ---------------------------------------------------------------- qr with column pivoting

def _qr_pivoted_aval(x, full_matrices):
    q, r = _qr_aval(x, full_matrices)
    return [q, r, ShapedArray(x.shape[:-2] + x.shape[-1:], dtypes.int32)]


def _qr_pivoted_impl(x, full_matrices):
    """LAPACK's geqp3 and orgqr (ungqr) in double precision, as numpy's linalg computes qr (and
    jit calls the same routines: lower/linalg_kernels.QrSpec); where numpy's LAPACK is not one
    we can call, Householder QR choosing at each step the remaining column of largest norm
    (geqp3's strategy), over the whole batch."""
    from jaxlite.lower import lapack
    if lapack.find("zgeqp3" if dtypes.is_complex(x.dtype) else "dgeqp3") is not None:
        with numpy_blas.single_threaded():
            return [r.astype(x.dtype) if r.dtype.kind != "i" else r
                    for r in _each_matrix(lambda a: _geqp3(a, full_matrices), x)]
    m, n = x.shape[-2:]
    a = np.array(x, dtype=np.promote_types(x.dtype, np.float64)).reshape((math.prod(x.shape[:-2]), m, n))
    batch = np.arange(a.shape[0])
    permutation = np.tile(np.arange(n), (a.shape[0], 1))
    q = np.tile(np.eye(m, dtype=a.dtype), (a.shape[0], 1, 1))
    for k in range(min(m, n)):
        p = k + np.argmax(np.linalg.norm(a[:, k:, k:], axis=1), axis=1)
        _swap_rows(np.swapaxes(a, 1, 2), batch, k, p)
        _swap_rows(permutation[:, :, None], batch, k, p)
        _reflect(a, q, k)
    r = np.triu(a)
    if not full_matrices:
        q, r = q[:, :, :min(m, n)], r[:, :min(m, n), :]
    shape = x.shape[:-2]
    return [q.reshape(shape + q.shape[1:]).astype(x.dtype), r.reshape(shape + r.shape[1:]).astype(x.dtype),
            permutation.astype(np.int32).reshape(shape + (n,))]


def _geqp3(matrix, full_matrices):
    """[q, r, permutation] of one matrix: geqp3 with every column free, then orgqr on its
    reflectors (with the LWORK jit uses)."""
    from jaxlite.lower import lapack
    m, n = matrix.shape
    k, is_complex = min(m, n), dtypes.is_complex(matrix.dtype)
    a = np.array(matrix, np.complex128 if is_complex else np.float64, order="F")     # LAPACK overwrites it
    q_cols = m if full_matrices else k
    columns = np.zeros(n, np.int64 if lapack.find("dgeqp3").int_bits == 64 else np.int32)
    if not k:
        return [np.eye(m, q_cols, dtype=a.dtype), np.zeros((q_cols, n), a.dtype), np.arange(n, dtype=np.int32)]
    lwork = lapack.qr_workspace(m, n, q_cols, is_complex, pivoting=True)
    work, tau = np.zeros(lwork, a.dtype), np.zeros(k, a.dtype)
    rwork = [np.zeros(2 * n)] if is_complex else []
    lapack.call("zgeqp3" if is_complex else "dgeqp3", [m, n, a, m, columns, tau, work, lwork, *rwork, 0], 0)
    q = np.zeros((m, q_cols), a.dtype, order="F")
    q[:, :min(n, q_cols)] = a[:, :min(n, q_cols)]
    lapack.call("zungqr" if is_complex else "dorgqr", [m, q_cols, k, q, m, tau, work, lwork, 0], 0)
    return [np.ascontiguousarray(q), np.triu(a[:q_cols]), (columns - 1).astype(np.int32)]


def _reflect(a, q, k):
    """Apply the Householder reflection zeroing a[:, k+1:, k] to a's trailing rows, and
    accumulate it into q's trailing columns (column k of a all zero: no reflection)."""
    column = a[:, k:, k]
    alpha = column[:, 0]
    phase = np.where(alpha == 0, 1, alpha / np.where(alpha == 0, 1, np.abs(alpha)))
    w = column.copy()
    w[:, 0] += phase * np.linalg.norm(column, axis=1)     # alpha - beta, beta = -phase |column|
    w_norm_sq = np.einsum("bi,bi->b", np.conj(w), w).real
    scale = np.where(w_norm_sq > 0, 2 / np.where(w_norm_sq > 0, w_norm_sq, 1), 0)
    a[:, k:, :] -= scale[:, None, None] * w[:, :, None] * np.einsum("bi,bij->bj", np.conj(w), a[:, k:, :])[:, None, :]
    q[:, :, k:] -= scale[:, None, None] * np.einsum("bij,bj->bi", q[:, :, k:], w)[:, :, None] * np.conj(w)[:, None, :]


qr_pivoted_p = Primitive("qr_pivoted", multiple_results=True)
qr_pivoted_p.def_impl(_qr_pivoted_impl)
qr_pivoted_p.def_abstract_eval(_qr_pivoted_aval)


def _qr_pivoted_jvp(primals, tangents, full_matrices):
    """The QR derivative of x[..., p] (the pivots are piecewise constant)."""
    (x,), (x_dot,) = primals, tangents
    q, r, permutation = qr_pivoted_p.bind(x, full_matrices=full_matrices)
    x_dot = matrix_transpose(permute_rows(matrix_transpose(x_dot), permutation))
    x_permuted = matrix_transpose(permute_rows(matrix_transpose(x), permutation))
    q_dot, r_dot = _qr_tangents(x_permuted, q, r, x_dot, full_matrices)
    return [q, r, permutation], [q_dot, r_dot, ad.Zero(ad.tangent_aval(permutation.aval))]


ad.jvp_rules[qr_pivoted_p] = _qr_pivoted_jvp
_batch_all_to_front(qr_pivoted_p)


# ---------------------------------------------------------------- svd

def _svd_aval(a, full_matrices, compute_uv):
    _check_matrices("svd", a, square=False)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    base = a.strip_weak_type()
    s = base.update(shape=batch + (k,), dtype=dtypes.real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    u_cols, vt_rows = (m, n) if full_matrices else (k, k)
    return [s, base.update(shape=batch + (m, u_cols)), base.update(shape=batch + (vt_rows, n))]


def _svd_impl(a, full_matrices, compute_uv):
    """numpy's (LAPACK's gesdd, in float64 also for float32, on one OpenBLAS thread: jit calls
    the same routine so). Threaded, a 256 x 256 svd took 60-260 ms at the best and median of
    15 calls and up to 3.3 s, OpenBLAS's threads spinning for each other under load."""
    def decompose(x):
        if not compute_uv:
            return [np.linalg.svd(x, compute_uv=False)]
        u, s, vt = np.linalg.svd(x, full_matrices=full_matrices)
        return [s, u, vt]
    with numpy_blas.single_threaded():
        return _or_nan_per_matrix(decompose, a)


svd_p = Primitive("svd", multiple_results=True)
svd_p.def_impl(_svd_impl)
svd_p.def_abstract_eval(_svd_aval)


class SvdAlgorithm(enum.Enum):
    """Which SVD algorithm runs: on CPU LAPACK's divide and conquer (gesdd)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """(u, s, vh) with x = u diag(s) vh, s descending (full factors unless full_matrices is
    False); s alone when not compute_uv."""
    x = as_operand(x)
    k = min(x.shape[-2:]) if x.ndim >= 2 else 0
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        raise NotImplementedError("svd: subset_by_index is not supported on CPU (as in JAX)")
    if algorithm not in (None, SvdAlgorithm.DEFAULT):
        raise NotImplementedError(f"svd: the {algorithm} algorithm is not supported on CPU")
    results = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return results[0]
    s, u, vt = results
    return u, s, vt


def _rows_times(s, x):
    """diag(s) @ x for a batch of vectors s."""
    return mul(_broadcast_last(convert_element_type(s, x.dtype), x.shape, row=False), x)


def _cols_times(x, s):
    """x @ diag(s)."""
    return mul(x, _broadcast_last(convert_element_type(s, x.dtype), x.shape, row=True))


def _svd_jvp(primals, tangents, full_matrices, compute_uv):
    """With dS = u^H a_dot v and F_ij = 1 / (s_j^2 - s_i^2) off the diagonal: ds = Re diag(dS);
    du = u (F o (dS S + S dS^H) + the imaginary diagonal part) + (1 - u u^H) a_dot v S^-1 for
    tall a, dv = v (F o (S dS + dS^H S)) + (1 - v v^H) a_dot^H u S^-1 for wide a."""
    (a,), (a_dot,) = primals, tangents
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        # The extra columns of full factors are any orthonormal completion: no derivative.
        raise NotImplementedError("the derivative of svd with full_matrices=True is only defined "
                                  "for square matrices (as in JAX); use full_matrices=False")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    v = adjoint(vt)
    d_s = matmul(matmul(adjoint(u), a_dot), v)
    s_dot = _diagonal(real_part(d_s))
    if not compute_uv:
        return [s], [s_dot]
    k_by_k = d_s.shape
    s_j, s_i = _broadcast_last(s, k_by_k, row=True), _broadcast_last(s, k_by_k, row=False)
    f = convert_element_type(_reciprocal_off_diagonal(mul(add(s_j, s_i), sub(s_j, s_i))), a.dtype)
    zero_s = convert_element_type(eq(s, full_like(s, 0)), s.dtype)
    inv_s = sub(div(full_like(s, 1), add(s, zero_s)), zero_s)
    imaginary_diagonal = _cols_times(mul(sub(d_s, adjoint(d_s)), identity_like(d_s)),
                                     mul(inv_s, convert_element_type(0.5, s.dtype)))
    d_s_s, s_d_s = _cols_times(d_s, s), _rows_times(s, d_s)
    u_dot = matmul(u, add(mul(f, add(d_s_s, adjoint(d_s_s))), imaginary_diagonal))
    v_dot = matmul(v, mul(f, add(s_d_s, adjoint(s_d_s))))
    if m > n:
        a_dot_v = matmul(a_dot, v)
        u_dot = add(u_dot, _cols_divided(sub(a_dot_v, matmul(u, matmul(adjoint(u), a_dot_v))), s))
    if n > m:
        a_dot_h_u = matmul(adjoint(a_dot), u)
        v_dot = add(v_dot, _cols_divided(sub(a_dot_h_u, matmul(v, matmul(vt, a_dot_h_u))), s))
    return [s, u, vt], [s_dot, u_dot, adjoint(v_dot)]


def _cols_divided(x, s):
    """x @ diag(1 / s) (a zero s gives infs, as in JAX)."""
    return div(x, _broadcast_last(convert_element_type(s, x.dtype), x.shape, row=True))


def _diagonal(x):
    return _sum_last(mul(x, identity_like(x)))


def _sum_last(x):
    return reduce_sum(x, (x.ndim - 1,))


def _broadcast_last(vec, shape, row):
    """vec along the columns (row=True: entry [i, j] = vec[j]) or along the rows ([i, j] = vec[i])."""
    axis = len(shape) - 1 if row else len(shape) - 2
    return broadcast_in_dim(vec, shape, tuple(range(len(shape) - 2)) + (axis,))


ad.jvp_rules[svd_p] = _svd_jvp
_batch_all_to_front(svd_p)


# ---------------------------------------------------------------- eig

def _eig_aval(x, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    _check_matrices("eig", x)
    vectors = x.update(dtype=dtypes.complex_dtype(x.dtype), weak_type=False)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [vectors.update(shape=x.shape[:-1])] + [vectors] * count


def _eig_impl(x, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    """LAPACK's geev in double precision, as JAX: numpy's eig (geev without left vectors) or,
    for left eigenvectors, geev itself (numpy has no way to ask for them); always complex;
    eigenvectors of unit norm with the largest component real; a matrix LAPACK fails on
    gives NaNs. jit calls the same routines (lower/linalg_kernels.EigSpec)."""
    def decompose(matrices):
        if compute_left_eigenvectors:
            w, vl, vr = _each_matrix(_geev_with_left_vectors, matrices)
        else:
            w, vr = np.linalg.eig(matrices)
            vl = None
        vr = vr.astype(np.result_type(vr, np.complex64))
        return ([w.astype(vr.dtype)] + ([vl] if compute_left_eigenvectors else [])
                + ([vr] if compute_right_eigenvectors else []))
    with numpy_blas.single_threaded():
        results = _or_nan_per_matrix(decompose, x)
    return [r.astype(dtypes.complex_dtype(x.dtype)) for r in results]


def _each_matrix(decompose, matrices):
    """decompose (one matrix -> a list of arrays) over a batch of matrices, results stacked."""
    each = [decompose(m) for m in matrices.reshape((math.prod(matrices.shape[:-2]),) + matrices.shape[-2:])]
    if not each:    # an empty batch: the results' shapes from a matrix any decomposition takes
        template = decompose(np.eye(*matrices.shape[-2:], dtype=matrices.dtype))
        return [np.zeros(matrices.shape[:-2] + r.shape, r.dtype) for r in template]
    return [np.stack(parts).reshape(matrices.shape[:-2] + parts[0].shape) for parts in zip(*each)]


def _geev_with_left_vectors(matrix):
    """(w, vl, vr) of one matrix from dgeev/zgeev with both kinds of vectors (the LWORK a query
    gives), or from numpy's eig and vr's inverse where numpy's LAPACK is not one we can call."""
    from jaxlite.lower import lapack
    n, is_complex = matrix.shape[-1], dtypes.is_complex(matrix.dtype)
    if lapack.find("zgeev" if is_complex else "dgeev") is None:
        w, vr = np.linalg.eig(matrix)
        return w, _left_eigenvectors(vr.astype(np.result_type(vr, np.complex64))), vr
    a = np.array(matrix, np.complex128 if is_complex else np.float64, order="F")     # LAPACK overwrites it
    vl, vr = (np.zeros((n, n), a.dtype, order="F") for _ in range(2))
    lwork = lapack.geev_workspace(n, True, is_complex) if n else 1
    work, ld = np.zeros(lwork, a.dtype), max(n, 1)
    if is_complex:
        w = np.zeros(n, np.complex128)
        info = lapack.call("zgeev", ["V", "V", n, a, ld, w, vl, ld, vr, ld, work, lwork, np.zeros(2 * n), 0], 2)[-1]
    else:
        wr, wi = np.zeros(n), np.zeros(n)
        info = lapack.call("dgeev", ["V", "V", n, a, ld, wr, wi, vl, ld, vr, ld, work, lwork, 0], 2)[-1]
        w = _complex_from_parts(wr, wi)
        vl, vr = _unpacked_eigenvectors(wi, vl), _unpacked_eigenvectors(wi, vr)
    if info.value != 0:
        raise np.linalg.LinAlgError(f"geev failed (info {info.value})")
    return w, vl, vr


def _complex_from_parts(re, im):
    out = np.empty(re.shape, np.complex128)
    out.real, out.imag = re, im
    return out


def _unpacked_eigenvectors(wi, v):
    """geev's real eigenvector columns as complex ones: a conjugate pair (wi > 0 at its first)
    is stored as the real and imaginary parts of its first vector."""
    imaginary = np.zeros_like(v)
    first = np.flatnonzero(wi > 0)
    imaginary[:, first], imaginary[:, first + 1] = v[:, first + 1], -v[:, first + 1]
    real = v.copy()
    real[:, first + 1] = v[:, first]
    return _complex_from_parts(real, imaginary)


eig_p = Primitive("eig", multiple_results=True)
eig_p.def_impl(_eig_impl)
eig_p.def_abstract_eval(_eig_aval)


class EigImplementation(enum.Enum):
    """Which eig algorithm runs: on CPU LAPACK's geev."""
    LAPACK = "lapack"
    MAGMA = "magma"
    CUSOLVER = "cusolver"


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True, enable_eigvec_derivs=False,
        implementation=None, use_magma=None):
    """[w, vl, vr]: the (complex) eigenvalues and, as asked, the left and right eigenvectors
    (columns, unit norm with the largest component real) of square matrices x."""
    if implementation not in (None, EigImplementation.LAPACK):
        raise NotImplementedError(f"eig: the {implementation} implementation is not supported on CPU")
    return eig_p.bind(as_operand(x), compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors),
                      enable_eigvec_derivs=bool(enable_eigvec_derivs))


def _eig_jvp(primals, tangents, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    """dw = diag(vr^-1 da vr); eigenvectors as _eigenvector_jvp (only with enable_eigvec_derivs,
    as in JAX: they are differentiable only where the eigenvalues are distinct)."""
    (a,), (a_dot,) = primals, tangents
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input that "
            "cannot be checked; pass enable_eigvec_derivs=True to lax.linalg.eig to opt in (as in JAX)")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors, compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs)
    w, vr = outs[0], outs[-1]
    a_dot = convert_element_type(a_dot, vr.dtype)
    projected = matmul(lu_solve(vr, a_dot), vr)
    primal, tangent = [w], [_diagonal(projected)]
    if compute_left_eigenvectors:
        primal.append(outs[1])
        tangent.append(_eigenvector_jvp(conj(w), outs[1], matmul(lu_solve(outs[1], adjoint(a_dot)), outs[1])))
    if compute_right_eigenvectors:
        primal.append(vr)
        tangent.append(_eigenvector_jvp(w, vr, projected))
    return primal, tangent


def _eigenvector_jvp(w, v, projected):
    """dv = U + v diag(c) with U = v (F o v^-1 da v), F_ij = 1 / (w_j - w_i): the eigenvalue
    equation fixes dv_j up to a multiple c_j of v_j, which geev's normalization (unit norm, the
    largest component k_j real) fixes: c_j = -Re(v_j^H U_j) - i Im(U_kj) / Re(v_kj)."""
    gaps = sub(_broadcast_last(w, projected.shape, row=True), _broadcast_last(w, projected.shape, row=False))
    u = matmul(v, mul(_reciprocal_off_diagonal(gaps), projected))
    rows = v.ndim - 2
    largest = argmax(magnitude(v), rows, dtypes.int32)
    mask = convert_element_type(eq(broadcasted_iota(dtypes.int32, v.shape, rows),
                                   broadcast_in_dim(largest, v.shape, tuple(d for d in range(v.ndim) if d != rows))),
                                v.dtype)
    c = make_complex(neg(real(reduce_sum(mul(conj(v), u), (rows,)))),
                     div(neg(imag(reduce_sum(mul(mask, u), (rows,)))), real(reduce_sum(mul(mask, v), (rows,)))))
    return add(u, mul(v, broadcast_in_dim(c, v.shape, tuple(d for d in range(v.ndim) if d != rows))))


ad.jvp_rules[eig_p] = _eig_jvp
_batch_all_to_front(eig_p)


# ---------------------------------------------------------------- compositions: pivots, products, updates, tridiagonal

def _last_entries(x, k):
    """x[..., k:k+1]."""
    return slice(x, (0,) * (x.ndim - 1) + (k,), x.shape[:-1] + (k + 1,))


def lu_pivots_to_permutation(pivots, permutation_size):
    """The permutation the row swaps k <-> pivots[..., k] make of range(permutation_size)."""
    pivots = as_operand(pivots)
    check_dtype("lu_pivots_to_permutation", pivots, INTEGER)
    if pivots.ndim < 1 or pivots.shape[-1] > permutation_size:
        raise ValueError(f"lu_pivots_to_permutation needs pivots of shape [..., k] with k <= permutation_size, "
                         f"got {pivots.shape} and {permutation_size}")
    shape = pivots.shape[:-1] + (int(permutation_size),)
    last = len(shape) - 1
    positions = broadcasted_iota(pivots.dtype, shape, last)
    permutation = positions
    for k in range(pivots.shape[-1]):
        pivot = _spread(_last_entries(pivots, k), shape)
        here = _spread(_last_entries(permutation, k), shape)
        there = take_along_axis(permutation, pivot, last, mode="clip")
        swapped = select_n(eq(positions, pivot), permutation, here)
        permutation = select_n(eq(positions, full(shape, k, pivots.dtype)), swapped, there)
    return permutation


def _spread(x, shape):
    """x (size 1 in its last axis) broadcast along it to shape."""
    return broadcast_in_dim(x, shape, tuple(range(len(shape))))


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """alpha a a^T + beta c (c symmetric); with symmetrize_output the upper triangle is the
    transpose of the lower one."""
    a, c = as_operand(a_matrix), as_operand(c_matrix)
    product = add(mul(convert_element_type(alpha, a.dtype), matmul(a, matrix_transpose(a))),
                  mul(convert_element_type(beta, c.dtype), c))
    if not symmetrize_output:
        return product
    return add(triangle(product, lower=True), matrix_transpose(triangle(product, lower=True, strict=True)))


def ormqr(a, taus, c, *, left=True, transpose=False):
    """Q c, Q^H c (left, transpose), c Q or c Q^H, Q the m x m product of geqrf's reflectors in a."""
    a, taus, c = as_operand(a), as_operand(taus), as_operand(c)
    m, n = a.shape[-2:]
    square = a if n == m else (_block(a, cols=(0, m)) if n > m else
                               pad(a, convert_element_type(0, a.dtype), [(0, 0, 0)] * (a.ndim - 1) + [(0, m - n, 0)]))
    q = householder_product(square, taus)
    q = adjoint(q) if transpose else q
    return matmul(q, c) if left else matmul(c, q)


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of r^T r + w w^T, for upper-triangular r (refactorized: O(n^3),
    where JAX's rotations take O(n^2); the same factor up to rounding)."""
    r, w = as_operand(r_matrix), as_operand(w_vector)
    column = broadcast_in_dim(w, w.shape + (1,), tuple(range(w.ndim)))
    updated = add(matmul(matrix_transpose(r), r), matmul(column, matrix_transpose(column)))
    return matrix_transpose(cholesky(updated))


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """x with A x = b for tridiagonal A (lower diagonal dl, dl[0] = 0; diagonal d; upper du,
    du[-1] = 0) over the batch axes, by forward elimination and back substitution (the Thomas
    algorithm: no pivoting, so A should be diagonally dominant or positive definite; a zero
    pivot gives infs and NaNs, and perturb_singular is accepted for JAX's signature)."""
    from jaxlite.lax.control_flow.loops import scan
    dl, d, du, b = (as_operand(x) for x in (dl, d, du, b))
    m = d.shape[-1]
    if not (dl.shape == d.shape == du.shape == b.shape[:-1]):
        raise ValueError(f"tridiagonal_solve: dl, d and du need shape [..., m] and b [..., m, n], got "
                         f"{dl.shape}, {d.shape}, {du.shape} and {b.shape}")
    if m == 0:
        return b
    to_front = lambda x, axis: transpose(x, (axis,) + tuple(i for i in range(x.ndim) if i != axis))
    diagonals = [to_front(x, x.ndim - 1) for x in (dl, d, du)]
    rhs = to_front(b, b.ndim - 2)
    along_rhs = lambda x: broadcast_in_dim(x, x.shape + (b.shape[-1],), tuple(range(x.ndim)))

    def eliminate(carry, row):
        upper_prev, rhs_prev = carry
        lower, diagonal, upper, value = row
        pivot = sub(diagonal, mul(lower, upper_prev))
        upper_new = div(upper, pivot)
        rhs_new = div(sub(value, mul(along_rhs(lower), rhs_prev)), along_rhs(pivot))
        return (upper_new, rhs_new), (upper_new, rhs_new)
    zeros = (full_like(diagonals[1][0], 0), full_like(rhs[0], 0))
    _, (uppers, rhss) = scan(eliminate, zeros, (*diagonals, rhs))

    def substitute(x_next, row):
        upper, value = row
        x = sub(value, mul(along_rhs(upper), x_next))
        return x, x
    _, x = scan(substitute, zeros[1], (uppers, rhss), reverse=True)
    return transpose(x, tuple(range(1, x.ndim - 1)) + (0, x.ndim - 1))
