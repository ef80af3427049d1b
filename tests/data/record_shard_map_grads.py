"""Record JAX's gradients through shard_map on 2 simulated devices (tests/data/shard_map_grads.json)."""
import json, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import PartitionSpec as P, Mesh
mesh = Mesh(jax.devices(), ("i",))
x = jnp.arange(4.0)
loss = lambda w, x: jnp.sum((w * x) ** 2)
out = {}
for cv in (True, False):
    sm = lambda f, i, o: jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, check_vma=cv)
    cases = {
        "grad_inside_of_psum": sm(lambda x: jax.grad(lambda x: jax.lax.psum(x, "i").sum())(x), P("i"), P("i"))(x),
        "grad_of_psum_replicated": jax.grad(lambda x: sm(lambda x: jax.lax.psum(x, "i"), P(), P())(x).sum())(x),
        "grad_of_scale_replicated": jax.grad(lambda x: sm(lambda x: x * 2, P(), P())(x).sum())(x),
        "grad_of_psum_sharded": jax.grad(lambda x: sm(lambda x: jax.lax.psum(x, "i"), P("i"), P())(x).sum())(x),
        "grad_of_pmean_loss": jax.grad(lambda w: sm(lambda w, x: jax.lax.pmean(((w * x) ** 2).sum(), "i"),
                                                   (P(), P("i")), P())(w, x))(1.0),
        "jvp_of_psum_sharded": jax.jvp(lambda x: sm(lambda x: jax.lax.psum(x * x, "i"), P("i"), P())(x),
                                       (x,), (jnp.arange(4.0) + 1,))[1],
        "grad_inside_of_psum_replicated": sm(lambda x: jax.grad(lambda x: jax.lax.psum(x, "i").sum())(x), P(), P())(x),
        "grad_inside_mixed": sm(lambda x: jax.grad(lambda x: (jax.lax.psum(x * 2, "i") * x).sum())(x),
                                P("i"), P("i"))(x),
        "pmean_of_grad_inside": sm(lambda w, x: jax.lax.pmean(jax.grad(loss)(w, x), "i"), (P(), P("i")), P())(1.0, x),
        "grad_inside_of_pmean": sm(lambda w, x: jax.grad(lambda w: jax.lax.pmean(loss(w, x), "i"))(w),
                                   (P(), P("i")), P())(1.0, x),
        "jit_grad_inside_of_psum_sin": jax.jit(sm(lambda w, x: jax.grad(lambda w: jax.lax.psum(jnp.sin(w * x).sum(), "i"))(w),
                                                  (P(), P("i")), P()))(0.5, x),
    }
    out[f"check_vma={cv}"] = {k: np.asarray(v).tolist() for k, v in cases.items()}
print(json.dumps(out, indent=1))
