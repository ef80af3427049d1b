"""jaxlite.ad: the targets `vjp(...).with_refs(...)` takes, as jax.ad."""
from jaxlite.transforms.ad import DidntWant, DontWant, GradRef, GradValue

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue"]
