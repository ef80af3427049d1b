"""Stable sort of values by keys along one axis: what random permutations and top-k need.

A stand-in until lax has a general `sort` primitive (JAX's lax.sort_key_val);
then jaxlite.random should call that and this module can go.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, NUMBER, as_operand, check_dtype
from jaxlite.transforms import ad, batching


def _sort_by_key(keys, values, dimension):
    order = np.argsort(keys, axis=dimension, kind="stable")
    return np.take_along_axis(values, order, axis=dimension)


def _sort_by_key_aval(keys, values, dimension):
    check_dtype("sort_by_key", keys, NUMBER, "keys")
    check_dtype("sort_by_key", values, ANY, "values")
    if keys.shape != values.shape:
        raise TypeError(f"sort_by_key needs keys and values of one shape, got {keys.shape} "
                        f"and {values.shape}")
    canonicalize_axis(dimension, keys.ndim, "dimension")
    return values


sort_by_key_p = Primitive("sort_by_key")
sort_by_key_p.def_impl(_sort_by_key)
sort_by_key_p.def_abstract_eval(_sort_by_key_aval)


def sort_by_key(keys, values, dimension=-1):
    """values reordered along `dimension` so that their keys ascend; ties keep their order."""
    keys, values = as_operand(keys), as_operand(values)
    return sort_by_key_p.bind(keys, values,
                              dimension=canonicalize_axis(dimension, keys.ndim, "dimension"))


def _sort_by_key_batch(args, dims, dimension):
    size = batching.batch_size(args, dims)
    keys, values = (batching.bdim_at_front(x, d, size) for x, d in zip(args, dims))
    return sort_by_key_p.bind(keys, values, dimension=dimension + 1), 0


def _sort_by_key_transpose(ct, keys, values, dimension):
    """Undo the permutation: sorting by each element's destination sends it home."""
    from jaxlite.lax.shapes import broadcasted_iota
    if ad.is_zero(ct):
        return [None, None]
    positions = broadcasted_iota(dtypes.int32, ct.shape, dimension)
    destinations = sort_by_key_p.bind(keys, positions, dimension=dimension)
    return [None, sort_by_key_p.bind(destinations, ct, dimension=dimension)]


batching.batch_rules[sort_by_key_p] = _sort_by_key_batch
# The values move by a permutation the keys fix: linear in the values, constant in the keys.
ad.defjvp(sort_by_key_p, None,
          lambda t, keys, values, dimension: sort_by_key_p.bind(keys, t, dimension=dimension))
ad.transpose_rules[sort_by_key_p] = _sort_by_key_transpose
