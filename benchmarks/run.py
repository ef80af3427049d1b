"""One command for the public workloads, side by side: numpy eager, jaxlite, and JAX when installed.

    python benchmarks/run.py [--only NAME ...] [--json FILE] [--plot FILE.png]

Times are steady-state medians after a first (compiling) call; ratios are
jaxlite's time over the others' (below 1 means jaxlite is faster).
"""
import argparse
import importlib
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxlite.examples import cnn, mlp  # noqa: E402


def _backends():
    import jaxlite
    import jaxlite.numpy as jnp
    found = {"numpy": Backend("numpy", np, None, None),
             "jaxlite": Backend("jaxlite", jnp, getattr(jaxlite, "jit", None), getattr(jaxlite, "grad", None),
                                getattr(jaxlite, "value_and_grad", None))}
    try:
        import jax
        import jax.numpy as jjnp
        found["jax"] = Backend("jax", jjnp, jax.jit, jax.grad, jax.value_and_grad)
    except ImportError:
        pass
    return found


class Backend:
    def __init__(self, name, xp, jit, grad, value_and_grad=None):
        self.name, self.xp, self.jit, self.grad, self.value_and_grad = name, xp, jit, grad, value_and_grad

    def compile(self, fn):
        return fn if self.jit is None else self.jit(fn)

    def asarray(self, a):
        return a if self.name == "numpy" else self.xp.asarray(a)

    def ready(self, out):
        return out.block_until_ready() if hasattr(out, "block_until_ready") else out


# ---------------------------------------------------------------- workloads
# Each returns (function, arguments) for a backend; numpy runs the same math eagerly.

def dispatch_scalar(b):
    return b.compile(lambda x: x + 1), (b.asarray(np.float32(1.0)),)


def gelu_4m(b):
    xp = b.xp

    def gelu(x):
        return 0.5 * x * (1 + xp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    x = np.random.default_rng(0).normal(size=4 * 1024 * 1024).astype(np.float32)
    return b.compile(gelu), (b.asarray(x),)


def softmax_4096x1024(b):
    xp = b.xp

    def softmax(x):
        z = xp.exp(x - xp.max(x, axis=1, keepdims=True))
        return z / xp.sum(z, axis=1, keepdims=True)
    x = np.random.default_rng(0).normal(size=(4096, 1024)).astype(np.float32)
    return b.compile(softmax), (b.asarray(x),)


def layernorm_4096x1024(b):
    xp = b.xp

    def layernorm(x, gamma, beta):
        mean = xp.mean(x, axis=1, keepdims=True)
        centered = x - mean
        var = xp.mean(centered * centered, axis=1, keepdims=True)
        return centered / xp.sqrt(var + 1e-5) * gamma + beta
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 1024)).astype(np.float32)
    gamma, beta = rng.normal(size=1024).astype(np.float32), rng.normal(size=1024).astype(np.float32)
    return b.compile(layernorm), tuple(map(b.asarray, (x, gamma, beta)))


def matmul_1024(b):
    rng = np.random.default_rng(0)
    x, y = (rng.normal(size=(1024, 1024)).astype(np.float32) for _ in range(2))
    return b.compile(lambda p, q: p @ q), (b.asarray(x), b.asarray(y))


