"""lax.composite: a named operation kept as one equation, defined by its decomposition.

The jaxpr shows one `composite` equation carrying the decomposition's jaxpr, its name,
version and attributes (the keyword arguments), so code that reads jaxprs can find it;
running it runs the decomposition, and the compiler inlines it like any call. As in
JAX, a composite has no derivative and no batching rule of its own.
"""
import functools

import numpy as np

from jaxlite.core.array import Array
from jaxlite.core.primitive import Primitive, call_primitives
from jaxlite.core.staging import abstractify, eval_jaxpr, flatten_fun, trace_to_jaxpr
from jaxlite.core.tree_util import tree_flatten, tree_unflatten


def _composite_impl(*args, jaxpr, name, attributes, version):
    outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *map(Array, args))
    return [np.asarray(o) for o in outs]


composite_p = Primitive("composite", multiple_results=True)
composite_p.def_impl(_composite_impl)
composite_p.def_abstract_eval(lambda *avals, jaxpr, name, attributes, version: list(jaxpr.out_avals))
call_primitives.add(composite_p)


def composite(decomposition, name, version=0):
    """The function `decomposition` as one named operation: positional arguments are its
    operands, keyword arguments its attributes (JAX 0.10 records None ones too, as empty trees)."""
    @functools.wraps(decomposition)
    def composite_fun(*args, **kwargs):
        flat_args, in_tree = tree_flatten((args, {}))
        flat_fun, out_tree = flatten_fun(lambda *xs: decomposition(*xs, **kwargs), in_tree)
        closed = trace_to_jaxpr(flat_fun, [abstractify(x) for x in flat_args], f"the composite {name}")
        outs = composite_p.bind(*flat_args, jaxpr=closed, name=name, version=version,
                                attributes=_attribute_param(kwargs))
        return tree_unflatten(out_tree[0], outs)
    return composite_fun


def _attribute_param(attributes):
    """Hashable attributes as JAX records them: (name, flattened value, its tree) sorted by name."""
    flat = {key: tree_flatten(value) for key, value in attributes.items()}
    return tuple((key, tuple(leaves), tree) for key, (leaves, tree) in sorted(flat.items()))
