"""Records JAX's values for tests/mpi_group_functions.py on 4 simulated CPU devices:
/work/jaxref/bin/python tests/data/record_process_groups.py  (writes jax_process_groups.json)."""
import json
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import mpi_group_functions as cases  # noqa: E402

recorded = {}
for name, (make, shape, axes, processes) in cases.CASES.items():
    devices = np.array([jax.devices()[p] for p in processes]).reshape(shape)
    mesh = jax.sharding.Mesh(devices, axes)
    spec = P(axes)
    blocks = [np.float32([p + 1, 10 * (p + 1)]) for p in processes]
    x = jax.device_put(np.concatenate(blocks), NamedSharding(mesh, spec))
    out = jax.jit(jax.shard_map(make(jax.lax, jnp), mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))(x)
    recorded[name] = {}
    for key, value in out.items():
        value = np.asarray(value)
        per_process = np.split(value, len(processes))
        recorded[name][key] = {str(p): block.tolist() for p, block in zip(processes, per_process)}
with open(os.path.join(os.path.dirname(__file__), "jax_process_groups.json"), "w") as f:
    json.dump({"note": "JAX 0.10.2, 4 simulated CPU devices; per process, its block", **recorded}, f)
