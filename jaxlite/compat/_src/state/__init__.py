"""jax._src.state, for flax.nnx: the type of a mutable array reference."""
