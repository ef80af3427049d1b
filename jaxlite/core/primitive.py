"""Primitives: the operations a jaxpr is made of.

A primitive knows how to compute itself on numpy arrays (`impl`) and how to
compute its output types (`abstract_eval`). Rules for transformations live in
the tables of each transformation, registered next to the primitive's definition.
"""
from jaxlite.core.trace import current_trace


class Primitive:
    def __init__(self, name, multiple_results=False):
        self.name = name
        self.multiple_results = multiple_results
        self.impl = None
        self.abstract_eval = None

    def bind(self, *args, **params):
        return current_trace().process_primitive(self, args, params)

    def def_impl(self, impl):
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule):
        self.abstract_eval = rule
        return rule

    def abstract_eval_list(self, avals, params):
        out = self.abstract_eval(*avals, **params)
        return list(out) if self.multiple_results else [out]

    def __repr__(self):
        return self.name


# Rewrites the compiler applies before fusion, registered by a primitive's module:
# primitive -> rule(*operands, memory_orders, **params) computing it with simpler
# primitives. `memory_orders` gives, per operand, each axis's position in the memory
# order of the buffer it is read from (a layout hint). Living here, the table lets
# jaxlite.lower rewrite lax primitives without importing jaxlite.lax.
compiler_rewrites = {}


class CannotRewrite(Exception):
    """Raised by a compiler rewrite that does not apply: the equation is kept as it is."""

# Primitives on hijax types: primitive -> rule(*values, **params) computing it where values of
# hi types are their raised Python objects holding arrays (core/hi_lowering.py).
hi_lowerings = {}

# Call primitives: an equation's value is its `jaxpr` param (a ClosedJaxpr) applied to
# its operands; they differ only in their transformation rules (jit, custom_jvp/vjp,
# checkpoint). Each one's module registers it here, so that the compiler inlines their
# bodies (lower/passes.inline_calls) instead of running them as opaque steps.
call_primitives = set()
