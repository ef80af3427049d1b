"""jaxlite.tree: short names for the pytree utilities (tree.map, tree.leaves, ...), as jax.tree."""
import dataclasses as _dataclasses

from jaxlite.core.tree_util import tree_all as all
from jaxlite.core.tree_util import tree_broadcast as broadcast
from jaxlite.core.tree_util import tree_flatten as flatten
from jaxlite.core.tree_util import tree_flatten_with_path as flatten_with_path
from jaxlite.core.tree_util import tree_leaves as leaves
from jaxlite.core.tree_util import tree_leaves_with_path as leaves_with_path
from jaxlite.core.tree_util import tree_map as map
from jaxlite.core.tree_util import tree_map_with_path as map_with_path
from jaxlite.core.tree_util import tree_reduce as reduce
from jaxlite.core.tree_util import tree_reduce_associative as reduce_associative
from jaxlite.core.tree_util import tree_structure as structure
from jaxlite.core.tree_util import tree_transpose as transpose
from jaxlite.core.tree_util import tree_unflatten as unflatten


def static(**kwargs):
    """A dataclasses.field marked static, for register_dataclass: its value becomes aux data."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return _dataclasses.field(metadata=metadata, **kwargs)
