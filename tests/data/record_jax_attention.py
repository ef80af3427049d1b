"""Records jax.nn.dot_product_attention's outputs for fixed inputs into jax_attention.npz
(run with /work/jaxref/bin/python; the cases are shared with tests/test_nn_extras.py)."""
import sys

import numpy as np


def inputs():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=s).astype(np.float32) for s in ((2, 5, 4, 8), (2, 6, 2, 8), (2, 6, 2, 8)))
    mask = rng.uniform(size=(2, 1, 5, 6)) > 0.3
    bias = rng.normal(size=(1, 4, 5, 6)).astype(np.float32)
    return dict(q=q, k=k, v=v, mask=mask, bias=bias)


def cases(nn, jnp):
    """Each recorded call by its name, made with `nn` (jax.nn, or jaxlite.nn in the tests)."""
    x = inputs()
    q, k, v = x["q"], x["k"], x["v"]
    return {
        "plain": lambda: nn.dot_product_attention(q, k, v),
        "bias_mask_causal": lambda: nn.dot_product_attention(q, k, v, x["bias"], x["mask"], is_causal=True),
        "lengths_window": lambda: nn.dot_product_attention(
            q, k, v, query_seq_lengths=jnp.array([3, 5]), key_value_seq_lengths=jnp.array([6, 2]),
            local_window_size=(1, 2)),
        "unbatched_scale": lambda: nn.dot_product_attention(q[0], k[0], v[0], scale=0.3),
        "residual": lambda: nn.dot_product_attention(q, k, v, return_residual=True)[1],
    }


if __name__ == "__main__":
    import jax
    results = {name: np.asarray(call()) for name, call in cases(jax.nn, jax.numpy).items()}
    np.savez(sys.argv[1], **results)
