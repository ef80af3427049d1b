"""Complex values natively under jit where they used to run numpy between kernels: products,
extrema and their cumulative forms, convolutions, eig and the complex LAPACK routines,
pivoted QR; jnp.roots."""
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import numpy_blas
from jaxlite.lower import linalg_kernels
from jaxlite.test_util import assert_same_bits, cache_hits_in_a_second_process, check_grads, enable_x64

COMPLEX = [np.complex64, np.complex128]


def _complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _jit_natively(fun, *args, caplog):
    """fun under jit, asserting that no step ran numpy between kernels."""
    caplog.clear()
    with caplog.at_level("WARNING", logger="jaxlite.jit"):
        out = jaxlite.jit(fun)(*args)
    assert "numpy implementation" not in caplog.text, caplog.text
    return out


def _assert_close(got, want, rtol):
    for g, w in zip(jaxlite.tree_util.tree_leaves(got), jaxlite.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        scale = float(np.abs(w[np.isfinite(w)]).max(initial=0))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1.0, scale))


# ---------------------------------------------------------------- reductions and scans

REDUCTIONS = {
    "prod": lambda z, axis: jnp.prod(z, axis=axis),
    "max": lambda z, axis: jnp.max(z, axis=axis),
    "min": lambda z, axis: jnp.min(z, axis=axis),
    "cumprod": lambda z, axis: jnp.cumprod(z, axis=axis),
    "cumprod_reverse": lambda z, axis: lax.cumprod(z, axis=axis, reverse=True),
    "cummax": lambda z, axis: lax.cummax(z, axis=axis),
    "cummin_reverse": lambda z, axis: lax.cummin(z, axis=axis, reverse=True),
}


@settings(deadline=None, max_examples=10)
@given(st.sampled_from(sorted(REDUCTIONS)), st.lists(st.integers(1, 9), min_size=1, max_size=3),
       st.integers(0, 2), st.sampled_from(COMPLEX), st.integers(0, 2 ** 16))
def test_complex_reductions_and_scans_jit_as_eager(name, shape, axis, dtype, seed):
    axis = axis % len(shape)
    with enable_x64():
        z = _complex(np.random.default_rng(seed), shape, dtype)
        fun = lambda z: REDUCTIONS[name](z, axis)    # noqa: E731
        eager = fun(z)
        _assert_close(jaxlite.jit(fun)(z), eager, rtol=3e-5 if dtype == np.complex64 else 1e-12)


def test_complex_reductions_run_natively(caplog):
    z = _complex(np.random.default_rng(0), (6, 5), np.complex64)
    for name, reduce in REDUCTIONS.items():
        _assert_close(_jit_natively(lambda z: reduce(z, 0), z, caplog=caplog), reduce(z, 0), rtol=3e-5)
    _assert_close(_jit_natively(lambda z: jnp.prod(z, axis=(0, 1)), z, caplog=caplog), jnp.prod(z), rtol=3e-5)


@pytest.mark.parametrize("shape,axis", [((3, 512), 0), ((2, 5, 768), 1), ((16, 40), 1), ((3, 7, 5), 2)])
def test_complex_products_are_one_native_routine(shape, axis):
    """cumprod (both directions) and prod of complex values: one native routine each (no
    rounds of real kernels); a cumprod in numpy's order, as eager's bit for bit. The shapes
    take groups of 256 contiguous chains, of 8 lines along the last axis, and of single ones;
    a prod along the last axis partial products in 16 lanes, with entries left over or none."""
    z = _complex(np.random.default_rng(sum(shape)), shape, np.complex64)
    def assert_one_native_step(fun):
        steps = [line for line in jaxlite.jit(fun).lower(z).as_text().splitlines()
                 if line.startswith(("kernel", "fallback", "native"))]
        assert len(steps) == 1 and steps[0].startswith("native: ") and "on_parts" in steps[0], steps

    for fun in (lambda v: jnp.cumprod(v, axis=axis), lambda v: lax.cumprod(v, axis=axis, reverse=True)):
        assert_one_native_step(fun)
        assert_same_bits(jaxlite.jit(fun)(z), fun(z))
    prod = lambda v: jnp.prod(v, axis=axis)    # noqa: E731
    assert_one_native_step(prod)
    _assert_close(jaxlite.jit(prod)(z), prod(z), rtol=3e-5)


