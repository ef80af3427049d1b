"""Collectives over groups of processes, for mpi_worker.py's 4-process scenario and for the
JAX recording of their values (tests/data/record_process_groups.py); `lax`, `jnp` are jax's or
jaxlite's. Each process's block is x = [p + 1, 10 (p + 1)] for process p."""


def on_2d_mesh(lax, jnp):
    """Over mesh axes ('a', 'b') of shape (2, 2): rows, columns, both, in either order."""
    def f(x):
        like = lambda i: x * 0 + i.astype(x.dtype)
        return {"psum_a": lax.psum(x, "a"), "psum_b": lax.psum(x, "b"), "pmax_ba": lax.pmax(x, ("b", "a")),
                "gather_b": lax.all_gather(x, "b"), "gather_a_tiled": lax.all_gather(x, "a", tiled=True),
                "index_a": like(lax.axis_index("a")), "index_b": like(lax.axis_index("b")),
                "index_ba": like(lax.axis_index(("b", "a"))), "ppermute_b": lax.ppermute(x, "b", [(0, 1)]),
                "scatter_a": lax.psum_scatter(jnp.concatenate([x, 2 * x]), "a", tiled=True),
                "a2a_b": lax.all_to_all(x, "b", 0, 0, tiled=True)}
    return f


def with_index_groups(lax, jnp):
    """Over a 1-d mesh axis 'i' of 4 processes split by axis_index_groups."""
    halves, alternate = [[0, 1], [2, 3]], [[0, 2], [1, 3]]

    def f(x):
        return {"psum": lax.psum(x, "i", axis_index_groups=alternate),
                "pmax": lax.pmax(x, "i", axis_index_groups=halves),
                "pmean": lax.pmean(x, "i", axis_index_groups=alternate),
                "gather": lax.all_gather(x, "i", axis_index_groups=halves),
                "a2a": lax.all_to_all(x, "i", 0, 0, axis_index_groups=alternate, tiled=True),
                "scatter": lax.psum_scatter(x, "i", axis_index_groups=halves, tiled=True)}
    return f


def on_part_of_the_processes(lax, jnp):
    """Over a mesh of processes 3 and 1 (in that order) only."""
    def f(x):
        return {"psum": lax.psum(x, "i"), "gather": lax.all_gather(x, "i"),
                "index": x * 0 + lax.axis_index("i").astype(x.dtype)}
    return f


CASES = {"2d": (on_2d_mesh, (2, 2), ("a", "b"), [0, 1, 2, 3]),
         "groups": (with_index_groups, (4,), ("i",), [0, 1, 2, 3]),
         "part": (on_part_of_the_processes, (2,), ("i",), [3, 1])}
