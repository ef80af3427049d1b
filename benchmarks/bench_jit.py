"""jit benchmarks: gelu on 4M float32, softmax and layernorm on 4096x1024, dispatch of x+1,
and the indexing workloads: an embedding lookup (4096 rows of a 50000x128 table), its
gradient (a scatter-add), and a 2x2 max pool on 64x56x56x32 (numpy: np.add.at, reshape+max).

Runs with jaxlite (jaxlite jit vs numpy) or, when jaxlite is not importable but JAX
is (e.g. /work/jaxvenv/bin/python), JAX vs numpy; both when both import:

    PYTHONPATH=. /work/venv/bin/python benchmarks/bench_jit.py
    /work/jaxvenv/bin/python benchmarks/bench_jit.py
"""
import time

import numpy as np


def best_time(fun, *args, repeat=20):
    fun(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fun(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def workloads(np_like):
    def gelu(x):
        return 0.5 * x * (1 + np_like.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    def softmax(x):
        e = np_like.exp(x - np_like.max(x, axis=-1, keepdims=True))
        return e / np_like.sum(e, axis=-1, keepdims=True)

    def layernorm(x):
        mean = np_like.mean(x, axis=-1, keepdims=True)
        centered = x - mean
        var = np_like.mean(centered * centered, axis=-1, keepdims=True)
        return centered / np_like.sqrt(var + 1e-5)

    def add_one(x):
        return x + 1
    return {"gelu 4M f32": gelu, "softmax 4096x1024": softmax,
            "layernorm 4096x1024": layernorm, "dispatch x+1 scalar": add_one}


def indexing_workloads(np_like, lax_like, vjp):
    """The same computations written for jaxlite or JAX (lax_like: their lax module)."""
    def lookup(table, ids, _):
        return np_like.take(table, ids, axis=0)

    def lookup_grad(table, ids, ct):
        return vjp(lambda t: np_like.take(t, ids, axis=0), table)[1](ct)[0]

    def max_pool(images):
        return lax_like.reduce_window(images, -np.inf, lax_like.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return {"embedding take 4096": lookup, "embedding grad (scatter-add)": lookup_grad,
            "max pool 2x2 64x56x56x32": max_pool}


def numpy_indexing_workloads():
    def lookup(table, ids, _):
        return np.take(table, ids, axis=0)

    def lookup_grad(table, ids, ct):
        grad = np.zeros_like(table)
        np.add.at(grad, ids, ct)
        return grad

    def max_pool(images):
        n, h, w, c = images.shape
        return images.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
    return {"embedding take 4096": lookup, "embedding grad (scatter-add)": lookup_grad,
            "max pool 2x2 64x56x56x32": max_pool}


def inputs():
    rng = np.random.default_rng(0)
    big = rng.standard_normal(4 * 1024 * 1024).astype(np.float32)
    matrix = rng.standard_normal((4096, 1024)).astype(np.float32)
    table = rng.standard_normal((50000, 128)).astype(np.float32)
    ids = rng.integers(0, 50000, 4096).astype(np.int32)
    rows_ct = rng.standard_normal((4096, 128)).astype(np.float32)
    embedding = (table, ids, rows_ct)
    return {"gelu 4M f32": (big,), "softmax 4096x1024": (matrix,), "layernorm 4096x1024": (matrix,),
            "dispatch x+1 scalar": (np.float32(1.0),), "embedding take 4096": embedding,
            "embedding grad (scatter-add)": embedding,
            "max pool 2x2 64x56x56x32": (rng.standard_normal((64, 56, 56, 32)).astype(np.float32),)}


def _repeats(name):
    return 200 if "dispatch" in name else 20


def run():
    data = inputs()
    numpy_workloads = {**workloads(np), **numpy_indexing_workloads()}
    results = {name: {"numpy": best_time(fun, *data[name])} for name, fun in numpy_workloads.items()}
    try:
        import jaxlite
        import jaxlite.numpy as jnp
        from jaxlite import lax
        for name, fun in {**workloads(jnp), **indexing_workloads(jnp, lax, jaxlite.vjp)}.items():
            jitted = jaxlite.jit(fun)
            args = [jnp.asarray(a) for a in data[name]]
            results[name]["jaxlite jit"] = best_time(jitted, *args, repeat=_repeats(name))
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jax_np
        for name, fun in {**workloads(jax_np), **indexing_workloads(jax_np, jax.lax, jax.vjp)}.items():
            jitted = jax.jit(fun)
            args = [jax.device_put(a) for a in data[name]]
            results[name]["jax jit"] = best_time(lambda *a: jitted(*a).block_until_ready(), *args,
                                                 repeat=_repeats(name))
    except ImportError:
        pass
    for name, timings in results.items():
        shown = "  ".join(f"{impl}: {_format(seconds)}" for impl, seconds in timings.items())
        print(f"{name:30s} {shown}")


def _format(seconds):
    return f"{seconds * 1e6:8.2f} us" if seconds < 1e-4 else f"{seconds * 1e3:8.3f} ms"


if __name__ == "__main__":
    run()
