"""Lowering registration as jax.interpreters.mlir names it, mapped onto jaxlite's compiler.

jaxlite has no MLIR: a primitive that JAX code lowers with `lower_fun(fun)` is
rewritten by jaxlite's compiler into `fun`'s primitives before fusion (the same
table the lax primitives' own rewrites use), so it compiles natively. A rule
`rule(ctx, *values)` is called on jaxlite's traced values: one written with
jax._src.lib.mlir.dialects.hlo's operations (jaxlite's, on lax) compiles natively
too. A primitive with no usable lowering (none registered, or a rule that builds
MLIR itself, as equinox's noinline) still runs under jit, through its `impl`.
"""
from jaxlite.core.primitive import CannotRewrite, compiler_rewrites


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
    if isinstance(rule, _LoweringFunction):
        def rewrite(*operands, memory_orders=None, **params):
            return rule.fun(*operands, **params)
    else:
        def rewrite(*operands, memory_orders=None, **params):
            try:
                results = rule(LoweringRuleContext(primitive), *operands, **params)
            except Exception as err:    # MLIR-building code: it cannot compute on jaxlite's values
                raise CannotRewrite(f"{primitive}'s lowering rule builds MLIR") from err
            return list(results) if primitive.multiple_results else results[0]
    compiler_rewrites[primitive] = rewrite
    return rule


class LoweringRuleContext:
    """What a lowering rule gets as `ctx`: here only the primitive it lowers."""

    def __init__(self, primitive):
        self.primitive = primitive
