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
    assert got == RECORDED[name][mode]


def test_every_recorded_case_runs():
    assert set(CASES) == set(RECORDED)
