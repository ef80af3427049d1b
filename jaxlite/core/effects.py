"""Effects, as JAX names them (jax.extend.core.Effect): the kinds of side effect an
operation may have, by type.

jaxlite's own IR marks an effectful primitive with `primitive.effectful` (see
core.ir.has_effects); these classes are the names code written for JAX declares its
effects with (flax.nnx subclasses Effect and adds it to control_flow_allowed_effects).
"""


class Effect:
    """The base class of an effect kind; an instance is one effect."""


Effects = set
no_effects = frozenset()


class EffectTypeSet:
    """A set of effect types: `contains(effect)` if the effect is an instance of one."""

    def __init__(self):
        self._effect_types = set()

    def __repr__(self):
        return f"EffectTypeSet({self._effect_types})"

    def add_type(self, effect_type):
        self._effect_types.add(effect_type)

    def contains(self, effect):
        return any(isinstance(effect, t) for t in self._effect_types)

    def filter_in(self, effects):
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects):
        return [e for e in effects if not self.contains(e)]


# The effect types a loop or cond body may have (JAX's list; one device, so every kind is).
control_flow_allowed_effects = EffectTypeSet()
