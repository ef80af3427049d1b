"""jaxlite.scipy.stats against scipy.stats: every function of every distribution module
at random points of (and around) its support, in float32; jit native and equal to eager;
gradients of log densities; vmap against a loop; sem, rankdata, mode."""
import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.scipy.stats as S
from jaxlite.lower.fusion import EqnStep
from jaxlite.test_util import check_grads, check_vmap, enable_x64


def _uniform(lo, hi):
    return lambda rng, n: rng.uniform(lo, hi, n)


def _integers(lo, hi):
    return lambda rng, n: rng.integers(lo, hi, n).astype(float)


X = _uniform(-4, 4)
POSITIVE = _uniform(0.2, 5)
PROBABILITY = _uniform(0.01, 0.99)
# distribution: (argument samplers after the point, sampler of points, of quantiles)
CONTINUOUS = {
    "norm": ([X, POSITIVE], X), "cauchy": ([X, POSITIVE], X), "laplace": ([X, POSITIVE], X),
    "logistic": ([X, POSITIVE], X), "expon": ([X, POSITIVE], X), "uniform": ([X, POSITIVE], X),
    "pareto": ([POSITIVE, X, POSITIVE], _uniform(-3, 12)), "gamma": ([POSITIVE, X, POSITIVE], _uniform(-3, 12)),
    "chi2": ([POSITIVE, X, POSITIVE], _uniform(-3, 12)), "t": ([POSITIVE, X, POSITIVE], X),
    "beta": ([POSITIVE, POSITIVE], _uniform(-0.1, 1.1)), "gumbel_r": ([X, POSITIVE], X),
    "gumbel_l": ([X, POSITIVE], X), "gennorm": ([POSITIVE], X),
    "truncnorm": ([_uniform(-3, -0.5), _uniform(0.5, 3)], X),
    "vonmises": ([POSITIVE], _uniform(-3, 3)), "wrapcauchy": ([PROBABILITY], _uniform(0, 6.2)),
}
DISCRETE = {
    "poisson": ([POSITIVE], _integers(-1, 12)), "bernoulli": ([PROBABILITY], _integers(-1, 3)),
    "binom": ([_integers(1, 20), PROBABILITY], _integers(-1, 20)),
    "geom": ([PROBABILITY], _integers(0, 12)),
    "nbinom": ([_integers(1, 10), PROBABILITY], _integers(-1, 15)),
    "betabinom": ([_integers(1, 20), POSITIVE, POSITIVE], _integers(-1, 20)),
}
QUANTILE_FUNCTIONS = {"ppf", "isf"}
RTOL = {"gamma": 2e-5, "chi2": 2e-5, "beta": 5e-5, "gennorm": 2e-5, "truncnorm": 2e-5,
        "betabinom": 2e-5, "binom": 2e-5, "nbinom": 2e-5, "poisson": 2e-5, "t": 1e-5}


def _functions(name):
    return [f for f in dir(getattr(S, name)) if not f.startswith("_") and callable(getattr(getattr(S, name), f))]


CASES = [(name, f) for name in sorted({**CONTINUOUS, **DISCRETE}) for f in _functions(name)
         if f != "entropy"]


def _arguments(name, function, seed, n=48):
    rng = np.random.default_rng(seed)
    samplers, points = {**CONTINUOUS, **DISCRETE}[name]
    point = PROBABILITY(rng, n) if function in QUANTILE_FUNCTIONS else points(rng, n)
    args = [point] + [sampler(rng, n) for sampler in samplers]
    if function in ("cdf", "ppf") and name == "bernoulli":
        args = args[:2]   # JAX's bernoulli.cdf and ppf take no loc
    return [a.astype(np.float32) for a in args]


def _scipy(name, function, args):
    scipy_function = {"logpmf": "logpmf", "pmf": "pmf"}.get(function, function)
    return getattr(getattr(ss, name), scipy_function)(*[a.astype(np.float64) for a in args])


@pytest.mark.parametrize("name,function", CASES)
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_agrees_with_scipy(name, function, seed):
    args = _arguments(name, function, seed)
    got = getattr(getattr(S, name), function)(*args)
    assert got.dtype == np.float32
    want = _scipy(name, function, args)
    atol = 1e-6 if function in ("pdf", "pmf", "cdf", "sf") else 1e-5
    np.testing.assert_allclose(np.asarray(got), want, rtol=RTOL.get(name, 5e-6), atol=atol)


def test_poisson_entropy():
    mu = np.float32([0.5, 3.0, 40.0])
    np.testing.assert_allclose(np.asarray(S.poisson.entropy(mu)), ss.poisson.entropy(mu), rtol=1e-5)


def test_multivariate_distributions():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = (a @ a.T + 3 * np.eye(3)).astype(np.float32)
    mean, x = rng.standard_normal(3).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(S.multivariate_normal.logpdf(x, mean, cov)),
                               ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(S.multivariate_normal.pdf(x[0], mean, cov)),
                               ss.multivariate_normal.pdf(x[0], mean, cov), rtol=1e-5)
    alpha = np.float32([0.5, 2.0, 3.0])
    point = rng.dirichlet(alpha, 4).T.astype(np.float32)
    exact = point.astype(float) / point.astype(float).sum(0)
    np.testing.assert_allclose(np.asarray(S.dirichlet.logpdf(point, alpha)),
                               ss.dirichlet.logpdf(exact, alpha), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(S.dirichlet.logpdf(point[:2], alpha)),
                               ss.dirichlet.logpdf(exact, alpha), rtol=1e-4)
    counts, p = np.float32([2, 3, 5]), np.float32([0.2, 0.3, 0.5])
    np.testing.assert_allclose(np.asarray(S.multinomial.logpmf(counts, 10, p)),
                               ss.multinomial.logpmf(counts, 10, p), rtol=1e-5)
    assert np.asarray(S.multinomial.pmf(counts, 11, p)) == 0


