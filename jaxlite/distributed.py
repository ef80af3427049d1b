"""jaxlite.distributed: one process per rank of an MPI job (JAX's multi-process model on MPI).

Run a script under `mpiexec -n N python script.py` and call `initialize()` first: rank
and size come from MPI (mpi4py), `jaxlite.devices()` then lists one CPU device per
process, and collectives over a mesh of those devices inside shard_map run on MPI,
eagerly and inside jit's native code (lower/collectives.py).

Failure behaviour: after initialize, an uncaught exception on any rank prints its
traceback and aborts the whole job (MPI_Abort), so the other ranks do not hang in a
collective; a collective that waits longer than `collective_deadline` seconds
(JAXLITE_COLLECTIVE_DEADLINE, default 300) names the rank, the collective, its shape
and the shard_mapped function, and aborts the job.
"""
import os as _os
import sys as _sys
import traceback as _traceback

from jaxlite import _process

_state = {"comm": None, "excepthook": None}


def initialize(coordinator_address=None, num_processes=None, process_id=None, local_device_ids=None,
               *, collective_deadline=None, **kwargs):
    """Join the MPI job this process was started in (by mpiexec); a single process is a job of one.

    `num_processes` and `process_id`, if given, must agree with MPI's size and rank;
    `coordinator_address` is accepted for JAX compatibility (MPI needs none).
    `collective_deadline`: seconds a collective may wait before the job is aborted."""
    if is_initialized():
        raise RuntimeError("jaxlite.distributed.initialize should only be called once.")
    comm = _world()
    rank, size = comm.Get_rank(), comm.Get_size()
    _check_agrees("num_processes", num_processes, size)
    _check_agrees("process_id", process_id, rank)
    if local_device_ids not in (None, 0, [0], (0,)):
        raise ValueError(f"local_device_ids={local_device_ids!r}: each jaxlite process has one device, id 0")
    deadline = collective_deadline if collective_deadline is not None else \
        float(_os.environ.get("JAXLITE_COLLECTIVE_DEADLINE", 300))
    from jaxlite.lower import collectives
    collectives.attach(comm, deadline)
    _state["comm"] = comm
    _process.set_place(rank, size)
    _state["excepthook"] = _sys.excepthook
    _sys.excepthook = _abort_on_uncaught


def _world():
    """A private duplicate of MPI's world communicator, with MPI threads "serialized"
    (mpi4py's default "multiple" makes every MPICH call several times slower)."""
    import mpi4py
    if "mpi4py.MPI" not in _sys.modules:
        mpi4py.rc.thread_level = "serialized"
    from mpi4py import MPI
    return MPI.COMM_WORLD.Dup()


def _check_agrees(name, given, actual):
    if given is not None and int(given) != actual:
        raise ValueError(f"jaxlite.distributed.initialize({name}={given}) disagrees with MPI, which "
                         f"started this process with {name} {actual}")


def _abort_on_uncaught(kind, value, tb):
    from jaxlite.lower import collectives
    text = "".join(_traceback.format_exception(kind, value, tb))
    collectives.abort(f"jaxlite.distributed: rank {_process.index()} of {_process.count()} raised an uncaught "
                      f"exception; aborting the job.\n{text}")


def is_initialized():
    return _state["comm"] is not None


def shutdown():
    """Leave the job: wait for the other ranks, then back to a single process's view."""
    if not is_initialized():
        return
    from jaxlite.lower import collectives
    _state["comm"].Barrier()
    collectives.detach()
    _state["comm"].Free()
    _state["comm"] = None
    _process.set_place(0, 1)
    _sys.excepthook = _state["excepthook"]

