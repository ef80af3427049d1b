"""jax._src.lib.mlir: only the hlo dialect, see dialects/hlo.py."""
