"""The few JAX-internal module paths that JAX's own documentation imports (jax._src.api,
jax._src.lax.lax, jax._src.util, jax._src.lib.mlir.dialects.hlo), mapped onto jaxlite's
public modules. Nothing else of jax._src exists here."""
