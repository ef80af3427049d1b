"""Calling Python from staged code: `pure_callback`, `io_callback` and the flat callables
that `jaxlite.debug` shares.

A callback is a primitive whose implementation calls the user's function on numpy
values. Eager, it runs at once; under jit it is an equation the compiled program runs
between its native kernels (lower/runtime.py), with that call's values.

  * pure_callback is pure: unused results are dropped (DCE) and equal calls merged, as
    in JAX. Its `vmap_method` says how it runs under vmap: "sequential" calls it once
    per batch element; "expand_dims" once on the batch, unbatched operands given a
    leading axis of size 1; "broadcast_all" once, every operand broadcast to the batch;
    "legacy_vectorized" once, unbatched operands as they are.
  * io_callback is effectful: never dropped, run in program order; under vmap it runs
    once per element, and `ordered=True` refuses vmap as JAX does.
Neither has a derivative (JAX's errors say to use custom_jvp).
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import as_array_argument
from jaxlite.core.primitive import Primitive
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.transforms import ad, batching

__all__ = ["io_callback", "pure_callback"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


class FlatCallback:
    """The user's function on flat operands, returning flat results; identity-hashed,
    so each call site is distinct."""

    def __init__(self, fun, tree, result_avals=None):
        self.fun, self.tree, self.result_avals = fun, tree, result_avals

    def __call__(self, *leaves):
        # Copies: under jit the operands are views of buffers that are reused later.
        args, kwargs = tree_unflatten(self.tree, [np.array(x) for x in leaves])
        result = self.fun(*args, **kwargs)
        return [] if self.result_avals is None else _checked_results(result, self.result_avals)

    def __repr__(self):
        return f"FlatCallback({getattr(self.fun, '__name__', 'callback')})"


def _checked_results(result, avals):
    leaves, _ = tree_flatten(result)
    if len(leaves) != len(avals):
        raise RuntimeError(f"Callback returned {len(leaves)} values, but result_shape_dtypes "
                           f"describes {len(avals)}")
    checked = []
    for i, (leaf, aval) in enumerate(zip(leaves, avals)):
        value = np.asarray(leaf)
        if value.shape != aval.shape:
            raise RuntimeError(f"Incorrect output shape for return value #{i}: Expected: "
                               f"{aval.shape}, Actual: {value.shape}")
        if dtypes.canonicalize_dtype(value.dtype) != aval.dtype:
            raise RuntimeError(f"Incorrect output dtype for return value #{i}: Expected: "
                               f"{aval.dtype}, Actual: {value.dtype}")
        checked.append(value.astype(aval.dtype, copy=False))
    return checked


class SequentialCallback:
    """A callback batched by looping: called once per batch element (batch axes first)."""

    def __init__(self, inner, batched, size):
        self.inner, self.batched, self.size = inner, tuple(batched), size
        avals = getattr(inner, "result_avals", None)
        self.result_avals = None if avals is None else [ShapedArray((size, *a.shape), a.dtype) for a in avals]

    def __call__(self, *args):
        per_element = [self.inner(*[x[i] if b else x for x, b in zip(args, self.batched)])
                       for i in range(self.size)]
        if self.result_avals is None:
            return []
        if not per_element:
            return [np.empty(a.shape, a.dtype) for a in self.result_avals]
        return [np.stack(outs) for outs in zip(*per_element)]

    def __repr__(self):
        return f"sequential({self.inner!r})"


def batch_size(args, dims):
    return next(x.shape[d] for x, d in zip(args, dims) if d is not None)


def batch_sequentially(args, dims, callback):
    """The operands (batch axes moved first) and the callback that loops over them."""
    moved = [x if d is None else batching.move_dim(x, d, 0) for x, d in zip(args, dims)]
    return moved, SequentialCallback(callback, [d is not None for d in dims], batch_size(args, dims))


def _bind_callback(primitive, fun, result_shape_dtypes, args, kwargs, **params):
    leaves, tree = tree_flatten((args, kwargs))
    operands = [as_array_argument(x) for x in leaves]
    result_leaves, result_tree = tree_flatten(result_shape_dtypes)
    avals = [ShapedArray(np.shape(r), dtypes.canonicalize_dtype(r.dtype)) for r in result_leaves]
    outs = primitive.bind(*operands, callback=FlatCallback(fun, tree, avals), **params)
    return tree_unflatten(result_tree, outs)


def _callback_impl(*args, callback, **params):
    return callback(*args)


def _callback_abstract_eval(*avals, callback, **params):
    return callback.result_avals


# ---------------------------------------------------------------- pure_callback

pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.runs_python = True
pure_callback_p.def_impl(_callback_impl)
pure_callback_p.def_abstract_eval(_callback_abstract_eval)


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_callback_batch(args, dims, callback, vmap_method):
    size = batch_size(args, dims)
    if vmap_method in ("sequential", "sequential_unrolled"):
        moved, looped = batch_sequentially(args, dims, callback)
        return pure_callback_p.bind(*moved, callback=looped, vmap_method=vmap_method), [0] * len(looped.result_avals)
    if vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            f"{', '.join(repr(m) for m in VMAP_METHODS[:-1])}, or 'legacy_vectorized'. "
            f"Got vmap_method={vmap_method!r}.")
    moved = [_unbatched_operand(x, vmap_method, size) if d is None else batching.move_dim(x, d, 0)
             for x, d in zip(args, dims)]
    # One call on the whole batch: the same function, its results one batch axis longer.
    vectorized = FlatCallback(callback.fun, callback.tree,
                              [ShapedArray((size, *a.shape), a.dtype) for a in callback.result_avals])
    outs = pure_callback_p.bind(*moved, callback=vectorized, vmap_method=vmap_method)
    return outs, [0] * len(outs)


def _unbatched_operand(x, vmap_method, size):
    from jaxlite import lax
    if vmap_method == "expand_dims":
        return lax.expand_dims(x, (0,))
    if vmap_method == "broadcast_all":
        return lax.broadcast(x, (size,))
    return x


ad.jvp_rules[pure_callback_p] = _pure_callback_jvp
batching.batch_rules[pure_callback_p] = _pure_callback_batch


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs):
    """Call `callback(*args, **kwargs)` on the runtime values (numpy arrays) of array pytrees
    and return its results, which must match `result_shape_dtypes` (a pytree of objects with
    .shape and .dtype, e.g. ShapeDtypeStruct). `callback` must be pure: it may be skipped
    when its results are unused, or called once for several equal calls."""
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of {VMAP_METHODS} or None, got {vmap_method!r}")
    return _bind_callback(pure_callback_p, callback, result_shape_dtypes, args, kwargs, vmap_method=vmap_method)


# ---------------------------------------------------------------- io_callback

io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.effectful = True
io_callback_p.runs_python = True
io_callback_p.def_impl(_callback_impl)
io_callback_p.def_abstract_eval(_callback_abstract_eval)


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_batch(args, dims, callback, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    moved, looped = batch_sequentially(args, dims, callback)
    return io_callback_p.bind(*moved, callback=looped, ordered=ordered), [0] * len(looped.result_avals)


ad.jvp_rules[io_callback_p] = _io_callback_jvp
batching.batch_rules[io_callback_p] = _io_callback_batch


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """Call `callback(*args, **kwargs)` for its side effects and results, as pure_callback but
    never skipped; calls run in program order (so `ordered=True` changes only vmap)."""
    return _bind_callback(io_callback_p, callback, result_shape_dtypes, args, kwargs, ordered=ordered)