def _mlp_problem(sizes, batch):
    """Parameters of an MLP with these layer sizes, a batch of inputs and one-hot labels."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    return mlp.init_params(sizes), x, mlp.one_hot(rng.integers(0, sizes[-1], batch), sizes[-1])


def _param_tree(b, params):
    return [(b.asarray(w), b.asarray(bias)) for w, bias in params]


def mlp_train_step(b):
    params, x, y = _mlp_problem([784, 512, 512, 10], 256)
    if b.name == "numpy":
        return (lambda p, x, y: mlp.numpy_train_step(p, x, y, 0.01)), (params, x, y)
    if b.grad is None:
        return None
    grad = b.grad(lambda p, x, y: mlp.loss(b.xp, p, x, y))

    def step(p, x, y):
        return mlp.sgd(p, grad(p, x, y), 0.01)
    return b.compile(step), (_param_tree(b, params), b.asarray(x), b.asarray(y))


def cnn_train_step(b):
    """Batch 64 of 28x28x1 through conv3x3(1->32)-relu-conv3x3/2(32->64)-relu-mean-dense(64->10)."""
    if b.grad is None:
        return None
    lax = importlib.import_module(f"{b.name}.lax")
    grad = b.grad(lambda p, x, y: cnn.loss(b.xp, lax, p, x, y))

    def step(p, x, y):
        return cnn.sgd(p, grad(p, x, y), 0.01)
    images, labels = cnn.batch()
    return b.compile(step), ([b.asarray(p) for p in cnn.init_params()], b.asarray(images), b.asarray(labels))


def fori_loop_1000(b):
    """A 1000-step loop on a small vector: jit runs it as one native loop (numpy: in Python)."""
    def body(i, x):
        return x * 0.999 + 0.001
    x = np.random.default_rng(0).normal(size=64).astype(np.float32)
    if b.name == "numpy":
        def loop(x):
            for i in range(1000):
                x = body(i, x)
            return x
        return loop, (x,)
    lax = importlib.import_module(f"{b.name}.lax")
    return b.compile(lambda x: lax.fori_loop(0, 1000, body, x)), (b.asarray(x),)


def random_normal_256x128(b):
    """Normal draws: jaxlite and JAX turn threefry bits into normals through erf_inv; numpy
    draws with its own generator (the same distribution, not the same math)."""
    if b.name == "numpy":
        rng = np.random.default_rng(0)
        return (lambda: rng.standard_normal((256, 128), np.float32)), ()
    random = importlib.import_module(f"{b.name}.random")
    return b.compile(lambda key: random.normal(key, (256, 128))), (random.PRNGKey(0),)


def truncated_normal_256x128(b):
    if b.name == "numpy":
        return None
    random = importlib.import_module(f"{b.name}.random")
    return b.compile(lambda key: random.truncated_normal(key, -2.0, 2.0, (256, 128))), (random.PRNGKey(0),)


def trig_mix_1m(b):
    xp = b.xp

    def trig(x):
        return xp.sin(x) * xp.cos(x) + xp.tan(x) - xp.arctan2(x, x + 2.0)
    x = np.random.default_rng(0).normal(size=1 << 20).astype(np.float32)
    return b.compile(trig), (b.asarray(x),)


def concatenate_reshape(b):
    xp = b.xp
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(512, n)).astype(np.float32) for n in (256, 128, 64)]
    return b.compile(lambda p, q, r: xp.concatenate([p, q, r], axis=1).reshape(-1)), tuple(map(b.asarray, parts))


def value_and_grad_mlp(b):
    """The loss and its gradient for an MLP of 256-512-512-10 on a batch of 64."""
    params, x, y = _mlp_problem([256, 512, 512, 10], 64)
    if b.name == "numpy":
        return mlp.numpy_loss_and_grads, (params, x, y)
    if b.value_and_grad is None:
        return None
    loss_and_grads = b.value_and_grad(lambda p, x, y: mlp.loss(b.xp, p, x, y))
    return b.compile(loss_and_grads), (_param_tree(b, params), b.asarray(x), b.asarray(y))


WORKLOADS = {f.__name__: f for f in [dispatch_scalar, gelu_4m, softmax_4096x1024, layernorm_4096x1024,
                                     matmul_1024, mlp_train_step, cnn_train_step, fori_loop_1000,
                                     random_normal_256x128, truncated_normal_256x128, trig_mix_1m,
                                     concatenate_reshape, value_and_grad_mlp]}


# ---------------------------------------------------------------- measuring

def _ready_tree(b, out):
    leaves = out if isinstance(out, (list, tuple)) else [out]
    for leaf in leaves:
        if isinstance(leaf, (list, tuple)):
            _ready_tree(b, leaf)
        else:
            b.ready(leaf)


def measure(b, fn, args, budget_s=1.5, max_runs=200):
    start = time.perf_counter()
    _ready_tree(b, fn(*args))
    first = time.perf_counter() - start
    times = []
    deadline = time.perf_counter() + budget_s
    while len(times) < max_runs and (len(times) < 5 or time.perf_counter() < deadline):
        start = time.perf_counter()
        _ready_tree(b, fn(*args))
        times.append(time.perf_counter() - start)
    return {"first_call_s": first, "steady_s": statistics.median(times), "runs": len(times)}


def run(names):
    backends = _backends()
    results = {}
    for name in names:
        results[name] = {}
        for b in backends.values():
            made = WORKLOADS[name](b)
            if made is not None:
                results[name][b.name] = measure(b, *made)
    return results


def _fmt_time(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:7.2f} {unit}"
    return f"{seconds * 1e9:7.0f} ns"


def table(results):
    backends = sorted({b for r in results.values() for b in r}, key=["numpy", "jaxlite", "jax"].index)
    header = f"{'workload':22}" + "".join(f"{b:>14}" for b in backends)
    header += "".join(f"{'jaxlite/' + b:>16}" for b in backends if b != "jaxlite")
    lines = [header, "-" * len(header)]
    for name, per_backend in results.items():
        row = f"{name:22}" + "".join(
            f"{_fmt_time(per_backend[b]['steady_s']) if b in per_backend else '-':>14}" for b in backends)
        mine = per_backend.get("jaxlite", {}).get("steady_s")
        for b in backends:
            if b != "jaxlite":
                other = per_backend.get(b, {}).get("steady_s")
                row += f"{(mine / other) if mine and other else float('nan'):>15.2f}x"
        lines.append(row)
    compile_row = [f"{name}: jaxlite first call {_fmt_time(r['jaxlite']['first_call_s'])}"
                   + (f", jax first call {_fmt_time(r['jax']['first_call_s'])}" if "jax" in r else "")
                   for name, r in results.items() if "jaxlite" in r]
    return "\n".join(lines + [""] + compile_row)


def run_side_by_side(workloads, doc):
    """The main of a benchmark script: its workloads (or those --only names) on every
    backend, printed as one table."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(workloads), default=list(workloads))
    names = parser.parse_args().only
    backends = _backends()
    results = {name: {b.name: measure(b, *workloads[name](b)) for b in backends.values()} for name in names}
    print(table(results))


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(results)
    backends = sorted({b for r in results.values() for b in r}, key=["numpy", "jaxlite", "jax"].index)
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(backends)
    for i, b in enumerate(backends):
        ax.bar([j + i * width for j in range(len(names))],
               [results[n].get(b, {}).get("steady_s", np.nan) * 1e3 for n in names], width, label=b)
    ax.set_yscale("log")
    ax.set_ylabel("steady-state time (ms, log scale)")
    ax.set_xticks([j + width * (len(backends) - 1) / 2 for j in range(len(names))], names, rotation=20)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--json", default="benchmarks/results/latest.json")
    parser.add_argument("--plot")
    args = parser.parse_args(argv)
    results = run(args.only)
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(table(results))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
