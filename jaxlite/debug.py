"""jaxlite.debug: print and call back into Python from inside transformed code.

Everything else in a traced function runs once, when it is traced: a plain
`print` inside a jitted function prints tracers, on the first call only. A debug
callback is a primitive instead, so it is recorded like any other equation and
runs whenever the staged computation runs: at once when eager, on every call of
a jitted function, once per iteration of a loop body, with that run's values.

The primitive has no outputs, so it is marked `effectful` (core.ir.has_effects):
dead-code elimination keeps it, common-subexpression elimination never merges
two of them, and the jit runtime runs effectful equations in program order
(runs them through their numpy implementation between the native kernels).

Under the transformations:
  * vmap: the callback runs once, on the whole batch. Batched arguments arrive
    with the batch axis first; unbatched ones as they are. (JAX may instead run
    it once per batch element; one call on the batch is the simple, documented
    choice here.) A while loop with a batched predicate keeps running the body
    for finished lanes, so their values are printed again, unchanged; a cond
    with a batched predicate runs (and prints in) every branch.
  * jvp, grad: the callback sees primal values only and adds nothing to the
    derivative. Reverse mode runs it in the forward pass, once.
"""
import builtins

import numpy as np

from jaxlite.core.array import as_array_argument
from jaxlite.core.primitive import Primitive
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.transforms import ad, batching


class _FlatCallback:
    """The user's function on flat operands; identity-hashed, so each call site is distinct."""

    def __init__(self, fun, tree):
        self.fun, self.tree = fun, tree

    def __call__(self, *leaves):
        # Copies: under jit the operands are views of buffers that are reused later.
        args, kwargs = tree_unflatten(self.tree, [np.array(x) for x in leaves])
        self.fun(*args, **kwargs)

    def __repr__(self):
        return getattr(self.fun, "__name__", "callback")


debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True


def _debug_callback_impl(*args, callback):
    callback(*args)
    return []


def _debug_callback_jvp(primals, tangents, callback):
    return debug_callback_p.bind(*primals, callback=callback), []


def _debug_callback_batch(args, dims, callback):
    moved = [x if d is None else batching.move_dim(x, d, 0) for x, d in zip(args, dims)]
    return debug_callback_p.bind(*moved, callback=callback), []


debug_callback_p.def_impl(_debug_callback_impl)
debug_callback_p.def_abstract_eval(lambda *avals, callback: [])
ad.jvp_rules[debug_callback_p] = _debug_callback_jvp
batching.batch_rules[debug_callback_p] = _debug_callback_batch


def callback(fun, *args, ordered=False, **kwargs):
    """Call fun(*args, **kwargs) on the runtime values (numpy arrays) of array pytrees.

    Returns None. Callbacks always run in program order, so `ordered` is accepted
    for compatibility and changes nothing.
    """
    leaves, tree = tree_flatten((args, kwargs))
    operands = [as_array_argument(x) for x in leaves]
    debug_callback_p.bind(*operands, callback=_FlatCallback(fun, tree))


def print(fmt, *args, ordered=False, **kwargs):
    """Print `fmt.format(*args, **kwargs)` with the runtime values of the arguments."""
    def format_and_print(*values, **named):
        builtins.print(fmt.format(*values, **named))
    format_and_print.__name__ = "debug_print"
    callback(format_and_print, *args, ordered=ordered, **kwargs)
