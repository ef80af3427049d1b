"""The functions mpi_worker.py runs across processes and mpi_worker_simulation.py under vmap."""
from jaxlite import grad, lax, vmap
from jaxlite import numpy as jnp
from jaxlite.examples import mlp


def every_collective(x):
    return {"psum": lax.psum(x, "i"), "pmean": lax.pmean(x, "i"), "pmax": lax.pmax(x, "i"),
            "pmin": lax.pmin(x, "i"), "gather0": lax.all_gather(x, "i"),
            "gather1_tiled": lax.all_gather(x, "i", axis=1, tiled=True),
            "index": lax.axis_index("i") + 0 * x[0].astype(jnp.int32),
            "psum_bf16": lax.psum(x.astype(jnp.bfloat16), "i"), "psum_int": lax.psum(x.astype(jnp.int32), "i"),
            "vmapped": vmap(lambda row: lax.psum(row * row, "i"))(x)}


def data_parallel_step(params, x, labels):
    grads = grad(lambda p: mlp.loss(jnp, p, x, labels))(params)
    return mlp.sgd(params, lax.pmean(grads, "i"), 0.1)
