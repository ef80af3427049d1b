"""jaxlite.scipy.special against scipy.special: values over each function's domain in
float32 and float64, JAX's values at the edges, derivatives against central differences,
jit (native, no fallback step) against eager, vmap against a loop."""
import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.scipy.special as S
from jaxlite import lax
from jaxlite.lower.fusion import EqnStep
from jaxlite.test_util import check_grads, check_vmap, enable_x64

# name: (domain of each argument, float32 relative tolerance, scipy's function if named otherwise)
CASES = {
    "gammaln": ([(-10, 30)], 1e-6, None), "gamma": ([(-5, 20)], 1e-5, None),
    "gammasgn": ([(-5, 5)], 0, None), "loggamma": ([(0.01, 30)], 1e-6, None),
    "digamma": ([(-5, 30)], 1e-6, None), "erf": ([(-4, 4)], 1e-6, None),
    "erfc": ([(-4, 9)], 1e-6, None), "erfinv": ([(-1, 1)], 1e-6, None),
    "erfcx": ([(-9.3, 50)], 1e-6, None), "ndtr": ([(-8, 8)], 1e-5, None),
    "ndtri": ([(0, 1)], 1e-6, None), "log_ndtr": ([(-40, 10)], 1e-5, None),
    "expit": ([(-30, 30)], 1e-6, None), "logit": ([(0.01, 0.49)], 1e-5, None),
    "entr": ([(0, 5)], 1e-6, None), "i0": ([(-30, 30)], 1e-6, None),
    "i0e": ([(-60, 60)], 1e-6, None), "i1": ([(-30, 30)], 1e-6, None),
    "i1e": ([(-60, 60)], 1e-6, None), "exp1": ([(0.01, 50)], 2e-6, None),
    "expi": ([(-50, 80)], 2e-6, None), "spence": ([(0, 100)], 1e-6, None),
    "xlogy": ([(-2, 2), (0, 5)], 1e-6, None), "xlog1py": ([(-2, 2), (-0.9, 5)], 1e-6, None),
    "rel_entr": ([(0, 3), (0, 3)], 1e-6, None),
    "gammainc": ([(0.1, 20), (0, 30)], 2e-5, None), "gammaincc": ([(0.1, 20), (0, 30)], 2e-5, None),
    "betaln": ([(0.1, 100), (0.1, 100)], 5e-6, None), "beta": ([(0.1, 10), (0.1, 10)], 1e-5, None),
    "betainc": ([(0.1, 20), (0.1, 20), (0, 1)], 5e-5, None),
    "zeta": ([(1.1, 20), (0.1, 10)], 1e-6, None), "poch": ([(0.1, 10), (0, 5)], 1e-5, None),
    "comb": ([(0, 30), (0, 30)], 5e-5, None), "factorial": ([(0, 20)], 1e-5, None),
    "boxcox": ([(0.1, 10), (-2, 2)], 1e-6, None), "boxcox1p": ([(-0.5, 10), (-2, 2)], 1e-6, None),
    "hyp1f1": ([(0.1, 5), (0.1, 5), (0, 10)], 1e-5, None),
    "dawsn": ([(-30, 30)], 1e-6, None), "owens_t": ([(-8, 8), (-5, 5)], 5e-6, None),
}
# where the value is tiny next to the terms it is made of, float32 is good to an absolute bound
ABSOLUTE = {"betainc": 3e-6, "gammainc": 2e-6, "gammaincc": 2e-6, "rel_entr": 1e-6, "spence": 1e-7,
            "betaln": 1e-6}


def _sample(domains, dtype, seed, size=64):
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, size).astype(dtype) for lo, hi in domains]


def _reference(name, args):
    return getattr(sp, name)(*[a.astype(np.float64) for a in args])


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_agrees_with_scipy_in_float32(name, seed):
    domains, rtol, _ = CASES[name]
    args = _sample(domains, np.float32, seed)
    got = getattr(S, name)(*args)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), _reference(name, args), rtol=max(rtol, 1e-7),
                               atol=ABSOLUTE.get(name, 0))


@pytest.mark.parametrize("name", ["gammaln", "digamma", "erfcx", "ndtri", "log_ndtr", "i0e", "i1e",
                                  "expi", "spence", "gammainc", "betainc", "zeta", "betaln", "dawsn",
                                  "owens_t"])
def test_agrees_with_scipy_in_float64(name):
    domains, _, _ = CASES[name]
    with enable_x64():
        args = _sample(domains, np.float64, 7)
        got = getattr(S, name)(*args)
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), _reference(name, args), rtol=1e-10,
                                   atol=1e-14 if name in ABSOLUTE else 0)


def test_integers_promote_to_the_default_float():
    assert S.gammainc(1, 2).dtype == np.float32 and S.zeta(2, 1).dtype == np.float32
    assert S.xlogy(1, 2).dtype == np.float32 and S.i0e(1).dtype == np.float32


