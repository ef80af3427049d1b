"""Host-side helpers for multi-process jobs (jax.experimental.multihost_utils): each runs one
collective over a mesh of every process's device, so every process must call it."""
import numpy as _np

from jaxlite import _sharding
from jaxlite.core.tree_util import tree_leaves as _tree_leaves
from jaxlite.core.tree_util import tree_map as _tree_map


def _over_processes(collective, x):
    from jaxlite import numpy as jnp
    from jaxlite.transforms.shard_map import shard_map
    from jaxlite.sharding import PartitionSpec
    mesh = _sharding.Mesh(_sharding.devices(), ("processes",))
    run = shard_map(collective, mesh=mesh, in_specs=PartitionSpec(), out_specs=PartitionSpec(), check_vma=False)
    return _np.asarray(run(jnp.asarray(x)))


def process_allgather(in_tree, tiled=False):
    """Every process's value of each leaf, stacked along a new leading axis (concatenated if tiled)."""
    from jaxlite import lax
    return _tree_map(lambda x: _over_processes(lambda v: lax.all_gather(v, "processes", tiled=tiled), x), in_tree)


def broadcast_one_to_all(in_tree, is_source=None):
    """Process 0's value (or the one where is_source is true) of each leaf, on every process."""
    from jaxlite import lax
    source = _sharding.process_index() == 0 if is_source is None else bool(is_source)

    def broadcast(x):
        x = _np.asarray(x)
        mine = x if source else _np.zeros_like(x)
        return _over_processes(lambda v: lax.psum(v, "processes"), mine).astype(x.dtype)
    return _tree_map(broadcast, in_tree)


def sync_global_devices(name):
    """Wait until every process has reached this call (with the same `name`)."""
    assert_equal(_np.frombuffer(name.encode().ljust(64, b"\0")[:64], _np.uint8).astype(_np.int32),
                 f"sync_global_devices name mismatch ({name!r})")


def assert_equal(in_tree, fail_message=""):
    """Raise AssertionError unless every process passed equal values."""
    for gathered in _tree_leaves(process_allgather(in_tree)):
        if not all(_np.array_equal(gathered[0], other) for other in gathered[1:]):
            raise AssertionError(f"{fail_message} Expected equal values on all processes, got {gathered}")
