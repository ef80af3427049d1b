"""Subnormals: one behaviour per function, eager and jit alike.

Compiled code runs with DAZ/FTZ (as XLA:CPU), so float32/bfloat16 subnormal inputs of
arithmetic read as signed zeros. Eager does the same for the functions whose value at a
subnormal is far from their value at zero (log, sqrt, floor, sign, lgamma, ...), so log(1e-39)
is -inf both ways, as JAX 0.10.2 gives eager and under jit (only a log XLA folds at compile time
gives -89.8), and jit keeps subnormals where JAX does (sin, tanh: x itself). Values JAX gives
are checked in test_semantics_vs_jax.py; here every unary function agrees bit for bit between
eager and jit. Two-input arithmetic, comparisons and reductions flush subnormal operands and
results eagerly too (numpy runs with FTZ/DAZ set, lower/float_mode.py), as JAX does eager and
under jit: checked against values recorded from JAX (tests/data/jax_subnormal_arithmetic.json).
"""
import json
import pathlib

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


_RECORDED = json.loads((pathlib.Path(__file__).parent / "data" / "jax_subnormal_arithmetic.json").read_text())


def _float32(bits):
    return np.asarray(bits, np.uint32).view(np.float32)


def _assert_bits(got, want_bits):
    got = np.asarray(got)
    if got.dtype == np.bool_:
        np.testing.assert_array_equal(got, want_bits)
    else:
        np.testing.assert_array_equal(got.view(np.uint32), np.asarray(want_bits, np.uint32))


@pytest.mark.parametrize("name", sorted(_RECORDED["binary"]))
def test_two_input_arithmetic_on_subnormals_is_jaxs(name):
    a, b = _float32(_RECORDED["a"]), _float32(_RECORDED["b"])
    fun = getattr(jnp, name)
    for f in (fun, jaxlite.jit(fun)):
        _assert_bits(f(a, b), _RECORDED["binary"][name])
    _assert_bits(fun(jnp.asarray(a[0]), jnp.asarray(b[0])), _RECORDED["binary"][name][0])   # scalars


def test_reductions_and_reciprocal_of_subnormals_are_jaxs():
    a, b = _float32(_RECORDED["a"]), _float32(_RECORDED["b"])
    for wrap in (lambda f: f, jaxlite.jit):
        _assert_bits(wrap(jnp.sum)(a[:2]), _RECORDED["other"]["sum_first_two"])
        _assert_bits(wrap(jnp.max)(a[:2]), _RECORDED["other"]["max_first_two"])
        _assert_bits(wrap(jnp.reciprocal)(a), _RECORDED["other"]["reciprocal"])
        _assert_bits(wrap(jnp.square)(b), _RECORDED["other"]["square"])


def test_eager_flushing_leaves_numpy_outside_jaxlite_alone():
    """FTZ/DAZ is set only while jaxlite's own eager operation runs."""
    tiny = np.float32(1e-39)
    jnp.add(tiny, tiny)
    assert np.float32(tiny + tiny) == np.float32(2e-39)
    assert np.multiply(np.float32([1e-20]), np.float32([1e-20]))[0] > 0


_DOT = json.loads((pathlib.Path(__file__).parent / "data" / "jax_subnormal_dot.json").read_text())["cases"]


@pytest.mark.parametrize("name", sorted(_DOT))
def test_dot_on_subnormals_is_jaxs(name):
    """BLAS threads do not run with FTZ/DAZ: eager dot ran them and kept subnormal operands,
    products and results that jit and JAX flush (a thousand 1e-20 * 1e-20 summed to 1e-37)."""
    case = _DOT[name]
    a, b = _float32(case["a"]), _float32(case["b"])
    for f in (jnp.dot, jaxlite.jit(jnp.dot), jnp.matmul):
        _assert_bits(f(a, b), case["dot"])
    _assert_bits(jnp.dot(a.astype(dtypes.bfloat16), b.astype(dtypes.bfloat16)).astype(np.float32),
                 np.asarray(jaxlite.jit(jnp.dot)(a.astype(dtypes.bfloat16), b.astype(dtypes.bfloat16)),
                            np.float32).view(np.uint32))


def test_dot_of_normal_operands_still_flushes_a_cancelled_subnormal_sum():
    a, b = np.float32([[1.5e-38, -1.4e-38]]), np.float32([[1.0], [1.0]])
    for f in (jnp.dot, jaxlite.jit(jnp.dot)):
        np.testing.assert_array_equal(f(a, b), [[0.0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, dtypes.bfloat16])
def test_smallest_nonzero_magnitude_scans_bits_as_abs_would(dtype):
    """The eager dot's subnormal check: min |x| over nonzero x, inf without any, from the bit
    patterns in cache-sized blocks (zeros of either sign skipped, NaNs larger than all)."""
    from jaxlite.lax.base import smallest_nonzero_magnitude
    rng = np.random.default_rng(0)
    long = rng.standard_normal(100_003).astype(dtype)
    long[77_777] = -3e-39                                   # subnormal, in a later block
    cases = [long, rng.standard_normal((30, 40)).astype(dtype).T, np.array([0.0, -0.0], dtype), np.zeros((), dtype),
             np.array([np.nan, -0.0, 2.5, -np.inf], dtype), np.array([np.nan], dtype), np.array([-1e-45, 1.0], np.float32).astype(dtype)]
    for x in cases:
        magnitude = np.abs(x.astype(np.float64))
        want = np.min(magnitude, where=magnitude > 0, initial=np.inf)
        np.testing.assert_array_equal(smallest_nonzero_magnitude(x), want)
