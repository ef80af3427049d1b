"""Edge cases as JAX defines them (tests/semantic_cases.py; JAX's results recorded in
tests/data/jax_semantics.json): integer division and remainder by zero as XLA defines them,
out-of-range starts and take modes, integer negative powers, bool arithmetic, 16-bit cumulative
sums, cholesky of indefinite matrices, the order of signed zeros and subnormals, rounding.
Eager and jit must each give what JAX gives (JAX's eager and jit agree on all of these)."""
import json
from pathlib import Path

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp

import semantic_cases

RECORDED = json.loads((Path(__file__).parent / "data" / "jax_semantics.json").read_text())["cases"]
CASES = {name: (fun, args) for name, fun, args in semantic_cases.cases(jaxlite, jnp, lax)}


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_as_jax(name, mode):
    fun, args = CASES[name]
    with np.errstate(all="ignore"):
        got = semantic_cases.run(fun, args, jaxlite.jit if mode == "jit" else None)
    want = RECORDED[name][mode]
    assert got[0] == want[0]
    if got[0] == "raises" or not _is_float(got[0]):
        assert got == want
        return
    # Floats to a few float32 ulps (the transcendentals' last bits are the implementations'),
    # with zeros, infinities, NaNs and subnormals as they are; the signs of zeros too, except in
    # gradients, whose zeros' signs are the algorithms' (the adjugate's exact zeros, say).
    got, want = (np.array([float(v) for v in values]) for values in (got[1], want[1]))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)
    if not name.startswith("grad_"):
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))


def _is_float(dtype_name):
    return dtype_name.startswith(("float", "bfloat"))


def test_every_recorded_case_runs():
    assert set(CASES) == set(RECORDED)
