"""Scenarios run by test_distributed.py under `mpiexec -n 2`: python mpi_worker.py SCENARIO OUTDIR.

Each rank saves its results to OUTDIR/rank{r}.npz; the test compares them in its own process.
"""
import os
import sys

import numpy as np

import jaxlite
from jaxlite import lax
from jaxlite import numpy as jnp
from jaxlite.examples import mlp
from jaxlite.lower import collectives
from mpi_worker_functions import data_parallel_step, every_collective
from jaxlite.sharding import PartitionSpec as P

collectives.MAX_COUNT = 1000      # so that the *_long collectives (2400+ elements, bytes) go in pieces
try:
    jaxlite.distributed.initialize(num_processes=3)
    DISAGREEING_SIZE_RAISES = False
except ValueError:
    DISAGREEING_SIZE_RAISES = True
jaxlite.distributed.initialize(collective_deadline=float(os.environ.get("DEADLINE", 60)))
RANK, MESH = jaxlite.process_index(), jaxlite.make_mesh((jaxlite.process_count(),), ("i",))


def block(x):
    """This rank's block of x split along its first axis."""
    n = x.shape[0] // 2
    return x[RANK * n:(RANK + 1) * n]


def collectives():
    x = np.arange(24, dtype=np.float32).reshape(4, 6) * (RANK + 1) - 5 * RANK
    f = jaxlite.shard_map(every_collective, mesh=MESH, in_specs=P("i"), out_specs=P("i"), check_vma=False)
    eager, jitted = f(jnp.asarray(x)), jaxlite.jit(f)(jnp.asarray(x))
    return {**{"eager_" + k: v for k, v in eager.items()}, **{"jit_" + k: v for k, v in jitted.items()}}


def _loss(w, x):
    return jnp.sum((w * x) ** 2)


def grads():
    """The cases of tests/data/shard_map_grads.json (recorded from JAX), eager and jitted."""
    x = jnp.arange(4.0)
    out = {}
    for check_vma in (True, False):
        def sm(f, i, o):
            return jaxlite.shard_map(f, mesh=MESH, in_specs=i, out_specs=o, check_vma=check_vma)
        cases = {
            "grad_inside_of_psum": lambda x: sm(lambda x: jaxlite.grad(lambda x: lax.psum(x, "i").sum())(x),
                                                P("i"), P("i"))(block(x)),
            "grad_of_psum_replicated": jaxlite.grad(lambda x: sm(lambda x: lax.psum(x, "i"), P(), P())(x).sum()),
            "grad_of_scale_replicated": jaxlite.grad(lambda x: sm(lambda x: x * 2, P(), P())(x).sum()),
            "grad_of_psum_sharded": lambda x: jaxlite.grad(
                lambda b: sm(lambda b: lax.psum(b, "i"), P("i"), P())(b).sum())(block(x)),
            "grad_of_pmean_loss": lambda x: jaxlite.grad(
                lambda w: sm(lambda w, b: lax.pmean(((w * b) ** 2).sum(), "i"), (P(), P("i")), P())(w, block(x)))(1.0),
            "jvp_of_psum_sharded": lambda x: jaxlite.jvp(
                lambda b: sm(lambda b: lax.psum(b * b, "i"), P("i"), P())(b), (block(x),), (block(x + 1),))[1],
            "grad_inside_of_psum_replicated": sm(lambda x: jaxlite.grad(lambda x: lax.psum(x, "i").sum())(x), P(), P()),
            "grad_inside_mixed": lambda x: sm(lambda x: jaxlite.grad(lambda x: (lax.psum(x * 2, "i") * x).sum())(x),
                                              P("i"), P("i"))(block(x)),
            "pmean_of_grad_inside": lambda x: sm(lambda w, b: lax.pmean(jaxlite.grad(_loss)(w, b), "i"),
                                                 (P(), P("i")), P())(1.0, block(x)),
            "grad_inside_of_pmean": lambda x: sm(lambda w, b: jaxlite.grad(lambda w: lax.pmean(_loss(w, b), "i"))(w),
                                                 (P(), P("i")), P())(1.0, block(x)),
            "jit_grad_inside_of_psum_sin": lambda x: sm(
                lambda w, b: jaxlite.grad(lambda w: lax.psum(jnp.sin(w * b).sum(), "i"))(w),
                (P(), P("i")), P())(0.5, block(x)),
        }
        for name, case in cases.items():
            out[f"check_vma={check_vma}/{name}/eager"] = case(x)
            out[f"check_vma={check_vma}/{name}/jit"] = jaxlite.jit(case)(x)
    return out


