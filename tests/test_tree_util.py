import collections
import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

import jaxlite
from jaxlite import tree_util


@tree_util.register_pytree_node_class
class Pair:
    def __init__(self, first, second, label="pair"):
        self.first, self.second, self.label = first, second, label

    def tree_flatten(self):
        return (self.first, self.second), self.label

    @classmethod
    def tree_unflatten(cls, label, children):
        return cls(*children, label=label)

    def __eq__(self, other):
        return (isinstance(other, Pair) and (self.first, self.second, self.label)
                == (other.first, other.second, other.label))


Point = collections.namedtuple("Point", ["x", "y"])

leaves = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, width=32), st.text(max_size=2))
trees = st.recursive(
    leaves | st.none(),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.text("abc", min_size=1, max_size=2), children, max_size=3),
        st.builds(Point, children, children),
        st.builds(Pair, children, children, st.sampled_from(["p", "q"]))),
    max_leaves=12)


@given(trees)
def test_flatten_unflatten_round_trip(tree):
    flat, treedef = tree_util.tree_flatten(tree)
    assert tree_util.tree_unflatten(treedef, flat) == tree
    assert treedef.num_leaves == len(flat)


@given(trees)
def test_tree_map_identity_and_structure(tree):
    assert tree_util.tree_map(lambda x: x, tree) == tree
    assert tree_util.tree_structure(tree_util.tree_map(lambda x: 0, tree)) == tree_util.tree_structure(tree)


def test_none_is_an_empty_subtree():
    assert tree_util.tree_leaves([1, None, (2, None)]) == [1, 2]
    assert tree_util.tree_structure(None).num_leaves == 0


def test_dicts_flatten_in_sorted_key_order():
    assert tree_util.tree_leaves({"b": 1, "a": 2, "c": 3}) == [2, 1, 3]
    assert tree_util.tree_structure({"b": 1, "a": 2}) == tree_util.tree_structure({"a": 0, "b": 0})


def test_tuples_lists_and_namedtuples_are_distinct():
    structures = {tree_util.tree_structure(t) for t in [(1, 2), [1, 2], Point(1, 2)]}
    assert len(structures) == 3


def test_tree_map_over_several_trees():
    out = tree_util.tree_map(lambda a, b: a + b, {"x": 1, "y": (2, 3)}, {"x": 10, "y": (20, 30)})
    assert out == {"x": 11, "y": (22, 33)}


def test_tree_map_mismatched_structure_is_an_error():
    with pytest.raises(ValueError, match="mismatch"):
        tree_util.tree_map(lambda a, b: a, (1, 2), [1, 2])


def test_register_pytree_node_and_short_module():
    class Box:
        def __init__(self, value):
            self.value = value

    tree_util.register_pytree_node(Box, lambda b: ((b.value,), None), lambda _, c: Box(*c))
    out = jaxlite.tree.map(lambda v: v * 2, [Box(3)])
    assert out[0].value == 6
    assert jaxlite.tree.leaves({"a": Box(1)}) == [1]


def test_register_dataclass_with_static_fields():
    @dataclasses.dataclass
    class Layer:
        weight: float
        name: str = dataclasses.field(metadata={"static": True}, default="dense")

    tree_util.register_dataclass(Layer)
    flat, treedef = tree_util.tree_flatten(Layer(1.5, "out"))
    assert flat == [1.5]
    assert tree_util.tree_unflatten(treedef, [2.5]) == Layer(2.5, "out")


def test_unflatten_with_wrong_leaf_count_is_an_error():
    treedef = tree_util.tree_structure((1, 2))
    with pytest.raises(ValueError, match="expects 2 leaves"):
        tree_util.tree_unflatten(treedef, [1])


def test_is_leaf_stops_descent():
    assert tree_util.tree_leaves([(1, 2), (3,)], is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2), (3,)]


def test_default_registry_flattens_as_the_module_functions():
    registry = tree_util.default_registry
    assert registry.flatten({"a": 1, "b": [2, 3]}) == tree_util.tree_flatten({"a": 1, "b": [2, 3]})
    assert registry.flatten_one_level({"a": 1, "b": 2}) == ((1, 2), ("a", "b"))
    assert registry.flatten_one_level(3) is None
    assert registry.flatten_with_path([4])[0] == [((tree_util.SequenceKey(0),), 4)]
    assert registry.is_node(list) and not registry.is_node(int)
