"""jaxlite.ops: reductions of an array's rows by segment (JAX's jax.ops)."""
import math as _math

import numpy as _np

import jaxlite.numpy as _jnp
from jaxlite.core import dtypes as _dtypes
from jaxlite.core.namespace import dir_of_all as _dir_of_all
from jaxlite.core.trace import Tracer as _Tracer

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
__dir__ = _dir_of_all(globals())


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    """out[s] = the sum of the rows data[i] with segment_ids[i] == s, for s < num_segments.

    Ids outside [0, num_segments) are dropped (mode "clip" clamps them instead).
    bucket_size sums buckets of that many rows separately, then adds the buckets' sums.
    """
    return _segment_reduce("segment_sum", "add", 0, data, segment_ids, num_segments, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                 bucket_size=None, mode=None):
    """The product of each segment's rows (1 for an empty segment)."""
    return _segment_reduce("segment_prod", "multiply", 1, data, segment_ids, num_segments, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    """The maximum of each segment's rows (the dtype's lowest value, -inf, for an empty one)."""
    return _segment_reduce("segment_max", "max", "lowest", data, segment_ids, num_segments, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    """The minimum of each segment's rows (the dtype's highest value, inf, for an empty one)."""
    return _segment_reduce("segment_min", "min", "highest", data, segment_ids, num_segments, bucket_size, mode)


def _identity(kind, dtype):
    if kind not in ("lowest", "highest"):
        return kind
    if _dtypes.is_inexact(dtype):
        return -_np.inf if kind == "lowest" else _np.inf
    if _dtypes.is_bool(dtype):
        return kind == "highest"
    info = _dtypes.iinfo(dtype)
    return int(info.min) if kind == "lowest" else int(info.max)


def _segment_reduce(name, method, identity, data, segment_ids, num_segments, bucket_size, mode):
    data, segment_ids = _jnp.asarray(data), _jnp.asarray(segment_ids)
    if segment_ids.ndim != 1 or not _dtypes.is_int(segment_ids.dtype):
        raise TypeError(f"{name}: segment_ids must be a 1-d integer array, got "
                        f"{segment_ids.dtype}{list(segment_ids.shape)}")
    if data.shape[:1] != segment_ids.shape:
        raise ValueError(f"{name}: data's leading axis {data.shape[:1]} must match segment_ids' "
                         f"shape {segment_ids.shape}")
    num_segments = _num_segments(name, segment_ids, num_segments)
    ids = _ids_for_mode(segment_ids, num_segments, mode)
    fill = _identity(identity, data.dtype)
    if bucket_size is None:
        out = _jnp.full((num_segments,) + data.shape[1:], fill, data.dtype)
        return getattr(out.at[ids], method)(data, mode="drop")
    buckets = max(1, _math.ceil(data.shape[0] / bucket_size))   # no rows: one empty bucket
    bucket_of_row = _jnp.arange(data.shape[0]) // bucket_size
    out = _jnp.full((buckets, num_segments) + data.shape[1:], fill, data.dtype)
    per_bucket = getattr(out.at[bucket_of_row, ids], method)(data, mode="drop")
    return _ACROSS_BUCKETS[method](per_bucket, axis=0)


_ACROSS_BUCKETS = {"add": _jnp.sum, "multiply": _jnp.prod, "max": _jnp.max, "min": _jnp.min}


def _num_segments(name, segment_ids, num_segments):
    if num_segments is not None:
        return int(num_segments)
    if isinstance(segment_ids, _Tracer) and segment_ids.to_concrete_value() is None:
        raise TypeError(f"{name}: num_segments must be given when segment_ids are traced "
                        "(the number of segments fixes the result's shape)")
    return int(_np.max(_np.asarray(segment_ids), initial=-1)) + 1


def _ids_for_mode(segment_ids, num_segments, mode):
    """Ids where the update lands: out-of-range ones (negative ones too, unlike x.at[i]) at
    num_segments, past the end, where mode="drop" discards them; "clip" clamps them."""
    mode = getattr(mode, "name", mode)
    if mode is not None and str(mode).lower() in ("clip",):
        return _jnp.clip(segment_ids, 0, num_segments - 1)
    return _jnp.where(segment_ids < 0, num_segments, segment_ids)
