"""Set operations on flattened arrays: isin, union1d, intersect1d, setdiff1d, setxor1d.

Their result sizes depend on the data, so under tracing they need a static `size=`
(padding with `fill_value`), as in JAX; each works from sorted unique values whose
padding slots are known by their zero counts.
"""
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.trace import Tracer
from jaxlite.numpy import reductions, sorting
from jaxlite.numpy.util import check_arraylike, promote_and_broadcast, promote_dtypes


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each entry of `element` occurs in `test_elements` (compared all-to-all)."""
    check_arraylike("isin", element, test_elements)
    if method not in ("auto", "compare_all", "sort"):
        raise ValueError(f"isin: unrecognized method={method!r}")
    element, test_elements = promote_dtypes(element, test_elements)
    flat_tests = lax.reshape(test_elements, (test_elements.size,))
    grid = element[..., None] == flat_tests
    found = reductions.any(grid, axis=-1)
    return lax.bitwise_not(found) if invert else found


def _flat(name, *arrays):
    check_arraylike(name, *arrays)
    arrays = promote_dtypes(*arrays)
    return [lax.reshape(a, (a.size,)) for a in arrays]


def _unique_with_validity(x):
    """Sorted unique values padded to x.size, and which slots hold one."""
    if x.size == 0:
        return x, lax.full((0,), False, dtypes.bool_)
    values, counts = sorting.unique(x, return_counts=True, size=x.size)
    return values, lax.gt(counts, lax.full_like(counts, 0))


def _require_size(name, size, *arrays):
    if size is None and any(isinstance(a, Tracer) and a.to_concrete_value() is None
                            for a in arrays):
        sorting.concrete_or_error(next(a for a in arrays if isinstance(a, Tracer)), name)


def _select(mask, values, size, fill_value):
    """values[mask], padded to `size` with fill_value (default: the smallest selected value)."""
    if size is None:
        return sorting.compress(mask, values)
    out = sorting.compress(mask, values, size=size, fill_value=0 if fill_value is None else fill_value)
    if fill_value is not None or size == 0:
        return out
    count = reductions.sum(mask)
    padding = lax.ge(lax.iota(dtypes.int32, size), lax.convert_element_type(count, dtypes.int32))
    return lax.select_n(padding, out, lax.broadcast(out[0], (size,)))


def union1d(ar1, ar2, *, size=None, fill_value=None):
    ar1, ar2 = _flat("union1d", ar1, ar2)
    _require_size("union1d", size, ar1, ar2)
    return sorting.unique(lax.concatenate([ar1, ar2], 0), size=size, fill_value=fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    ar1, ar2 = _flat("intersect1d", ar1, ar2)
    _require_size("intersect1d", size, ar1, ar2)
    values1, valid1 = _unique_with_validity(ar1)
    common = lax.bitwise_and(valid1, isin(values1, ar2))
    result = _select(common, values1, size, fill_value)
    if not return_indices:
        return result
    return result, *(_first_positions(result, common, ar, size) for ar in (ar1, ar2))


def _first_positions(result, common, ar, size):
    """Where each intersected value first occurs in `ar`; padding slots get ar.size."""
    matches = lax.eq(lax.broadcast_in_dim(result, result.shape + ar.shape, (0,)),
                     lax.broadcast_in_dim(ar, result.shape + ar.shape, (1,)))
    positions = lax.convert_element_type(reductions.argmax(matches, axis=1), dtypes.int32)
    if size is None:
        return positions
    count = lax.convert_element_type(reductions.sum(common), dtypes.int32)
    padding = lax.ge(lax.iota(dtypes.int32, size), count)
    return lax.select_n(padding, positions, lax.full_like(positions, ar.size))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    dtype = dtypes.result_type(ar1)     # the values are ar1's: JAX keeps its dtype
    ar1, ar2 = _flat("setdiff1d", ar1, ar2)
    _require_size("setdiff1d", size, ar1, ar2)
    values1, valid1 = _unique_with_validity(ar1)
    only_first = lax.bitwise_and(valid1, isin(values1, ar2, invert=True))
    out = _select(only_first, values1, size, 0 if fill_value is None else fill_value)
    return lax.convert_element_type(out, dtype)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    ar1, ar2 = _flat("setxor1d", ar1, ar2)
    _require_size("setxor1d", size, ar1, ar2)
    values, valid = _unique_with_validity(lax.concatenate([ar1, ar2], 0))
    in_one = lax.ne(isin(values, ar1), isin(values, ar2))
    return _select(lax.bitwise_and(valid, in_one), values, size, fill_value)
