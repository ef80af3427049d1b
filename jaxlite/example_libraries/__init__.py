"""JAX's two example libraries, for programs written against them: stax (neural-net layers
as (init_fun, apply_fun) pairs) and optimizers (first-order optimizers over pytrees)."""
