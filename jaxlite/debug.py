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
  * vmap: the callback runs once per batch element, as in JAX, with that
    element's values (unbatched arguments as they are). A while loop with a
    batched predicate keeps running the body for finished lanes, so their values
    are printed again, unchanged; a cond with a batched predicate runs (and
    prints in) every branch.
  * jvp, grad: the callback sees primal values only and adds nothing to the
    derivative. Reverse mode runs it in the forward pass, once.
"""
import builtins
import pdb
import sys

from jaxlite.callback import FlatCallback, batch_sequentially
from jaxlite.core.array import as_array_argument
from jaxlite.core.array import Array
from jaxlite.core.primitive import Primitive
from jaxlite.core.trace import EVAL_TRACE, Tracer, current_trace
from jaxlite.core.tree_util import tree_flatten
from jaxlite.transforms import ad, batching


debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True
debug_callback_p.runs_python = True


def _debug_callback_impl(*args, callback):
    callback(*args)
    return []


def _debug_callback_jvp(primals, tangents, callback):
    return debug_callback_p.bind(*primals, callback=callback), []


def _debug_callback_batch(args, dims, callback):
    moved, looped = batch_sequentially(args, dims, callback)
    return debug_callback_p.bind(*moved, callback=looped), []


debug_callback_p.def_impl(_debug_callback_impl)
debug_callback_p.def_abstract_eval(lambda *avals, callback: [])
ad.jvp_rules[debug_callback_p] = _debug_callback_jvp
batching.batch_rules[debug_callback_p] = _debug_callback_batch


def callback(fun, *args, ordered=False, partitioned=False, **kwargs):
    """Call fun(*args, **kwargs) on the runtime values (numpy arrays) of array pytrees.

    Returns None. Callbacks always run in program order, so `ordered` is accepted
    for compatibility and changes nothing.
    """
    leaves, tree = tree_flatten((args, kwargs))
    operands = [as_array_argument(x) for x in leaves]
    debug_callback_p.bind(*operands, callback=FlatCallback(fun, tree))


def print(fmt, *args, ordered=False, **kwargs):
    """Print `fmt.format(*args, **kwargs)` with the runtime values of the arguments."""
    def format_and_print(*values, **named):
        builtins.print(fmt.format(*values, **named))
    format_and_print.__name__ = "debug_print"
    callback(format_and_print, *args, ordered=ordered, **kwargs)


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False, token=None, **kwargs):
    """Stop in pdb at the caller's line. Eager, that is the caller's own frame; in staged
    code, a frame holding the caller's array locals with this run's values (and its other
    locals as they were when traced), entered each time the staged code reaches this point."""
    frame = sys._getframe(1)
    if current_trace() is EVAL_TRACE:
        pdb.Pdb().set_trace(frame)
        return
    names = [name for name, value in frame.f_locals.items() if isinstance(value, (Array, Tracer))]
    others = {name: value for name, value in frame.f_locals.items() if name not in names}
    where = f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"

    def enter(*values):
        namespace = {**others, **dict(zip(names, values))}
        builtins.print(f"Entering jaxlite.debug.breakpoint at {where}")
        exec(compile("__import__('pdb').Pdb().set_trace(__import__('sys')._getframe())", where, "exec"), namespace)
    enter.__name__ = "breakpoint"
    callback(enter, *[frame.f_locals[name] for name in names])
