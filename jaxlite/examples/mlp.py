"""A multilayer perceptron classifier, written once for any NumPy-like module.

`xp` is jaxlite.numpy (or jax.numpy when benchmarking against JAX); the plain
numpy version with a hand-written backward pass is the eager baseline.
"""
import numpy as np


def init_params(sizes, seed=0):
    """He-initialized [(w, b), ...] as float32 numpy arrays."""
    rng = np.random.default_rng(seed)
    return [(rng.normal(0, np.sqrt(2.0 / m), (m, n)).astype(np.float32), np.zeros(n, np.float32))
            for m, n in zip(sizes[:-1], sizes[1:])]


def logits(xp, params, x):
    h = x
    for w, b in params[:-1]:
        h = xp.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    return h @ w + b


def loss(xp, params, x, labels_onehot):
    """Mean softmax cross-entropy."""
    z = logits(xp, params, x)
    z = z - xp.max(z, axis=1, keepdims=True)
    log_probs = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.mean(xp.sum(labels_onehot * log_probs, axis=1))


def sgd(params, grads, learning_rate):
    return [(w - learning_rate * gw, b - learning_rate * gb) for (w, b), (gw, gb) in zip(params, grads)]


def numpy_loss_and_grads(params, x, labels_onehot):
    """The same loss and its gradient by hand in numpy: the eager baseline."""
    activations, h = [x], x
    for w, b in params[:-1]:
        h = np.maximum(h @ w + b, 0.0)
        activations.append(h)
    w, b = params[-1]
    z = h @ w + b
    z = z - z.max(axis=1, keepdims=True)
    probs = np.exp(z)
    probs /= probs.sum(axis=1, keepdims=True)
    n = x.shape[0]
    value = -np.mean(np.sum(labels_onehot * np.log(np.maximum(probs, 1e-30)), axis=1))
    delta = (probs - labels_onehot) / n
    grads = []
    for i in range(len(params) - 1, -1, -1):
        w, _ = params[i]
        grads.append((activations[i].T @ delta, delta.sum(axis=0)))
        if i:
            delta = (delta @ w.T) * (activations[i] > 0)
    return value, grads[::-1]


def numpy_train_step(params, x, labels_onehot, learning_rate):
    value, grads = numpy_loss_and_grads(params, x, labels_onehot)
    return sgd(params, grads, learning_rate), value


def two_spirals(n_per_class=500, noise=0.2, seed=0):
    """A classic non-linearly separable 2-D dataset: points (n, 2) float32, labels (n,) int."""
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0.05, 1, n_per_class)) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3 * np.pi)
    points = np.concatenate([arm, -arm]) + rng.normal(0, noise / (3 * np.pi), (2 * n_per_class, 2))
    labels = np.repeat(np.arange(2), n_per_class)
    order = rng.permutation(2 * n_per_class)
    return points[order].astype(np.float32), labels[order]


def one_hot(labels, classes):
    return np.eye(classes, dtype=np.float32)[labels]
