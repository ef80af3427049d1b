"""jaxlite.api_util: helpers for flattening functions' arguments and results (as jax.api_util)."""
from jaxlite.core.staging import flatten_fun as _flatten_fun
from jaxlite.core.tree_util import tree_flatten as _tree_flatten
from jaxlite.core.tree_util import tree_unflatten as _tree_unflatten
from jaxlite.extend.linear_util import WrappedFun as _WrappedFun


def debug_info(traced_for, fun, args, kwargs, **_):
    """A description of a traced function, for the messages of the tracing it is handed to."""
    return f"{traced_for} {getattr(fun, '__name__', fun)}"


def _out_tree_thunk(cell):
    def out_tree():
        if not cell:
            raise ValueError("the output tree structure is known only after the function has been called")
        return cell[-1]
    return out_tree


def flatten_fun_nokwargs(fun, in_tree):
    """(flat version of fun, thunk giving its output tree once called): fun takes positional args only."""
    cell = []

    def flat(*flat_args):
        outputs = fun(*_tree_unflatten(in_tree, flat_args))
        leaves, out_tree = _tree_flatten(outputs)
        cell.append(out_tree)
        return leaves
    return _WrappedFun(flat, {}, getattr(fun, "debug_info", None)), _out_tree_thunk(cell)


def flatten_fun(fun, in_tree):
    """As flatten_fun_nokwargs, for an in_tree of (args, kwargs)."""
    flat, cell = _flatten_fun(fun, in_tree)
    return _WrappedFun(flat, {}, getattr(fun, "debug_info", None)), _out_tree_thunk(cell)
