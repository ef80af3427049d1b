"""Records jnp.linalg / lax.linalg values and JVPs for fixed float64 inputs into
jax_linalg.npz (run with /work/jaxref/bin/python tests/data/record_jax_linalg.py OUT; the cases
are shared with tests/test_linalg_complete.py, which runs them on jaxlite).

Only sign-free quantities are recorded where a factor's signs are arbitrary (LAPACK fixes
them, and jaxlite calls the same routines, but a different LAPACK build may not); JVPs are
recorded in full where the decomposition is unique (qr's R diagonal signs follow LAPACK)."""
import sys

import numpy as np


def _matrix(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _symmetric(n, seed):
    a = _matrix((n, n), seed)
    return a + a.T


def cases(api, jnp, lax_linalg):
    """Each recorded call by name, made with `api` (jax or jaxlite), its numpy and lax.linalg."""
    tall, wide, square = _matrix((6, 3), 0), _matrix((3, 5), 1), _matrix((4, 4), 2)
    symmetric = _symmetric(4, 3)
    degenerate = np.diag([1.0, 1.0, 2.0])
    calls = {
        "eigh jvp": lambda: api.jvp(lambda a: lax_linalg.eigh(a), (symmetric,), (_symmetric(4, 4),))[1][1],
        "eigh jvp eigvec products": lambda: _vector_products(
            *api.jvp(lambda a: jnp.linalg.eigh(a).eigenvectors, (symmetric,), (_symmetric(4, 4),))),
        "eigh degenerate eigenvalue tangent": lambda: api.jvp(
            jnp.linalg.eigvalsh, (degenerate,), (_symmetric(3, 5),))[1],
        "eigh degenerate eigenvector tangent": lambda: api.jvp(
            lambda a: jnp.linalg.eigh(a).eigenvectors, (degenerate,), (_symmetric(3, 5),))[1],
        "svd hermitian": lambda: jnp.linalg.svd(_symmetric(4, 6), hermitian=True).S,
        "svd hermitian uv product": lambda: _svd_product(jnp.linalg.svd(_symmetric(4, 6), hermitian=True)),
        "pinv": lambda: jnp.linalg.pinv(tall),
        "pinv jvp": lambda: api.jvp(jnp.linalg.pinv, (tall,), (_matrix((6, 3), 7),))[1],
        "lstsq": lambda: jnp.linalg.lstsq(tall, _matrix((6, 2), 8))[0],
        "lstsq residuals": lambda: jnp.linalg.lstsq(tall, _matrix((6, 2), 8))[1],
        "matrix_rank": lambda: jnp.linalg.matrix_rank(np.outer(tall[:, 0], tall[:, 1])),
        "cond": lambda: jnp.stack([jnp.linalg.cond(square, p) for p in (None, 1, -1, 2, -2, np.inf, "fro", "nuc")]),
        "norm orders": lambda: jnp.stack([jnp.linalg.norm(square, p) for p in (None, 1, -1, 2, -2, np.inf, -np.inf,
                                                                              "fro", "nuc")]),
        "vector norm orders": lambda: jnp.stack([jnp.linalg.vector_norm(tall, ord=p) for p in
                                                 (0, 1, 2, 3, -1, -2.5, np.inf, -np.inf)]),
        "slogdet qr": lambda: jnp.stack(jnp.linalg.slogdet(square, method="qr")),
        "slogdet grad": lambda: api.grad(lambda a: jnp.linalg.slogdet(a)[1])(square),
        "matrix_power -3": lambda: jnp.linalg.matrix_power(square, -3),
        "multi_dot": lambda: jnp.linalg.multi_dot([tall[:, 0], tall, wide, wide[0]]),
        "tensorsolve": lambda: jnp.linalg.tensorsolve(_matrix((2, 3, 6), 9), _matrix((2, 3), 10)),
        "tensorinv": lambda: jnp.linalg.tensorinv(_matrix((6, 2, 3), 11), ind=1),
        "svd jvp singular values": lambda: api.jvp(jnp.linalg.svdvals, (tall,), (_matrix((6, 3), 12),))[1],
        "qr pivoting r": lambda: np.abs(lax_linalg.qr(tall, pivoting=True)[1]),
        "qr pivoting p": lambda: lax_linalg.qr(tall, pivoting=True)[2],
    }
    complex_square = square + 1j * _matrix((4, 4), 15)
    complex_tangent = _matrix((4, 4), 16) + 1j * _matrix((4, 4), 17)
    hermitian = complex_square + complex_square.conj().T
    calls.update({
        "eigvals": lambda: jnp.sort(jnp.linalg.eigvals(square)),
        "eigvals jvp": lambda: api.jvp(lambda a: jnp.sort(jnp.linalg.eigvals(a)), (square,), (_matrix((4, 4), 18),))[1],
        "eigvals complex jvp": lambda: api.jvp(lambda a: jnp.sort(jnp.linalg.eigvals(a)), (complex_square,),
                                               (complex_tangent,))[1],
        "eig eigenvector jvp products": lambda: _eig_vector_products(api, jnp, lax_linalg, square),
        "eigh complex jvp": lambda: api.jvp(jnp.linalg.eigvalsh, (hermitian,), (complex_tangent + complex_tangent.conj().T,))[1],
        "qr complex jvp": lambda: jnp.concatenate([jnp.ravel(t) for t in api.jvp(
            lambda a: lax_linalg.qr(a, full_matrices=False), (complex_square[:, :3],), (complex_tangent[:, :3],))[1]]),
        "det complex grad": lambda: api.grad(lambda a: jnp.abs(jnp.linalg.det(a)))(complex_square),
        "slogdet complex jvp": lambda: jnp.stack(api.jvp(lambda a: tuple(jnp.linalg.slogdet(a)), (complex_square,),
                                                         (complex_tangent,))[1]),
        "inv complex": lambda: jnp.linalg.inv(complex_square),
        "pinv complex jvp": lambda: api.jvp(jnp.linalg.pinv, (complex_square[:, :3],), (complex_tangent[:, :3],))[1],
        "svd complex jvp singular values": lambda: api.jvp(jnp.linalg.svdvals, (complex_square,), (complex_tangent,))[1],
        "cholesky complex jvp": lambda: api.jvp(jnp.linalg.cholesky, (hermitian @ hermitian.conj().T,),
                                                (complex_tangent + complex_tangent.conj().T,))[1],
    })
    for name, x in (("tall", tall), ("wide", wide), ("square", square)):
        for full in (True, False):
            calls[f"qr jvp {name} full={full}"] = lambda x=x, full=full: jnp.concatenate([
                jnp.ravel(t) for t in api.jvp(lambda a: lax_linalg.qr(a, full_matrices=full), (x,),
                                              (_matrix(x.shape, 13),))[1]])
        calls[f"svd jvp {name} products"] = lambda x=x: _svd_tangent_products(api, jnp, lax_linalg, x)
    return calls


def _vector_products(v, v_dot):
    """v^T v_dot: each column's tangent against the eigenvectors, free of the columns' signs
    (both flip together), so comparable across LAPACK builds."""
    return v.T @ v_dot


def _eig_vector_products(api, jnp, lax_linalg, x):
    """conj(vr) * vr_dot, sorted by eigenvalue: free of each eigenvector's sign."""
    (w, vr), (_, vr_dot) = api.jvp(lambda a: lax_linalg.eig(a, compute_left_eigenvectors=False,
                                                            enable_eigvec_derivs=True), (x,), (_matrix(x.shape, 19),))
    order = jnp.argsort(w)
    return (jnp.conj(vr) * vr_dot)[:, order]


def _svd_product(result):
    return result.U @ result.Vh


def _svd_tangent_products(api, jnp, lax_linalg, x):
    """u^T u_dot and vt_dot vt^T: sign-free (a column's sign flips its tangent with it)."""
    (u, s, vt), (u_dot, s_dot, vt_dot) = api.jvp(lambda a: lax_linalg.svd(a, full_matrices=False), (x,),
                                                 (_matrix(x.shape, 14),))
    return jnp.concatenate([jnp.ravel(u.T @ u_dot), s_dot, jnp.ravel(vt_dot @ vt.T)])


if __name__ == "__main__":
    import jax
    import jax.numpy as jax_numpy
    from jax.lax import linalg
    jax.config.update("jax_enable_x64", True)
    np.savez(sys.argv[1], **{name: np.asarray(call()) for name, call in cases(jax, jax_numpy, linalg).items()})
