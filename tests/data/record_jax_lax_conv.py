"""Records jax.lax's convolution helpers and approx_max_k/approx_min_k on fixed inputs into
jax_lax_conv.npz (run with /work/jaxref/bin/python; the cases are shared with
tests/test_lax_composites.py)."""
import sys

import numpy as np


def cases(lax):
    """Each recorded call by its name, made with `lax` (jax.lax or jaxlite.lax)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 6, 5, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 4)).astype(np.float32)
    w_transposed = rng.normal(size=(3, 2, 4, 3)).astype(np.float32)
    x_nchw, w_oihw = np.moveaxis(x, 3, 1), np.moveaxis(w, (2, 3), (1, 0))
    return {
        "conv_transpose SAME": lambda: lax.conv_transpose(x, w, (2, 2), "SAME"),
        "conv_transpose VALID transpose_kernel":
            lambda: lax.conv_transpose(x, w_transposed, (2, 1), "VALID", transpose_kernel=True),
        "conv_transpose pads rhs_dilation": lambda: lax.conv_transpose(x, w, (2, 2), ((1, 2), (0, 1)), rhs_dilation=(1, 2)),
        "conv_general_dilated_patches NCHW": lambda: lax.conv_general_dilated_patches(x_nchw, (2, 3), (1, 2), "SAME"),
        "conv_general_dilated_patches NHWC": lambda: lax.conv_general_dilated_patches(
            x, (2, 2), (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        "conv_with_general_padding": lambda: lax.conv_with_general_padding(
            x_nchw, w_oihw, (1, 1), ((1, 0), (2, 1)), (2, 1), (1, 2)),
        "conv": lambda: lax.conv(x_nchw, w_oihw, (2, 1), "SAME"),
        "approx_max_k axis 1": lambda: lax.approx_max_k(x, 2, reduction_dimension=1),
        "approx_min_k": lambda: lax.approx_min_k(x, 3),
    }


if __name__ == "__main__":
    import jax
    results = {}
    for name, call in cases(jax.lax).items():
        out = call()
        for i, part in enumerate(out if isinstance(out, (tuple, list)) else (out,)):
            results[f"{name} #{i}"] = np.asarray(part)
    np.savez(sys.argv[1], **results)