def test_sem_rankdata_mode():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 5, (4, 9)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(S.sem(x, axis=1)), ss.sem(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(S.sem(x, axis=None)), ss.sem(x, axis=None), rtol=1e-6)
    for method in ["average", "min", "max", "dense", "ordinal"]:
        np.testing.assert_array_equal(np.asarray(S.rankdata(x, method, axis=1)), ss.rankdata(x, method, axis=1))
        np.testing.assert_array_equal(np.asarray(S.rankdata(x, method)), ss.rankdata(x, method))
    got, want = S.mode(x, axis=1), ss.mode(x, axis=1)
    np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
    np.testing.assert_array_equal(np.asarray(got.count), want.count)
    assert got.count.dtype == np.int32 and S.mode(x, keepdims=True).mode.shape == (1, 9)
    assert np.isnan(np.asarray(S.rankdata(np.float32([1, np.nan])))).all()
    with pytest.raises(NotImplementedError, match="omit"):
        S.sem(x, nan_policy="omit")
    with pytest.raises(ValueError, match="method"):
        S.rankdata(x, "nonsense")


def _fallback_steps(fun, *args):
    steps = jaxlite.jit(fun).lower(*args).program.steps
    return [s.eqn.primitive.name for s in steps if isinstance(s, EqnStep) and s.kind == "fallback"]


@pytest.mark.parametrize("name,function", [("norm", "logcdf"), ("gamma", "cdf"), ("beta", "sf"),
                                           ("truncnorm", "logpdf"), ("poisson", "cdf"), ("t", "logpdf"),
                                           ("binom", "logpmf"), ("norm", "ppf")])
def test_jit_is_native_and_agrees_with_eager(name, function):
    fun = getattr(getattr(S, name), function)
    args = _arguments(name, function, 3, n=16)
    assert _fallback_steps(fun, *args) == []
    np.testing.assert_allclose(np.asarray(jaxlite.jit(fun)(*args)), np.asarray(fun(*args)), rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("name,args", [("norm", (0.3, 0.5, 1.7)), ("t", (0.3, 4.0, 0.5, 1.7)),
                                       ("gamma", (2.5, 1.5, 0.1, 2.0)), ("beta", (0.3, 2.0, 3.0)),
                                       ("truncnorm", (0.3, -1.0, 2.0)), ("vonmises", (0.4, 2.0))])
def test_log_density_gradients(name, args):
    with enable_x64():
        check_grads(getattr(S, name).logpdf, [np.float64(a) for a in args], order=1, atol=1e-6, rtol=1e-6)


def test_vmap_agrees_with_a_loop():
    args = [a.reshape(4, 12) for a in _arguments("gamma", "cdf", 4)]
    check_vmap(S.gamma.cdf, args, atol=1e-6, rtol=1e-5)


def test_gaussian_kde_as_scipy():
    rng = np.random.default_rng(2)
    data, points = rng.standard_normal((2, 30)).astype(np.float32), rng.standard_normal((2, 5)).astype(np.float32)
    weights = rng.uniform(0.5, 2, 30).astype(np.float32)
    for bw_method in [None, "silverman", 0.3]:
        got, want = S.gaussian_kde(data, bw_method, weights), ss.gaussian_kde(data, bw_method, weights)
        np.testing.assert_allclose(np.asarray(got.covariance), want.covariance, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(got.evaluate(points)), want.evaluate(points), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(got.logpdf(points)), want.logpdf(points), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(got.neff), want.neff, rtol=1e-5)
    got, want = S.gaussian_kde(data), ss.gaussian_kde(data)
    np.testing.assert_allclose(np.asarray(got.integrate_kde(S.gaussian_kde(2 * data))),
                               want.integrate_kde(ss.gaussian_kde(2 * data)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got.integrate_gaussian(np.zeros(2), np.eye(2))),
                               want.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-5)
    one = S.gaussian_kde(data[0])
    np.testing.assert_allclose(np.asarray(one.integrate_box_1d(-0.5, 1.0)),
                               ss.gaussian_kde(data[0]).integrate_box_1d(-0.5, 1.0), rtol=1e-5)
    assert one.resample(jaxlite.random.key(0), (7,)).shape == (1, 7)
    leaves = jaxlite.tree_util.tree_leaves(got)
    assert len(leaves) == 5
    fun = lambda d, p: S.gaussian_kde(d).logpdf(p)   # noqa: E731
    assert _fallback_steps(fun, data, points) == []
    np.testing.assert_allclose(np.asarray(jaxlite.jit(fun)(data, points)), want.logpdf(points), rtol=1e-5)
    with pytest.raises(NotImplementedError):
        got.set_bandwidth("scott")
