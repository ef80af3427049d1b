"""Record JAX's gradients through shard_map on 2 simulated devices (tests/data/shard_map_grads.json)."""
import json, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import PartitionSpec as P, Mesh
mesh = Mesh(jax.devices(), ("i",))
x = jnp.arange(4.0)
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
    }
    out[f"check_vma={cv}"] = {k: np.asarray(v).tolist() for k, v in cases.items()}
print(json.dumps(out, indent=1))
