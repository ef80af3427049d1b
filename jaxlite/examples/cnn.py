"""A small convolutional classifier, written once for jaxlite or JAX (`xp`, `lax`).

conv3x3 (NHWC) - relu - conv3x3 stride 2 - relu - mean over space - dense - softmax
cross-entropy: the CNN training step of benchmarks/run.py and tests/test_conv_lowering.py.
"""
import numpy as np

LAYOUT = ("NHWC", "HWIO", "NHWC")


def init_params(channels=(1, 32, 64), classes=10, seed=0):
    """He-initialized [conv1 kernel, conv2 kernel, dense weight, dense bias] (float32 numpy)."""
    rng = np.random.default_rng(seed)
    c0, c1, c2 = channels
    he = lambda fan_in, shape: rng.normal(0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)
    return [he(9 * c0, (3, 3, c0, c1)), he(9 * c1, (3, 3, c1, c2)), he(c2, (c2, classes)),
            np.zeros(classes, np.float32)]


def logits(xp, lax, params, images):
    w1, w2, dense, bias = params
    h = xp.maximum(lax.conv_general_dilated(images, w1, (1, 1), "SAME", dimension_numbers=LAYOUT), 0.0)
    h = xp.maximum(lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=LAYOUT), 0.0)
    return xp.mean(h, axis=(1, 2)) @ dense + bias


def loss(xp, lax, params, images, labels_onehot):
    z = logits(xp, lax, params, images)
    z = z - xp.max(z, axis=1, keepdims=True)
    log_probs = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.mean(xp.sum(labels_onehot * log_probs, axis=1))


def sgd(params, grads, learning_rate):
    return [p - learning_rate * g for p, g in zip(params, grads)]


def batch(size=64, side=28, classes=10, seed=0):
    """Random images (size, side, side, 1) and one-hot labels: shapes of an MNIST batch."""
    rng = np.random.default_rng(seed)
    images = rng.normal(size=(size, side, side, 1)).astype(np.float32)
    return images, np.eye(classes, dtype=np.float32)[rng.integers(0, classes, size)]
