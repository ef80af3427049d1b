"""Linear-algebra primitives: cholesky, triangular_solve, lu and svd.

Each works on the last two axes and maps over any leading (batch) axes, so the
batching rules only move the vmapped axis to the front. The derivatives are
the standard matrix identities, written with triangular solves and matmuls.
"""
import numpy as np

from jaxlite.core import dtypes, numpy_blas
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import FLOAT, as_operand, check_dtype
from jaxlite.lax.dot import dot_general
from jaxlite.lax.elementwise import (add, convert_element_type, div, eq, full_like, ge, gt, le, lt,
                                     mul, neg, select_n, square, sub)
from jaxlite.lax.shapes import broadcast_in_dim, broadcasted_iota, full, pad, slice, transpose
from jaxlite.lax.slicing import take_along_axis
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import bdim_at_front


def _check_matrices(name, x, square=True):
    check_dtype(name, x, FLOAT)
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
        return [np.full_like(result, np.nan) for result in decompose(np.eye(*matrix.shape, dtype=matrix.dtype))]


def _cholesky_impl(x, symmetrize_input):
    """Lower Cholesky factor; matrices that are not positive definite give NaNs, as in JAX.
    numpy's LAPACK runs on one thread, as under jit (core/numpy_blas.py says why)."""
    if symmetrize_input:
        x = (x + np.swapaxes(x, -1, -2)) * x.dtype.type(0.5)
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


def _symmetrized(x):
    return mul(add(x, matrix_transpose(x)), convert_element_type(0.5, x.dtype))


def _cholesky_jvp(primals, tangents, symmetrize_input):
    """L_dot = L phi(L^-1 A_dot L^-T), phi taking the lower triangle with half the diagonal."""
    (x,), (x_dot,) = primals, tangents
    L = cholesky_p.bind(x, symmetrize_input=symmetrize_input)
    if symmetrize_input:
        x_dot = _symmetrized(x_dot)
    inner = triangular_solve(L, x_dot, left_side=True, lower=True)
    inner = triangular_solve(L, inner, left_side=False, lower=True, transpose_a=True)
    strictly_lower = triangle(inner, lower=True, strict=True)
    diagonal = sub(triangle(inner, lower=True), strictly_lower)
    phi = add(strictly_lower, mul(diagonal, convert_element_type(0.5, x.dtype)))
    return L, matmul(L, phi)


ad.jvp_rules[cholesky_p] = _cholesky_jvp
_batch_all_to_front(cholesky_p)   # (the batch axis may sit between the matrix axes)


# ---------------------------------------------------------------- triangular_solve

def _op(a, transpose_a):
    return np.swapaxes(a, -1, -2) if transpose_a else a


def _triangular_solve_impl(a, b, left_side, lower, transpose_a, unit_diagonal):
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri = tri.copy()
        idx = np.arange(a.shape[-1])
        tri[..., idx, idx] = 1
    compute = np.promote_types(a.dtype, np.float32)
    tri = _op(tri, transpose_a).astype(compute)
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


