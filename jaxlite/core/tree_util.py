"""Pytrees: nested containers whose leaves are arrays.

A container type is registered with a function that splits it into children and
static auxiliary data, and one that rebuilds it. None is a container with no
children; dicts flatten in sorted key order so equal dicts give equal structures.
"""
import collections
import dataclasses
import functools


class _NodeKind:
    __slots__ = ("type", "flatten", "unflatten")

    def __init__(self, node_type, flatten, unflatten):
        self.type, self.flatten, self.unflatten = node_type, flatten, unflatten


_registry = {}


def register_pytree_node(node_type, flatten_func, unflatten_func):
    """Register a container: flatten(x) -> (children, aux); unflatten(aux, children) -> x."""
    if node_type in _registry:
        raise ValueError(f"Duplicate pytree registration for {node_type}")
    _registry[node_type] = _NodeKind(node_type, flatten_func, unflatten_func)
    return node_type


def register_pytree_node_class(cls):
    """Class decorator: the class provides tree_flatten() and classmethod tree_unflatten(aux, children)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype, data_fields=None, meta_fields=None):
    """Register a dataclass; data fields are children, meta fields are static aux data.

    Without explicit field lists, fields marked `field(metadata={"static": True})` are meta.
    """
    if data_fields is None or meta_fields is None:
        fields = dataclasses.fields(nodetype)
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if f.name not in meta_fields]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten(x):
        return [getattr(x, name) for name in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, children):
        return nodetype(**dict(zip(data_fields, children)), **dict(zip(meta_fields, meta)))

    register_pytree_node(nodetype, flatten, unflatten)
    return nodetype


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


register_pytree_node(type(None), lambda x: ((), None), lambda aux, children: None)
register_pytree_node(tuple, lambda x: (x, None), lambda aux, children: tuple(children))
register_pytree_node(list, lambda x: (x, None), lambda aux, children: list(children))
register_pytree_node(dict, lambda x: ([x[k] for k in sorted(x)], tuple(sorted(x))),
                     lambda keys, children: dict(zip(keys, children)))
register_pytree_node(collections.OrderedDict, lambda x: (list(x.values()), tuple(x)),
                     lambda keys, children: collections.OrderedDict(zip(keys, children)))
register_pytree_node(
    collections.defaultdict,
    lambda x: ([x[k] for k in sorted(x)], (x.default_factory, tuple(sorted(x)))),
    lambda aux, children: collections.defaultdict(aux[0], zip(aux[1], children)))

_NAMEDTUPLE = _NodeKind("namedtuple", lambda x: (tuple(x), type(x)),
                        lambda cls, children: cls(*children))


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
        return hash(self._key())

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


def _child_keys(kind, aux, count):
    """How each child of a node is written in a path: [0], ['key'] or .field."""
    if kind.type in (dict, collections.OrderedDict):
        return [f"[{k!r}]" for k in aux]
    if kind.type is collections.defaultdict:
        return [f"[{k!r}]" for k in aux[1]]
    if kind is _NAMEDTUPLE:
        return [f".{name}" for name in aux._fields]
    return [f"[{i}]" for i in range(count)]


def tree_leaves_with_path(tree, is_leaf=None):
    """[(path, leaf)] where path is the leaf's address as Python source, e.g. "[1]['h']"."""
    out = []
    _collect_with_path(tree, "", is_leaf, out)
    return out


def _collect_with_path(tree, path, is_leaf, out):
    kind = None if (is_leaf is not None and is_leaf(tree)) else _node_kind(tree)
    if kind is None:
        out.append((path, tree))
        return
    children, aux = kind.flatten(tree)
    children = list(children)
    for key, child in zip(_child_keys(kind, aux, len(children)), children):
        _collect_with_path(child, path + key, is_leaf, out)


class Partial(functools.partial):
    """functools.partial as a pytree: the bound arguments are its children, the function
    its static part, so a Partial can be passed through jit, vmap or grad (jax.tree_util.Partial)."""


register_pytree_node(
    Partial,
    lambda partial: ((partial.args, partial.keywords), partial.func),
    lambda func, children: Partial(func, *children[0], **children[1]))
