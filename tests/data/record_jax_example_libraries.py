"""Records training runs of jax.example_libraries (stax networks, every optimizer) into
jax_example_libraries.json (run with /work/jaxref/bin/python; shared with
tests/test_example_libraries.py)."""
import json
import sys

import numpy as np

OPTIMIZERS = {
    "sgd": lambda o: o.sgd(0.1), "momentum": lambda o: o.momentum(0.05, 0.9),
    "nesterov": lambda o: o.nesterov(0.05, 0.9), "adagrad": lambda o: o.adagrad(0.2),
    "rmsprop": lambda o: o.rmsprop(0.01), "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.01),
    "adam": lambda o: o.adam(o.exponential_decay(0.02, 10, 0.5)), "adamax": lambda o: o.adamax(0.05),
    "sm3": lambda o: o.sm3(0.1), "sgd piecewise": lambda o: o.sgd(o.piecewise_constant([2, 4], [0.2, 0.1, 0.05])),
}


def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(8, 6, 6, 2)).astype(np.float32), rng.integers(0, 3, 8)


def networks(stax):
    return {
        "mlp": stax.serial(stax.Flatten, stax.Dense(16), stax.Relu, stax.Dense(16), stax.Gelu,
                           stax.Dense(3), stax.LogSoftmax),
        "conv": stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.BatchNorm(), stax.Elu,
                            stax.MaxPool((2, 2), strides=(2, 2)), stax.ConvTranspose(3, (2, 2), (2, 2)),
                            stax.AvgPool((3, 3), padding="SAME"), stax.SumPool((2, 2)), stax.Tanh,
                            stax.FanOut(2), stax.parallel(stax.Identity, stax.Softplus), stax.FanInConcat(),
                            stax.Flatten, stax.Dense(3), stax.LogSoftmax),
    }


def runs(jax, stax, optimizers, only=None):
    """{network / optimizer: the loss at each of five steps}, each step jit(grad); `only`
    names the runs to make (all by default)."""
    x, labels = data()
    onehot = np.eye(3, dtype=np.float32)[labels]
    results = {}
    for net_name, (init, apply) in networks(stax).items():
        _, params = init(jax.random.PRNGKey(0), x.shape)
        loss = lambda p: -(apply(p, x) * onehot).sum(-1).mean()
        for opt_name, make in OPTIMIZERS.items():
            skipped = net_name == "conv" and opt_name not in ("adam", "sgd")
            if skipped or (only is not None and f"{net_name} {opt_name}" not in only):
                continue
            opt_init, update, get_params = make(optimizers)
            step = lambda i, state: update(i, jax.grad(loss)(get_params(state)), state)
            # sm3 keeps the parameter's shape in its state, which JAX's jit cannot take.
            step = step if opt_name == "sm3" else jax.jit(step)
            state, losses = opt_init(params), []
            for i in range(5):
                losses.append(float(loss(get_params(state))))
                state = step(i, state)
            results[f"{net_name} {opt_name}"] = losses
    return results


if __name__ == "__main__":
    import jax
    from jax.example_libraries import optimizers, stax
    with open(sys.argv[1], "w") as out:
        json.dump({"source": f"jax {jax.__version__}", **runs(jax, stax, optimizers)}, out, indent=1)
