"""Two small spectral-method programs on jnp.fft: a periodic Poisson solver, and a linear filter
whose complex frequency response is learned by gradient descent.

    >>> import jaxlite, jaxlite.numpy as jnp
    >>> from jaxlite.examples import spectral
    >>> x = jnp.linspace(0, 2 * jnp.pi, 64, endpoint=False)
    >>> u = spectral.solve_poisson(-jnp.sin(x), 2 * jnp.pi)      # u'' = -sin(x): u = sin(x)

The filter's parameters are complex: with JAX's convention, jaxlite.grad of the real loss at a
complex parameter returns the conjugate of the steepest-ascent direction (d/dRe - i d/dIm),
so a descent step subtracts its conjugate.
"""
import numpy as np

import jaxlite
import jaxlite.numpy as jnp


def wavenumbers(n, length):
    """The angular wavenumbers 2 pi k / length of an n-point periodic grid, in FFT order."""
    return 2 * jnp.pi * jnp.fft.fftfreq(n, length / n)


def solve_poisson(f, length):
    """The zero-mean periodic solution u of u'' = f on [0, length) (f sampled on a uniform grid;
    the mean of f, which no periodic u can produce, is dropped)."""
    k = wavenumbers(f.shape[-1], length)
    f_hat = jnp.fft.fft(f)
    k_squared = jnp.where(k == 0, 1.0, k * k)
    u_hat = jnp.where(k == 0, 0.0, -f_hat / k_squared)
    return jnp.real(jnp.fft.ifft(u_hat))


def apply_filter(response, signal):
    """The real signal filtered by a complex response over its rfft frequencies."""
    return jnp.fft.irfft(jnp.fft.rfft(signal) * response, signal.shape[-1])


def filter_loss(response, signal, target):
    return jnp.mean((apply_filter(response, signal) - target) ** 2)


@jaxlite.jit
def descent_step(response, signal, target, rate):
    """One gradient-descent step on the complex response (JAX's convention: subtract conj(grad))."""
    loss, grad = jaxlite.value_and_grad(filter_loss)(response, signal, target)
    return response - rate * jnp.conj(grad), loss


def fit_filter(signal, target, steps=200, rate=None):
    """A complex response over rfft frequencies that maps `signal` (batch, n) to `target`."""
    n = signal.shape[-1]
    response = jnp.zeros(n // 2 + 1, jnp.complex64)
    rate = n / 4 if rate is None else rate
    for _ in range(steps):
        response, loss = descent_step(response, signal, target, rate)
    return response, float(loss)


def demo_problem(n=32, batch=16, seed=0):
    """Random signals and their images under a known smoothing, delaying filter."""
    rng = np.random.default_rng(seed)
    signal = rng.standard_normal((batch, n)).astype(np.float32)
    frequencies = np.arange(n // 2 + 1)
    true_response = (np.exp(-(frequencies / 6.0) ** 2) * np.exp(-2j * np.pi * frequencies * 3 / n)).astype(np.complex64)
    true_response[-1] = true_response[-1].real      # (the Nyquist term of a real signal is real)
    target = np.fft.irfft(np.fft.rfft(signal) * true_response, n).astype(np.float32)
    return signal, target, true_response
