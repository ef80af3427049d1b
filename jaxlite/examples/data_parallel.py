"""Data-parallel training over MPI: `mpiexec -n 2 python -m jaxlite.examples.data_parallel`.

Every process holds the same parameters and its own share of each batch; one jitted
step differentiates the loss averaged over the processes (lax.pmean inside shard_map;
its gradient is an MPI allreduce inside the step's native code) and applies it, so the
parameters stay identical everywhere. Rank 0 prints the progress of every rank.
Run without mpiexec, it is a job of one process.
"""
import argparse
import time

import numpy as np

import jaxlite
from jaxlite import lax
from jaxlite import numpy as jnp
from jaxlite.examples import mlp
from jaxlite.experimental.multihost_utils import process_allgather
from jaxlite.sharding import PartitionSpec as P


def make_step(mesh, learning_rate):
    def local_step(params, x, labels):
        # The gradient of the mean loss over every rank's batch: replicated parameters, so
        # (check_vma=True, as JAX) their gradient is summed over the ranks, and equal everywhere.
        def mean_loss(p):
            local = mlp.loss(jnp, p, x, labels)
            return lax.pmean(local, "batch"), local
        grads, local_loss = jaxlite.grad(mean_loss, has_aux=True)(params)
        return mlp.sgd(params, grads, learning_rate), jnp.reshape(local_loss, (1,))
    # Parameters replicated (P()); this process's loss is its block of a vector of every rank's.
    sharded = jaxlite.shard_map(local_step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                                out_specs=(P(), P("batch")))
    return jaxlite.jit(sharded)


def local_batches(batch_size, seed=0):
    """This process's share of every global batch of the two-spirals data, forever."""
    x, labels = mlp.two_spirals(2000, seed=seed)
    onehot = mlp.one_hot(labels, 2)
    rank, count = jaxlite.process_index(), jaxlite.process_count()
    share = batch_size // count
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch_size + 1, batch_size):
            mine = order[start + rank * share:start + (rank + 1) * share]
            yield jnp.asarray(x[mine]), jnp.asarray(onehot[mine])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args(argv)
    jaxlite.distributed.initialize()
    rank, count = jaxlite.process_index(), jaxlite.process_count()
    mesh = jaxlite.make_mesh((count,), ("batch",))
    step = make_step(mesh, 0.1)
    params = mlp.init_params([2, 64, 64, 2])
    batches = local_batches(args.batch_size)
    params, _ = step(params, *next(batches))        # compiled here, on every rank
    start = time.perf_counter()
    for i in range(1, args.steps + 1):
        params, loss = step(params, *next(batches))
        if i % max(args.steps // 10, 1) == 0 or i == args.steps:
            seen = process_allgather(loss, tiled=True)
            if rank == 0:
                shown = "  ".join(f"rank {r}: {v:.4f}" for r, v in enumerate(seen))
                print(f"step {i:4d}/{args.steps}  loss on each rank's batch  {shown}  mean {seen.mean():.4f}",
                      flush=True)
    elapsed = time.perf_counter() - start
    checksum = process_allgather(np.float32(sum(float(np.sum(np.asarray(p))) for p in jaxlite.tree.leaves(params))))
    if rank == 0:
        same = "identical" if len(set(checksum.tolist())) == 1 else "DIFFERENT"
        print(f"{count} process(es), {args.steps} steps in {elapsed:.2f} s ({1e3 * elapsed / args.steps:.2f} ms a step); "
              f"parameters {same} on every rank")
    jaxlite.distributed.shutdown()


if __name__ == "__main__":
    main()
