"""jaxlite.scipy.cluster.vq: assign observations to their nearest code."""
from jaxlite import numpy as _jnp
from jaxlite.scipy._util import as_inexact as _as_inexact


def vq(obs, code_book, check_finite=True):
    """(codes, distances): the index of each observation's nearest code (Euclidean) and
    the distance to it."""
    obs, code_book = _as_inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    difference = obs[:, None, :] - code_book[None, :, :]
    distances = _jnp.sqrt(_jnp.sum(difference * difference, axis=-1))
    codes = _jnp.argmin(distances, axis=-1).astype(_jnp.int32)
    return codes, _jnp.min(distances, axis=-1)
