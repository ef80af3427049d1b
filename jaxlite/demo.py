"""python -m jaxlite.demo: train a small classifier with jit(grad(loss)).

Two interleaved spirals, an MLP, plain gradient descent with momentum written
with pytrees. Prints a progress bar with the running loss, the accuracy, the
compile time against the step time, and the same step in numpy for comparison.
`--plot FILE.png` draws the decision boundary and the loss curve.
"""
import argparse
import sys
import time

import numpy as np

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.examples import mlp

LAYERS = [2, 64, 64, 2]


def make_train_step(learning_rate, momentum):
    loss_and_grad = jaxlite.value_and_grad(lambda p, x, y: mlp.loss(jnp, p, x, y))

    @jaxlite.jit
    def train_step(params, velocity, x, y):
        loss, grads = loss_and_grad(params, x, y)
        velocity = jaxlite.tree.map(lambda v, g: momentum * v - learning_rate * g, velocity, grads)
        params = jaxlite.tree.map(lambda p, v: p + v, params, velocity)
        return params, velocity, loss
    return train_step


def progress(step, total, loss, width=30):
    """A bar redrawn in place on a terminal; in a log or a pipe, where a carriage return
    would run every update into one line, a line every tenth of the run."""
    on_terminal = sys.stdout.isatty()
    if step % max(total // (100 if on_terminal else 10), 1) and step != total:
        return
    filled = int(width * step / total)
    line = f"  [{'#' * filled}{'-' * (width - filled)}] step {step:5d}/{total}  loss {loss:.4f}"
    if on_terminal:
        sys.stdout.write("\r" + line + ("\n" if step == total else ""))
        sys.stdout.flush()
    else:
        print(line, flush=True)


def accuracy(params, x, labels):
    predicted = np.asarray(jnp.argmax(mlp.logits(jnp, params, x), axis=1))
    return float(np.mean(predicted == labels))


def time_per_call(fn, repeats):
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def train(steps, learning_rate=0.1, momentum=0.9, seed=0):
    points, labels = mlp.two_spirals(500, seed=seed)
    targets = mlp.one_hot(labels, 2)
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in mlp.init_params(LAYERS, seed)]
    velocity = jaxlite.tree.map(jnp.zeros_like, params)
    x, y = jnp.asarray(points), jnp.asarray(targets)
    train_step = make_train_step(learning_rate, momentum)

    start = time.perf_counter()
    params, velocity, loss = train_step(params, velocity, x, y)
    compile_time = time.perf_counter() - start
    losses = [float(loss)]
    for step in range(2, steps + 1):
        params, velocity, loss = train_step(params, velocity, x, y)
        losses.append(float(loss))
        progress(step, steps, losses[-1])
    step_time = time_per_call(lambda: jaxlite.block_until_ready(train_step(params, velocity, x, y)), 100)
    numpy_params = [(np.asarray(w), np.asarray(b)) for w, b in params]
    numpy_time = time_per_call(lambda: mlp.numpy_train_step(numpy_params, points, targets, learning_rate), 100)
    return {"params": params, "points": points, "labels": labels, "losses": losses,
            "accuracy": accuracy(params, x, labels), "compile_time": compile_time,
            "step_time": step_time, "numpy_step_time": numpy_time}


def plot(result, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("--plot needs matplotlib: pip install matplotlib (or pip install -e '.[plot]')")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    grid = np.linspace(-1.3, 1.3, 200, dtype=np.float32)
    gx, gy = np.meshgrid(grid, grid)
    flat = np.stack([gx.ravel(), gy.ravel()], axis=1)
    scores = np.asarray(jaxlite.nn.softmax(mlp.logits(jnp, result["params"], jnp.asarray(flat)), axis=1))[:, 1]
    left.contourf(gx, gy, scores.reshape(gx.shape), levels=20, cmap="RdBu_r", alpha=0.7)
    points, labels = result["points"], result["labels"]
    left.scatter(points[:, 0], points[:, 1], c=labels, cmap="RdBu_r", s=6, edgecolors="k", linewidths=0.2)
    left.set_title(f"decision boundary (accuracy {result['accuracy']:.1%})")
    right.plot(np.arange(1, len(result["losses"]) + 1), result["losses"])
    right.set_yscale("log")
    right.set_xlabel("step")
    right.set_title("training loss")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"saved {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train an MLP on two spirals with jit(grad(loss)).")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--plot", metavar="FILE.png")
    args = parser.parse_args(argv)
    print(f"jaxlite {jaxlite.__version__}: MLP {LAYERS} on two spirals (1000 points), "
          f"{args.steps} full-batch steps of jit(value_and_grad(loss)) with momentum")
    result = train(args.steps)
    print(f"  accuracy            {result['accuracy']:.1%}")
    print(f"  first call          {result['compile_time'] * 1e3:8.1f} ms  (trace + optimize + compile)")
    print(f"  jitted step         {result['step_time'] * 1e6:8.1f} us")
    print(f"  numpy eager step    {result['numpy_step_time'] * 1e6:8.1f} us  "
          f"({result['numpy_step_time'] / result['step_time']:.1f}x the jitted step)")
    if args.plot:
        plot(result, args.plot)


if __name__ == "__main__":
    main()