def test_complex_scan_under_vmap_and_grad():
    rng = np.random.default_rng(1)
    z = _complex(rng, (3, 7), np.complex64)
    batched = jaxlite.jit(jaxlite.vmap(lambda row: jnp.cumprod(row)))(z)
    _assert_close(batched, np.stack([np.cumprod(row) for row in z]), rtol=3e-5)
    with enable_x64():
        w = _complex(rng, (5,), np.complex128)
        check_grads(lambda w: jnp.abs(jnp.prod(w)) + jnp.sum(jnp.cumprod(w).real), (w,), order=1)
        grad = jaxlite.jit(jaxlite.grad(lambda w: jnp.abs(jnp.prod(w))))(w)
        _assert_close(grad, jaxlite.grad(lambda w: jnp.abs(jnp.prod(w)))(w), rtol=1e-12)


def test_complex_convolution_runs_natively(caplog):
    rng = np.random.default_rng(2)
    x, w = _complex(rng, (2, 3, 6, 5), np.complex64), _complex(rng, (4, 3, 3, 2), np.complex64)
    conv = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME")    # noqa: E731
    _assert_close(_jit_natively(conv, x, w, caplog=caplog), conv(x, w), rtol=3e-5)
    _assert_close(_jit_natively(jnp.convolve, x[0, 0, 0], w[0, 0, 0], caplog=caplog),
                  np.convolve(x[0, 0, 0], w[0, 0, 0]), rtol=3e-5)


def test_argmax_of_complex_values_is_a_type_error_as_in_jax():
    with pytest.raises(TypeError, match="complex64"):
        jnp.argmax(jnp.ones(3, jnp.complex64))


# ---------------------------------------------------------------- jnp.roots

ROOTS = json.load(open(os.path.join(os.path.dirname(__file__), "data", "jax_roots.json")))


@pytest.mark.parametrize("case", ROOTS, ids=lambda case: str(case["p"]) + str(case["strip_zeros"]))
def test_roots_as_jax(case):
    got = jnp.roots(jnp.asarray(case["p"], jnp.float32), strip_zeros=case["strip_zeros"])
    want = np.array([complex(*pair) for pair in case["roots"]], np.complex64)
    assert got.dtype == np.complex64 and got.shape == want.shape
    # eig's order is LAPACK's: compare as sets (NaNs sort last in both)
    np.testing.assert_allclose(np.sort_complex(np.asarray(got)), np.sort_complex(want), rtol=1e-5, atol=1e-5)


def test_roots_under_jit_needs_strip_zeros_false():
    p = jnp.asarray([0.0, 1.0, -3.0, 2.0])
    with pytest.raises(jaxlite.errors.ConcretizationTypeError, match="strip_zeros=False"):
        jaxlite.jit(jnp.roots)(p)
    _assert_close(jaxlite.jit(lambda p: jnp.roots(p, strip_zeros=False))(p), jnp.roots(p, strip_zeros=False),
                  rtol=1e-6)
    with pytest.raises(ValueError, match="rank-1"):
        jnp.roots(jnp.ones((2, 2)))


# ---------------------------------------------------------------- eig and complex LAPACK

