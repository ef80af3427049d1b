"""jaxlite.scipy.ndimage: map_coordinates with nearest (order 0) and linear (order 1)
interpolation, with JAX's boundary modes ('constant' behaves as scipy's 'grid-constant'
and 'wrap' as 'grid-wrap', as in JAX)."""
import functools as _functools
import itertools as _itertools
import operator as _operator

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.core import dtypes as _dtypes


def _mirror(index, size):
    """Reflection about the edge samples: period 2 (size - 1)."""
    if size == 1:
        return _jnp.zeros_like(index)
    half = size - 1
    return _jnp.abs((index + half) % (2 * half) - half)


def _reflect(index, size):
    """Reflection about the edges between samples: period 2 size, edge samples repeated."""
    folded = index % (2 * size)
    return _jnp.where(folded >= size, 2 * size - 1 - folded, folded)


_INDEX_MAPS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: _jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _nearest(coordinate):
    return [(_lax.round(coordinate).astype(_jnp.int32), None)]


def _linear(coordinate):
    lower = _jnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(_jnp.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
    """input interpolated at the points whose i-th coordinates are coordinates[i]."""
    image = _jnp.asarray(input)
    coordinates = [_jnp.asarray(c) for c in coordinates]
    if len(coordinates) != image.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coordinates)} != {image.ndim}")
    if mode not in _INDEX_MAPS:
        raise NotImplementedError(f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. "
                                  f"Currently supported modes are {set(_INDEX_MAPS)}.")
    if order not in (0, 1):
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
    nodes = _nearest if order == 0 else _linear
    per_axis = [[(_INDEX_MAPS[mode](index, size), (index >= 0) & (index < size), weight)
                 for index, weight in nodes(c)] for c, size in zip(coordinates, image.shape)]
    fill = _jnp.asarray(cval, image.dtype)
    terms = []
    for corner in _itertools.product(*per_axis):
        indices, inside, weights = zip(*corner)
        value = image[tuple(indices)]
        if mode == "constant":
            value = _jnp.where(_functools.reduce(_operator.and_, inside), value, fill)
        present = [w for w in weights if w is not None]
        terms.append(_functools.reduce(_operator.mul, present) * value if present else value)
    result = _functools.reduce(_operator.add, terms)
    if _dtypes.is_int(image.dtype):
        result = _lax.round(result)
    return result.astype(image.dtype)
