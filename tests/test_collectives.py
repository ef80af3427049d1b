"""The block collectives (ppermute, pshuffle, psum_scatter, all_to_all, pswapaxes, axis_size)
under vmap(axis_name=...), against values recorded from JAX (tests/data/block_collectives.json).

Across processes the same functions are compared with this vmap simulation in test_distributed.py.
"""
import json
import os

import numpy as np
import pytest

import jaxlite
from jaxlite import lax
from jaxlite import numpy as jnp
from jaxlite.test_util import check_grads

X = np.arange(2 * 2 * 4 * 3, dtype=np.float32).reshape(2, 2, 4, 3)
CASES = {
    "a2a_split0_concat1": lambda v: lax.all_to_all(v, "i", 0, 1),
    "a2a_split0_concat2": lambda v: lax.all_to_all(v, "i", 0, 2),
    "a2a_tiled_split1_concat2": lambda v: lax.all_to_all(v, "i", 1, 2, tiled=True),
    "a2a_tiled_split1_concat0": lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True),
    "pswapaxes0": lambda v: lax.pswapaxes(v, "i", 0),
    "scatter0": lambda v: lax.psum_scatter(v, "i"),
    "scatter_tiled1": lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
    "ppermute": lambda v: lax.ppermute(v, "i", [(0, 1), (1, 0)]),
    "pshuffle": lambda v: lax.pshuffle(v, "i", [1, 0]),
    "axis_size": lambda v: v * 0 + lax.axis_size("i"),
    "all_gather_tiled1": lambda v: lax.all_gather(v, "i", axis=1, tiled=True),
}


def _recorded():
    with open(os.path.join(os.path.dirname(__file__), "data", "block_collectives.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name, jit):
    f = jaxlite.vmap(CASES[name], axis_name="i")
    np.testing.assert_array_equal((jaxlite.jit(f) if jit else f)(X), np.array(_recorded()[name]))


def test_partial_permutation_fills_zeros():
    out = jaxlite.vmap(lambda v: lax.ppermute(v, "i", [(0, 2)]), axis_name="i")(np.arange(3.0) + 1)
    np.testing.assert_array_equal(out, [0, 0, 1])


@pytest.mark.parametrize("name", ["a2a_tiled_split1_concat0", "scatter_tiled1", "ppermute", "a2a_split0_concat2",
                                  "all_gather_tiled1"])
def test_gradients(name):
    check_grads(jaxlite.vmap(CASES[name], axis_name="i"), (X,), order=1, modes=("fwd", "rev"))


def test_bad_arguments():
    with pytest.raises(ValueError, match="unique"):
        jaxlite.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]), axis_name="i")(np.ones(2))
    with pytest.raises(ValueError, match="does not represent a permutation"):
        jaxlite.vmap(lambda v: lax.pshuffle(v, "i", [0, 0]), axis_name="i")(np.ones(2))
    with pytest.raises(ValueError, match="must equal the axis size"):
        jaxlite.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(np.ones((2, 3)))
    with pytest.raises(NameError, match="unbound axis name"):
        lax.axis_size("nope")


@pytest.mark.parametrize("collective", [
    lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1]]), lambda x: lax.pmean(x, "i", axis_index_groups=[[0, 1]]),
    lambda x: lax.all_gather(x, "i", axis_index_groups=[[0], [1]]),
    lambda x: lax.psum_scatter(x, "i", axis_index_groups=[[0, 1]])])
def test_axis_index_groups_under_vmap_raise_as_in_jax(collective):
    with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
        jaxlite.vmap(collective, axis_name="i")(jnp.ones((2, 2)))


def test_axis_index_groups_in_a_one_process_shard_map():
    """Groups of one position: each process is its own group (the processes' case is in
    test_distributed.py); groups that miss or repeat a position are refused."""
    from jaxlite.sharding import PartitionSpec as P
    mesh = jaxlite.make_mesh((1,), ("i",))
    x = jnp.arange(3.0)

    def run(f):
        return jaxlite.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False)(x)
    np.testing.assert_array_equal(run(lambda v: lax.psum(v, "i", axis_index_groups=[[0]])), x)
    np.testing.assert_array_equal(run(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0]], tiled=True)), x)
    with pytest.raises(ValueError, match="axis_index_groups must be groups of equal size"):
        run(lambda v: lax.psum(v, "i", axis_index_groups=[[0], [0]]))


def test_axis_index_of_several_names_is_row_major():
    f = jaxlite.vmap(jaxlite.vmap(lambda x: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(f(jnp.zeros((2, 3))), [[0, 1, 2], [3, 4, 5]])
    g = jaxlite.vmap(jaxlite.vmap(lambda x: lax.axis_index(("j", "i")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(g(jnp.zeros((2, 3))), [[0, 2, 4], [1, 3, 5]])
