"""The functions mpi_worker.py runs across processes and mpi_worker_simulation.py under vmap."""
from jaxlite import grad, lax, vmap
from jaxlite import numpy as jnp
from jaxlite.examples import mlp


def every_collective(x):
    return {"psum": lax.psum(x, "i"), "pmean": lax.pmean(x, "i"), "pmax": lax.pmax(x, "i"),
            "pmin": lax.pmin(x, "i"), "gather0": lax.all_gather(x, "i"),
            "gather1_tiled": lax.all_gather(x, "i", axis=1, tiled=True),
            "index": lax.axis_index("i") + 0 * x[0].astype(jnp.int32),
            "psum_long": lax.psum(jnp.tile(x, (1, 100)), "i"),     # in pieces: mpi_worker sets MAX_COUNT
            "gather_long": lax.all_gather(jnp.tile(x, (1, 100)), "i"),
            "ppermute_long": lax.ppermute(jnp.tile(x, (1, 100)), "i", [(0, 1), (1, 0)]),
            "a2a_long": lax.all_to_all(jnp.tile(x, (1, 200)), "i", 1, 0, tiled=True),
            "scatter_long": lax.psum_scatter(jnp.tile(x, (1, 200)), "i", scatter_dimension=1, tiled=True),
            "psum_bf16": lax.psum(x.astype(jnp.bfloat16), "i"), "psum_int": lax.psum(x.astype(jnp.int32), "i"),
            "vmapped": vmap(lambda row: lax.psum(row * row, "i"))(x),
            "ppermute": lax.ppermute(x, "i", [(0, 1)]), "pshuffle": lax.pshuffle(x, "i", [1, 0]),
            "scatter_tiled1": lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
            "scatter0": lax.psum_scatter(x[:2], "i"),
            "a2a_tiled_split1_concat0": lax.all_to_all(x, "i", 1, 0, tiled=True),
            "a2a_split0_concat1": lax.all_to_all(x[:2], "i", 0, 1), "pswapaxes": lax.pswapaxes(x[:2], "i", 0),
            "axis_size": x * 0 + lax.axis_size("i"),
            "gather_bf16": lax.all_gather(x.astype(jnp.bfloat16), "i"),
            "scatter_f16": lax.psum_scatter(x[:2].astype(jnp.float16), "i"),
            "grad_a2a": grad(lambda v: jnp.sum(lax.all_to_all(v, "i", 1, 0, tiled=True) ** 3))(x)}


def data_parallel_step(params, x, labels):
    grads = grad(lambda p: mlp.loss(jnp, p, x, labels))(params)
    return mlp.sgd(params, lax.pmean(grads, "i"), 0.1)
