"""Pytrees: nested containers whose leaves are arrays.

A container type is registered with a function that splits it into children and
static auxiliary data, and one that rebuilds it. None is a container with no
children; dicts flatten in sorted key order so equal dicts give equal structures.
"""
import collections
import dataclasses
import functools


# ---------------------------------------------------------------- keys: how a child is reached

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The child at position `idx` of a tuple or list."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The child under `key` in a dict."""
    key: object

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The child in attribute `name` (namedtuples, dataclasses)."""
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The child at position `key` among the children of a node registered without keys."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(keys, *, simple=False, separator=""):
    """A key path as text: "[1]['h'].w"; `simple` gives the bare keys joined by `separator`."""
    if not simple:
        return separator.join(str(k) for k in keys)
    return separator.join(str(_simple_key(k)) for k in keys)


def _simple_key(key):
    for field in ("idx", "key", "name"):
        if hasattr(key, field):
            return getattr(key, field)
    return key


class _NodeKind:
    """A registered container type. flatten_with_keys(x) -> ([(key, child)], aux)."""

    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys")

    def __init__(self, node_type, flatten, unflatten, flatten_with_keys=None):
        self.type, self.flatten, self.unflatten = node_type, flatten, unflatten
        self.flatten_with_keys = flatten_with_keys or _with_index_keys(flatten)


def _with_index_keys(flatten):
    def flatten_with_keys(x):
        children, aux = flatten(x)
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux
    return flatten_with_keys


def _without_keys(flatten_with_keys):
    def flatten(x):
        pairs, aux = flatten_with_keys(x)
        return [c for _, c in pairs], aux
    return flatten


_registry = {}


def _register(kind):
    if kind.type in _registry:
        raise ValueError(f"Duplicate pytree registration for {kind.type}")
    _registry[kind.type] = kind
    return kind.type


def register_pytree_node(node_type, flatten_func, unflatten_func, flatten_with_keys_func=None):
    """Register a container: flatten(x) -> (children, aux); unflatten(aux, children) -> x."""
    return _register(_NodeKind(node_type, flatten_func, unflatten_func, flatten_with_keys_func))


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """Register a container whose children have keys: flatten_with_keys(x) -> ([(key, child)], aux)."""
    return _register(_NodeKind(nodetype, flatten_func or _without_keys(flatten_with_keys), unflatten_func,
                               flatten_with_keys))


def register_pytree_node_class(cls):
    """Class decorator: the class provides tree_flatten() and classmethod tree_unflatten(aux, children)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator: tree_flatten_with_keys() and classmethod tree_unflatten(aux, children);
    tree_flatten() too if the class defines it."""
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flatten)
    return cls


def register_static(cls):
    """Make instances of cls pytrees without children: the whole value is static aux data."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, children: aux)
    return cls


