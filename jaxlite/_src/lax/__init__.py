"""jax._src.lax: see lax.py."""
