"""einsum: parse the subscripts, then contract operands pairwise with dot_general.

Each operand is first simplified on its own: repeated labels take the diagonal,
labels of size 1 that broadcast against a larger size are squeezed away, and
labels nobody else needs are summed out. Then the pair whose result is smallest
is contracted, greedily, until one operand is left; labels shared by the pair
become dot_general batch dimensions when a later operand or the output still
needs them, and contracting dimensions otherwise.
"""
import itertools
import math

import numpy as np

from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.numpy.util import check_arraylike, promote_dtypes


class _Term:
    """An operand with one label per axis."""

    __slots__ = ("array", "labels")

    def __init__(self, array, labels):
        self.array, self.labels = array, list(labels)


def _ellipsis_labels(count):
    """Labels for the axes an ellipsis stands for, right-aligned across operands."""
    return [chr(0x3000 + i) for i in range(count)]


def _split_subscript(subscript, ndim, ellipsis_ndim):
    if subscript.count("...") > 1:
        raise ValueError(f"einsum: more than one ellipsis in subscript {subscript!r}")
    if "..." not in subscript:
        return list(subscript)
    before, after = subscript.split("...")
    return list(before) + _ellipsis_labels(ellipsis_ndim)[ellipsis_ndim - (ndim - len(before) - len(after)):] \
        + list(after)


