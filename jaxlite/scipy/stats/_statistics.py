"""sem, rankdata and mode. Ranks and modes compare every pair of elements along the axis
(n^2 work, but no data-dependent shapes, so they run under jit and vmap)."""
from typing import NamedTuple

import numpy as np

from jaxlite import numpy as jnp
from jaxlite.scipy.stats._common import float_dtype


class ModeResult(NamedTuple):
    mode: object
    count: object


def _check_nan_policy(nan_policy):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy != "propagate":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")


def _along_last(a, axis):
    a = jnp.asarray(a)
    return (jnp.ravel(a), 0) if axis is None else (jnp.moveaxis(a, axis, -1), axis)


def _same(a):
    """Pairwise equality along the last axis, NaN equal to NaN (as scipy counts them)."""
    left, right = a[..., :, None], a[..., None, :]
    return (left == right) | (jnp.isnan(left) & jnp.isnan(right)) if jnp.issubdtype(a.dtype, jnp.floating) \
        else left == right


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean: std(ddof) / sqrt(n)."""
    _check_nan_policy(nan_policy)
    a = jnp.asarray(a)
    a = a.astype(float_dtype(a))
    count = a.size if axis is None else a.shape[axis]
    return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(count)


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along axis (the smallest among ties) and its count."""
    _check_nan_policy(nan_policy)
    values, axis = _along_last(a, axis)
    if values.shape[-1] == 0:
        raise ValueError("mode of an empty axis is undefined")
    ordered = jnp.sort(values, axis=-1)
    counts = jnp.sum(_same(ordered), axis=-1).astype(jnp.int32)
    best = jnp.argmax(counts, axis=-1)[..., None]
    result = ModeResult(jnp.take_along_axis(ordered, best, axis=-1)[..., 0],
                        jnp.take_along_axis(counts, best, axis=-1)[..., 0])
    if keepdims:
        return ModeResult(*(jnp.expand_dims(r, axis) for r in result))
    return result


def _ranks(values, method):
    left, right = values[..., :, None], values[..., None, :]
    below = jnp.sum(right < left, axis=-1)
    equal = _same(values)
    ties = jnp.sum(equal, axis=-1)
    if method == "average":
        return below + (ties + 1) / 2
    if method == "min":
        return below + 1
    if method == "max":
        return below + ties
    if method == "ordinal":
        earlier = jnp.arange(values.shape[-1])[None, :] < jnp.arange(values.shape[-1])[:, None]
        return below + jnp.sum(equal & earlier, axis=-1) + 1
    # dense: each distinct smaller value once, as 1 / (its multiplicity) per element
    return jnp.sum(jnp.where(right < left, 1 / ties[..., None, :], 0.0), axis=-1) + 1


_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks from 1 along axis (all elements flattened by default); ties by `method`."""
    _check_nan_policy(nan_policy)
    if method not in _METHODS:
        raise ValueError(f"unknown method '{method}'")
    values, _ = _along_last(a, axis)
    dtype = float_dtype(values)
    ranks = _ranks(values, method)
    if method == "dense":
        ranks = jnp.round(ranks)   # sums of 1 / multiplicity land next to the integer
    ranks = ranks.astype(dtype)
    if jnp.issubdtype(values.dtype, jnp.floating):
        ranks = jnp.where(jnp.any(jnp.isnan(values), axis=-1, keepdims=True), np.nan, ranks).astype(dtype)
    return ranks if axis is None else jnp.moveaxis(ranks, -1, axis)
