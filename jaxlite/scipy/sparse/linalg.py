"""Krylov solvers for A x = b: cg, bicgstab and gmres, as JAX offers them.

A is a matrix or a function applying the linear operator; b and x may be any pytree of
arrays (flattened into one vector inside). Every iteration is a while_loop step, so the
solvers run natively under jit.
"""
import numpy as _np

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.core.tree_util import tree_flatten as _tree_flatten, tree_unflatten as _tree_unflatten
from jaxlite.scipy import linalg as _linalg


class _Flat:
    """A pytree problem seen as vectors: ravel and unravel between the two."""

    def __init__(self, b):
        leaves, self.tree = _tree_flatten(b)
        self.shapes = [_np.shape(leaf) for leaf in leaves]
        self.sizes = [int(_np.prod(shape)) for shape in self.shapes]
        self.dtype = _jnp.result_type(*leaves)

    def ravel(self, tree):
        leaves, _ = _tree_flatten(tree)
        return _jnp.concatenate([_jnp.ravel(_jnp.asarray(leaf)).astype(self.dtype) for leaf in leaves])

    def unravel(self, vector):
        pieces, start = [], 0
        for shape, size in zip(self.shapes, self.sizes):
            pieces.append(vector[start:start + size].reshape(shape))
            start += size
        return _tree_unflatten(self.tree, pieces)

    def operator(self, A):
        if callable(A):
            return lambda v: self.ravel(A(self.unravel(v)))
        matrix = _jnp.asarray(A)
        return lambda v: _jnp.matmul(matrix, v)


def _setup(A, b, x0, M, maxiter, default_iterations):
    flat = _Flat(b)
    b_vec = flat.ravel(b)
    x_vec = _jnp.zeros_like(b_vec) if x0 is None else flat.ravel(x0)
    apply_a = flat.operator(A)
    apply_m = (lambda v: v) if M is None else flat.operator(M)
    maxiter = default_iterations(b_vec.shape[0]) if maxiter is None else maxiter
    return flat, b_vec, x_vec, apply_a, apply_m, maxiter


def _threshold(b, tol, atol):
    """The squared residual norm at which to stop: max(tol |b|, atol)^2."""
    return _jnp.maximum(tol * _jnp.linalg.norm(b), atol) ** 2


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for a symmetric positive definite A: (x, None)."""
    flat, b, x, apply_a, apply_m, maxiter = _setup(A, b, x0, M, maxiter, lambda n: 10 * n)
    stop = _threshold(b, tol, atol)
    r = b - apply_a(x)
    z = apply_m(r)

    def running(state):
        k, x, r, z, p, rz = state
        return (_jnp.vdot(r, r) > stop) & (k < maxiter)

    def step(state):
        k, x, r, z, p, rz = state
        ap = apply_a(p)
        alpha = rz / _jnp.vdot(p, ap)
        x, r = x + alpha * p, r - alpha * ap
        z = apply_m(r)
        rz_next = _jnp.vdot(r, z)
        return k + 1, x, r, z, z + (rz_next / rz) * p, rz_next

    x = _lax.while_loop(running, step, (0, x, r, z, z, _jnp.vdot(r, z)))[1]
    return flat.unravel(x), None


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """The stabilized biconjugate gradient method for a general A: (x, None)."""
    flat, b, x, apply_a, apply_m, maxiter = _setup(A, b, x0, M, maxiter, lambda n: 10 * n)
    stop = _threshold(b, tol, atol)
    r = b - apply_a(x)
    shadow = r

    def running(state):
        k, x, r, p, v, rho, alpha, omega = state
        return (_jnp.vdot(r, r) > stop) & (k < maxiter) & (omega != 0)

    def step(state):
        k, x, r, p, v, rho, alpha, omega = state
        rho_next = _jnp.vdot(shadow, r)
        beta = (rho_next / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        p_hat = apply_m(p)
        v = apply_a(p_hat)
        alpha = rho_next / _jnp.vdot(shadow, v)
        s = r - alpha * v
        s_hat = apply_m(s)
        t = apply_a(s_hat)
        omega = _jnp.vdot(t, s) / _jnp.vdot(t, t)
        return k + 1, x + alpha * p_hat + omega * s_hat, s - omega * t, p, v, rho_next, alpha, omega

    one = _jnp.ones((), b.dtype)
    zeros = _jnp.zeros_like(b)
    x = _lax.while_loop(running, step, (0, x, r, zeros, zeros, one, one, one))[1]
    return flat.unravel(x), None


def _arnoldi_cycle(apply_a, apply_m, x, b, restart):
    """One GMRES cycle: an orthonormal Krylov basis of `restart` vectors from the residual
    (modified Gram-Schmidt), then the least-squares correction through the Hessenberg matrix."""
    r = apply_m(b - apply_a(x))
    beta = _jnp.linalg.norm(r)
    n = b.shape[0]
    basis = _jnp.zeros((restart + 1, n), b.dtype).at[0].set(r / _jnp.where(beta > 0, beta, 1))
    hessenberg = _jnp.zeros((restart + 1, restart), b.dtype)

    def extend(j, carry):
        basis, hessenberg = carry
        w = apply_m(apply_a(basis[j]))
        coefficients = _jnp.matmul(basis, w) * (_jnp.arange(restart + 1) <= j)
        w = w - _jnp.matmul(coefficients, basis)
        # a second pass keeps the basis orthogonal to working precision
        again = _jnp.matmul(basis, w) * (_jnp.arange(restart + 1) <= j)
        w = w - _jnp.matmul(again, basis)
        norm = _jnp.linalg.norm(w)
        column = (coefficients + again).at[j + 1].set(norm)
        basis = basis.at[j + 1].set(w / _jnp.where(norm > 0, norm, 1))
        return basis, hessenberg.at[:, j].set(column)

    basis, hessenberg = _lax.fori_loop(0, restart, extend, (basis, hessenberg))
    q, r_factor = _linalg.qr(hessenberg, mode="economic")
    rhs = beta * q[0]
    # a zero on R's diagonal means the Krylov space closed (the exact solution is in it): a
    # unit there leaves that direction's coefficient at 0 instead of dividing by zero
    singular = _jnp.einsum("ii->i", r_factor) == 0
    y = _linalg.solve_triangular(r_factor + _jnp.eye(restart, dtype=b.dtype) * singular, rhs)
    return x + _jnp.matmul(y, basis[:restart])


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None, solve_method="batched"):
    """Restarted GMRES for a general A: (x, info), info 0 (JAX reports no failure either)."""
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"invalid solve_method {solve_method!r}, must be either 'incremental' or 'batched'")
    flat, b, x, apply_a, apply_m, maxiter = _setup(A, b, x0, M, maxiter, lambda n: 10 * n)
    restart = min(restart, b.shape[0])
    stop = _threshold(apply_m(b), tol, atol)

    def running(state):
        k, x = state
        residual = apply_m(b - apply_a(x))
        return (_jnp.vdot(residual, residual) > stop) & (k < maxiter)

    def cycle(state):
        k, x = state
        return k + 1, _arnoldi_cycle(apply_a, apply_m, x, b, restart)

    x = _lax.while_loop(running, cycle, (0, x))[1]
    return flat.unravel(x), _jnp.asarray(0, _jnp.int32)
