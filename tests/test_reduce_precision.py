"""lax.reduce_precision: eager and jit bit for bit against values recorded from JAX
(tests/data/record_jax_reduce_precision_bits.py), derivatives, vmap, errors.

It is the demonstration of lower/'s recipe for a new elementwise primitive: its lax block
declares its fusion rule (kernel-IR ops it already has), and nothing in lower/ changed.
"""
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
from jaxlite import lax
from jaxlite.test_util import assert_jit_matches_eager_bits, check_vmap

RECORDED = json.loads(Path(__file__).with_name("data").joinpath("jax_reduce_precision_bits.json").read_text())
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
          "float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}


def _recorded(name):
    dtype = DTYPES[name]
    bits_dtype = np.dtype(f"u{dtype.itemsize}")
    entry = RECORDED["reduce_precision"][name]
    x = np.array(entry["input_bits"], bits_dtype).view(dtype)
    cases = [(c["exponent_bits"], c["mantissa_bits"], np.array(c["bits"], bits_dtype)) for c in entry["cases"]]
    return x, cases


def _bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}")


@pytest.mark.parametrize("name", list(DTYPES))
def test_eager_and_jit_match_jax_bit_for_bit(name, enable_x64):
    x, cases = _recorded(name)
    formats = [(e, m) for e, m, _ in cases]
    eager = [lax.reduce_precision(x, e, m) for e, m in formats]
    compiled = jaxlite.jit(lambda x: [lax.reduce_precision(x, e, m) for e, m in formats])(x)
    for (e, m, want), got_eager, got_jit in zip(cases, eager, compiled):
        assert got_eager.dtype == got_jit.dtype == x.dtype
        np.testing.assert_array_equal(_bits(got_eager), want, err_msg=f"eager {name} ({e}, {m})")
        np.testing.assert_array_equal(_bits(got_jit), want, err_msg=f"jit {name} ({e}, {m})")


def test_fuses_into_the_kernel_of_its_neighbours():
    lowered = jaxlite.jit(lambda x: lax.reduce_precision(x * 3.0, 5, 10) + 1.0).lower(np.ones(8, np.float32))
    assert lowered.program.kernel_count() == 1
    assert "reduce_precision" not in "".join(step.describe() for step in lowered.program.steps)


@settings(deadline=None, max_examples=8)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=5),
                    elements=st.floats(width=32, allow_nan=True, allow_infinity=True)),
       exponent_bits=st.integers(1, 9), mantissa_bits=st.integers(0, 24))
def test_jit_matches_eager_for_any_format(x, exponent_bits, mantissa_bits):
    assert_jit_matches_eager_bits(lambda v: lax.reduce_precision(v, exponent_bits, mantissa_bits), x)


def test_derivatives_are_the_rounded_tangent_and_cotangent():
    """As JAX defines them: the primitive is treated as linear."""
    rng = np.random.default_rng(0)
    x, t = (rng.standard_normal(6).astype(np.float32) for _ in range(2))
    f = lambda v: lax.reduce_precision(v, 5, 3)
    for fun in (f, jaxlite.jit(f)):
        out, out_dot = jaxlite.jvp(fun, (x,), (t,))
        np.testing.assert_array_equal(out, f(x))
        np.testing.assert_array_equal(out_dot, f(t))
        _, pullback = jaxlite.vjp(fun, x)
        np.testing.assert_array_equal(pullback(t)[0], f(t))


def test_vmap_agrees_with_a_loop():
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    check_vmap(lambda v: lax.reduce_precision(v, 4, 2), (x,), atol=0, rtol=0)
    check_vmap(jaxlite.jit(lambda v: lax.reduce_precision(v, 4, 2)), (x,), in_axes=1, atol=0, rtol=0)


def test_python_scalar_stays_weak():
    out = lax.reduce_precision(2.5, 5, 1)
    assert out.dtype == np.float32 and out.weak_type and float(out) == 2.0


def test_bad_input_names_the_problem():
    with pytest.raises(TypeError, match="reduce_precision"):
        lax.reduce_precision(np.arange(3), 5, 2)
    with pytest.raises(ValueError, match="exponent_bits must be positive; got 0"):
        lax.reduce_precision(np.ones(3, np.float32), 0, 2)
    with pytest.raises(ValueError, match="mantissa_bits must be non-negative; got -1"):
        lax.reduce_precision(np.ones(3, np.float32), 2, -1)
