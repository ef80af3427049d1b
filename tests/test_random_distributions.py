"""jaxlite.random's gamma family, rejection samplers and multivariate samplers against JAX's
recorded samples (tests/data/jax_random_distributions.json), their moments, and transforms."""
import json
import pathlib
import sys

import numpy as np
import pytest
import scipy.special
import scipy.stats

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import random

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "jax_random_distributions.json").read_text())
k0, k1, k7 = (random.PRNGKey(s) for s in (0, 1, 7))
a = jnp.array

sys.path.insert(0, str(pathlib.Path(__file__).parent / "data"))
from record_jax_random_distributions import calls  # noqa: E402  (the recorded calls, made with jaxlite)

CALLS = calls(jaxlite)

# Bit-identical: only exact float operations (and uniforms) decide these, or the
# transcendentals they use (log in the rejection tests) land on the same side.
EXACT = ("poisson", "binomial", "multinomial", "geometric", "triangular", "clone", "x64: poisson",
         "x64: binomial", "gamma(k7, [[1.0], [4.0]], (2, 3))", "loggamma(k7, 0.001", "beta(k1")
# The rest pass through erf_inv (every normal), log, exp, pow or sqrt of a sum, whose
# last bits differ between numpy's libm and XLA's float32 approximations, and XLA
# fuses some multiply-adds (wald, the einsum of multivariate_normal): a few ulps.
RTOL = 4e-6


def test_every_reference_has_a_call():
    assert set(CALLS) == {k for k in DATA if k not in ("source", "note")}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_matches_jax(name, request):
    if name.startswith("x64: "):
        request.getfixturevalue("enable_x64")
    entry = DATA[name]
    got = np.asarray(CALLS[name]())
    assert got.shape == tuple(entry["shape"]) and got.dtype.name == entry["dtype"]
    if "hex" not in entry:
        assert got.reshape(-1).tolist() == entry["values"]
        return
    want = np.array([float.fromhex(h) for h in entry["hex"]]).reshape(got.shape)
    if name.startswith(EXACT):
        np.testing.assert_array_equal(got.astype(np.float64), want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=RTOL, atol=1e-30)


# ---------------------------------------------------------------- distributions


@pytest.mark.parametrize("sample, dist", [
    (lambda k: random.gamma(k, 0.7, (4000,)), scipy.stats.gamma(0.7)),
    (lambda k: random.gamma(k, 9.0, (4000,)), scipy.stats.gamma(9.0)),
    (lambda k: jnp.exp(random.loggamma(k, 0.2, (4000,))), scipy.stats.gamma(0.2)),
    (lambda k: random.beta(k, 0.5, 3.0, (4000,)), scipy.stats.beta(0.5, 3.0)),
    (lambda k: random.t(k, 5.0, (4000,)), scipy.stats.t(5.0)),
    (lambda k: random.chisquare(k, 3.0, (4000,)), scipy.stats.chi2(3.0)),
    (lambda k: random.f(k, 4.0, 9.0, (4000,)), scipy.stats.f(4.0, 9.0)),
    (lambda k: random.maxwell(k, (4000,)), scipy.stats.maxwell()),
    (lambda k: random.wald(k, 0.8, (4000,)), scipy.stats.invgauss(0.8)),
    (lambda k: random.triangular(k, -1.0, 0.5, 2.0, (4000,)), scipy.stats.triang(0.5, -1.0, 3.0)),
    (lambda k: random.generalized_normal(k, 3.0, (4000,)), scipy.stats.gennorm(3.0)),
    (lambda k: jnp.abs(random.double_sided_maxwell(k, 1.0, 2.0, (4000,)) - 1) / 2, scipy.stats.maxwell()),
])
def test_continuous_samples_follow_the_distribution(sample, dist):
    x = np.asarray(sample(k1), dtype=np.float64)
    assert scipy.stats.kstest(x, dist.cdf).pvalue > 1e-4


@pytest.mark.parametrize("sample, dist", [
    (lambda k: random.poisson(k, 4.0, (4000,)), scipy.stats.poisson(4.0)),
    (lambda k: random.poisson(k, 60.0, (4000,)), scipy.stats.poisson(60.0)),
    (lambda k: random.binomial(k, 30, 0.2, (4000,)), scipy.stats.binom(30, 0.2)),
    (lambda k: random.binomial(k, 500, 0.7, (4000,)), scipy.stats.binom(500, 0.7)),
    (lambda k: random.geometric(k, 0.25, (4000,)), scipy.stats.geom(0.25)),
])
def test_counts_have_the_distributions_mean_and_variance(sample, dist):
    x = np.asarray(sample(k1), dtype=np.float64)
    assert np.all(x == np.round(x)) and x.min() >= dist.support()[0]
    assert abs(x.mean() - dist.mean()) < 5 * dist.std() / np.sqrt(x.size)
    assert abs(x.var() / dist.var() - 1) < 0.1


def test_dirichlet_and_multinomial_rows():
    d = np.asarray(random.dirichlet(k1, a([0.5, 1.0, 4.0]), (3000,)), dtype=np.float64)
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), np.array([0.5, 1.0, 4.0]) / 5.5, atol=0.015)
    counts = np.asarray(random.multinomial(k1, 50.0, a([0.1, 0.6, 0.3]), shape=(2000, 3)))
    assert np.all(counts.sum(-1) == 50)
    np.testing.assert_allclose(counts.mean(0), [5, 30, 15], rtol=0.03)