@pytest.mark.skipif(numpy_blas.thread_control() is None, reason="numpy's LAPACK is not an OpenBLAS we can set")
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_svd_runs_openblas_on_one_thread_eager_and_under_jit(dtype, monkeypatch):
    """As cholesky, eigh, qr and lu: gesdd on one OpenBLAS thread (threaded, its time swung
    from 60 ms to 3 s at 256 x 256 under load), eager and jit alike, so they agree in bits,
    and the thread count is put back."""
    control = numpy_blas.thread_control()
    before, seen, numpy_svd = control.get(), [], np.linalg.svd

    def recording_svd(*args, **kwargs):
        seen.append(control.get())
        return numpy_svd(*args, **kwargs)
    monkeypatch.setattr(np.linalg, "svd", recording_svd)
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((2, 130, 120)) + (1j * rng.standard_normal((2, 130, 120)) if dtype == np.complex64
                                               else 0)).astype(dtype)
    eager = lax.linalg.svd(a)
    assert seen and set(seen) == {1}
    eqn = next(e for e in jaxlite.make_jaxpr(lax.linalg.svd)(a).jaxpr.eqns if e.primitive is lax.linalg.svd_p)
    assert linalg_kernels.svd_spec(eqn).one_thread
    assert_same_bits(jaxlite.jit(lax.linalg.svd)(a), eager)
    assert control.get() == before


def _hermitian(rng, shape, dtype):
    a = _complex(rng, shape, dtype)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1], dtype=dtype)


FACTORIZATIONS = {
    "cholesky": (lax.linalg.cholesky, True),
    "eigh": (lax.linalg.eigh, True),
    "qr": (lax.linalg.qr, False),
    "qr_thin": (lambda a: lax.linalg.qr(a, full_matrices=False), False),
    "geqrf": (lax.linalg.geqrf, False),
    "svd": (lax.linalg.svd, False),
    "svd_thin": (lambda a: lax.linalg.svd(a, full_matrices=False), False),
    "svdvals": (lambda a: lax.linalg.svd(a, compute_uv=False), False),
    "lu": (lax.linalg.lu, False),
    "eig": (lax.linalg.eig, True),
    "eig_right": (lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False), True),
    "eigvals": (lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False), True),
    "qr_pivoted": (lambda a: lax.linalg.qr(a, pivoting=True), False),
    "qr_pivoted_thin": (lambda a: lax.linalg.qr(a, pivoting=True, full_matrices=False), False),
}
REAL_TOO = ("eig", "qr_pivoted")     # real factorizations new here (the others: tests/test_native_lapack*.py)
SIZES = st.sampled_from([0, 1, 2, 3, 5, 8])


@settings(deadline=None, max_examples=25)
@given(st.sampled_from(sorted(FACTORIZATIONS)), st.lists(st.integers(0, 2), max_size=1).map(tuple), SIZES, SIZES,
       st.sampled_from(COMPLEX + [np.float32, np.float64]), st.integers(0, 2 ** 16))
def test_factorizations_under_jit_are_the_eager_bits(name, batch, m, n, dtype, seed):
    """numpy's own LAPACK (dgeev/zgeev, dgeqp3/zgeqp3, zpotrf, zheevd, zgeqrf+zungqr, zgesdd,
    cgetrf/zgetrf) natively under jit gives eager's bits, and eager leaves its operand alone."""
    fun, square = FACTORIZATIONS[name]
    if np.dtype(dtype).kind == "f" and not name.startswith(REAL_TOO):
        return
    n = m if square else n
    rng = np.random.default_rng(seed)
    with enable_x64():
        if np.dtype(dtype).kind == "f":
            a = rng.standard_normal(batch + (m, n)).astype(dtype)
        else:
            a = _hermitian(rng, batch + (m, m), dtype) if name in ("cholesky", "eigh") else _complex(rng, batch + (m, n), dtype)
        operand = a.copy()
        assert_same_bits(jaxlite.jit(fun)(a), fun(a))
        assert_same_bits(a, operand)


