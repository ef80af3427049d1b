import json, sys
import numpy as np
x = np.arange(2 * 2 * 4 * 3, dtype=np.float32).reshape(2, 2, 4, 3)
def cases(lax, vmap):
    c = {
        "a2a_split0_concat1": lambda v: lax.all_to_all(v, 'i', 0, 1),
        "a2a_split0_concat2": lambda v: lax.all_to_all(v, 'i', 0, 2),
        "a2a_tiled_split1_concat2": lambda v: lax.all_to_all(v, 'i', 1, 2, tiled=True),
        "a2a_tiled_split1_concat0": lambda v: lax.all_to_all(v, 'i', 1, 0, tiled=True),
        "pswapaxes0": lambda v: lax.pswapaxes(v, 'i', 0),
        "scatter0": lambda v: lax.psum_scatter(v, 'i'),
        "scatter_tiled1": lambda v: lax.psum_scatter(v, 'i', scatter_dimension=1, tiled=True),
        "ppermute": lambda v: lax.ppermute(v, 'i', [(0, 1), (1, 0)]),
        "pshuffle": lambda v: lax.pshuffle(v, 'i', [1, 0]),
        "axis_size": lambda v: v * 0 + lax.axis_size('i'),
        "all_gather_tiled1": lambda v: lax.all_gather(v, 'i', axis=1, tiled=True),
    }
    return {k: np.asarray(vmap(f, axis_name='i')(x)).tolist() for k, f in c.items()}
if __name__ == "__main__":
    import jax
    print(json.dumps(cases(jax.lax, jax.vmap)))
