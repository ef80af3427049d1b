"""Records lax.scaled_dot and jax.nn.scaled_dot_general (with its gradients) for fixed inputs into
jax_scaled_dot.npz (run with /work/jaxref/bin/python; the cases are shared with
tests/test_scaled_dot.py). JAX runs scaled_matmul on cuDNN only: for recording, its CPU-less
kernel is replaced by the product its documentation defines (operands times blockwise-repeated
scales, contracted in float32), so quantization, reshapes and gradients are JAX's own."""
import sys

import numpy as np


def inputs():
    rng = np.random.default_rng(0)
    return dict(a=(3 * rng.normal(size=(2, 4, 64))).astype(np.float32),
                b=(3 * rng.normal(size=(2, 64, 3))).astype(np.float32),
                a_scale=np.exp2(rng.integers(-3, 4, size=(2, 4, 2))).astype(np.float32),
                b_scale=np.exp2(rng.integers(-3, 4, size=(2, 2, 3))).astype(np.float32),
                x=rng.normal(size=(2, 32, 64)).astype(np.float32),
                y=rng.normal(size=(2, 32, 64)).astype(np.float32),
                u=rng.normal(size=(64, 6)).astype(np.float32),
                v=rng.normal(size=(32, 64)).astype(np.float32))


def cases(lax, nn, jnp):
    """Each recorded call by its name, made with (lax, nn, jnp) of JAX or jaxlite."""
    x = inputs()
    f8, e8 = jnp.float8_e4m3fn, jnp.float8_e8m0fnu
    a, b = x["a"].astype(f8), x["b"].astype(f8)
    a_scale, b_scale = x["a_scale"].astype(e8), x["b_scale"].astype(e8)
    mx = [nn.get_scaled_dot_general_config("mxfp8")] * 3
    nv = [nn.get_scaled_dot_general_config("nvfp4", jnp.array([0.5], jnp.float32))] * 3
    batched = (((2,), (2,)), ((0,), (0,)))
    plain = (((0,), (1,)), ((), ()))

    return {
        "scaled_dot": lambda: lax.scaled_dot(a, b, lhs_scale=a_scale, rhs_scale=b_scale),
        "scaled_dot_f32": lambda: lax.scaled_dot(a, b, lhs_scale=a_scale, rhs_scale=b_scale,
                                                 preferred_element_type=jnp.float32),
        "scaled_dot_f32_operands": lambda: lax.scaled_dot(x["a"], x["b"], lhs_scale=x["a_scale"],
                                                          preferred_element_type=jnp.float32),
        "sdg_mxfp8": lambda: nn.scaled_dot_general(x["x"], x["y"], batched, configs=mx),
        "sdg_nvfp4": lambda: nn.scaled_dot_general(x["x"], x["y"], batched, configs=nv),
        "sdg_mxfp8_unbatched_bf16": lambda: nn.scaled_dot_general(
            jnp.asarray(x["u"]), jnp.asarray(x["v"]), plain, preferred_element_type=jnp.bfloat16, configs=mx),
    }


def grad_cases(nn, jnp, grad):
    x = inputs()
    mx = [nn.get_scaled_dot_general_config("mxfp8")] * 3
    nv = [nn.get_scaled_dot_general_config("nvfp4", jnp.array([0.5], jnp.float32))] * 3
    batched = (((2,), (2,)), ((0,), (0,)))

    def flat_grads(configs):
        loss = lambda p, q: (nn.scaled_dot_general(p, q, batched, configs=configs) ** 2).sum()
        return jnp.concatenate([g.ravel() for g in grad(loss, argnums=(0, 1))(x["x"], x["y"])])
    return {"grad_mxfp8": lambda: flat_grads(mx), "grad_nvfp4": lambda: flat_grads(nv)}


def _documented_scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    import jax.numpy as jnp
    descale = lambda t, s: t.astype(jnp.float32) * jnp.repeat(s.astype(jnp.float32), t.shape[-1] // s.shape[-1], -1)
    out = jnp.einsum("BMK,BNK->BMN", descale(lhs, lhs_scales), descale(rhs, rhs_scales),
                     preferred_element_type=jnp.float32)
    return out.astype(preferred_element_type)


if __name__ == "__main__":
    import jax
    from jax._src.cudnn import scaled_matmul_stablehlo
    scaled_matmul_stablehlo.scaled_matmul_wrapper = _documented_scaled_matmul
    forward = cases(jax.lax, jax.nn, jax.numpy)
    calls = {**forward, **grad_cases(jax.nn, jax.numpy, jax.grad)}
    results = {name: np.asarray(call()).astype(np.float32) for name, call in calls.items()}
    np.savez(sys.argv[1], **results)
    print({k: v.shape for k, v in results.items()})
