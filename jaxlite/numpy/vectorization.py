"""jnp.vectorize: a function of scalars (or of core dimensions named by a signature such
as "(n),(n)->()") mapped over the broadcast leading axes of its arguments by vmap."""
import functools
import re

import numpy as np

from jaxlite.numpy.creation import asarray
from jaxlite.numpy.util import broadcast_to

_DIMENSIONS = re.compile(r"\(([^()]*)\)")
_SIGNATURE = re.compile(r"^\s*(\([^()]*\)\s*(,\s*\([^()]*\)\s*)*)?->\s*"
                        r"(\([^()]*\)\s*(,\s*\([^()]*\)\s*)*)$")


def _parse_signature(signature):
    if not _SIGNATURE.match(signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    inputs, outputs = signature.split("->")
    parse = lambda text: [tuple(d.strip() for d in group.split(",") if d.strip())
                          for group in _DIMENSIONS.findall(text)]
    return parse(inputs), parse(outputs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    core_inputs = None if signature is None else _parse_signature(signature)[0]

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        static_kw = {k: v for k, v in kwargs.items() if k in excluded}
        mapped_kw = [k for k in kwargs if k not in excluded]
        static_pos = {i: a for i, a in enumerate(args) if i in excluded}
        mapped = [asarray(a) for i, a in enumerate(args) if i not in excluded]
        mapped += [asarray(kwargs[k]) for k in mapped_kw]
        n_positional = len(args) - len(static_pos)

        def call(*values):
            positional = iter(values[:n_positional])
            full_args = [static_pos[i] if i in static_pos else next(positional)
                         for i in range(len(args))]
            return pyfunc(*full_args, **static_kw, **dict(zip(mapped_kw, values[n_positional:])))

        cores = core_inputs if core_inputs is not None else [()] * len(mapped)
        if len(cores) != len(mapped):
            raise TypeError(f"wrong number of positional arguments: expected {len(cores)}, "
                            f"got {len(mapped)}")
        return _map_over_batch(call, mapped, cores)
    return wrapped


def _map_over_batch(call, arrays, cores):
    from jaxlite.transforms.batching import vmap
    batch_shapes = []
    for a, core in zip(arrays, cores):
        if a.ndim < len(core):
            raise ValueError(f"input with shape {a.shape} does not have enough dimensions for "
                             f"its core dimensions {core}")
        batch_shapes.append(a.shape[:a.ndim - len(core)])
    batch = np.broadcast_shapes(*batch_shapes) if batch_shapes else ()
    arrays = [broadcast_to(a, batch + a.shape[a.ndim - len(core):]) for a, core in zip(arrays, cores)]
    func = call
    for _ in batch:
        func = vmap(func)
    return func(*arrays)
