"""jax.scipy.special.hyp2f1 against scipy: values across its regimes, derivatives, jit, vmap."""
import mpmath
import numpy as np
import scipy.special as sp
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.scipy.special as S
from jaxlite.test_util import check_grads, check_vmap, enable_x64


@settings(deadline=None, max_examples=15)
@given(st.floats(-3, 3), st.floats(-3, 3), st.floats(0.3, 5), st.floats(-6, 0.97))
def test_matches_mpmath_in_float64(a, b, c, x):
    with enable_x64():
        got = float(S.hyp2f1(a, b, c, x))
    # mpmath, not scipy: scipy's hyp2f1(1, -2 + 4e-16, 1, -3) is inf (the value is 16).
    want = float(mpmath.hyp2f1(a, b, c, x))
    # Where c - a - b is within 1e-3 of an integer past the series' range, Gauss's connection
    # formula cancels (looser; exact integers have their own formula, tested below).
    d, z = c - a - b, (x / (x - 1) if x < 0 else x)
    rtol = 2e-7 if abs(d - round(d)) <= 1e-3 and z > 0.75 else 1e-8
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-10 * max(1.0, abs(want)))


@settings(deadline=None, max_examples=15)
@given(st.floats(-2.5, 3), st.floats(0.2, 3), st.integers(-3, 3), st.floats(0.75, 0.999))
def test_integer_c_minus_a_minus_b_near_one_in_float64(a, b, m, x):
    c = a + b + m
    if c <= 0 and c == round(c):
        return                                   # a pole of (c)_k
    with enable_x64():
        got = float(S.hyp2f1(a, b, c, x))
    want = float(mpmath.hyp2f1(a, b, c, x))    # scipy itself is off by up to 3e-5 here
    # With a within 1e-6 of an integer (0 included) the logarithmic formula's terms of order
    # 1/a cancel: measured against mpmath up to 1.3e-9 there, 1e-13 elsewhere.
    rtol = 2e-9 if abs(a - round(a)) < 1e-6 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 0.1 * max(1.0, abs(want)))


def test_special_points_as_jax():
    assert float(S.hyp2f1(1.0, 2.0, 3.0, 0.0)) == 1.0
    np.testing.assert_allclose(S.hyp2f1(1.5, 2.5, 4.5, 1.0), sp.hyp2f1(1.5, 2.5, 4.5, 1.0), rtol=1e-5)
    assert float(S.hyp2f1(1.0, 2.0, 3.0, 1.0)) == np.inf        # c - a - b <= 0 at x = 1
    assert float(S.hyp2f1(1.0, 2.0, 3.0, 1.5)) == np.inf        # x > 1, as JAX returns
    assert float(S.hyp2f1(1.0, 2.0, -2.0, 0.5)) == np.inf       # a pole of (c)_k
    np.testing.assert_allclose(S.hyp2f1(-2.0, 3.0, 1.5, 0.9), sp.hyp2f1(-2.0, 3.0, 1.5, 0.9), atol=1e-6)
    assert S.hyp2f1(1, 1, 2, 0).dtype == np.float32


def test_derivatives_jit_and_vmap():
    with enable_x64():
        args = (np.float64(0.7), np.float64(1.3), np.float64(2.9), np.float64(0.4))
        check_grads(S.hyp2f1, args, order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
        dx = jaxlite.grad(S.hyp2f1, argnums=3)(*args)
        np.testing.assert_allclose(dx, 0.7 * 1.3 / 2.9 * sp.hyp2f1(1.7, 2.3, 3.9, 0.4), rtol=1e-10)
        # past 3/4 with c - a - b = 1: the integer formula's derivative, in both modes
        at_integer = lambda x: S.hyp2f1(0.5, 1.5, 3.0, x)
        check_grads(at_integer, (np.float64(0.9),), order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
        np.testing.assert_allclose(jaxlite.grad(at_integer)(0.9), 0.25 * sp.hyp2f1(1.5, 2.5, 4.0, 0.9), rtol=1e-12)
    xs = np.array([-4.0, -0.5, 0.2, 0.8, 0.95], np.float32)
    np.testing.assert_allclose(jaxlite.jit(S.hyp2f1)(0.5, 1.5, 2.2, xs), S.hyp2f1(0.5, 1.5, 2.2, xs), rtol=1e-6)
    np.testing.assert_allclose(S.hyp2f1(0.5, 1.5, 2.2, xs), sp.hyp2f1(0.5, 1.5, 2.2, xs.astype(np.float64)),
                               rtol=2e-5)
    check_vmap(lambda x: S.hyp2f1(0.5, 1.5, 2.2, x), (xs,))
