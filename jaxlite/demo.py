"""python -m jaxlite.demo: a tour of what jaxlite does on a small example."""
import time

import numpy as np

import jaxlite
import jaxlite.numpy as jnp


def predict(w, x):
    return jnp.tanh(x @ w)


def main():
    rng = np.random.default_rng(0)
    w = jnp.asarray(rng.normal(size=(3, 2)).astype(np.float32))
    x = jnp.asarray(rng.normal(size=(4, 3)).astype(np.float32))
    print("jaxlite", jaxlite.__version__)
    print("\nThe traced program (make_jaxpr):")
    print(jaxlite.make_jaxpr(predict)(w, x))
    start = time.perf_counter()
    out = predict(w, x)
    print(f"\nEager result in {1e3 * (time.perf_counter() - start):.2f} ms:\n{out}")
    direction = jnp.ones_like(w)
    _, derivative = jaxlite.jvp(lambda w: predict(w, x).sum(), (w,), (direction,))
    print(f"\nDirectional derivative of sum(predict) along ones (jvp): {float(derivative):.6f}")
    per_row = jaxlite.vmap(lambda row: predict(w, row))(x)
    print(f"vmap over rows agrees with the batched call: {bool(jnp.all(per_row == out))}")


if __name__ == "__main__":
    main()
