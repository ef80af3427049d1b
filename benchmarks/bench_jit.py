"""jit benchmarks: gelu on 4M float32, softmax and layernorm on 4096x1024, dispatch of x+1,
and loops (a 1000-step fori_loop on a small vector, a 100-step scan RNN), which jit runs
as native loops; numpy runs the loops in Python.

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


def inputs():
    rng = np.random.default_rng(0)
    big = rng.standard_normal(4 * 1024 * 1024).astype(np.float32)
    matrix = rng.standard_normal((4096, 1024)).astype(np.float32)
    return {"gelu 4M f32": big, "softmax 4096x1024": matrix, "layernorm 4096x1024": matrix,
            "dispatch x+1 scalar": np.float32(1.0)}


def loop_workloads(fori_loop, scan, np_like):
    """Loops written against a lax-like module's fori_loop and scan (numpy: Python loops)."""
    def decay(x):
        return fori_loop(0, 1000, lambda i, x: x * 0.999 + 0.001, x)

    def rnn(w, h, xs):
        def step(h, x):
            h = np_like.tanh(w @ h + x)
            return h, h
        return scan(step, h, xs)
    return {"fori_loop 1000 x64": decay, "scan rnn 100x64": rnn}


def python_fori_loop(lower, upper, body, x):
    for i in range(lower, upper):
        x = body(i, x)
    return x


def python_scan(body, carry, xs):
    ys = []
    for x in xs:
        carry, y = body(carry, x)
        ys.append(y)
    return carry, np.stack(ys)


def loop_inputs():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    return {"fori_loop 1000 x64": (rng.standard_normal(64).astype(np.float32),),
            "scan rnn 100x64": (w, np.zeros(64, np.float32), rng.standard_normal((100, 64)).astype(np.float32))}


def run():
    data, loop_data = inputs(), loop_inputs()
    results = {name: {"numpy": best_time(fun, data[name])} for name, fun in workloads(np).items()}
    for name, fun in loop_workloads(python_fori_loop, python_scan, np).items():
        results[name] = {"numpy": best_time(fun, *loop_data[name], repeat=5)}
    try:
        import jaxlite
        import jaxlite.numpy as jnp
        from jaxlite import lax
        for name, fun in workloads(jnp).items():
            jitted = jaxlite.jit(fun)
            x = jnp.asarray(data[name])
            results[name]["jaxlite jit"] = best_time(jitted, x, repeat=200 if "dispatch" in name else 20)
        for name, fun in loop_workloads(lax.fori_loop, lax.scan, jnp).items():
            args = [jnp.asarray(a) for a in loop_data[name]]
            results[name]["jaxlite jit"] = best_time(jaxlite.jit(fun), *args, repeat=200)
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jax_np
        for name, fun in workloads(jax_np).items():
            jitted = jax.jit(fun)
            x = jax.device_put(data[name])
            results[name]["jax jit"] = best_time(lambda a: jitted(a).block_until_ready(), x,
                                                 repeat=200 if "dispatch" in name else 20)
        for name, fun in loop_workloads(jax.lax.fori_loop, jax.lax.scan, jax_np).items():
            jitted = jax.jit(fun)
            args = [jax.device_put(a) for a in loop_data[name]]
            results[name]["jax jit"] = best_time(lambda *a: jax.block_until_ready(jitted(*a)), *args, repeat=200)
    except ImportError:
        pass
    for name, timings in results.items():
        shown = "  ".join(f"{impl}: {_format(seconds)}" for impl, seconds in timings.items())
        print(f"{name:22s} {shown}{_ratio(timings)}")


def _ratio(timings):
    if "jaxlite jit" in timings and "jax jit" in timings:
        return f"  jaxlite/jax: {timings['jaxlite jit'] / timings['jax jit']:.2f}x"
    return ""


def _format(seconds):
    return f"{seconds * 1e6:8.2f} us" if seconds < 1e-4 else f"{seconds * 1e3:8.3f} ms"


if __name__ == "__main__":
    run()