def test_factorizations_run_natively(caplog):
    rng = np.random.default_rng(3)
    for name, (fun, square) in FACTORIZATIONS.items():
        a = _hermitian(rng, (2, 4, 4), np.complex64) if name in ("cholesky", "eigh") else _complex(rng, (2, 4, 3 + square), np.complex64)
        assert_same_bits(_jit_natively(fun, a, caplog=caplog), fun(a))
    real = rng.standard_normal((3, 5, 5)).astype(np.float32)
    assert_same_bits(_jit_natively(lax.linalg.eig, real, caplog=caplog), lax.linalg.eig(real))
    pivoted = lambda a: lax.linalg.qr(a, pivoting=True)     # noqa: E731
    assert_same_bits(_jit_natively(pivoted, real[:, :, :3], caplog=caplog), pivoted(real[:, :, :3]))


def test_pivoted_qr_is_geqp3s():
    """x[:, p] = q r with |diag(r)| non-increasing (and scipy's modes, as JAX's)."""
    import jaxlite.scipy.linalg as scipy_linalg
    with enable_x64():
        a = np.random.default_rng(8).standard_normal((6, 4)) @ np.diag([1e-3, 1, 1e3, 1e1])
        q, r, p = (np.asarray(x) for x in lax.linalg.qr(a, pivoting=True))
        np.testing.assert_allclose(q @ r, a[:, p], atol=1e-10)
        assert list(p[:2]) == [2, 3] and np.all(np.diff(np.abs(np.diag(r))) <= 0)
        shapes = {mode: [x.shape for x in scipy_linalg.qr(a, mode=mode, pivoting=True)] for mode in ("full", "economic", "r")}
        assert shapes == {"full": [(6, 6), (6, 4), (4,)], "economic": [(6, 4), (4, 4), (4,)], "r": [(6, 4), (4,)]}
        product, _, permutation = scipy_linalg.qr_multiply(a, np.ones(6), pivoting=True)
        np.testing.assert_allclose(np.asarray(product), np.ones(6) @ q[:, :4], atol=1e-10)
        assert list(permutation) == list(p)


def test_left_eigenvectors_are_lapacks_as_in_jax():
    """geev's own left vectors (JAX's): u^H a = w u^H, unit norm, largest component real."""
    with enable_x64():
        a = np.random.default_rng(4).standard_normal((6, 6))
        w, vl, _ = (np.asarray(x) for x in lax.linalg.eig(a))
        np.testing.assert_allclose(np.conj(vl).T @ a, w[:, None] * np.conj(vl).T, atol=1e-12)
        np.testing.assert_allclose(np.linalg.norm(vl, axis=0), 1, rtol=1e-12)
        largest = vl[np.argmax(np.abs(vl), axis=0), np.arange(6)]
        np.testing.assert_allclose(largest.imag, 0, atol=1e-15)


def test_a_matrix_geev_fails_on_is_nan_under_jit():
    a = np.random.default_rng(5).standard_normal((3, 4, 4)).astype(np.float32)
    a[1, 2, 2] = np.nan
    got = jaxlite.jit(lax.linalg.eig)(a)
    assert_same_bits(got, lax.linalg.eig(a))
    assert np.isnan(np.asarray(got[0])[1]).all() and not np.isnan(np.asarray(got[0])[[0, 2]]).any()


_CACHED_COMPLEX_LAPACK = """
import numpy as np, jaxlite
from jaxlite import lax
from jaxlite.lower import disk_cache
jaxlite.config.update("jax_compilation_cache_dir", {cache!r})
a = np.random.default_rng(4).standard_normal((2, 5, 5)).astype(np.float32)
z = (a + 1j * a[:, ::-1]).astype(np.complex64)
fun = lambda a, z: (lax.linalg.eig(a), lax.linalg.svd(z), lax.linalg.lu(z), lax.linalg.qr(a, pivoting=True))
got, want = jaxlite.jit(fun)(a, z), fun(a, z)
leaves = jaxlite.tree_util.tree_leaves
assert all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(leaves(got), leaves(want)))
print(disk_cache.stats["hits"])
"""