def register_dataclass(nodetype, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass; data fields are children, meta fields are static aux data.

    Without explicit field lists, fields marked `field(metadata={"static": True})` are meta;
    `drop_fields` (init=False fields) are neither, and are rebuilt by the class.
    """
    if data_fields is None or meta_fields is None:
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if f.name not in meta_fields]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten_with_keys(x):
        return ([(GetAttrKey(name), getattr(x, name)) for name in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten(meta, children):
        return nodetype(**dict(zip(data_fields, children)), **dict(zip(meta_fields, meta)))

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _sequence_keys(x):
    return [(SequenceKey(i), c) for i, c in enumerate(x)]


register_pytree_node(type(None), lambda x: ((), None), lambda aux, children: None)
register_pytree_with_keys(tuple, lambda x: (_sequence_keys(x), None), lambda aux, children: tuple(children))
register_pytree_with_keys(list, lambda x: (_sequence_keys(x), None), lambda aux, children: list(children))
register_pytree_with_keys(dict, lambda x: ([(DictKey(k), x[k]) for k in sorted(x)], tuple(sorted(x))),
                          lambda keys, children: dict(zip(keys, children)))
register_pytree_with_keys(collections.OrderedDict, lambda x: ([(DictKey(k), v) for k, v in x.items()], tuple(x)),
                          lambda keys, children: collections.OrderedDict(zip(keys, children)))
register_pytree_with_keys(
    collections.defaultdict,
    lambda x: ([(DictKey(k), x[k]) for k in sorted(x)], (x.default_factory, tuple(sorted(x)))),
    lambda aux, children: collections.defaultdict(aux[0], zip(aux[1], children)))

_NAMEDTUPLE = _NodeKind("namedtuple", lambda x: (tuple(x), type(x)), lambda cls, children: cls(*children),
                        lambda x: ([(GetAttrKey(name), c) for name, c in zip(x._fields, x)], type(x)))


def _node_kind(x):
    kind = _registry.get(type(x))
    if kind is None and _is_namedtuple(x):
        return _NAMEDTUPLE
    return kind


class PyTreeDef:
    """The structure of a pytree: its container kinds, aux data and where the leaves go."""

    __slots__ = ("kind", "aux", "children", "num_leaves")

    def __init__(self, kind, aux, children):
        self.kind, self.aux, self.children = kind, aux, tuple(children)
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in self.children)

    num_nodes = property(lambda self: 1 + sum(c.num_nodes for c in self.children))

    def _key(self):
        return (self.kind.type if self.kind else None, self.aux, self.children)

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._key() == other._key()

    def __hash__(self):
        # Aux data may be unhashable (a list, as JAX allows): equal trees still hash alike.
        return hash((self.kind.type if self.kind else None, _hash_or_type(self.aux), self.children))

    def node_data(self):
        """(node type, aux data) of the root, None for a leaf."""
        return None if self.kind is None else (self.kind.type, self.aux)

    def unflatten(self, leaves):
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"Tree structure {self} expects {self.num_leaves} leaves, got {len(leaves)}")
        return self._build(iter(leaves))

    def _build(self, leaves):
        if self.kind is None:
            return next(leaves)
        return self.kind.unflatten(self.aux, [c._build(leaves) for c in self.children])

    def flatten_up_to(self, tree):
        """The subtrees of `tree` sitting where this (prefix) structure has leaves."""
        out = []
        self._collect_up_to(tree, out)
        return out

    def _collect_up_to(self, tree, out):
        if self.kind is None:
            out.append(tree)
            return
        kind = _node_kind(tree)
        children, aux = kind.flatten(tree) if kind is not None else (None, None)
        if kind is not self.kind or aux != self.aux or len(children) != len(self.children):
            raise ValueError(f"Tree structure mismatch: expected a tree matching {self}, got {tree!r}")
        for child_def, child in zip(self.children, children):
            child_def._collect_up_to(child, out)

    def __repr__(self):
        return f"PyTreeDef({self._text()})"

    def _text(self):
        if self.kind is None:
            return "*"
        parts = [c._text() for c in self.children]
        node_type = self.kind.type
        if node_type is type(None):
            return "None"
        if node_type is tuple:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if node_type is list:
            return "[" + ", ".join(parts) + "]"
        if node_type is dict:
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self.aux, parts)) + "}"
        name = self.aux.__name__ if node_type == "namedtuple" else node_type.__name__
        return f"{name}(" + ", ".join(parts) + ")"


def _hash_or_type(value):
    try:
        return hash(value)
    except TypeError:
        return hash(type(value))


LEAF = PyTreeDef(None, None, ())


def tree_flatten(tree, is_leaf=None):
    """(leaves, treedef) for a pytree; `is_leaf(x)` can stop the descent early."""
    leaves = []
    return leaves, _flatten(tree, is_leaf, leaves)


def _flatten(tree, is_leaf, leaves):
    kind = None if (is_leaf is not None and is_leaf(tree)) else _node_kind(tree)
    if kind is None:
        leaves.append(tree)
        return LEAF
    children, aux = kind.flatten(tree)
    return PyTreeDef(kind, aux, [_flatten(c, is_leaf, leaves) for c in children])


def tree_unflatten(treedef, leaves):
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    """Apply f leafwise; every tree in `rest` must have `tree`'s structure (or extend it)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_reduce(function, tree, initializer=None, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is None:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree):
    return all(tree_leaves(tree))


def treedef_is_leaf(treedef):
    return treedef.kind is None


def broadcast_prefix(prefix_tree, full_tree, is_leaf=None):
    """For each leaf of `full_tree`, the leaf of `prefix_tree` above it (for in_axes-style specs)."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf=lambda x: x is None)
    subtrees = prefix_def.flatten_up_to(full_tree)
    result = []
    for value, subtree in zip(prefix_leaves, subtrees):
        result.extend([value] * len(tree_leaves(subtree, is_leaf)))
    return result


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """([(key path, leaf)], treedef): each path is a tuple of keys (SequenceKey, DictKey, ...)."""
    pairs = []
    return pairs, _flatten_with_path(tree, (), is_leaf, is_leaf_takes_path, pairs)


def _flatten_with_path(tree, path, is_leaf, is_leaf_takes_path, pairs):
    stop = is_leaf is not None and (is_leaf(path, tree) if is_leaf_takes_path else is_leaf(tree))
    kind = None if stop else _node_kind(tree)
    if kind is None:
        pairs.append((path, tree))
        return LEAF
    keyed, aux = kind.flatten_with_keys(tree)
    return PyTreeDef(kind, aux, [_flatten_with_path(child, path + (key,), is_leaf, is_leaf_takes_path, pairs)
                                 for key, child in keyed])


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """[(key path, leaf)] in the order of tree_leaves."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """tree_map where f also receives each leaf's key path first: f(path, leaf, *others)."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(path, leaf, *xs) for (path, leaf), *xs in zip(pairs, *others))


# ---------------------------------------------------------------- structure helpers

def treedef_children(treedef):
    return list(treedef.children)


def treedef_tuple(treedefs):
    """The structure of a tuple whose children have the given structures."""
    return PyTreeDef(_registry[tuple], None, list(treedefs))


def flatten_one_level(tree):
    """(children, aux data) of a container; ValueError for a leaf."""
    kind = _node_kind(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = kind.flatten(tree)
    return list(children), aux


def flatten_one_level_with_keys(tree):
    """([(key, child)], aux data) of a container; ValueError for a leaf."""
    kind = _node_kind(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    pairs, aux = kind.flatten_with_keys(tree)
    return list(pairs), aux


def is_tree_node(typ):
    """Whether instances of the type are containers (registered, or a namedtuple class)."""
    return typ in _registry or (isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields"))


def all_leaves(iterable, is_leaf=None):
    """Whether every element of iterable is a leaf."""
    return all(tree_structure(x, is_leaf) == LEAF for x in iterable)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of structure outer(inner(leaves)) into inner(outer(leaves))."""
    inner_trees = outer_treedef.flatten_up_to(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(inner_trees[0]) if inner_trees else LEAF
    columns = [inner_treedef.flatten_up_to(t) for t in inner_trees]
    return inner_treedef.unflatten(outer_treedef.unflatten(column) for column in zip(*columns))


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """prefix_tree with each of its leaves repeated over the subtree of full_tree below it."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    return prefix_def.unflatten(tree_map(lambda _: leaf, subtree, is_leaf=is_leaf)
                                for leaf, subtree in zip(prefix_leaves, subtrees))


def tree_reduce_associative(operation, tree, *, identity=None, is_leaf=None):
    """Reduce the leaves with an associative operation, pairwise (a balanced tree of calls)."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is None:
            raise TypeError("tree_reduce_associative: empty tree and no identity")
        return identity
    while len(leaves) > 1:
        paired = [operation(a, b) for a, b in zip(leaves[::2], leaves[1::2])]
        leaves = paired + ([leaves[-1]] if len(leaves) % 2 else [])
    return leaves[0]


class PyTreeRegistry:
    """The registry of container types as an object (JAX's tree_util.default_registry), for
    code that flattens through a registry: its methods are the module's functions."""

    def flatten(self, tree, leaf_predicate=None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_with_path(self, tree, leaf_predicate=None):
        return tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=leaf_predicate is not None)

    def flatten_one_level(self, tree):
        """(children, aux data) of a container; None for a leaf."""
        return None if _node_kind(tree) is None else _as_tuple_children(flatten_one_level(tree))

    def flatten_one_level_with_keys(self, tree):
        return None if _node_kind(tree) is None else _as_tuple_children(flatten_one_level_with_keys(tree))

    def is_node(self, type):
        return is_tree_node(type)

    def register_node(self, type, to_iterable, from_iterable, to_iterable_with_keys=None):
        register_pytree_node(type, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, type, data_fields, meta_fields, /):
        register_dataclass(type, list(data_fields), list(meta_fields))


def _as_tuple_children(children_and_aux):
    children, aux = children_and_aux
    return tuple(children), aux


default_registry = PyTreeRegistry()


class Partial(functools.partial):
    """A functools.partial that is a pytree: its bound arguments are children, the function is static,
    so a partially applied function passes through jit and other transformations as an argument.
    (A Partial of a Partial merges the two, as functools.partial does: the inner arguments are children too.)"""


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]))
