"""Cases the array API conformance suite (data-apis/array-api-tests, run x64 as JAX's CI runs
it) found where jax.numpy passes, as regression tests."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp


@pytest.mark.parametrize("jitted", [False, True])
def test_complex_expm1_special_values(jitted, enable_x64):
    expm1 = jaxlite.jit(jnp.expm1) if jitted else jnp.expm1
    z = np.array([0j, complex(-0.0, 0.0), complex(np.inf, 0.0), complex(np.nan, 0.0)])
    out = np.asarray(expm1(z))
    np.testing.assert_array_equal(out, [0j, 0j, complex(np.inf, 0), complex(np.nan, 0)])
    assert not np.signbit(out.real[:2]).any() and not np.isnan(out.imag).any()
    inside = np.array([1 + 2j, -1e-9 + 3e-9j], np.complex64)
    np.testing.assert_allclose(expm1(inside), np.expm1(inside.astype(np.complex128)), rtol=1e-6)


def test_log10_keeps_float32_with_x64(enable_x64):
    out = jnp.log10(jnp.asarray([1.0, 1000.0], dtype=jnp.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [0.0, 3.0], rtol=1e-6)
