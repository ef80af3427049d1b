"""jaxlite.image against outputs recorded from jax.image; jit, grad and errors."""
import pathlib
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import image
from jaxlite.test_util import check_grads

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from record_jax_image import cases  # noqa: E402

EXPECTED = np.load(DATA / "jax_image.npz")


@pytest.mark.parametrize("name", sorted(EXPECTED.files))
def test_matches_jax(name):
    got = cases(image)[name]()
    assert got.shape == EXPECTED[name].shape and got.dtype == EXPECTED[name].dtype
    np.testing.assert_allclose(got, EXPECTED[name], rtol=1e-5, atol=2e-6)


def test_identity_and_jit_and_grad():
    x = jnp.asarray(np.random.default_rng(1).uniform(size=(5, 4)).astype(np.float32))
    np.testing.assert_array_equal(image.resize(x, (5, 4), "cubic"), x)
    resize = lambda x: image.resize(x, (7, 3), image.ResizeMethod.LANCZOS3)
    np.testing.assert_allclose(jaxlite.jit(resize)(x), resize(x), rtol=1e-6, atol=1e-7)
    check_grads(resize, [x], order=1)
    up = image.resize(jnp.arange(4), (8,), "linear")   # integers resize as floats
    assert up.dtype == np.float32 and float(up[0]) == 0.0


def test_errors():
    x = jnp.zeros((4, 4))
    with pytest.raises(ValueError, match="shape must have length"):
        image.resize(x, (2,), "linear")
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(x, (2, 2), "bogus")
    with pytest.raises(ValueError, match="Nearest neighbor"):
        image.scale_and_translate(x, (2, 2), (0, 1), jnp.ones(2), jnp.zeros(2), "nearest")
    assert sorted(n for n in dir(image) if not n.startswith("_")) == ["ResizeMethod", "resize", "scale_and_translate"]