def training():
    """Data-parallel SGD on the demo MLP: each rank its half of every batch."""
    x, labels = mlp.two_spirals(64, seed=1)
    onehot = mlp.one_hot(labels, 2)
    params = mlp.init_params([2, 16, 16, 2], seed=3)
    # check_vma=False: the local gradient is each rank's own (as in the vmap simulation); with
    # check_vma=True JAX would already sum the replicated parameters' gradient over the ranks.
    step = jaxlite.jit(jaxlite.shard_map(data_parallel_step, mesh=MESH, in_specs=(P(), P("i"), P("i")),
                                         out_specs=P(), check_vma=False))
    order = np.random.default_rng(0).permutation(len(x))
    for i in range(4):
        batch = order[i * 32:(i + 1) * 32]
        params = step(params, jnp.asarray(block(x[batch])), jnp.asarray(block(onehot[batch])))
    return {f"p{i}": leaf for i, leaf in enumerate(jaxlite.tree.leaves(params))}


def host_utilities():
    from jaxlite.experimental import multihost_utils as mh
    try:
        mh.assert_equal(np.array([RANK]))
        unequal_raises = False
    except AssertionError:
        unequal_raises = True
    mh.sync_global_devices("host_utilities")
    return {"allgather": mh.process_allgather(np.float32(RANK) + 0.5),
            "broadcast": mh.broadcast_one_to_all({"a": np.int32(RANK + 5)})["a"],
            "unequal_raises": unequal_raises, **reversed_mesh(),
            "disagreeing_size_raises": DISAGREEING_SIZE_RAISES and jaxlite.distributed.is_initialized(),
            "devices": [d.id for d in jaxlite.local_devices()] + [jaxlite.device_count()]}


def on_a_mesh(mesh):
    """Position-dependent collectives over axis 'i' of `mesh`, on x = [rank + 1, 10 * (rank + 1)],
    eager and under jit (one compiled program for both ranks)."""
    def f(x):
        return {"index": lax.axis_index("i") + 0 * x.astype(jnp.int32), "gather": lax.all_gather(x, "i"),
                "ppermute": lax.ppermute(x, "i", [(0, 1)]), "psum": lax.psum(x, "i")}
    sharded = jaxlite.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False)
    x = jnp.float32([RANK + 1, 10 * (RANK + 1)])
    eager, jitted = sharded(x), jaxlite.jit(sharded)(x)
    return {**{"eager_" + k: v for k, v in eager.items()}, **{"jit_" + k: v for k, v in jitted.items()}}


def reversed_mesh():
    """A mesh whose axis runs from the last process to the first: a communicator in that order."""
    out = on_a_mesh(jaxlite.sharding.Mesh(np.array(jaxlite.devices()[::-1]), ("i",)))
    return {"reversed_" + k: v for k, v in out.items()}


def groups():
    """4 processes: collectives over rows and columns of a 2-d mesh, over axis_index_groups, and
    over a mesh of processes 3 and 1 that processes 0 and 2 are not on (mpi_group_functions.py)."""
    import mpi_group_functions as cases
    out = {}
    for name, (make, shape, axes, processes) in cases.CASES.items():
        if RANK not in processes:
            continue
        mesh = jaxlite.sharding.Mesh(np.array([jaxlite.devices()[p] for p in processes]).reshape(shape), axes)
        f = jaxlite.shard_map(make(lax, jnp), mesh=mesh, in_specs=P(axes), out_specs=P(axes), check_vma=False)
        x = jnp.float32([RANK + 1, 10 * (RANK + 1)])
        for mode, run in (("eager", f), ("jit", jaxlite.jit(f))):
            out.update({f"{name}/{mode}/{key}": value for key, value in run(x).items()})
    return out


def correctness():
    return {**collectives(), **grads(), **training(), **host_utilities()}


def raises():
    if RANK == 1:
        raise ValueError("boom from rank 1")
    jaxlite.shard_map(lambda x: lax.psum(x, "i"), mesh=MESH, in_specs=P("i"), out_specs=P())(jnp.ones(3))
    return {}


def skips():
    """Rank 1 skips the second call: rank 0 waits inside the program's native code (GIL released)."""
    f = jaxlite.jit(jaxlite.shard_map(lambda x: lax.psum(x, "i"), mesh=MESH, in_specs=P("i"), out_specs=P()))
    f(jnp.ones(3))
    if RANK == 0:
        f(jnp.ones(3))
    else:
        import time
        time.sleep(60)
    return {}


def shapes():
    f = jaxlite.jit(jaxlite.shard_map(lambda x: lax.psum(x, "i"), mesh=MESH, in_specs=P("i"), out_specs=P()))
    f(jnp.ones(3 + RANK))
    return {}


if __name__ == "__main__":
    scenario, outdir = sys.argv[1], sys.argv[2]
    results = globals()[scenario]()
    saved = {k: np.asarray(v) for k, v in results.items()}
    saved = {k: v.astype(np.float32) if v.dtype == jnp.bfloat16 else v for k, v in saved.items()}  # npz has no bf16
    np.savez(os.path.join(outdir, f"rank{RANK}.npz"), **saved)
    jaxlite.distributed.shutdown()