def parse_subscripts(subscripts, shapes):
    """(input label lists, output label list) with ellipses expanded."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    input_subs = inputs.split(",")
    if len(input_subs) != len(shapes):
        raise ValueError(f"einsum: {len(input_subs)} subscripts for {len(shapes)} operands")
    for sub in input_subs + [output]:
        if any(not (c.isalpha() or c == ".") for c in sub):
            raise ValueError(f"einsum: invalid subscript {sub!r}; use letters and '...'")
    ellipsis_ndim = max((len(s) - len(sub) + 3 for sub, s in zip(input_subs, shapes) if "..." in sub),
                        default=0)
    labels = []
    for sub, shape in zip(input_subs, shapes):
        explicit = len(sub.replace("...", ""))
        if explicit > len(shape) or ("..." not in sub and explicit != len(shape)):
            raise ValueError(f"einsum: subscript {sub!r} does not match operand of shape {tuple(shape)}")
        labels.append(_split_subscript(sub, len(shape), ellipsis_ndim))
    if arrow:
        out = _split_subscript(output, ellipsis_ndim + len(output) - 3, ellipsis_ndim) if "..." in output \
            else list(output)
    else:
        counts = {}
        for label in itertools.chain(*labels):
            counts[label] = counts.get(label, 0) + 1
        ellipsis = [c for c in _ellipsis_labels(ellipsis_ndim) if c in counts]
        out = ellipsis + sorted(c for c, n in counts.items() if n == 1 and c not in ellipsis)
    for label in out:
        if not any(label in ls for ls in labels):
            raise ValueError(f"einsum: output subscript {label!r} does not appear in the inputs")
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: output subscript {output!r} repeats a label")
    return labels, out


def _label_sizes(terms):
    sizes = {}
    for term in terms:
        for label, size in zip(term.labels, term.array.shape):
            if sizes.get(label, 1) not in (1, size) and size != 1:
                raise ValueError(f"einsum: label {label!r} has inconsistent sizes {sizes[label]} and {size}")
            sizes[label] = max(sizes.get(label, 1), size)
    return sizes


def _take_diagonals(term):
    """Repeated labels in one operand: keep only the diagonal."""
    while len(set(term.labels)) != len(term.labels):
        label = next(l for l in term.labels if term.labels.count(l) > 1)
        first = term.labels.index(label)
        second = term.labels.index(label, first + 1)
        x = term.array
        on_diagonal = lax.eq(lax.broadcasted_iota(dtypes.int32, x.shape, first),
                             lax.broadcasted_iota(dtypes.int32, x.shape, second))
        x = lax.reduce_sum(lax.select_n(on_diagonal, lax.full_like(x, 0), x), (second,))
        term = _Term(x, term.labels[:second] + term.labels[second + 1:])
    return term


def _squeeze_broadcast(term, sizes):
    """Drop size-1 axes whose label is larger elsewhere: broadcasting makes them redundant."""
    drop = [i for i, (l, n) in enumerate(zip(term.labels, term.array.shape)) if n == 1 and sizes[l] != 1]
    if not drop:
        return term
    return _Term(lax.squeeze(term.array, drop), [l for i, l in enumerate(term.labels) if i not in drop])


def _sum_unneeded(term, needed):
    axes = tuple(i for i, l in enumerate(term.labels) if l not in needed)
    if not axes:
        return term
    return _Term(lax.reduce_sum(term.array, axes), [l for l in term.labels if l in needed])


def _contract(a, b, keep, preferred_element_type):
    """dot_general over the labels a and b share: batch if kept, else contracted."""
    shared = [l for l in a.labels if l in b.labels]
    batch = [l for l in shared if l in keep]
    contract = [l for l in shared if l not in keep]
    dims = ((tuple(a.labels.index(l) for l in contract), tuple(b.labels.index(l) for l in contract)),
            (tuple(a.labels.index(l) for l in batch), tuple(b.labels.index(l) for l in batch)))
    out = lax.dot_general(a.array, b.array, dims, preferred_element_type=preferred_element_type)
    labels = batch + [l for l in a.labels if l not in shared] + [l for l in b.labels if l not in shared]
    return _Term(out, labels)


def _needed_elsewhere(terms, skip, output):
    needed = set(output)
    for k, term in enumerate(terms):
        if k not in skip:
            needed.update(term.labels)
    return needed


def _result_size(a, b, keep, sizes):
    return math.prod(sizes[l] for l in set(a.labels) | set(b.labels) if l in keep)


def _greedy_pair(terms, output, sizes):
    """The pair of operands whose contraction makes the smallest intermediate."""
    def cost(pair):
        i, j = pair
        keep = _needed_elsewhere(terms, pair, output)
        return _result_size(terms[i], terms[j], keep, sizes)
    return min(itertools.combinations(range(len(terms)), 2), key=cost)


def einsum(subscripts, *operands, optimize="greedy", precision=None, preferred_element_type=None,
           out_sharding=None):
    """Einstein summation over the labelled axes of the operands."""
    if not isinstance(subscripts, str):
        raise TypeError("einsum: only the subscripts-string form is supported")
    check_arraylike("einsum", *operands)
    operands = promote_dtypes(*operands)
    labels, output = parse_subscripts(subscripts, [x.shape for x in operands])
    terms = [_take_diagonals(_Term(x, ls)) for x, ls in zip(operands, labels)]
    sizes = _label_sizes(terms)
    terms = [_squeeze_broadcast(t, sizes) for t in terms]
    terms = [_sum_unneeded(t, _needed_elsewhere(terms, (k,), output)) for k, t in enumerate(terms)]
    while len(terms) > 1:
        i, j = _greedy_pair(terms, output, sizes)
        keep = _needed_elsewhere(terms, (i, j), output)
        merged = _contract(terms[i], terms[j], keep, preferred_element_type)
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [merged]
    (result,) = terms
    result = _sum_unneeded(result, set(output))
    return lax.transpose(result.array, tuple(result.labels.index(l) for l in output))


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The pairwise contraction order for an einsum, and a report on its cost.

    Only shapes matter, so numpy plans it on zero-strided stand-ins (no data is touched).
    """
    stand_ins = [np.broadcast_to(np.zeros((), _dtype_of(x)), np.shape(x)) for x in operands]
    strategy = "greedy" if optimize in ("auto", True) else optimize
    steps, report = np.einsum_path(subscripts, *stand_ins, optimize=strategy)
    return [tuple(step) for step in steps[1:]], report


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
