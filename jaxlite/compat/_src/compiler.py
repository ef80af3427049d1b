"""jax._src.compiler, which chex imports (its restrict_backends patches XLA's compile entry
points). jaxlite compiles through its own pipeline and has none of them, so
chex.restrict_backends cannot be used on jaxlite; importing chex works."""
