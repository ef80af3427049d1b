"""jaxlite.sharding: meshes, partition specs and shardings (jax.sharding's names)."""
from jaxlite._sharding import (AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec, Sharding,  # noqa: F401
                               SingleDeviceSharding)
