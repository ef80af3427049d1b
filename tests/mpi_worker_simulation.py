"""The vmap(axis_name='i') simulation of mpi_worker.py's 2-rank scenarios, in one process."""
import numpy as np

import jaxlite
from jaxlite import numpy as jnp
from jaxlite.examples import mlp

import mpi_worker_functions as fns


def simulate_collectives(stacked):
    out = jaxlite.vmap(fns.every_collective, axis_name="i")(jnp.asarray(stacked))
    out = {k: np.asarray(v) for k, v in out.items()}
    return {k: v.astype(np.float32) if v.dtype == jnp.bfloat16 else v for k, v in out.items()}


def simulate_training():
    x, labels = mlp.two_spirals(64, seed=1)
    onehot = mlp.one_hot(labels, 2)
    params = mlp.init_params([2, 16, 16, 2], seed=3)
    step = jaxlite.jit(jaxlite.vmap(fns.data_parallel_step, in_axes=(None, 0, 0), out_axes=None, axis_name="i"))
    order = np.random.default_rng(0).permutation(len(x))
    for i in range(4):
        batch = order[i * 32:(i + 1) * 32]
        params = step(params, jnp.asarray(x[batch].reshape(2, 16, 2)), jnp.asarray(onehot[batch].reshape(2, 16, 2)))
    return {f"p{i}": np.asarray(leaf) for i, leaf in enumerate(jaxlite.tree.leaves(params))}
