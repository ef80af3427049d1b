"""jaxlite.scipy: SciPy's API on jaxlite arrays, as jax.scipy offers it, built on lax."""
from jaxlite.scipy import (cluster, fft, integrate, interpolate, linalg, ndimage, optimize, signal,
                           sparse, spatial, special, stats)
