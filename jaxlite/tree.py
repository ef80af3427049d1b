"""jaxlite.tree: short names for the pytree utilities (tree.map, tree.leaves, ...)."""
from jaxlite.core.tree_util import tree_all as all
from jaxlite.core.tree_util import tree_flatten as flatten
from jaxlite.core.tree_util import tree_leaves as leaves
from jaxlite.core.tree_util import tree_map as map
from jaxlite.core.tree_util import tree_reduce as reduce
from jaxlite.core.tree_util import tree_structure as structure
from jaxlite.core.tree_util import tree_unflatten as unflatten
