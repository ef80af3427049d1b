"""Records JAX's samples for the distributions added to jaxlite.random (run with /work/jaxref/bin/python)."""
import json
import sys

import numpy as np


def calls(jax):
    """Each recorded call by its name, made with `jax` (JAX itself, or jaxlite in the tests)."""
    random, jnp = jax.random, jax.numpy
    k0, k1, k7 = (random.PRNGKey(s) for s in (0, 1, 7))
    return {
        "gamma(k7, 2.5, (6,))": lambda: random.gamma(k7, 2.5, (6,)),
        "gamma(k7, 0.3, (6,))": lambda: random.gamma(k7, 0.3, (6,)),
        "gamma(k1, [0.5, 1.0, 5.0, 50.0])": lambda: random.gamma(k1, jnp.array([0.5, 1.0, 5.0, 50.0])),
        "gamma(k7, [[1.0], [4.0]], (2, 3))": lambda: random.gamma(k7, jnp.array([[1.0], [4.0]]), (2, 3)),
        "loggamma(k7, 0.3, (6,))": lambda: random.loggamma(k7, 0.3, (6,)),
        "loggamma(k7, 0.001, (4,))": lambda: random.loggamma(k7, 0.001, (4,)),
        "beta(k7, 2.0, 3.0, (6,))": lambda: random.beta(k7, 2.0, 3.0, (6,)),
        "beta(k1, 0.1, [0.5, 5.0])": lambda: random.beta(k1, 0.1, jnp.array([0.5, 5.0])),
        "dirichlet(k7, [1.0, 2.0, 3.0], (2,))": lambda: random.dirichlet(k7, jnp.array([1.0, 2.0, 3.0]), (2,)),
        "t(k7, 3.0, (6,))": lambda: random.t(k7, 3.0, (6,)),
        "chisquare(k7, 4.0, (6,))": lambda: random.chisquare(k7, 4.0, (6,)),
        "f(k7, 3.0, 5.0, (6,))": lambda: random.f(k7, 3.0, 5.0, (6,)),
        "generalized_normal(k7, 1.5, (6,))": lambda: random.generalized_normal(k7, 1.5, (6,)),
        "ball(k7, 3, shape=(2,))": lambda: random.ball(k7, 3, shape=(2,)),
        "ball(k7, 2, p=1, shape=(3,))": lambda: random.ball(k7, 2, p=1, shape=(3,)),
        "poisson(k7, 3.0, (6,))": lambda: random.poisson(k7, 3.0, (6,)),
        "poisson(k1, [0.0, 0.5, 20.0, 1000.0])": lambda: random.poisson(k1, jnp.array([0.0, 0.5, 20.0, 1000.0])),
        "binomial(k7, 10, 0.3, (6,))": lambda: random.binomial(k7, 10, 0.3, (6,)),
        "binomial(k1, [5.0, 100.0, 1000.0, 50.0], [0.2, 0.7, 0.5, 0.9])":
            lambda: random.binomial(k1, jnp.array([5.0, 100.0, 1000.0, 50.0]), jnp.array([0.2, 0.7, 0.5, 0.9])),
        "multinomial(k7, 10.0, [0.2, 0.3, 0.5])": lambda: random.multinomial(k7, 10.0, jnp.array([0.2, 0.3, 0.5])),
        "multinomial(k1, [5.0, 100.0], [0.2, 0.3, 0.5], shape=(2, 3))":
            lambda: random.multinomial(k1, jnp.array([5.0, 100.0]), jnp.array([0.2, 0.3, 0.5]), shape=(2, 3)),
        "multivariate_normal(k7, [1.0, -1.0], [[2.0, 0.5], [0.5, 1.0]], (3,))":
            lambda: random.multivariate_normal(k7, jnp.array([1.0, -1.0]), jnp.array([[2.0, 0.5], [0.5, 1.0]]), (3,)),
        "geometric(k7, 0.3, (6,))": lambda: random.geometric(k7, 0.3, (6,)),
        "maxwell(k7, (6,))": lambda: random.maxwell(k7, (6,)),
        "double_sided_maxwell(k7, 1.0, 2.0, (6,))": lambda: random.double_sided_maxwell(k7, 1.0, 2.0, (6,)),
        "wald(k7, 1.5, (6,))": lambda: random.wald(k7, 1.5, (6,)),
        "triangular(k7, 0.0, 1.0, 3.0, (6,))": lambda: random.triangular(k7, 0.0, 1.0, 3.0, (6,)),
        "orthogonal(k7, 3)": lambda: random.orthogonal(k7, 3),
        "orthogonal(k7, 2, (2,), m=3)": lambda: random.orthogonal(k7, 2, (2,), m=3),
        "clone(k7)": lambda: random.clone(k7),
        "grad(sum(gamma(k7, a, (4,))))(2.5)": lambda: jax.grad(lambda a: random.gamma(k7, a, (4,)).sum())(2.5),
        "grad(sum(gamma(k7, a)))([0.3, 1.0, 7.0])":
            lambda: jax.grad(lambda a: random.gamma(k7, a).sum())(jnp.array([0.3, 1.0, 7.0])),
        "grad(sum(loggamma(k7, a, (4,))))(0.5)": lambda: jax.grad(lambda a: random.loggamma(k7, a, (4,)).sum())(0.5),
        "grad(sum(beta(k7, a, 2.0, (3,))))(1.5)": lambda: jax.grad(lambda a: random.beta(k7, a, 2.0, (3,)).sum())(1.5),
        "x64: gamma(k7, 2.5, (4,), float64)": lambda: random.gamma(k7, 2.5, (4,), jnp.float64),
        "x64: poisson(k7, [3.0, 30.0])": lambda: random.poisson(k7, jnp.array([3.0, 30.0])),
        "x64: binomial(k7, 20.0, [0.3, 0.8], dtype=float64)":
            lambda: random.binomial(k7, 20.0, jnp.array([0.3, 0.8]), dtype=jnp.float64),
        "x64: beta(k7, 2.0, 3.0, (4,), float64)": lambda: random.beta(k7, 2.0, 3.0, (4,), jnp.float64),
    }


def entry(value):
    value = np.asarray(value)
    out = {"dtype": value.dtype.name, "shape": list(value.shape)}
    if value.dtype.kind == "f":
        out["hex"] = [float(v).hex() for v in value.astype(np.float64).reshape(-1)]
    else:
        out["values"] = value.reshape(-1).tolist()
    return out


def record(path):
    import jax
    data = {"source": f"jax {jax.__version__} (default threefry2x32 PRNG), CPU; recorded by "
                      "tests/data/record_jax_random_distributions.py",
            "note": "each entry is the dtype, shape and row-major values (floats as float.hex) of the "
                    "JAX call named by its key, with k0, k1, k7 = PRNGKey(0), PRNGKey(1), PRNGKey(7); "
                    "keys starting with 'x64: ' were recorded with jax_enable_x64"}
    for name, call in calls(jax).items():
        if not name.startswith("x64: "):
            data[name] = entry(call())
    jax.config.update("jax_enable_x64", True)
    for name, call in calls(jax).items():
        if name.startswith("x64: "):
            data[name] = entry(call())
    with open(path, "w") as out:
        json.dump(data, out, indent=1)


if __name__ == "__main__":
    record(sys.argv[1])