def _triangular_solve_aval(a, b, left_side, lower, transpose_a, unit_diagonal):
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

    Only the named triangle of `a` is read; conjugate_a is accepted for real inputs.
    """
    a, b = as_operand(a), as_operand(b)
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), unit_diagonal=bool(unit_diagonal))


def _triangular_solve_jvp(primals, tangents, left_side, lower, transpose_a, unit_diagonal):
    (a, b), (a_dot, b_dot) = primals, tangents
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  unit_diagonal=unit_diagonal)
    x = triangular_solve_p.bind(a, b, **params)
    x_dot = ad.Zero(ad.tangent_aval(x.aval))
    if not ad.is_zero(b_dot):
        x_dot = triangular_solve_p.bind(a, b_dot, **params)
    if not ad.is_zero(a_dot):
        # op(a) x = b gives op(a_dot) x + op(a) x_dot = 0 (x op(a) = b likewise on the right).
        a_dot = triangle(a_dot, lower, strict=unit_diagonal)
        op_a_dot = matrix_transpose(a_dot) if transpose_a else a_dot
        product = matmul(op_a_dot, x) if left_side else matmul(x, op_a_dot)
        x_dot = ad.add_tangents(x_dot, neg(triangular_solve_p.bind(a, product, **params)))
    return x, x_dot


def _triangular_solve_transpose(ct, a, b, left_side, lower, transpose_a, unit_diagonal):
    """b -> op(a)^-1 b is linear; its transpose solves with op(a)^T."""
    if ad.is_undefined(a):
        raise NotImplementedError("triangular_solve is linear only in b")
    if ad.is_zero(ct):
        return [None, None]
    return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                          transpose_a=not transpose_a, unit_diagonal=unit_diagonal)]


ad.jvp_rules[triangular_solve_p] = _triangular_solve_jvp
ad.transpose_rules[triangular_solve_p] = _triangular_solve_transpose
_batch_all_to_front(triangular_solve_p)


# ---------------------------------------------------------------- lu

def _lu_impl(a):
    """Partial pivoting, vectorized over the batch axes (one Python step per column)."""
    m, n = a.shape[-2:]
    lu = np.array(a, dtype=np.promote_types(a.dtype, np.float32))
    batch = lu.shape[:-2]
    flat = lu.reshape((-1, m, n))
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


# ---------------------------------------------------------------- svd

def _svd_aval(a, full_matrices):
    _check_matrices("svd", a, square=False)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    u_cols, vt_rows = (m, n) if full_matrices else (k, k)
    base = a.strip_weak_type()
    return [base.update(shape=batch + (k,)), base.update(shape=batch + (m, u_cols)),
            base.update(shape=batch + (vt_rows, n))]


def _svd_impl(a, full_matrices):
    """numpy's (LAPACK's dgesdd, in float64 also for float32: jit calls the same routine)."""
    def decompose(x):
        u, s, vt = np.linalg.svd(x, full_matrices=full_matrices)
        return [s, u, vt]
    return _or_nan_per_matrix(decompose, a)


svd_p = Primitive("svd", multiple_results=True)
svd_p.def_impl(_svd_impl)
svd_p.def_abstract_eval(_svd_aval)


def svd(a, full_matrices=False):
    """The singular value decomposition a = u diag(s) vt, s in descending order.

    Returns (s, u, vt) over the last two axes of a; thin factors unless full_matrices.
    """
    return svd_p.bind(as_operand(a), full_matrices=bool(full_matrices))


def _rows_times(s, x):
    """diag(s) @ x for a batch of vectors s."""
    return mul(broadcast_in_dim(s, x.shape, tuple(range(x.ndim - 2)) + (x.ndim - 2,)), x)


def _cols_times(x, s):
    """x @ diag(s)."""
    return mul(x, broadcast_in_dim(s, x.shape, tuple(range(x.ndim - 2)) + (x.ndim - 1,)))


def _svd_jvp(primals, tangents, full_matrices):
    """With dP = u^T a_dot v and F_ij = 1/(s_j^2 - s_i^2) off the diagonal:
    ds = diag(dP); du = u (F o (dP S + S dP^T)) + (1 - u u^T) a_dot v S^-1, and
    dv = v (F o (S dP + dP^T S)) + (1 - v v^T) a_dot^T u S^-1 (distinct, nonzero s)."""
    (a,), (a_dot,) = primals, tangents
    if full_matrices and a.shape[-1] != a.shape[-2]:
        # The extra columns of full factors are any orthonormal completion: no derivative.
        raise NotImplementedError("the derivative of svd with full_matrices=True is only defined "
                                  "for square matrices (as in JAX); use full_matrices=False")
    s, u, vt = svd_p.bind(a, full_matrices=full_matrices)
    v = matrix_transpose(vt)
    d_p = matmul(matmul(matrix_transpose(u), a_dot), v)
    d_p_t = matrix_transpose(d_p)
    f = _inverse_gaps(s, d_p.shape)
    inv_s = div(full_like(s, 1), s)
    a_dot_v = _cols_times(matmul(a_dot, v), inv_s)
    du = add(matmul(u, mul(f, add(_cols_times(d_p, s), _rows_times(s, d_p_t)))),
             sub(a_dot_v, matmul(u, matmul(matrix_transpose(u), a_dot_v))))
    a_dot_t_u = _cols_times(matmul(matrix_transpose(a_dot), u), inv_s)
    dv = add(matmul(v, mul(f, add(_rows_times(s, d_p), _cols_times(d_p_t, s)))),
             sub(a_dot_t_u, matmul(v, matmul(vt, a_dot_t_u))))
    return [s, u, vt], [_diagonal(d_p), du, matrix_transpose(dv)]


def _inverse_gaps(s, shape):
    """F_ij = 1 / (s_j^2 - s_i^2) off the diagonal and 0 on it."""
    s_sq = square(s)
    gaps = sub(_broadcast_last(s_sq, shape, row=True), _broadcast_last(s_sq, shape, row=False))
    on_diagonal = eq(identity_like(gaps), full_like(gaps, 1))
    safe = select_n(on_diagonal, gaps, full_like(gaps, 1))
    return select_n(on_diagonal, div(full_like(gaps, 1), safe), full_like(gaps, 0))


def _diagonal(x):
    return _sum_last(mul(x, identity_like(x)))


def _sum_last(x):
    from jaxlite.lax.reductions import reduce_sum
    return reduce_sum(x, (x.ndim - 1,))


def _broadcast_last(vec, shape, row):
    """vec along the columns (row=True: entry [i, j] = vec[j]) or along the rows ([i, j] = vec[i])."""
    axis = len(shape) - 1 if row else len(shape) - 2
    return broadcast_in_dim(vec, shape, tuple(range(len(shape) - 2)) + (axis,))


ad.jvp_rules[svd_p] = _svd_jvp
_batch_all_to_front(svd_p)
