"""jit benchmarks, side by side: numpy eager, jaxlite jit and JAX jit.

Workloads: gelu on 4M float32, softmax and layernorm on 4096x1024, dispatch of x+1;
indexing (an embedding lookup of 4096 rows of a 50000x128 table, its gradient, a
scatter-add, and a 2x2 max pool on 64x56x56x32); the native sort and linear-algebra
routines (sort of 1M float32, argsort of 4096x256 rows, cholesky + triangular solve of
512x512 float32, a batched 64x32x32 solve); and loops (a 1000-step fori_loop on a small
vector, a 100-step scan RNN), which jit runs as native loops and numpy in Python.

Runs with jaxlite (jaxlite jit vs numpy) or, when jaxlite is not importable but JAX
is (e.g. /work/jaxvenv/bin/python), JAX vs numpy; both when both import:

    PYTHONPATH=. /work/venv/bin/python benchmarks/bench_jit.py
    /work/jaxvenv/bin/python benchmarks/bench_jit.py
"""
import time
import types

import numpy as np


def best_time(fun, *args, repeat=20):
    fun(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fun(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def workloads(lib):
    """The computations, written once against `lib`: numpy-like `np`, lax-like `lax`, and
    `vjp`, `fori_loop`, `scan`, `solve_lower` (numpy gets Python or plain-numpy stand-ins)."""
    np_like = lib.np

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

    def lookup(table, ids, _):
        return np_like.take(table, ids, axis=0)

    def lookup_grad(table, ids, ct):
        return lib.vjp(lambda t: np_like.take(t, ids, axis=0), table)[1](ct)[0]

    def cholesky_solve(a, b):
        return lib.solve_lower(np_like.linalg.cholesky(a), b)

    def decay(x):
        return lib.fori_loop(0, 1000, lambda i, x: x * 0.999 + 0.001, x)

    def rnn(w, h, xs):
        def step(h, x):
            h = np_like.tanh(w @ h + x)
            return h, h
        return lib.scan(step, h, xs)
    return {"gelu 4M f32": gelu, "softmax 4096x1024": softmax,
            "layernorm 4096x1024": layernorm, "dispatch x+1 scalar": add_one,
            "embedding take 4096": lookup, "embedding grad (scatter-add)": lookup_grad,
            "max pool 2x2 64x56x56x32": lib.max_pool,
            "sort 1M f32": np_like.sort, "argsort 4096x256 f32": np_like.argsort,
            "cholesky+trsm 512 f32": cholesky_solve, "solve 64x32x32 f32": np_like.linalg.solve,
            "fori_loop 1000 x64": decay, "scan rnn 100x64": rnn}


def _lax_max_pool(lax_like):
    def max_pool(images):
        return lax_like.reduce_window(images, -np.inf, lax_like.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return max_pool


def numpy_lib():
    def fori_loop(lower, upper, body, x):
        for i in range(lower, upper):
            x = body(i, x)
        return x

    def scan(body, carry, xs):
        ys = []
        for x in xs:
            carry, y = body(carry, x)
            ys.append(y)
        return carry, np.stack(ys)

    def max_pool(images):
        n, h, w, c = images.shape
        return images.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
    # No vjp: _numpy_workloads replaces the lookup's gradient with np.add.at.
    return types.SimpleNamespace(np=np, fori_loop=fori_loop, scan=scan, max_pool=max_pool,
                                 solve_lower=np.linalg.solve)


def _numpy_workloads():
    def lookup_grad(table, ids, ct):
        grad = np.zeros_like(table)
        np.add.at(grad, ids, ct)
        return grad
    return {**workloads(numpy_lib()), "embedding grad (scatter-add)": lookup_grad}


def _jaxlite_workloads():
    import jaxlite
    import jaxlite.numpy as jnp
    from jaxlite import lax

    def solve_lower(l, b):
        return lax.triangular_solve(l, b, left_side=True, lower=True)
    return workloads(types.SimpleNamespace(np=jnp, vjp=jaxlite.vjp, fori_loop=lax.fori_loop, scan=lax.scan,
                                           max_pool=_lax_max_pool(lax), solve_lower=solve_lower))


def _jax_workloads():
    import jax
    import jax.numpy as jax_np
    import jax.scipy.linalg

    def solve_lower(l, b):
        return jax.scipy.linalg.solve_triangular(l, b, lower=True)
    return workloads(types.SimpleNamespace(np=jax_np, vjp=jax.vjp, fori_loop=jax.lax.fori_loop, scan=jax.lax.scan,
                                           max_pool=_lax_max_pool(jax.lax), solve_lower=solve_lower))


def inputs():
    """Each workload's arguments (a tuple)."""
    rng = np.random.default_rng(0)
    big = rng.standard_normal(4 * 1024 * 1024).astype(np.float32)
    matrix = rng.standard_normal((4096, 1024)).astype(np.float32)
    table = rng.standard_normal((50000, 128)).astype(np.float32)
    ids = rng.integers(0, 50000, 4096).astype(np.int32)
    embedding = (table, ids, rng.standard_normal((4096, 128)).astype(np.float32))
    square = rng.standard_normal((512, 512)).astype(np.float32)
    batched = rng.standard_normal((64, 32, 32)).astype(np.float32) + 32 * np.eye(32, dtype=np.float32)
    w = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    return {"gelu 4M f32": (big,), "softmax 4096x1024": (matrix,), "layernorm 4096x1024": (matrix,),
            "dispatch x+1 scalar": (np.float32(1.0),),
            "embedding take 4096": embedding, "embedding grad (scatter-add)": embedding,
            "max pool 2x2 64x56x56x32": (rng.standard_normal((64, 56, 56, 32)).astype(np.float32),),
            "sort 1M f32": (big[:1 << 20],), "argsort 4096x256 f32": (matrix[:, :256].copy(),),
            "cholesky+trsm 512 f32": (square @ square.T + 512 * np.eye(512, dtype=np.float32), square),
            "solve 64x32x32 f32": (batched, rng.standard_normal((64, 32, 4)).astype(np.float32)),
            "fori_loop 1000 x64": (rng.standard_normal(64).astype(np.float32),),
            "scan rnn 100x64": (w, np.zeros(64, np.float32), rng.standard_normal((100, 64)).astype(np.float32))}


def _repeat(name, compiled=True):
    if "dispatch" in name:
        return 200
    if "fori_loop" in name or "scan" in name:
        return 200 if compiled else 5
    return 20


def run():
    data = inputs()
    results = {name: {"numpy": best_time(fun, *data[name], repeat=_repeat(name, compiled=False))}
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
            results[name]["jax jit"] = best_time(lambda *a: jax.block_until_ready(jitted(*a)), *args,
                                                 repeat=_repeat(name))
    except ImportError:
        pass
    for name, timings in results.items():
        shown = "  ".join(f"{impl}: {_format(seconds)}" for impl, seconds in timings.items())
        print(f"{name:30s} {shown}{_ratio(timings)}")


def _ratio(timings):
    if "jaxlite jit" in timings and "jax jit" in timings:
        return f"  jaxlite/jax: {timings['jaxlite jit'] / timings['jax jit']:.2f}x"
    return ""


def _format(seconds):
    return f"{seconds * 1e6:8.2f} us" if seconds < 1e-4 else f"{seconds * 1e3:8.3f} ms"


if __name__ == "__main__":
    run()
