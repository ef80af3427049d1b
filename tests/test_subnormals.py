"""Subnormals: one behaviour per function, eager and jit alike.

Compiled code runs with DAZ/FTZ (as XLA:CPU), so float32/bfloat16 subnormal inputs of
arithmetic read as signed zeros. Eager does the same for the functions whose value at a
subnormal is far from their value at zero (log, sqrt, floor, sign, lgamma, ...), so log(1e-39)
is -inf both ways (JAX gives -103.97 there, an artifact of XLA's log on the flushed input),
and jit keeps subnormals where JAX does (sin, tanh: x itself). Values JAX gives are checked in
test_semantics_vs_jax.py; here every unary function agrees bit for bit between eager and jit.
Left as they are: eager arithmetic (x * y, x / y, sums) on subnormals is numpy's, where jit
flushes (JAX's own eager and jit differ there too).
"""
import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.core import dtypes
from jaxlite.test_util import assert_jit_matches_eager_bits

UNARY = [jnp.sin, jnp.cos, jnp.tan, jnp.tanh, jnp.exp, jnp.expm1, jnp.log, jnp.log1p, jnp.sqrt, lax.rsqrt,
         jnp.cbrt, jnp.abs, jnp.negative, jnp.sign, jnp.floor, jnp.ceil, jnp.round, jnp.arctan, jnp.arcsin,
         jnp.arccos, jnp.arcsinh, jnp.arctanh, jnp.sinh, jnp.cosh, jnp.square, lax.erf,
         lax.lgamma, lax.digamma, jaxlite.nn.sigmoid, jnp.log2, jnp.exp2]

SUBNORMALS = np.float32([1e-39, -1e-39, 1e-45, -1e-45, -3e-42, 1.1754942e-38, 0.0, -0.0, 1.2e-38])


@pytest.mark.parametrize("fun", UNARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, dtypes.bfloat16])
def test_eager_agrees_with_jit_on_subnormals(fun, dtype):
    with np.errstate(all="ignore"):
        assert_jit_matches_eager_bits(fun, SUBNORMALS.astype(dtype))


@pytest.mark.parametrize("fun, expected", [
    (jnp.log, -np.inf), (jnp.sqrt, 0.0), (jnp.floor, 0.0), (jnp.ceil, 0.0), (jnp.sign, 0.0),
    (jnp.log1p, 0.0), (lax.lgamma, np.inf)])
def test_functions_read_a_subnormal_as_zero(fun, expected):
    for f in (fun, jaxlite.jit(fun)):
        np.testing.assert_array_equal(f(np.float32([1e-39, -1e-40]))[:1], [expected])
        assert np.signbit(np.asarray(jnp.sign(np.float32(-1e-40))))          # a signed zero


@pytest.mark.parametrize("fun", [jnp.sin, jnp.tanh, jnp.tan, jnp.expm1, jnp.arctan])
def test_functions_equal_to_x_near_zero_keep_subnormals(fun):
    for f in (fun, jaxlite.jit(fun)):
        np.testing.assert_array_equal(f(SUBNORMALS[:5]), SUBNORMALS[:5])
