"""jaxlite.tree_util: pytree utilities (the implementation lives in jaxlite.core)."""
from jaxlite.core.tree_util import (Partial, PyTreeDef, register_dataclass, register_pytree_node,
                                    register_pytree_node_class, tree_all, tree_flatten,
                                    tree_leaves, tree_map, tree_reduce, tree_structure,
                                    tree_unflatten, treedef_is_leaf)
