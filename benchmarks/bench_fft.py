"""jnp.fft.fft and jnp.fft.rfft under jit (the native FFT routine, lower/fft_kernels.py) side by
side with numpy.fft (pocketfft) and, where it imports, JAX's jit on CPU.

Run: PYTHONPATH=. python benchmarks/bench_fft.py [--eager] [n ...]
or, to add JAX's column: PYTHONPATH=. /work/jaxref/bin/python benchmarks/bench_fft.py
Prints per length (complex64 for fft, float32 for rfft, batch 1): the best time of several
calls in microseconds for numpy, jaxlite and JAX (taking turns call by call), and the ratios jaxlite / numpy and
jaxlite / JAX (below 1: jaxlite is faster). jaxlite and JAX are given their own arrays
(jnp.asarray, jax.device_put), as a program holding its data would; `--eager` times the
transforms without jit (the per-call dispatch cost at small lengths). The lengths: powers of
two 2^10..2^20 and non-powers of two (1000; 1009, a prime: Bluestein; 3^10; 2*3*5*7*11),
then a batch of 64 lines, fft2 of 512x512 and fftn of 128x128x16; with --eager 64..4096.
"""
import os
import sys
import time

import numpy as np

import jaxlite
import jaxlite.numpy as jnp

try:
    import jax
    import jax.numpy as jax_numpy
except ImportError:
    jax = None

LENGTHS = [2 ** k for k in (10, 12, 14, 16, 18, 20)] + [1000, 1009, 3 ** 10, 2 * 3 * 5 * 7 * 11]
EAGER_LENGTHS = [64, 256, 1024, 4096]
MULTIDIMENSIONAL = [("fft", (64, 1024)), ("fft2", (512, 512)), ("fftn", (128, 128, 16))]
BUDGET_SECONDS = 0.6     # per row: rounds until it is spent (at least 5)


def best_times(calls):
    """The best time of each call, the calls taking turns round by round: on a shared machine
    a burst of load then hits them all alike rather than the one that happened to run."""
    for call in calls.values():
        call()
    best, spent, rounds = {name: float("inf") for name in calls}, 0.0, 0
    while spent < BUDGET_SECONDS or rounds < 5:
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            elapsed = time.perf_counter() - start
            best[name], spent = min(best[name], elapsed), spent + elapsed
        rounds += 1
    return best


def timings(name, x, eager=False):
    ours, our_x = getattr(jnp.fft, name), jnp.asarray(x)
    ours = ours if eager else jaxlite.jit(ours)
    calls = {"numpy": lambda: getattr(np.fft, name)(x),
             "jaxlite": lambda: jaxlite.block_until_ready(ours(our_x))}
    if jax is not None:
        theirs, device_x = getattr(jax_numpy.fft, name), jax.device_put(x)
        theirs = theirs if eager else jax.jit(theirs)
        calls["jax"] = lambda: theirs(device_x).block_until_ready()
    return best_times(calls)


def check(name, x):
    expected = getattr(np.fft, name)(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64))
    got = np.asarray(jaxlite.jit(getattr(jnp.fft, name))(x))
    return float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))


def main(lengths, eager=False, shapes=()):
    rng = np.random.default_rng(0)
    print("eager (no jit)" if eager else "under jit", "| load average", " ".join(f"{v:.1f}" for v in os.getloadavg()))
    print(f"{'transform':>9s} {'n':>8s} | {'numpy us':>10s} {'jaxlite us':>10s} {'jax us':>10s} | "
          f"{'ours/numpy':>10s} {'ours/jax':>9s} | rel. error")
    cases = [(name, (n,)) for n in lengths for name in ("fft", "rfft")]
    for name, shape in cases + list(shapes):
        x = rng.standard_normal(shape).astype(np.float32)
        if name != "rfft":
            x = (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
        row = timings(name, x, eager)
        numpy_us, ours_us = row["numpy"] * 1e6, row["jaxlite"] * 1e6
        jax_us = row["jax"] * 1e6 if "jax" in row else float("nan")
        print(f"{name:>9s} {'x'.join(map(str, shape)):>8s} | {numpy_us:10.1f} {ours_us:10.1f} {jax_us:10.1f} | "
              f"{ours_us / numpy_us:10.2f} {ours_us / jax_us:9.2f} | {check(name, x):.1e}", flush=True)


if __name__ == "__main__":
    eager = "--eager" in sys.argv[1:]
    given = [int(a) for a in sys.argv[1:] if a != "--eager"]
    if eager:
        main(given or EAGER_LENGTHS, eager)
    else:
        main(given or LENGTHS, shapes=() if given else MULTIDIMENSIONAL)
