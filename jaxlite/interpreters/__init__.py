"""jaxlite.interpreters: the transformations' rule tables under JAX's names (jax.interpreters.*).

jaxlite's tables take rules of the same form as JAX's (a JVP rule maps primals and
tangents to outputs and output tangents, a batching rule maps values and batch
dims to an output and its dim), so libraries that define primitives register
into them unchanged.
"""
from jaxlite.interpreters import ad, batching, mlir, partial_eval, xla
