"""jaxlite.scipy exports JAX 0.10's public names, module by module (the list recorded from
jax.scipy in tests/data/jax_scipy_names.json), and nothing else; each name still missing is
listed below with the reason."""
import importlib
import json
from pathlib import Path

import pytest

RECORDED = json.loads((Path(__file__).parent / "data" / "jax_scipy_names.json").read_text())
MODULES = sorted(name for name in RECORDED if not name.startswith("_"))

NEEDS_COMPLEX = "returns or works in complex numbers, which jaxlite has not yet (issue 16)"
NEEDS_FFT = "needs an FFT, which jaxlite has not yet (issue 16)"
MISSING = {
    "linalg": {
        "dft": NEEDS_COMPLEX, "funm": NEEDS_COMPLEX + " (through the complex Schur form)",
        "rsf2csf": NEEDS_COMPLEX, "sqrtm": NEEDS_COMPLEX,
        "schur": "needs a Schur decomposition primitive (LAPACK gees) in lax.linalg",
    },
    "signal": {name: NEEDS_FFT for name in ("csd", "fftconvolve", "istft", "stft", "welch")},
    "special": {
        "sph_harm_y": NEEDS_COMPLEX, "wofz": NEEDS_COMPLEX,
        "hyp2f1": "not written yet (its transformations for x near 1 and below -1 take care)",
    },
}


def _public(module):
    return {name for name in dir(module) if not name.startswith("_")}


@pytest.mark.parametrize("name", MODULES)
def test_jax_public_names(name):
    module = importlib.import_module("jaxlite.scipy." + name)
    missing = set(RECORDED[name]) - _public(module) - set(MISSING.get(name, {}))
    extra = _public(module) - set(RECORDED[name])
    assert not missing, f"jaxlite.scipy.{name} lacks {sorted(missing)}"
    assert not extra, f"jaxlite.scipy.{name} exports names JAX's does not: {sorted(extra)}"


def test_exclusions_are_still_missing():
    """An excluded name that now exists must leave the exclusion list."""
    for name, excluded in MISSING.items():
        present = set(excluded) & _public(importlib.import_module("jaxlite.scipy." + name))
        assert not present, f"jaxlite.scipy.{name} now has {sorted(present)}: remove them from MISSING"
