"""jit benchmarks: gelu on 4M float32, softmax and layernorm on 4096x1024, dispatch of x+1;
and the native sort and linear-algebra routines: sort of 1M float32, argsort of 4096x256 rows,
cholesky + triangular solve of 512x512 float32, a batched 64x32x32 solve.

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


def native_workloads(np_like, solve_lower):
    """Sequential primitives; `solve_lower(l, b)` solves with a lower triangle (numpy has no
    triangular solve: it gets its general one)."""
    def cholesky_solve(a, b):
        return solve_lower(np_like.linalg.cholesky(a), b)
    return {"sort 1M f32": np_like.sort, "argsort 4096x256 f32": np_like.argsort,
            "cholesky+trsm 512 f32": cholesky_solve, "solve 64x32x32 f32": np_like.linalg.solve}


def inputs():
    """Each workload's arguments (a tuple)."""
    rng = np.random.default_rng(0)
    big = rng.standard_normal(4 * 1024 * 1024).astype(np.float32)
    matrix = rng.standard_normal((4096, 1024)).astype(np.float32)
    square = rng.standard_normal((512, 512)).astype(np.float32)
    batched = rng.standard_normal((64, 32, 32)).astype(np.float32) + 32 * np.eye(32, dtype=np.float32)
    return {"gelu 4M f32": (big,), "softmax 4096x1024": (matrix,), "layernorm 4096x1024": (matrix,),
            "dispatch x+1 scalar": (np.float32(1.0),),
            "sort 1M f32": (big[:1 << 20],), "argsort 4096x256 f32": (matrix[:, :256].copy(),),
            "cholesky+trsm 512 f32": (square @ square.T + 512 * np.eye(512, dtype=np.float32), square),
            "solve 64x32x32 f32": (batched, rng.standard_normal((64, 32, 4)).astype(np.float32))}


def _repeat(name):
    return 200 if "dispatch" in name else 20


def _numpy_workloads():
    return {**workloads(np), **native_workloads(np, np.linalg.solve)}


def _jaxlite_workloads():
    import jaxlite.numpy as jnp
    from jaxlite import lax

    def solve_lower(l, b):
        return lax.triangular_solve(l, b, left_side=True, lower=True)
    return {**workloads(jnp), **native_workloads(jnp, solve_lower)}


def _jax_workloads():
    import jax.numpy as jax_np
    import jax.scipy.linalg
    return {**workloads(jax_np),
            **native_workloads(jax_np, lambda l, b: jax.scipy.linalg.solve_triangular(l, b, lower=True))}


def run():
    data = inputs()
    results = {name: {"numpy": best_time(fun, *data[name], repeat=_repeat(name))}
               for name, fun in _numpy_workloads().items()}
    try:
        import jaxlite
        for name, fun in _jaxlite_workloads().items():
            jitted = jaxlite.jit(fun)
            args = [jaxlite.numpy.asarray(x) for x in data[name]]
            results[name]["jaxlite jit"] = best_time(jitted, *args, repeat=_repeat(name))
    except ImportError:
        pass
    try:
        import jax
        for name, fun in _jax_workloads().items():
            jitted = jax.jit(fun)
            args = [jax.device_put(x) for x in data[name]]
            results[name]["jax jit"] = best_time(lambda *a: jitted(*a).block_until_ready(), *args,
                                                 repeat=_repeat(name))
    except ImportError:
        pass
    for name, timings in results.items():
        shown = "  ".join(f"{impl}: {_format(seconds)}" for impl, seconds in timings.items())
        print(f"{name:22s} {shown}")


def _format(seconds):
    return f"{seconds * 1e6:8.2f} us" if seconds < 1e-4 else f"{seconds * 1e3:8.3f} ms"


if __name__ == "__main__":
    run()
