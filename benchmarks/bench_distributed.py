"""Collectives over MPI and data-parallel training: 1 process against 2 pinned processes.

    python benchmarks/bench_distributed.py [--steps N]

Runs its own children: `mpiexec -n 2 -bind-to core` (2 processes, a core each) and a
single process (jaxlite's worker pool on both cores). Measured inside the children:

  * allreduce (lax.psum in shard_map) from native code: a jitted fori_loop of 200 psums
    of n float32, so the time per psum has no Python in it; latency at 1 element,
    bandwidth as the bytes of the vector over the time (MPI's "algorithm bandwidth");
    beside it mpi4py's Comm.Allreduce of the same buffers (MPI from Python), as a ratio;
  * the data-parallel step of the demo MLP ([2, 256, 256, 2], global batch 4096) as one
    jitted shard_map: each of 2 processes computes half the batch and pmeans gradients,
    against one process computing the whole batch on 2 threads.

What this machine can show: 2 cores, so 2 ranks is the most that run without
time-slicing (4 ranks on 2 cores take milliseconds per collective); both ranks share one
memory system, so MPICH's "network" is shared memory and these figures are its
latency and copy bandwidth, not a cluster's. What it cannot: scaling past 2, or a
network's cost.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1, 256, 16384, 262144, 4194304)
LOOP = 200


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def child(steps):
    import numpy as np

    import jaxlite
    from jaxlite import lax
    from jaxlite import numpy as jnp
    from jaxlite.examples import data_parallel, mlp
    from jaxlite.sharding import PartitionSpec as P

    jaxlite.distributed.initialize()
    count = jaxlite.process_count()
    mesh = jaxlite.make_mesh((count,), ("i",))
    results = {"ranks": count, "allreduce_us": {}}
    for n in SIZES:
        def many_psums(x):
            return lax.fori_loop(0, LOOP, lambda i, v: lax.psum(v, "i") * 0.5, x)
        f = jaxlite.jit(jaxlite.shard_map(many_psums, mesh=mesh, in_specs=P(), out_specs=P()))
        x = jnp.ones(n)
        f(x).block_until_ready()
        seconds = _median_time(lambda: f(x).block_until_ready(), 5)
        results["allreduce_us"][n] = 1e6 * seconds / LOOP
    results["mpi4py_us"] = _mpi4py_allreduce_us() if count > 1 else {}

    step = data_parallel.make_step(jaxlite.make_mesh((count,), ("batch",)), 0.1)
    params = mlp.init_params([2, 256, 256, 2])
    x, labels = mlp.two_spirals(2048, seed=0)
    share = len(x) // count
    rank = jaxlite.process_index()
    mine = slice(rank * share, (rank + 1) * share)
    x, onehot = jnp.asarray(x[mine]), jnp.asarray(mlp.one_hot(labels, 2)[mine])
    params, _ = step(params, x, onehot)

    def run():
        nonlocal params
        for _ in range(steps):
            params, loss = step(params, x, onehot)
        loss.block_until_ready()
    results["step_ms"] = 1e3 * _median_time(run, 5) / steps
    if rank == 0:
        print(json.dumps(results))
    jaxlite.distributed.shutdown()


def _mpi4py_allreduce_us():
    """The same allreduces by mpi4py's Comm.Allreduce from Python: what MPI itself takes here."""
    import numpy as np
    from mpi4py import MPI
    times = {}
    for n in SIZES:
        send, recv = np.ones(n, np.float32), np.empty(n, np.float32)
        MPI.COMM_WORLD.Allreduce(send, recv)
        times[n] = 1e6 * _median_time(lambda: [MPI.COMM_WORLD.Allreduce(send, recv) for _ in range(20)], 5) / 20
    return times


def _run(command):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        return child(args.steps)
    me = [sys.executable, __file__, "--child", "--steps", str(args.steps)]
    one = _run(me)
    two = _run([shutil.which("mpiexec"), "-n", "2", "-bind-to", "core"] + me)
    print("allreduce (psum in a jitted fori_loop), time per psum:")
    print(f"  {'float32s':>9} {'1 process (a copy)':>19} {'2 processes':>12} {'mpi4py Allreduce':>17} "
          f"{'ratio':>6} {'2-rank bandwidth':>17}")
    for n in SIZES:
        a, b, m = one["allreduce_us"][str(n)], two["allreduce_us"][str(n)], two["mpi4py_us"][str(n)]
        print(f"  {n:>9} {a:>17.2f}us {b:>10.2f}us {m:>15.2f}us {b / m:>6.2f} {4 * n / b / 1e3:>13.2f} GB/s")
    a, b = one["step_ms"], two["step_ms"]
    print(f"data-parallel MLP step (global batch 4096): 1 process, 2 threads {a:.2f} ms; "
          f"2 pinned processes {b:.2f} ms; ratio 2 processes / 1 process {b / a:.2f}")


if __name__ == "__main__":
    main()
