"""shard_map over 2 MPI processes: pytest launches `mpiexec -n 2 python mpi_worker.py SCENARIO`
(in its own session, with a timeout) and compares what the ranks saved here, in one process.

The references: the vmap(axis_name=...) simulation of the same functions, and gradients
recorded from JAX on 2 simulated devices (tests/data/shard_map_grads.json).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import jaxlite
from jaxlite import numpy as jnp

pytest.importorskip("mpi4py")
MPIEXEC = shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="needs mpiexec (pip install mpich)")
sys.path.insert(0, os.path.dirname(__file__))
WORKER = os.path.join(os.path.dirname(__file__), "mpi_worker.py")


def launch(scenario, outdir, deadline=60, timeout=120, ranks=2):
    """Run a scenario on `ranks` processes; returns (return code, stderr, seconds, per-rank results)."""
    env = dict(os.environ, DEADLINE=str(deadline), PYTHONPATH=os.pathsep.join(sys.path))
    start = time.monotonic()
    binding = ["-bind-to", "core"] if ranks <= os.cpu_count() else []     # more ranks than cores time-slice
    process = subprocess.Popen([MPIEXEC, "-n", str(ranks), *binding, sys.executable, WORKER, scenario, str(outdir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"mpiexec {scenario} did not end within {timeout} s")
    ranks = [dict(np.load(outdir / f"rank{r}.npz")) for r in range(ranks) if (outdir / f"rank{r}.npz").exists()]
    return process.returncode, stderr, time.monotonic() - start, ranks


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    code, stderr, _, ranks = launch("correctness", tmp_path_factory.mktemp("mpi"))
    assert code == 0, stderr
    return ranks


def _x(rank):
    return np.arange(24, dtype=np.float32).reshape(4, 6) * (rank + 1) - 5 * rank


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_collectives_equal_the_vmap_simulation(ranks, mode):
    import mpi_worker_simulation as sim
    want = sim.simulate_collectives(np.stack([_x(0), _x(1)]))
    for rank, got in enumerate(ranks):
        for name, value in want.items():
            np.testing.assert_array_equal(got[f"{mode}_{name}"], value[rank], err_msg=f"{name} on rank {rank}")


@pytest.mark.parametrize("check_vma", [True, False])
def test_gradients_match_jax(ranks, check_vma):
    with open(os.path.join(os.path.dirname(__file__), "data", "shard_map_grads.json")) as f:
        reference = json.load(f)[f"check_vma={check_vma}"]
    sharded = {"grad_inside_of_psum", "grad_of_psum_sharded", "grad_inside_mixed"}    # per rank: its block
    for name, want in reference.items():
        for mode in ("eager", "jit"):
            got = [r[f"check_vma={check_vma}/{name}/{mode}"] for r in ranks]
            got = np.concatenate(got) if name in sharded else got[0]
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name} ({mode})")


def test_data_parallel_training_equals_the_vmap_simulation_bit_for_bit(ranks):
    import mpi_worker_simulation as sim
    want = sim.simulate_training()
    for key, value in want.items():
        np.testing.assert_array_equal(ranks[0][key], ranks[1][key], err_msg="replicated parameters differ")
        np.testing.assert_array_equal(ranks[0][key], value, err_msg=key)


def test_devices_and_host_utilities(ranks):
    for rank, got in enumerate(ranks):
        np.testing.assert_array_equal(got["devices"], [rank, 2])
        np.testing.assert_array_equal(got["allgather"], [0.5, 1.5])
        assert got["broadcast"] == 5 and got["unequal_raises"]
        assert got["disagreeing_size_raises"]


def test_collectives_on_a_mesh_in_reverse_process_order(ranks):
    """Mesh position 0 is process 1: positions, gathers and ppermute follow the mesh, not ranks."""
    for rank, got in enumerate(ranks):
        for mode in ("eager", "jit"):
            def want(name):
                return got[f"reversed_{mode}_{name}"]
            np.testing.assert_array_equal(want("index"), [1 - rank] * 2)
            np.testing.assert_array_equal(want("gather"), [[2, 20], [1, 10]])
            np.testing.assert_array_equal(want("ppermute"), [2, 20] if rank == 0 else [0, 0])
            np.testing.assert_array_equal(want("psum"), [3, 30])


def test_the_data_parallel_example(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([MPIEXEC, "-n", "2", "-bind-to", "core", sys.executable, "-m", "jaxlite.examples.data_parallel",
                          "--steps", "20"], capture_output=True, text=True, env=env, timeout=120, start_new_session=True)
    assert out.returncode == 0, out.stderr
    assert "rank 0:" in out.stdout and "rank 1:" in out.stdout
    assert "2 process(es), 20 steps" in out.stdout and "parameters identical on every rank" in out.stdout


def test_a_raising_rank_ends_the_job(tmp_path):
    code, stderr, seconds, _ = launch("raises", tmp_path)
    assert code != 0 and "ValueError: boom from rank 1" in stderr and "rank 1 of 2 raised" in stderr
    assert seconds < 10


def test_a_skipped_collective_hits_the_deadline(tmp_path):
    code, stderr, seconds, _ = launch("skips", tmp_path, deadline=2)
    assert code != 0 and seconds < 30
    assert "rank 0 of 2 waited more than 2 s" in stderr
    assert "psum over mesh axes ('i',) of float32[3] in shard_map of '<lambda>'" in stderr


def test_ranks_with_different_shapes_get_an_error(tmp_path):
    code, stderr, seconds, _ = launch("shapes", tmp_path)
    assert code != 0 and seconds < 30
    # Each rank names the other; which message is written before MPI_Abort ends the job varies.
    assert ("but rank(s) [1] run something else" in stderr and "float32[3]" in stderr) or \
        ("but rank(s) [0] run something else" in stderr and "float32[4]" in stderr)
    assert "During handling of the above exception" not in stderr


def test_collectives_over_groups_of_processes_match_jax(tmp_path):
    """4 processes (on 2 cores: they time-slice, so one launch): rows and columns of a 2-d mesh,
    axis_index_groups, and a mesh of 2 of the 4 processes; JAX's values recorded on 4 simulated
    devices (tests/data/record_process_groups.py)."""
    code, stderr, _, ranks = launch("groups", tmp_path, ranks=4, timeout=240)
    assert code == 0, stderr
    with open(os.path.join(os.path.dirname(__file__), "data", "jax_process_groups.json")) as f:
        reference = json.load(f)
    checked = 0
    for case in ("2d", "groups", "part"):
        for key, per_process in reference[case].items():
            for process, want in per_process.items():
                for mode in ("eager", "jit"):
                    got = ranks[int(process)][f"{case}/{mode}/{key}"]
                    np.testing.assert_allclose(got, want, err_msg=f"{case} {key} ({mode}) on process {process}")
                    checked += 1
    assert checked == 2 * (11 * 4 + 6 * 4 + 3 * 2)
    assert not any(key.startswith("part/") for key in {**ranks[0], **ranks[2]})