# JAX 0.10's values (recorded with jax.scipy.special) at poles, zeros and outside the domain
EDGES = {
    "gammasgn": ([-2.0, -1.5, -0.0, 0.0, np.inf, -np.inf, np.nan], [np.nan, 1, -1, 1, 1, np.nan, np.nan]),
    "gamma": ([-2.0, -0.0, 0.0, np.inf], [np.nan, -np.inf, np.inf, np.inf]),
    "digamma": ([-2.0, 0.0, np.inf], [np.nan, np.nan, np.inf]),
    "loggamma": ([-1.5, 0.0, np.inf], [np.nan, np.nan, np.inf]),
    "ndtri": ([-1.0, 0.0, 0.5, 1.0, 2.0], [np.nan, -np.inf, 0, np.inf, np.nan]),
    "logit": ([-1.0, 0.0, 1.0, 2.0], [np.nan, -np.inf, np.inf, np.nan]),
    "entr": ([-1.0, 0.0, np.nan], [-np.inf, 0, np.nan]),
    "spence": ([-1.0, 0.0, 1.0], [np.nan, np.pi ** 2 / 6, 0]),
    "exp1": ([-1.0, 0.0], [np.nan, np.inf]),
    "erfcx": ([-np.inf, np.inf, np.nan], [np.inf, 0, np.nan]),
    "factorial": ([-1.0, 0.0, 3.0], [0, 1, 6]),
    "i0e": ([np.inf, -np.inf, np.nan], [0, 0, np.nan]),
}
EDGES_2 = {
    "gammainc": ([-1, 0, 0, 0.5, 1, 1, np.inf, 2], [1, 1, 0, 0, -1, np.inf, 1, np.nan],
                 [np.nan, 1, np.nan, 0, np.nan, 1, np.nan, np.nan]),
    "gammaincc": ([-1, 0, 0, 0.5, 1, 1, np.inf, 2], [1, 1, 0, 0, -1, np.inf, 1, np.nan],
                  [np.nan, 0, np.nan, 1, np.nan, 0, np.nan, np.nan]),
    "zeta": ([0.5, 1, 2, 2, 2], [1, 1, 0, -1, -1.5], [np.nan, np.inf, np.inf, np.inf, 9.379247]),
    "xlogy": ([0, 0, 0], [0, -1, np.nan], [0, 0, np.nan]),
    "kl_div": ([0, 0, 1, 1, -1], [0, -1, 0, 2, 1], [0, np.inf, np.inf, 0.30685282, np.inf]),
    "rel_entr": ([0, 0, 1, 1, -1], [0, -1, 0, 2, 1], [0, np.inf, np.inf, -0.6931472, np.inf]),
    # E_2(0) = 1 / (2 - 1) as scipy gives it (JAX 0.10 returns 0.5 there)
    "expn": ([0, 1, 2, -1, 3], [1, 0, 0, 1, -1], [0.36787945, np.inf, 1.0, np.nan, np.nan]),
    "comb": ([5, 5, 3, -1], [2, 6, -1, 1], [10, 0, 0, 0]),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_values_as_jax(name):
    x, want = EDGES[name]
    np.testing.assert_allclose(np.asarray(getattr(S, name)(np.float32(x))), np.float32(want), rtol=2e-6)


@pytest.mark.parametrize("name", sorted(EDGES_2))
def test_edge_values_of_two_arguments_as_jax(name):
    a, b, want = EDGES_2[name]
    got = getattr(S, name)(np.float32(a), np.float32(b))
    np.testing.assert_allclose(np.asarray(got), np.float32(want), rtol=2e-6)


def test_betainc_edges_as_jax():
    got = S.betainc(np.float32([0, 1, 1, -1, 2]), np.float32([1, 0, 1, 1, 2]), np.float32([0.5, 0.5, 1.5, 0.5, -0.1]))
    np.testing.assert_array_equal(np.asarray(got), np.float32([1, 0, np.nan, np.nan, np.nan]))


def test_orders_and_static_arguments():
    np.testing.assert_allclose(np.asarray(S.polygamma(np.array([0, 1, 2]), np.float32(1.5))),
                               sp.polygamma([0, 1, 2], 1.5), rtol=1e-6)
    with pytest.raises(ValueError, match="integer type"):
        S.polygamma(1.5, 2.0)
    rng = np.random.default_rng(3)
    n, x = rng.integers(0, 6, 64), rng.uniform(0.01, 30, 64).astype(np.float32)
    np.testing.assert_allclose(np.asarray(S.expn(n, x)), sp.expn(n, x.astype(float)), rtol=2e-6)
    np.testing.assert_allclose(np.asarray(S.multigammaln(np.float32([2.0, 3.5]), 3)),
                               sp.multigammaln(np.array([2.0, 3.5]), 3), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(S.bernoulli(8)), [float(b) for b in sp.bernoulli(8)], atol=1e-7)
    z = np.float32([0.0, 1.0, 10.0, 30.0])
    np.testing.assert_allclose(np.asarray(S.bessel_jn(z, v=3)), [sp.jv(k, z) for k in range(4)], atol=2e-6)
    with pytest.raises(NotImplementedError):
        S.factorial(3, exact=True)
    with pytest.raises(NotImplementedError):
        S.zeta(2.0)


def test_reductions_take_every_axis_by_default():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(S.softmax(x)), sp.softmax(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(S.log_softmax(x, axis=1)), sp.log_softmax(x, axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(S.logsumexp(x, axis=0)), sp.logsumexp(x, axis=0), rtol=1e-6)


# ---------------------------------------------------------------- derivatives

GRADS = {
    "gammainc": (1.7, 2.3), "gammaincc": (3.0, 2.0), "betainc": (2.0, 3.0, 0.7), "erfcx": (1.3,),
    "xlogy": (0.7, 1.9), "xlog1py": (0.7, 0.4), "expi": (1.5,), "exp1": (0.6,), "i0e": (2.5,),
    "i1e": (-1.2,), "zeta": (2.5, 1.5), "betaln": (1.5, 9.0), "log_ndtr": (-3.0,), "ndtri": (0.2,),
    "spence": (0.7,), "expn": (2.0, 1.4), "dawsn": (2.5,), "owens_t": (0.8, 1.7),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_derivatives_against_central_differences(name):
    with enable_x64():
        args = [np.float64(v) for v in GRADS[name]]
        if name == "expn":
            fun = lambda x: S.expn(2.0, x)   # noqa: E731 (the order is not differentiable)
            args = args[1:]
        else:
            fun = getattr(S, name)
        check_grads(fun, args, order=1, atol=1e-6, rtol=1e-6)


def test_gamma_sample_derivative():
    """random_gamma_grad is the implicit derivative that keeps P(a, x) fixed."""
    a, x = np.float32(2.0), np.float32([0.5, 3.0])
    h = 1e-6
    d_a = (sp.gammainc(2 + h, x.astype(float)) - sp.gammainc(2 - h, x.astype(float))) / (2 * h)
    np.testing.assert_allclose(np.asarray(lax.igamma_grad_a(a, x)), d_a, rtol=2e-6)
    density = x.astype(float) * np.exp(-x.astype(float))
    np.testing.assert_allclose(np.asarray(lax.random_gamma_grad(a, x)), -d_a / density, rtol=2e-6)


# ---------------------------------------------------------------- jit and vmap

def _fallback_steps(fun, *args):
    steps = jaxlite.jit(fun).lower(*args).program.steps
    return [s.eqn.primitive.name for s in steps if isinstance(s, EqnStep) and s.kind == "fallback"]


@pytest.mark.parametrize("name", ["gammainc", "betainc", "zeta", "i1e", "expi", "expn", "ndtri",
                                  "spence", "erfcx", "log_ndtr", "hyp1f1"])
def test_jit_is_native_and_agrees_with_eager(name):
    domains, rtol, _ = CASES.get(name, ([(0.5, 3), (0.5, 3)], 1e-6, None))
    args = _sample(domains, np.float32, 11, size=32)
    if name == "expn":
        args[0] = np.floor(args[0])
    assert _fallback_steps(getattr(S, name), *args) == []
    np.testing.assert_allclose(np.asarray(jaxlite.jit(getattr(S, name))(*args)),
                               np.asarray(getattr(S, name)(*args)), rtol=2e-6, atol=1e-7)


def test_grad_under_jit_is_native():
    fun = jaxlite.grad(lambda a, x: S.gammainc(a, x).sum(), argnums=(0, 1))
    a, x = np.float32([1.5, 4.0]), np.float32([2.0, 1.0])
    assert _fallback_steps(fun, a, x) == []
    for got, want in zip(jaxlite.jit(fun)(a, x), fun(a, x)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


@pytest.mark.parametrize("name", ["gammainc", "betainc", "i0e", "expi"])
def test_vmap_agrees_with_a_loop(name):
    args = _sample(CASES[name][0], np.float32, 5, size=12)
    check_vmap(getattr(S, name), [a.reshape(3, 4) for a in args], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", ["sici", "fresnel"])
def test_integrals_with_two_results(name):
    x = np.concatenate([np.linspace(-50, 50, 301), [0.0, 1.5, 3.0, np.inf]]).astype(np.float32)
    for got, want in zip(getattr(S, name)(x), getattr(sp, name)(x.astype(np.float64))):
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=5e-7)
    with enable_x64():
        x64 = np.linspace(0.01, 50, 301)
        for got, want in zip(getattr(S, name)(x64), getattr(sp, name)(x64)):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)
        for part in range(2):
            check_grads(lambda x: getattr(S, name)(x)[part], [np.float64(2.2)], order=1, atol=1e-6, rtol=1e-6)
            check_grads(lambda x: getattr(S, name)(x)[part], [np.float64(7.5)], order=1, atol=1e-6, rtol=1e-6)
    assert _fallback_steps(lambda x: getattr(S, name)(x), x) == []