def test_ball_orthogonal_and_multivariate_normal_geometry():
    points = np.asarray(random.ball(k1, 3, p=1.5, shape=(500,)))
    assert np.all(np.sum(np.abs(points) ** 1.5, axis=-1) <= 1)
    q = np.asarray(random.orthogonal(k1, 5, (4,)), dtype=np.float64)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(5), (4, 5, 5)), atol=1e-5)
    cov = np.array([[2.0, 0.6], [0.6, 0.5]])
    for method in ("cholesky", "svd", "eigh"):
        x = np.asarray(random.multivariate_normal(k1, a([1.0, -2.0]), a(cov), (6000,), method=method))
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.08)
        np.testing.assert_allclose(x.mean(0), [1.0, -2.0], atol=0.06)


def test_parameter_errors():
    with pytest.raises(ValueError, match="float dtype"):
        random.gamma(k0, 1.0, dtype=jnp.int32)
    with pytest.raises(ValueError, match="int dtype"):
        random.poisson(k0, 1.0, dtype=jnp.float32)
    with pytest.raises(ValueError, match="shapes"):
        random.beta(k0, jnp.ones(3), 1.0, (2,))
    with pytest.raises(ValueError, match="alpha.ndim"):
        random.dirichlet(k0, 1.0)
    with pytest.raises(ValueError, match="cov.shape"):
        random.multivariate_normal(k0, jnp.zeros(2), jnp.eye(3))
    with pytest.raises(ValueError, match="method"):
        random.multivariate_normal(k0, jnp.zeros(2), jnp.eye(2), method="qr")


def test_invalid_counts_give_nan_and_inf():
    got = np.asarray(random.binomial(k0, a([-1.0, np.inf, 5.0, 5.0]), a([0.5, 0.5, np.nan, 1.0])))
    assert np.isnan(got[0]) and got[1] == np.inf and np.isnan(got[2]) and got[3] == 5


# ---------------------------------------------------------------- transforms


@pytest.mark.parametrize("sample", [
    lambda k: random.gamma(k, a([0.4, 3.0, 20.0])),
    lambda k: random.beta(k, 2.0, a([0.5, 4.0])),
    lambda k: random.dirichlet(k, a([1.0, 2.0])),
    lambda k: random.multinomial(k, 9.0, a([0.5, 0.2, 0.3])),
], ids=["gamma", "beta", "dirichlet", "multinomial"])
def test_jit_matches_eager_and_vmap_matches_a_loop(sample):
    keys = random.split(k1, 3)
    eager = np.stack([np.asarray(sample(k)) for k in keys])
    np.testing.assert_allclose(jaxlite.jit(sample)(keys[0]), eager[0], rtol=2e-6)
    np.testing.assert_allclose(jaxlite.vmap(sample)(keys), eager, rtol=1e-6)


@pytest.mark.parametrize("sample", [
    lambda k: random.poisson(k, a([3.0, 30.0, 1000.0, 12.0, 15.0])),
    lambda k: random.binomial(k, a([4.0, 300.0]), 0.3),
], ids=["poisson", "binomial"])
def test_counts_under_jit_match_eager(sample):
    np.testing.assert_array_equal(jaxlite.jit(sample)(random.split(k1, 3)[0]), sample(random.split(k1, 3)[0]))


def test_poisson_batches_like_a_loop():
    keys = random.split(k1, 4)
    sample = lambda k: random.poisson(k, a([2.0, 40.0]))
    np.testing.assert_array_equal(jaxlite.vmap(sample)(keys), np.stack([sample(k) for k in keys]))


def test_gamma_is_one_equation_batched_over_keys_and_shapes():
    jaxpr = jaxlite.make_jaxpr(lambda k, s: random.gamma(k, s, (3,)))(k0, 2.0)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns][-1] == "random_gamma"
    shapes = a([[0.5, 2.0], [3.0, 9.0]])
    batched = jaxlite.vmap(lambda k, s: random.gamma(k, s))(random.split(k0, 2), shapes)
    np.testing.assert_array_equal(batched, np.stack([random.gamma(k, s) for k, s in
                                                     zip(random.split(k0, 2), shapes)]))


@pytest.mark.parametrize("log_space", [False, True])
def test_gamma_gradient_is_the_implicit_derivative(enable_x64, log_space):
    """d sample / d a at a fixed CDF value: -(dP(a, x)/da) / (dP(a, x)/dx), from scipy."""
    sampler = random.loggamma if log_space else random.gamma
    shapes = np.array([0.3, 1.7, 6.0, 40.0])
    grads = jaxlite.vmap(jaxlite.grad(lambda s, k: sampler(k, s)))(jnp.asarray(shapes), random.split(k7, 4))
    x = np.asarray(jaxlite.vmap(lambda s, k: sampler(k, s))(jnp.asarray(shapes), random.split(k7, 4)))
    x = np.exp(x) if log_space else x
    h = 1e-6 * shapes
    dp_da = (scipy.special.gammainc(shapes + h, x) - scipy.special.gammainc(shapes - h, x)) / (2 * h)
    expected = -dp_da / scipy.stats.gamma(shapes).pdf(x)
    np.testing.assert_allclose(grads, expected / x if log_space else expected, rtol=1e-5)
