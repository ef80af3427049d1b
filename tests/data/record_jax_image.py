"""Records jax.image's outputs for fixed inputs into jax_image.npz (run with
/work/jaxref/bin/python; the cases are shared with tests/test_image.py)."""
import sys

import numpy as np

METHODS = ("nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area")


def image():
    return np.random.default_rng(0).uniform(size=(2, 7, 6, 3)).astype(np.float32)


def cases(jax_image):
    """Each recorded call by its name, made with `jax_image` (jax.image or jaxlite.image)."""
    x = image()
    calls = {}
    for method in METHODS:
        for shape in ((2, 11, 4, 3), (2, 3, 13, 3)):
            for antialias in (True, False):
                name = f"resize {method} {shape[1:3]} antialias={antialias}"
                calls[name] = lambda m=method, s=shape, a=antialias: jax_image.resize(x, s, m, antialias=a)
    for method in ("linear", "cubic", "lanczos3"):
        calls[f"scale_and_translate {method}"] = lambda m=method: jax_image.scale_and_translate(
            x, (2, 9, 5, 3), (1, 2), np.array([1.4, 0.8], np.float32), np.array([0.5, -1.0], np.float32), m)
    return calls


if __name__ == "__main__":
    import jax
    np.savez(sys.argv[1], **{name: np.asarray(call()) for name, call in cases(jax.image).items()})
