"""Convolutions under jit (im2col + GEMM) against numpy's im2col and JAX.

Run: PYTHONPATH=. python benchmarks/bench_conv.py [--profile]
(with /work/jaxvenv/bin/python, JAX's column is filled in too)

The layers of benchmarks/run.py's CNN training step (batch 64 of 28x28x1, NHWC):
conv3x3 1->32, conv3x3 stride 2 32->64, their gradients, and the whole step.
"numpy" is the eager implementation (numpy im2col + matmul), forward only. Times are
the best of interleaved rounds (a noisy neighbour slows every column alike).

--profile prints where the jaxlite step spends its time, step by step (patch kernels,
GEMMs, col2im, elementwise kernels).
"""
import collections
import importlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jaxlite  # noqa: E402
from jaxlite.examples import cnn  # noqa: E402
from jaxlite.lax import convolution  # noqa: E402

BATCH, SIDE = 64, 28
LAYERS = {"conv1 3x3 1->32": ((BATCH, SIDE, SIDE, 1), (3, 3, 1, 32), (1, 1)),
          "conv2 3x3/2 32->64": ((BATCH, SIDE, SIDE, 32), (3, 3, 32, 64), (2, 2))}


def _frameworks():
    found = {"jaxlite": (jaxlite, importlib.import_module("jaxlite.numpy"), importlib.import_module("jaxlite.lax"))}
    try:
        import jax
        found["jax"] = (jax, importlib.import_module("jax.numpy"), importlib.import_module("jax.lax"))
    except ImportError:
        pass
    return found


def _conv(lax, strides):
    return lambda x, w: lax.conv_general_dilated(x, w, strides, "SAME", dimension_numbers=cnn.LAYOUT)


def _numpy_conv(strides):
    """The eager implementation: canonical layouts, numpy im2col and matmul."""
    def run(x, w):
        lhs, rhs = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
        pads = convolution.padding_pairs("SAME", lhs.shape[2:], rhs.shape[2:], strides)
        out = convolution._conv_impl(lhs, rhs, strides, pads, (1, 1), (1, 1), 1, 1)
        return out.transpose(0, 2, 3, 1)
    return run


def workloads(frameworks):
    """name -> {column: zero-argument callable}."""
    rng = np.random.default_rng(0)
    table = {}
    for name, (x_shape, w_shape, strides) in LAYERS.items():
        x, w = (rng.normal(size=s).astype(np.float32) for s in (x_shape, w_shape))
        forward = {"numpy": lambda f=_numpy_conv(strides), x=x, w=w: f(x, w)}
        backward = {}
        for column, (fw, xp, lax) in frameworks.items():
            conv = _conv(lax, strides)
            grad = fw.grad(lambda x, w, conv=conv, xp=xp: xp.sum(conv(x, w) ** 2), argnums=(0, 1))
            args = (xp.asarray(x), xp.asarray(w))
            forward[column] = _ready(fw.jit(conv), args)
            backward[column] = _ready(fw.jit(grad), args)
        table[name] = forward
        table[name + " grad"] = backward
    images, labels = cnn.batch(BATCH, SIDE)
    step = {}
    for column, (fw, xp, lax) in frameworks.items():
        grad = fw.grad(lambda p, x, y, xp=xp, lax=lax: cnn.loss(xp, lax, p, x, y))
        train = fw.jit(lambda p, x, y, grad=grad: cnn.sgd(p, grad(p, x, y), 0.01))
        args = ([xp.asarray(p) for p in cnn.init_params()], xp.asarray(images), xp.asarray(labels))
        step[column] = _ready(train, args)
    table["CNN training step"] = step
    return table


def _ready(fn, args):
    def run():
        out = fn(*args)
        for leaf in (out if isinstance(out, (list, tuple)) else [out]):
            getattr(leaf, "block_until_ready", lambda: None)()
    return run


def best_of_rounds(columns, rounds=7):
    best = {}
    for fn in columns.values():
        fn()        # compile
    for _ in range(rounds):
        for column, fn in columns.items():
            start = time.perf_counter()
            fn()
            best[column] = min(best.get(column, np.inf), time.perf_counter() - start)
    return best


def report(table):
    columns = ["numpy", "jaxlite", "jax"]
    print(f"{'workload':24}" + "".join(f"{c:>12}" for c in columns) + f"{'jaxlite/jax':>14}")
    for name, fns in table.items():
        best = best_of_rounds(fns)
        cells = "".join(f"{best[c] * 1e3:10.2f}ms" if c in best else f"{'n/a':>12}" for c in columns)
        ratio = f"{best['jaxlite'] / best['jax']:13.2f}x" if "jax" in best else f"{'-':>14}"
        print(f"{name:24}{cells}{ratio}")


def profile_step():
    """Time each step of the compiled CNN training step (kernels, GEMMs)."""
    from jaxlite import lax, numpy as jnp
    from jaxlite.lower import runtime
    grad = jaxlite.grad(lambda p, x, y: cnn.loss(jnp, lax, p, x, y))
    images, labels = cnn.batch(BATCH, SIDE)
    params = cnn.init_params()
    executable = jaxlite.jit(lambda p, x, y: cnn.sgd(p, grad(p, x, y), 0.01)).lower(
        params, images, labels).compile().executable
    flat = params + [images, labels]
    executable(flat)
    spent = collections.Counter()
    for cls in (runtime.PythonStep, runtime._NativeKernel):
        def timed(self, *args, call=cls.__call__):
            start = time.perf_counter()
            call(self, *args)
            spent[id(self)] += time.perf_counter() - start
        cls.__call__ = timed
    rounds = 5
    for _ in range(rounds):
        executable(flat)
    for runner, segment in zip(executable._runners, executable._segments):
        what = str(segment[1]).split("\n")[0] if isinstance(segment, tuple) else segment.describe()
        print(f"{spent[id(runner)] / rounds * 1e3:8.2f} ms  {what[:140]}")


if __name__ == "__main__":
    print("machine: 2 shared cores (timings are noisy; compare columns within a row)")
    report(workloads(_frameworks()))
    if "--profile" in sys.argv:
        profile_step()
