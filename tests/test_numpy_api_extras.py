"""The jnp names added for issue 17 item 2 against numpy: eager and under jit, with
hypothesis where shapes matter, vmap against a loop, and gradients where differentiable."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.errors import ConcretizationTypeError
from jaxlite.test_util import check_grads, check_vmap

rng = np.random.default_rng(0)
A = rng.normal(size=(4, 5)).astype(np.float32)
X = rng.uniform(0, 5, size=20).astype(np.float32)
I = rng.integers(-5, 6, size=(7,)).astype(np.int32)
B = rng.integers(-3, 4, size=(5,)).astype(np.int32)
XP = np.sort(rng.uniform(0, 5, 6)).astype(np.float32)
FP = rng.normal(size=6).astype(np.float32)
P, Q = np.array([1., -2, 3], np.float32), np.array([2., 1], np.float32)
WITH_NAN = A.copy()
WITH_NAN[0, 1] = np.nan
WITH_NAN[2] = np.nan


def _np_fill_diagonal(m, v, wrap):
    m = m.copy()
    np.fill_diagonal(m, v, wrap=wrap)
    return m


def _np_put(a, ind, v):
    a = a.copy()
    np.put(a, ind, v)
    return a


def _np_place(a, mask, v):
    a = a.copy()
    np.place(a, mask, v)
    return a


# name -> (function of arrays, numpy reference, arguments); all of these also run under jit.
CASES = {
    "concat": (lambda a: jnp.concat([a, a], axis=1), lambda a: np.concatenate([a, a], 1), (A,)),
    "permute_dims": (lambda a: jnp.permute_dims(a, (1, 0)), lambda a: a.T, (A,)),
    "matrix_transpose": (jnp.matrix_transpose, lambda a: a.T, (A,)),
    "unstack": (lambda a: jnp.unstack(a, axis=1), lambda a: tuple(a.T), (A,)),
    "vecdot": (jnp.vecdot, lambda a, b: (a * b).sum(-1), (A, A[0])),
    "vecmat": (jnp.vecmat, lambda a, b: np.einsum("i,ij->j", a, b), (A[:, 0], A)),
    "matvec": (jnp.matvec, lambda a, b: a @ b, (A, A[0])),
    "astype": (lambda a: jnp.astype(a, jnp.int32), lambda a: a.astype(np.int32), (A,)),
    "pow": (jnp.pow, np.power, (X, A[0, 0])),
    "atan2": (jnp.atan2, np.arctan2, (A, A[0])),
    "bitwise_invert": (jnp.bitwise_invert, np.invert, (I,)),
    "bitwise_count": (jnp.bitwise_count, np.bitwise_count, (I,)),
    "cumulative_prod": (lambda a: jnp.cumulative_prod(a, axis=1, include_initial=True),
                        lambda a: np.cumulative_prod(a, axis=1, include_initial=True), (A,)),
    "isin": (jnp.isin, np.isin, (I, B)),
    "isin_invert": (lambda a, b: jnp.isin(a, b, invert=True), lambda a, b: np.isin(a, b, invert=True),
                    (I, B)),
    "histogram": (lambda x: jnp.histogram(x, 5), lambda x: np.histogram(x, 5), (X,)),
    "histogram_density": (lambda x: jnp.histogram(x, np.array([0, 1, 3, 5.]), density=True),
                          lambda x: np.histogram(x, np.array([0, 1, 3, 5.]), density=True), (X,)),
    "histogram_range_weights": (lambda x: jnp.histogram(x, 3, range=(1, 4), weights=x),
                                lambda x: np.histogram(x, 3, range=(1, 4), weights=x), (X,)),
    "histogram_bin_edges": (lambda x: jnp.histogram_bin_edges(x, 4),
                            lambda x: np.histogram_bin_edges(x, 4), (X,)),
    "histogram2d": (lambda x, y: jnp.histogram2d(x, y, bins=3),
                    lambda x, y: np.histogram2d(x, y, bins=3), (X[:10], X[10:])),
    "histogramdd": (lambda s: jnp.histogramdd(s, bins=(2, 3))[0],
                    lambda s: np.histogramdd(s, bins=(2, 3))[0], (X.reshape(10, 2),)),
    "bincount": (lambda x, w: jnp.bincount(x, w, length=9),
                 lambda x, w: np.bincount(x, w, minlength=9), (np.abs(I), X[:7])),
    "digitize": (lambda x: jnp.digitize(x, np.array([1, 2, 3.])),
                 lambda x: np.digitize(x, np.array([1, 2, 3.])), (X,)),
    "digitize_decreasing_right": (lambda x: jnp.digitize(x, np.array([3, 2, 1.]), right=True),
                                  lambda x: np.digitize(x, np.array([3, 2, 1.]), right=True), (X,)),
    "interp": (jnp.interp, np.interp, (X, XP, FP)),
    "interp_left_right": (lambda x: jnp.interp(x, XP, FP, left=-9, right=9),
                          lambda x: np.interp(x, XP, FP, left=-9, right=9), (X,)),
    "interp_period": (lambda x: jnp.interp(x, XP, FP, period=2.),
                      lambda x: np.interp(x, XP, FP, period=2.), (X,)),
    "polyval": (jnp.polyval, np.polyval, (P, X)),
    "polyadd": (jnp.polyadd, np.polyadd, (P, Q)),
    "polysub": (jnp.polysub, np.polysub, (Q, P)),
    "polymul": (jnp.polymul, np.polymul, (P, Q)),
    # JAX keeps the remainder at u's length (numpy trims its leading zeros).
    "polydiv": (jnp.polydiv, lambda u, v: (np.polydiv(u, v)[0], np.r_[0, 0, np.polydiv(u, v)[1]]),
                (P, Q)),
    "polyder": (lambda p: jnp.polyder(p, 2), lambda p: np.polyder(p, 2), (P,)),
    "polyint": (lambda p: jnp.polyint(p, 2, k=np.array([1., 2])),
                lambda p: np.polyint(p, 2, k=[1, 2]), (P,)),
    "poly": (jnp.poly, np.poly, (Q,)),
    "polyfit": (lambda x, y: jnp.polyfit(x, y, 2), lambda x, y: np.polyfit(x, y, 2),
                (X, 2 * X ** 2 - X + 1 + np.sin(X))),
    "polyfit_full": (lambda x, y: jnp.polyfit(x, y, 2, full=True)[:4],
                     lambda x, y: np.polyfit(x, y, 2, full=True)[:4], (X[:8], (X[:8] - 2) ** 3)),
    "polyfit_cov": (lambda x, y, w: jnp.polyfit(x, y, 2, w=w, cov=True),
                    lambda x, y, w: np.polyfit(x, y, 2, w=w, cov=True),
                    (X[:8], (X[:8] - 2) ** 3, X[8:16])),
    "trapezoid": (lambda a: jnp.trapezoid(a, axis=0), lambda a: np.trapezoid(a, axis=0), (A,)),
    "trapezoid_x": (lambda a, x: jnp.trapezoid(a, x=x), lambda a, x: np.trapezoid(a, x=x),
                    (A, XP[:5])),
    "gradient": (jnp.gradient, np.gradient, (A,)),
    "gradient_coordinates": (lambda a, x: jnp.gradient(a, x, axis=1),
                             lambda a, x: np.gradient(a, x, axis=1), (A, XP[:5])),
    "unwrap": (jnp.unwrap, np.unwrap, (np.cumsum(X),)),
    "ediff1d": (lambda a: jnp.ediff1d(a, to_begin=np.array([1., 2]), to_end=3),
                lambda a: np.ediff1d(a, to_begin=[1, 2], to_end=3), (A,)),
    "piecewise": (lambda x: jnp.piecewise(x, [x < 1, x > 3], [lambda v: v * 2, 7., -1]),
                  lambda x: np.piecewise(x, [x < 1, x > 3], [lambda v: v * 2, 7., -1]), (X,)),
    "select": (lambda x: jnp.select([x < 1, x > 3], [x, -x], 5),
               lambda x: np.select([x < 1, x > 3], [x, -x], 5), (X,)),
    "r_": (lambda a: jnp.r_[1:4, 7, a], lambda a: np.r_[1:4, 7, a], (B,)),
    "c_": (lambda a: jnp.c_[a, a], lambda a: np.c_[a, a], (B,)),
    "diag": (lambda a: jnp.diag(a, 1), lambda a: np.diag(a, 1), (A,)),
    "diag_1d": (lambda x: jnp.diag(x, -1), lambda x: np.diag(x, -1), (X[:3],)),
    "diagflat": (lambda a: jnp.diagflat(a, 1), lambda a: np.diagflat(a, 1), (A[:2, :2],)),
    "diagonal": (lambda a: jnp.diagonal(a, 1, 2, 0), lambda a: np.diagonal(a, 1, 2, 0),
                 (rng.normal(size=(2, 3, 4)),)),
    "fill_diagonal_wrap": (lambda m: jnp.fill_diagonal(m, 5., wrap=True, inplace=False),
                           lambda m: _np_fill_diagonal(m, 5., True), (np.zeros((7, 3)),)),
    "fill_diagonal_values": (lambda m, v: jnp.fill_diagonal(m, v, inplace=False),
                             lambda m, v: _np_fill_diagonal(m, v, False),
                             (np.zeros((3, 3)), np.array([1., 2]))),
    "insert": (lambda a: jnp.insert(a, 2, 9), lambda a: np.insert(a, 2, 9), (I,)),
    "insert_columns": (lambda a: jnp.insert(a, np.array([0, 2]), np.array([[7], [8]]), axis=1),
                       lambda a: np.insert(a, [0, 2], [[7], [8]], axis=1), (A[:2, :3],)),
    "insert_column": (lambda a: jnp.insert(a, 1, np.array([7, 8]), axis=1),
                      lambda a: np.insert(a, 1, [7, 8], axis=1), (A[:2, :3],)),
    "insert_row": (lambda a: jnp.insert(a, 1, np.array([7, 8, 9]), axis=0),
                   lambda a: np.insert(a, 1, [7, 8, 9], axis=0), (A[:2, :3],)),
    "delete": (lambda a: jnp.delete(a, np.array([1, 3])), lambda a: np.delete(a, [1, 3]), (I,)),
    "delete_slice": (lambda a: jnp.delete(a, slice(0, 4, 2), axis=1),
                     lambda a: np.delete(a, slice(0, 4, 2), axis=1), (A,)),
    "append": (lambda a: jnp.append(a, a[:1], axis=0), lambda a: np.append(a, a[:1], axis=0), (A,)),
    "append_flat": (jnp.append, np.append, (A, I)),
    "resize": (lambda a: jnp.resize(a, (3, 4)), lambda a: np.resize(a, (3, 4)), (B,)),
    "rollaxis": (lambda a: jnp.rollaxis(a, 2), lambda a: np.rollaxis(a, 2), (np.ones((2, 3, 4)),)),
    "dsplit": (lambda a: jnp.dsplit(a, 2), lambda a: np.dsplit(a, 2), (np.ones((2, 2, 4)),)),
    "packbits": (lambda a: jnp.packbits(a, axis=1), lambda a: np.packbits(a, axis=1),
                 (np.array([[1, 0, 1], [0, 1, 1]]),)),
    "packbits_little": (lambda a: jnp.packbits(a, bitorder="little"),
                        lambda a: np.packbits(a, bitorder="little"), (np.arange(11) % 3,)),
    "unpackbits": (lambda a: jnp.unpackbits(a, count=12), lambda a: np.unpackbits(a, count=12),
                   (np.array([3, 200], np.uint8),)),
    "vander": (lambda x: jnp.vander(x, 3), lambda x: np.vander(x, 3), (X[:4],)),
    "vander_int": (lambda x: jnp.vander(x, increasing=True), lambda x: np.vander(x, increasing=True),
                   (np.array([1, 2, 3], np.int32),)),
    "choose": (lambda a, c0, c1: jnp.choose(a, [c0, c1], mode="clip"),
               lambda a, c0, c1: np.choose(a, [c0, c1], mode="clip"),
               (np.array([0, 1, 3]), np.array([1, 2, 3]), np.array([4, 5, 6]))),
    "apply_along_axis": (lambda a: jnp.apply_along_axis(lambda v: v.sum() * v[0], 1, a),
                         lambda a: np.apply_along_axis(lambda v: v.sum() * v[0], 1, a),
                         (rng.normal(size=(2, 3, 4)),)),
    "apply_over_axes": (lambda a: jnp.apply_over_axes(jnp.sum, a, [0, 1]),
                        lambda a: np.apply_over_axes(np.sum, a, [0, 1]), (A,)),
    "block": (lambda a, b: jnp.block([[a, b], [jnp.ones((1, 3))]]),
              lambda a, b: np.block([[a, b], [np.ones((1, 3))]]), (np.ones((2, 2)), np.zeros((2, 1)))),
    "put": (lambda a: jnp.put(a, np.array([0, -1]), np.array([9, 8]), inplace=False),
            lambda a: _np_put(a, [0, -1], [9, 8]), (I,)),
    "place": (lambda a: jnp.place(a, a % 2 == 0, np.array([7, 8]), inplace=False),
              lambda a: _np_place(a, a % 2 == 0, [7, 8]), (I,)),
    "divmod": (lambda a: jnp.divmod(a, 3), lambda a: np.divmod(a, 3), (I,)),
    "modf": (jnp.modf, np.modf, (A,)),
    "frexp": (jnp.frexp, np.frexp, (np.array([0., 3., -0.5, np.inf, -7e-3, 3e38], np.float32),)),
    "ldexp": (jnp.ldexp, np.ldexp, (A, np.array([1, -2, 3, 0, 20], np.int32))),
    "gcd": (lambda a: jnp.gcd(a, 12), lambda a: np.gcd(a, 12), (I,)),
    "lcm": (lambda a: jnp.lcm(a, 4), lambda a: np.lcm(a, 4), (I,)),
    "spacing": (jnp.spacing, np.spacing, (A,)),
    "fabs": (jnp.fabs, np.fabs, (I,)),
    "isposinf": (jnp.isposinf, np.isposinf, (np.array([1, np.inf, -np.inf], np.float32),)),
    "isneginf": (jnp.isneginf, np.isneginf, (np.array([1, np.inf, -np.inf], np.float32),)),
    "nan_to_num": (jnp.nan_to_num, np.nan_to_num, (np.array([np.nan, np.inf, -np.inf, 1], np.float32),)),
    "nanargmax": (lambda a: jnp.nanargmax(a, axis=1), lambda a: np.nanargmax(a, axis=1), (WITH_NAN[:2],)),
    "nanargmin": (lambda a: jnp.nanargmin(a, axis=0), lambda a: np.nanargmin(a[:2], axis=0), (WITH_NAN[:2],)),
    "nanmedian": (lambda a: jnp.nanmedian(a, axis=1), lambda a: np.nanmedian(a, axis=1), (WITH_NAN,)),
    "nanpercentile": (lambda a: jnp.nanpercentile(a, np.array([10, 90]), axis=0, keepdims=True),
                      lambda a: np.nanpercentile(a, [10, 90], axis=0, keepdims=True), (WITH_NAN,)),
    "cov": (jnp.cov, np.cov, (A,)),
    "cov_weighted": (lambda a, b, f, w: jnp.cov(a, b, rowvar=False, ddof=0, fweights=f, aweights=w),
                     lambda a, b, f, w: np.cov(a, b, rowvar=False, ddof=0, fweights=f, aweights=w),
                     (A, A[::-1], np.array([1, 2, 1, 3]), X[:4])),
    "corrcoef": (jnp.corrcoef, np.corrcoef, (A,)),
    "hanning": (lambda: jnp.hanning(7), lambda: np.hanning(7), ()),
    "hamming": (lambda: jnp.hamming(6), lambda: np.hamming(6), ()),
    "blackman": (lambda: jnp.blackman(6), lambda: np.blackman(6), ()),
    "bartlett": (lambda: jnp.bartlett(5), lambda: np.bartlett(5), ()),
    "kaiser": (lambda: jnp.kaiser(6, 3.), lambda: np.kaiser(6, 3.), ()),
    "i0": (jnp.i0, np.i0, (np.array([0., 1., -3., 20.], np.float32),)),
    "mgrid": (lambda: jnp.mgrid[0:3, 0:1:4j], lambda: np.mgrid[0:3, 0:1:4j], ()),
    "ogrid": (lambda: jnp.ogrid[0:3, 0:4], lambda: np.ogrid[0:3, 0:4], ()),
    "indices": (lambda: jnp.indices((2, 3)), lambda: np.indices((2, 3)), ()),
    "tril_indices": (lambda: jnp.tril_indices(4, 1, 5), lambda: np.tril_indices(4, 1, 5), ()),
    "triu_indices_from": (lambda: jnp.triu_indices_from(A), lambda: np.triu_indices_from(A), ()),
    "diag_indices": (lambda: jnp.diag_indices(3, 3), lambda: np.diag_indices(3, 3), ()),
    "array_equal_nan": (lambda a: jnp.array_equal(a, a, equal_nan=True),
                        lambda a: np.array_equal(a, a, equal_nan=True), (WITH_NAN,)),
    "array_equiv": (lambda a: jnp.array_equiv(a, a[0]), lambda a: np.array_equiv(a, a[0]), (A,)),
}


def _assert_matches(got, want, rtol=2e-5, atol=2e-5):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_matches(g, w, rtol, atol)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy_eager_and_jit(name):
    fn, reference, args = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # numpy's all-NaN and overflow warnings
        want = reference(*args)
    _assert_matches(fn(*args), want)
    _assert_matches(jaxlite.jit(fn)(*args), want)


def test_einsum_path_plans_pairwise_contractions():
    path, report = jnp.einsum_path("ij,jk,kl->il", np.ones((2, 3)), jnp.ones((3, 4)), np.ones((4, 5)))
    # numpy's greedy planner may pick another first pair than opt_einsum's (JAX's); both
    # are two pairwise steps, the second joining the intermediate with the last operand.
    assert len(path) == 2 and all(len(step) == 2 for step in path) and path[-1] == (0, 1)
    assert "Optimized scaling" in report


def test_frexp_of_subnormals_eagerly():
    # Arithmetic flushes subnormals to signed zeros, eagerly as in XLA; JAX 0.10.2 then gives
    # (+-0.5, -149) for float32 subnormals, and so does jaxlite (recorded from JAX).
    x = np.array([1e-40, -1e-45, 2e-39, 0.0, -0.0, 3.0], np.float32)
    mantissa, exponent = jnp.frexp(x)
    np.testing.assert_array_equal(mantissa, np.array([0.5, -0.5, 0.5, 0.0, -0.0, 0.75], np.float32))
    np.testing.assert_array_equal(np.signbit(mantissa), [False, True, False, False, True, False])
    np.testing.assert_array_equal(exponent, np.array([-149, -149, -149, 0, 0, 2], np.int32))


def test_dtypes_follow_jax():
    assert jnp.bitwise_count(np.array([-1, 7], np.int16)).dtype == np.uint8
    assert jnp.polyval(np.array([1, 2], np.int32), 3).dtype == np.int32
    assert jnp.polymul(np.array([1, 2], np.int32), np.array([3], np.int32)).dtype == np.float32
    assert jnp.frexp(np.ones(2, np.float16))[1].dtype == np.int32
    assert jnp.digitize(X, np.array([1., 2])).dtype == np.int32
    assert jnp.tril_indices(3)[0].dtype == np.int32
    assert jnp.hanning(4).dtype == np.float32
    assert jnp.trapezoid(np.arange(4, dtype=np.int32)).dtype == np.float32
    assert jnp.astype(np.ones(2, np.float32), None).dtype == np.float32
    assert jnp.isdtype(jnp.float32, "real floating") and not jnp.isdtype(jnp.int8, "bool")
    assert jnp.isdtype(jnp.uint8, ("bool", "integral")) and jnp.can_cast(jnp.int8, jnp.int32)
    assert jnp.isscalar(jnp.ones(())) and jnp.isscalar(1.0) and not jnp.isscalar([1])
    assert jnp.float_ is jnp.float64 and jnp.int_ is jnp.int64 and jnp.single is jnp.float32
    assert (jnp.pi, jnp.e, jnp.newaxis) == (np.pi, np.e, None) and np.isnan(jnp.nan)


@st.composite
def two_integer_sets(draw):
    a = draw(hnp.arrays(np.int32, draw(hnp.array_shapes(max_dims=2, max_side=6)),
                        elements=st.integers(-4, 4)))
    b = draw(hnp.arrays(np.int32, st.integers(1, 6), elements=st.integers(-4, 4)))
    return a, b


SET_OPERATIONS = ["union1d", "intersect1d", "setdiff1d", "setxor1d"]


@settings(deadline=None, max_examples=15)
@given(st.sampled_from(SET_OPERATIONS), two_integer_sets())
def test_set_operations(name, sets):
    a, b = sets
    want = getattr(np, name)(a, b)
    np.testing.assert_array_equal(getattr(jnp, name)(a, b), want)
    size = a.size + b.size
    padded = jaxlite.jit(lambda x, y: getattr(jnp, name)(x, y, size=size, fill_value=-9))(a, b)
    np.testing.assert_array_equal(padded[:want.size], want)
    assert np.all(np.asarray(padded[want.size:]) == -9)


@settings(deadline=None, max_examples=10)
@given(two_integer_sets())
def test_intersect1d_indices_and_unique_family(sets):
    a, b = sets
    for got, want in zip(jnp.intersect1d(a, b, return_indices=True),
                         np.intersect1d(a, b, return_indices=True)):
        np.testing.assert_array_equal(got, want)
    for name in ("unique_all", "unique_counts", "unique_inverse"):
        for got, want in zip(getattr(jnp, name)(a), getattr(np, name)(a)):
            np.testing.assert_array_equal(got, want)
    # numpy 2.3 leaves unique_values unsorted; JAX sorts them, like np.unique.
    np.testing.assert_array_equal(jnp.unique_values(a), np.unique(a))


def test_data_dependent_sizes_need_size_under_jit():
    for fn in (jnp.union1d, jnp.intersect1d, jnp.setdiff1d, jnp.setxor1d):
        with pytest.raises(ConcretizationTypeError, match=fn.__name__):
            jaxlite.jit(fn)(I, B)
    with pytest.raises(ConcretizationTypeError, match="bincount"):
        jaxlite.jit(jnp.bincount)(np.abs(I))
    with pytest.raises(ConcretizationTypeError, match="unique"):
        jaxlite.jit(jnp.unique_values)(I)
    np.testing.assert_array_equal(
        jaxlite.jit(lambda x: jnp.unique_counts(x, size=8).counts)(I),
        np.pad(np.unique_counts(I).counts, (0, 8 - np.unique(I).size)))


def test_errors_match_jax():
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.fill_diagonal(np.zeros((2, 2)), 1.)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put(np.zeros(3), np.array([1]), 2.)
    with pytest.raises(ValueError, match="must be integers"):
        jnp.gcd(1., 2.)
    with pytest.raises(ValueError, match="ldexp not supported"):
        jnp.ldexp(1., 2.)
    with pytest.raises(TypeError, match="requires ndarray or scalar"):
        jnp.isin(I, [1, 2])
    with pytest.raises(ValueError, match="matrix_transpose requires at least 2"):
        jnp.matrix_transpose(X)
    with pytest.raises(NotImplementedError, match="fromiter"):
        jnp.fromiter(iter([1, 2]))


@settings(deadline=None, max_examples=15)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=5),
                  elements=st.floats(-10, 10, width=32)), st.data())
def test_vectorize_gradient_and_trapezoid_shapes(a, data):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    np.testing.assert_allclose(jnp.trapezoid(a, axis=axis), np.trapezoid(a, axis=axis),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(jnp.gradient(a, axis=axis), np.gradient(a, axis=axis),
                               rtol=1e-5, atol=1e-4)
    dot = jnp.vectorize(lambda u, v: jnp.sum(u * v), signature="(n),(n)->()")
    np.testing.assert_allclose(dot(a, a[..., ::-1]), np.sum(a * a[..., ::-1], axis=-1),
                               rtol=1e-5, atol=1e-3)


def test_vmap_matches_loop():
    check_vmap(lambda x: jnp.interp(x, XP, FP), (X.reshape(4, 5),))
    check_vmap(lambda p: jnp.polyval(p, X), (rng.normal(size=(3, 4)).astype(np.float32),))
    check_vmap(jnp.vecdot, (A, A))
    check_vmap(lambda x: jnp.select([x < 1, x > 3], [x, -x], 5), (X.reshape(4, 5),))
    check_vmap(lambda a: jnp.nanquantile(a, 0.3), (WITH_NAN,))
    check_vmap(lambda x: jnp.histogram(x, 4, range=(0, 5))[0], (X.reshape(4, 5),))


def test_gradients():
    check_grads(lambda x: jnp.interp(x, XP, FP), (np.array([0.7, 2.1, 4.4], np.float32),), order=2)
    check_grads(lambda fp: jnp.interp(X[:4], XP, fp), (FP,), order=1)
    check_grads(lambda p, x: jnp.polyval(p, x), (P, X[:3]), order=2)
    check_grads(lambda a: jnp.trapezoid(a, x=XP[:5]), (A,), order=1)
    check_grads(jnp.gradient, (A[0],), order=1)
    check_grads(jnp.i0, (np.array([0.5, -2.0, 4.0], np.float32),), order=1, atol=2e-2, rtol=2e-2)
    check_grads(jnp.vecdot, (A, A[::-1]), order=2)
    check_grads(jnp.cov, (A,), order=1, atol=2e-2, rtol=2e-2)
    check_grads(lambda a: jnp.nanmedian(a, axis=1), (WITH_NAN[:2] + 0.1,), order=1)



def test_array_api_namespace_pieces():
    x = jnp.arange(4.0)
    assert jnp.__array_api_version__ == "2024.12"
    assert x.__array_namespace__() is jnp and x.device == jaxlite.devices()[0]
    assert x.to_device(x.device) is x
    info = jnp.__array_namespace_info__()
    assert info.default_device() == x.device and info.devices() == jaxlite.devices()
    assert info.default_dtypes()["real floating"] == np.float32
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
    np.testing.assert_array_equal(jnp.from_dlpack(np.arange(3.0)), np.arange(3.0))
    np.testing.assert_array_equal(np.from_dlpack(x), np.arange(4.0))
    assert type(x.__dlpack__()).__name__ == "PyCapsule"  # old DLPack consumers get a copy
    assert jnp.zeros(2, device=x.device).shape == (2,)
    with pytest.raises(TypeError, match="device="):
        jnp.ones(2, device="cpu")
    np.testing.assert_allclose(jnp.std(x, correction=1), np.std(np.arange(4.0), ddof=1))
    with pytest.raises(ValueError, match="ddof and correction"):
        jnp.var(x, ddof=1, correction=1)
    assert not jnp.float32 == ("x", "y") and not jnp.float32 == "linalg" and jnp.float32 != [1]


@pytest.mark.parametrize("x64", [False, True])
def test_accumulation_dtypes_follow_jax(x64, monkeypatch):
    """sum/prod/cumulative_sum widen narrow integers (to 64 bits with x64); cumsum and
    cumulative_prod keep them, as recorded from JAX 0.10.2."""
    from jaxlite.test_util import enable_x64
    expected = {  # dtype -> (sum, prod, cumsum, cumulative_sum, cumulative_prod) without / with x64
        "bool": ("int32 int32 int32 int32 int32", "int64 int64 int64 int64 int64"),
        "int8": ("int32 int32 int8 int32 int8", "int64 int64 int8 int64 int8"),
        "uint8": ("uint32 uint32 uint8 uint32 uint8", "uint64 uint64 uint8 uint64 uint8"),
        "uint32": ("uint32 uint32 uint32 uint32 uint32", "uint64 uint64 uint32 uint64 uint32"),
        "float16": ("float16 float16 float16 float16 float16",) * 2,
    }
    context = enable_x64() if x64 else warnings.catch_warnings()
    with context:
        for name, rows in expected.items():
            x = jnp.ones(3, name)
            got = [f(x).dtype.name for f in (jnp.sum, jnp.prod, jnp.cumsum, jnp.cumulative_sum,
                                             jnp.cumulative_prod)]
            assert " ".join(got) == rows[x64], name
        assert jnp.sum(jnp.ones(3, "int8"), promote_integers=False).dtype == np.int8
        assert jnp.prod(jnp.ones(3, "uint16"), promote_integers=False).dtype == np.uint16


def test_frompyfunc_methods_match_numpy_and_jax():
    """Values recorded from JAX 0.10.2 (its reduce starts from the first element)."""
    u = jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=0)
    reference = np.frompyfunc(lambda a, b: a * b + 1, 2, 1)
    x = np.arange(1., 5., dtype=np.float32)
    assert (u.nin, u.nout, u.nargs, u.identity) == (2, 1, 2, 0)
    _assert_matches(u(x, 2.), x * 2 + 1)
    _assert_matches(u.outer(x[:2], x[:3]), reference.outer(x[:2], x[:3]).astype(np.float32))
    _assert_matches(u.reduce(x), 41.)
    _assert_matches(jaxlite.jit(u.reduce)(x), 41.)
    _assert_matches(u.accumulate(x), reference.accumulate(x).astype(np.float32))
    _assert_matches(u.at(x, np.array([0, 0, 2]), 3., inplace=False), [13., 2., 10., 4.])
    _assert_matches(u.reduceat(x, np.array([0, 2])), [3., 13.])
    _assert_matches(u.reduce(np.ones((2, 3), np.float32), axis=1, keepdims=True), [[3.], [3.]])
    check_grads(u.reduce, (x,), order=2)
    with pytest.raises(NotImplementedError, match="inplace"):
        u.at(x, np.array([0]), 1.)
    with pytest.raises(ValueError, match="no identity"):
        jnp.frompyfunc(lambda a, b: a + b, 2, 1).reduce(np.ones(0, np.float32))


def test_eye_diagonal_offsets_past_the_corners():
    """k beyond the array (even beyond int32, as the array API suite draws) gives no ones."""
    for k in (-5, -3, 0, 2, 4, 2 ** 31):
        np.testing.assert_array_equal(jnp.eye(3, 4, k=k), np.eye(3, 4, k=k))


def test_namespace_info_default_dtypes_name_complex():
    info = jnp.__array_namespace_info__()
    assert info.default_dtypes()["complex floating"] == np.complex64
    assert set(info.dtypes(kind="complex floating")) == {"complex64"}


_X, _I = np.array([3.0, 1.0, 2.0, 1.0]), np.array([1, 0, 3, 1])
# Index results under jax_enable_x64, as JAX 0.10.2 gives them: the default integer dtype
# (int64), except argpartition and searchsorted (int32) and ravel_multi_index (the
# coordinates' dtype). Without x64 every one is int32.
INDEX_RESULTS = {
    "argmax": (lambda: jnp.argmax(_X), "int64"), "nanargmin": (lambda: jnp.nanargmin(_X), "int64"),
    "argsort": (lambda: jnp.argsort(_X, descending=True), "int64"), "lexsort": (lambda: jnp.lexsort((_X,)), "int64"),
    "nonzero": (lambda: jnp.nonzero(_X)[0], "int64"), "nonzero_size": (lambda: jnp.nonzero(_X, size=2)[0], "int64"),
    "argwhere": (lambda: jnp.argwhere(_X), "int64"), "where": (lambda: jnp.where(_X > 1)[0], "int64"),
    "unique_inverse": (lambda: jnp.unique(_X, return_inverse=True)[1], "int64"),
    "unique_counts_size": (lambda: jnp.unique(_X, return_counts=True, size=3)[1], "int64"),
    "tril_indices": (lambda: jnp.tril_indices(2)[0], "int64"), "diag_indices": (lambda: jnp.diag_indices(2)[0], "int64"),
    "indices": (lambda: jnp.indices((2,)), "int64"),
    "ravel_multi_index": (lambda: jnp.ravel_multi_index((np.int32([1]), np.int32([1])), (2, 2)), "int32"),
    "argpartition": (lambda: jnp.argpartition(_X, 1), "int32"), "searchsorted": (lambda: jnp.searchsorted(_X, 2.0), "int32"),
}


@pytest.mark.parametrize("name", sorted(INDEX_RESULTS))
def test_index_results_take_the_default_integer_dtype(name, enable_x64):
    fn, dtype = INDEX_RESULTS[name]
    assert fn().dtype == np.dtype(dtype)
    assert jaxlite.jit(fn)().dtype == np.dtype(dtype)


# The dtype JAX 0.10.2 gives integers and bools made inexact under jax_enable_x64: by width
# (64-bit integers float64, narrower ones and bool float32), except where a function takes
# the default float (rint, angle, unwrap) or promotes with a Python float.
INEXACT_RESULTS = {
    "sin_int32": (lambda: jnp.sin(np.int32([1, 2])), "float32"), "sin_int64": (lambda: jnp.sin(np.int64([1, 2])), "float64"),
    "mean_bool": (lambda: jnp.mean(np.array([True, False])), "float32"), "var_uint8": (lambda: jnp.var(np.uint8([1, 2])), "float32"),
    "divide_int16": (lambda: jnp.true_divide(np.int16([1]), np.int16([2])), "float32"),
    "divide_by_python_int": (lambda: jnp.divide(np.int32([1]), 2), "float32"),
    "sin_python_int": (lambda: jnp.sin(2), "float64"),
    "float_power_float32": (lambda: jnp.float_power(np.float32([2]), np.float32([3])), "float32"),
    "convolve_int8": (lambda: jnp.convolve(np.int8([1, 2]), np.int8([1, 1])), "float32"),
    "rint_int32": (lambda: jnp.rint(np.int32([1, 2])), "float64"), "angle_int32": (lambda: jnp.angle(np.int32([1, -2])), "float64"),
    "angle_float32_scalar": (lambda: jnp.angle(np.float32(-1)), "float64"),
    "unwrap_int32": (lambda: jnp.unwrap(np.int32([0, 7, 1])), "float64"), "tri": (lambda: jnp.tri(2), "float32"),
    "histogramdd_counts": (lambda: jnp.histogramdd(np.ones((4, 2), np.float32))[0], "int64"),
}


@pytest.mark.parametrize("name", sorted(INEXACT_RESULTS))
def test_inexact_results_take_jax_dtypes(name, enable_x64):
    fn, dtype = INEXACT_RESULTS[name]
    assert fn().dtype == np.dtype(dtype)


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanvar", "nanstd", "nanprod", "nancumsum", "nancumprod"])
def test_nan_functions_of_complex_skip_complex_nans(name):
    """A complex entry with a NaN part is skipped, as numpy and JAX skip it (nanvar's
    squares are |x - mean|^2, real)."""
    z = np.array([[1 + 2j, 3 - 1j], [np.nan, 2j], [complex(0, np.nan), 1]], np.complex64)
    for axis in (None, 0):
        want = getattr(np, name)(z.astype(np.complex128), axis=axis)
        for fn in (getattr(jnp, name), jaxlite.jit(getattr(jnp, name), static_argnames="axis")):
            got = fn(z, axis=axis)
            assert got.dtype == want.astype(np.complex64 if want.dtype.kind == "c" else np.float32).dtype
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_spaced_values_with_array_end_points_and_axis():
    """linspace/logspace/geomspace broadcast array end points and place the values along
    `axis`; linspace's retstep gives the step (NaN for fewer than two values), as JAX's and
    numpy's."""
    start, stop = np.array([0.0, 1.0], np.float32), np.array([[2.0], [3.0], [4.0]], np.float32)
    for axis in (0, 1, -1):
        np.testing.assert_allclose(jnp.linspace(start, stop, 5, axis=axis), np.linspace(start, stop, 5, axis=axis), rtol=1e-6)
        np.testing.assert_allclose(jnp.logspace(start, stop, 4, axis=axis), np.logspace(start, stop, 4, axis=axis), rtol=1e-5)
        np.testing.assert_allclose(jnp.geomspace(start + 1, stop, 4, axis=axis), np.geomspace(start + 1, stop, 4, axis=axis), rtol=1e-5)
    values, step = jnp.linspace(0.0, 1.0, 4, endpoint=False, retstep=True)
    np.testing.assert_allclose(values, [0, 0.25, 0.5, 0.75])
    np.testing.assert_allclose(step, 0.25)
    assert np.isnan(jnp.linspace(0.0, 1.0, 1, retstep=True)[1])
    jitted = jaxlite.jit(lambda a, b: jnp.linspace(a, b, 3, axis=1))(start, stop[:2, :1])
    np.testing.assert_allclose(jitted, np.linspace(start, stop[:2, :1], 3, axis=1), rtol=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        jnp.linspace(0, 1, -1)


def test_jax_keyword_arguments_of_reductions_stack_take_and_top_k():
    """Parameters JAX 0.10.2 has: var/std(mean=), stack(dtype=), take's positional out and
    its index promises, lax.top_k(axis=)."""
    x = (np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) % 7)
    given = np.mean(x, axis=1, keepdims=True)
    np.testing.assert_allclose(jnp.var(x, axis=1, mean=given), np.var(x, axis=1, mean=given), rtol=1e-6)
    np.testing.assert_allclose(jnp.std(x, mean=3.0), np.sqrt(np.mean((x - 3.0) ** 2)), rtol=1e-6)
    assert jnp.stack([np.ones(2), np.zeros(2)], dtype=jnp.int32).dtype == np.int32
    np.testing.assert_array_equal(jnp.take(np.arange(5), np.array([7, 1]), 0, None, "clip", True, True), [4, 1])
    for axis in (0, 1, -1):
        values, indices = lax.top_k(x, 2, axis=axis)
        want = -np.sort(-x, axis=axis, kind="stable").take([0, 1], axis=axis)
        np.testing.assert_array_equal(values, want)
        np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(indices), axis=axis), want)


def test_argsort_dtype_and_searchsorted_methods():
    assert jnp.argsort(np.array([3, 1, 2]), dtype=jnp.int16).dtype == np.int16
    for method in ("compare_all", "scan", "scan_unrolled", "sort"):
        assert int(jnp.searchsorted(np.arange(3), 1, method=method)) == 1
    with pytest.raises(ValueError, match="invalid argument method='bogus'"):
        jnp.searchsorted(np.arange(3), 1, method="bogus")


def test_setdiff1d_keeps_the_first_arrays_dtype():
    a, b = np.array([1, 2, 3], np.int8), np.array([1, 5], np.int16)
    for out in (jnp.setdiff1d(a, b), jaxlite.jit(lambda a, b: jnp.setdiff1d(a, b, size=2))(a, b)):
        assert out.dtype == np.int8 and out.tolist() == [2, 3]
    assert jnp.setdiff1d(b, a).dtype == np.int16
