"""Lowering registration as jax.interpreters.mlir names it, mapped onto jaxlite's compiler.

jaxlite has no MLIR: a primitive that JAX code lowers with `lower_fun(fun)` is
rewritten by jaxlite's compiler into `fun`'s primitives before fusion (the same
table the lax primitives' own rewrites use), so it compiles natively. A primitive
with no such lowering (none registered, or a rule that builds MLIR itself, as
equinox's noinline) still runs under jit, through its `impl` in Python.
"""
from jaxlite.core.primitive import compiler_rewrites


class _LoweringFunction:
    """What `lower_fun` returns: a Python function computing the primitive from simpler ones."""

    def __init__(self, fun, multiple_results):
        self.fun, self.multiple_results = fun, multiple_results


def lower_fun(fun, multiple_results=True):
    return _LoweringFunction(fun, multiple_results)


def register_lowering(primitive, rule, platform=None):
    """Use `rule` (from lower_fun) to compile `primitive`; lowerings for other platforms never apply here."""
    if platform not in (None, "cpu"):
        return rule
    if not isinstance(rule, _LoweringFunction):
        return rule     # MLIR-building code cannot apply: the primitive runs through its impl

    def rewrite(*operands, memory_orders=None, **params):
        return rule.fun(*operands, **params)
    compiler_rewrites[primitive] = rewrite
    return rule