def test_cached_complex_routines_link_to_this_processs_lapack(tmp_path):
    """Routines stored by one process call zgesdd, dgeev... by our symbol names, bound again in the next."""
    assert cache_hits_in_a_second_process(_CACHED_COMPLEX_LAPACK, tmp_path / "cache") > 0


LINALG = {
    "det": jnp.linalg.det, "slogdet": jnp.linalg.slogdet, "inv": jnp.linalg.inv,
    "solve": lambda a: jnp.linalg.solve(a, a[..., :1]), "pinv": jnp.linalg.pinv,
    "lstsq": lambda a: jnp.linalg.lstsq(a[0], a[0, :, 0])[0], "eigvals": jnp.linalg.eigvals,
    "eigvalsh": lambda a: jnp.linalg.eigvalsh(a @ jnp.conj(jnp.swapaxes(a, -1, -2))),
    "matrix_power": lambda a: jnp.linalg.matrix_power(a, -3), "cond": jnp.linalg.cond,
    "norm2": lambda a: jnp.linalg.norm(a, 2, axis=(-2, -1)),
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_complex_linalg_runs_natively(name, caplog):
    a = _complex(np.random.default_rng(6), (2, 4, 4), np.complex64)
    _assert_close(_jit_natively(LINALG[name], a, caplog=caplog), LINALG[name](a), rtol=2e-5)


def test_eig_under_vmap_and_grad():
    rng = np.random.default_rng(7)
    a = _complex(rng, (3, 4, 4), np.complex64)
    batched = jaxlite.jit(jaxlite.vmap(jnp.linalg.eigvals))(a)
    assert_same_bits(batched, np.stack([np.asarray(jnp.linalg.eigvals(m)) for m in a]))
    with enable_x64():
        z = _complex(rng, (3, 3), np.complex128)
        check_grads(lambda z: jnp.abs(jnp.linalg.det(z)) + jnp.sum(jnp.abs(jnp.linalg.eigvals(z)) ** 2), (z,),
                    order=1, rtol=1e-5, atol=1e-5)
        loss = lambda z: jnp.real(jnp.sum(jnp.linalg.inv(z) * z.T))     # noqa: E731
        _assert_close(jaxlite.jit(jaxlite.grad(loss))(z), jaxlite.grad(loss)(z), rtol=1e-10)


# ---------------------------------------------------------------- other complex operations

_TARGETS = np.array([0, 2, 0, 4])
OTHER_OPS = {
    "scatter_mul": lambda z: z.at[_TARGETS].multiply(z[:4] * 1j),
    "scatter_max": lambda z: z.at[_TARGETS].max(z[1:5]),
    "scatter_min_drop": lambda z: z.at[_TARGETS + 2].min(z[1:5], mode="drop"),
    "segment_prod": lambda z: jaxlite.ops.segment_prod(z, np.array([0, 0, 1, 2, 2]), 3),
    "segment_max": lambda z: jaxlite.ops.segment_max(z, np.array([0, 0, 1, 2, 2]), 4),
    "window_max": lambda z: lax.reduce_window(z, -np.inf + 0j, lax.max, (2, 3), (1, 2), "VALID"),
    "window_min_dilated": lambda z: lax.reduce_window(z, np.inf + 0j, lax.min, (2, 2), (2, 1), [(1, 0), (0, 2)],
                                                      base_dilation=(2, 1), window_dilation=(1, 2)),
    "searchsorted": lambda z: jnp.searchsorted(jnp.sort(z[0]), z[1], side="right"),
    "conjugate_solve": lambda z: lax.linalg.triangular_solve(z[:4, :4] + 4 * jnp.eye(4), z[:4, :3], left_side=True,
                                                           lower=True, conjugate_a=True),
    "poly_of_matrix": lambda z: jnp.poly(z[:4, :4]),
}


@pytest.mark.parametrize("name", sorted(OTHER_OPS))
def test_other_complex_operations_run_natively(name, caplog):
    z = jnp.asarray(_complex(np.random.default_rng(9), (5, 6), np.complex64))
    _assert_close(_jit_natively(OTHER_OPS[name], z, caplog=caplog), OTHER_OPS[name](z), rtol=3e-5)


_BATCHED_SCATTERS = {"mul": lax.scatter_mul, "max": lax.scatter_max, "min": lax.scatter_min}


@settings(deadline=None, max_examples=8)
@given(st.sampled_from(sorted(_BATCHED_SCATTERS)), st.sampled_from(["clip", "fill"]), st.integers(1, 3),
       st.integers(1, 4), st.integers(0, 1), st.integers(0, 2 ** 16))
def test_batched_complex_scatters_run_natively(op, mode, batch, entries, batch_dim, seed):
    """operand_batching_dims: each batch entry scatters into its own slice of the operand,
    natively (the batch position one more index column), repeated and out-of-range targets
    included, as eager."""
    rng = np.random.default_rng(seed)
    operand_shape = [6, 3]
    operand_shape.insert(batch_dim, batch)
    z = _complex(rng, tuple(operand_shape), np.complex64)
    indices = rng.integers(-1, 8, (batch, entries, 1)).astype(np.int32)
    updates = _complex(rng, (batch, entries, 3), np.complex64)
    rows = 1 if batch_dim == 0 else 0
    d = lax.ScatterDimensionNumbers(update_window_dims=(2,), inserted_window_dims=(rows,),
                                    scatter_dims_to_operand_dims=(rows,), operand_batching_dims=(batch_dim,),
                                    scatter_indices_batching_dims=(0,))
    fun = lambda z, i, u: _BATCHED_SCATTERS[op](z, i, u, d, mode=mode)    # noqa: E731
    steps = jaxlite.jit(fun).lower(z, indices, updates).as_text().splitlines()
    assert not [step for step in steps if step.startswith("fallback")]
    _assert_close(jaxlite.jit(fun)(z, indices, updates), fun(z, indices, updates), rtol=3e-6)


def test_vmapped_complex_scatter_mul_runs_natively(caplog):
    rng = np.random.default_rng(12)
    z, u = _complex(rng, (3, 5), np.complex64), _complex(rng, (3, 2), np.complex64)
    targets = np.array([[0, 0], [4, 1], [2, 2]])
    fun = jaxlite.vmap(lambda z, i, u: z.at[i].multiply(u))
    _assert_close(_jit_natively(fun, z, targets, u, caplog=caplog), fun(z, targets, u), rtol=3e-6)


def test_complex_scatters_searchsorted_and_poly_as_numpy():
    z = _complex(np.random.default_rng(10), (6,), np.complex128)
    with enable_x64():
        want = z.copy()
        np.multiply.at(want, _TARGETS, z[:4] * 1j)
        _assert_close(jaxlite.jit(OTHER_OPS["scatter_mul"])(z), want, rtol=1e-13)
        want = z.copy()
        np.maximum.at(want, _TARGETS, z[1:5])
        _assert_close(jaxlite.jit(OTHER_OPS["scatter_max"])(z), want, rtol=0)
        keys = np.sort(z)
        np.testing.assert_array_equal(jnp.searchsorted(keys, z[::-1]), np.searchsorted(keys, z[::-1]))
        square = z[:4].reshape(2, 2)
        _assert_close(jnp.poly(square), np.poly(square).astype(np.complex128), rtol=1e-12)
        _assert_close(jnp.polyder(z), np.polyder(z), rtol=1e-13)     # complex coefficients stay complex
        _assert_close(jnp.polyint(z[:3]), np.polyint(z[:3]), rtol=1e-13)
    with pytest.raises(ValueError, match="square 2d"):
        jnp.poly(jnp.ones((2, 3)))
