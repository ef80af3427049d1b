"""float8_e4m3fn and float8_e5m2 in jit's fused kernels (lower/float8.py): bit-identical to
eager (ml_dtypes' kernels) and to JAX's jit (recorded), with no numpy kernel between them."""
import json
import logging
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.test_util import check_vmap

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from record_jax_float8_jit import cases, inputs  # noqa: E402

RECORDED = json.loads((DATA / "jax_float8_jit.json").read_text())["results"]
FORMATS = sorted(RECORDED)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint8 if a.dtype.itemsize == 1 else np.uint16)


@pytest.mark.parametrize("dtype_name", FORMATS)
@pytest.mark.parametrize("case", sorted(RECORDED[FORMATS[0]]))
def test_jit_matches_jax_and_eager_bits(dtype_name, case, caplog):
    x, y, w = (jnp.asarray(a) for a in inputs(dtype_name))
    fun = cases(jnp, dtype_name)[case]
    with caplog.at_level(logging.DEBUG, logger="jaxlite.jit"):
        jitted = jaxlite.jit(fun)(x, y, w)
    assert "ml_dtypes' kernels" not in caplog.text
    np.testing.assert_array_equal(_bits(jitted), RECORDED[dtype_name][case])
    np.testing.assert_array_equal(_bits(jitted), _bits(fun(x, y, w)))


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(FORMATS), st.integers(1, 300), st.integers(0, 2 ** 16))
def test_encoding_every_value_as_eager(dtype_name, size, seed):
    """float32 -> float8 -> float32 under jit: ties, subnormals, overflow, NaN as ml_dtypes."""
    dtype = getattr(jnp, dtype_name)
    rng = np.random.default_rng(seed)
    grid = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
    x = np.concatenate([grid, (grid[:-1] + grid[1:]) / 2, rng.normal(size=size) * 10.0 ** rng.integers(-4, 6, size)])
    x = x.astype(np.float32)
    x = x[~((np.abs(x) < np.finfo(np.float32).tiny) & (x != 0))]     # float32 subnormals: DAZ in kernels
    round_trip = lambda v: v.astype(dtype).astype(np.float32)
    np.testing.assert_array_equal(_bits(jaxlite.jit(round_trip)(x).astype(dtype)), _bits(x.astype(dtype)))


def test_reductions_keep_eager_order_and_vmap():
    x = jnp.asarray(np.random.default_rng(0).uniform(-3, 3, (4, 64)).astype(jnp.float8_e4m3fn))
    fun = lambda x: (x * x).sum(axis=-1) - x.max(axis=-1)
    np.testing.assert_array_equal(_bits(jaxlite.jit(fun)(x)), _bits(fun(x)))
    check_vmap(jaxlite.jit(lambda r: jnp.tanh(r) * 2 + r), (np.asarray(x),), atol=0, rtol=0)
