"""jit: trace once per argument signature, compile to machine code, cache, dispatch.

`jit(f)(*args)` flattens the arguments, keys the cache by (function, tree structure,
each leaf's shape/dtype/weak type, static argument values, x64 flag, donated leaves),
traces `f` into a ClosedJaxpr on a miss, and runs the compiled program. Calls with
positional Arrays only then take the fast path of dispatch.py, keyed by the arguments'
interned signatures alone.

Donation (`donate_argnums`, `donate_argnames`) follows JAX: a donated Array is given
up (deleted) when an output of its shape and dtype can take its buffer, and the output
is written there when the program never reads the argument afterwards (lower/donation.py).

Under another transformation (jvp, vmap, an enclosing jit or make_jaxpr) the traced
jaxpr is bound as the `jit` call primitive instead: its JVP rule differentiates the
body (`ad.jvp_jaxpr`) and calls jit again, its batching rule batches the body
(`batching.batch_jaxpr`), and staging records it as one equation that the inline
pass later flattens. Evaluating `jit_p` eagerly compiles its body (cached by the
jaxpr object, which those helpers memoize so repeated transforms reuse it).
"""
import collections
import functools
import inspect
import logging
import operator
import sys
import threading
import types
import warnings
import weakref
from contextlib import contextmanager

import numpy as np

from jaxlite.core import dtypes, errors, extended, hi_lowering
from jaxlite.core.abstract import is_hi
from jaxlite.core.array import Array, intern_signature, signature_of
from jaxlite.core.config import config
from jaxlite.core import ref as ref_module
from jaxlite.core.ir import FreshlyNamed, pp_params_rules
from jaxlite.core.primitive import Primitive, call_primitives
from jaxlite.core.ref import Ref
from jaxlite.core.staging import _aval_of_spec, abstractify, flatten_fun, trace_to_jaxpr
from jaxlite.core.trace import EVAL_TRACE, Tracer, _context as _trace_context, current_trace, float_checks
from jaxlite.core.tree_util import tree_flatten, tree_map, tree_unflatten
from jaxlite.lower import warm_up
from jaxlite.transforms import ad, batching, dispatch, stages
from jaxlite.transforms.partial_eval import call_partial_eval_rule, partial_eval_rules

logger = logging.getLogger("jaxlite.jit")

CACHE_SIZE = 256


# ---------------------------------------------------------------- the compile cache

class _LRUCache:
    """A bounded mapping; evicted executables drop their machine code."""

    def __init__(self, capacity):
        self.capacity, self.entries = capacity, collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None:
                self.entries.move_to_end(key)
            return entry

    def put(self, key, entry):
        with self.lock:
            self.entries[key] = entry
            while len(self.entries) > self.capacity:
                _, evicted = self.entries.popitem(last=False)
                evicted.free()

    def clear(self):
        with self.lock:
            for entry in self.entries.values():
                entry.free()
            self.entries.clear()


_calls_cache = _LRUCache(CACHE_SIZE)     # call signature -> _CacheEntry
_jaxpr_cache = _LRUCache(CACHE_SIZE)     # ClosedJaxpr (jit_p evaluated eagerly) -> _CacheEntry
_stats = collections.Counter()
_jitted_functions = weakref.WeakSet()     # their fast-path tables are cleared with the caches
_jitted_functions_lock = threading.Lock()  # a WeakSet may not grow while another thread iterates it


def compile_count():
    """How many programs have been compiled in this process (for tests and tuning)."""
    return _stats["compiles"]


def clear_caches():
    _clear_fast_calls()
    _calls_cache.clear()
    _jaxpr_cache.clear()
    _recent_keys.clear()


def _clear_fast_calls():
    with _jitted_functions_lock:
        jitted_functions = list(_jitted_functions)
    for jitted in jitted_functions:
        jitted._fast_calls.clear()


def _on_config_change(name, value):
    if name in ("jax_enable_x64", "jax_transfer_guard"):
        _numpy_signatures.clear()
    if name == "jax_enable_x64":
        clear_caches()
    elif name in ("jax_disable_jit", "jax_debug_nans", "jax_debug_infs"):
        _clear_fast_calls()     # the fast path does not read the flag: with no tables it never hits


config.on_change(_on_config_change)


class _CacheEntry:
    """A traced function and, once run eagerly, its executable."""

    def __init__(self, closed, out_tree, name, donated=()):
        self.closed, self.out_tree, self.name = closed, out_tree, name
        self.donated = donated      # per flat argument (after extra_args): given up by the caller?
        self.in_avals = closed.in_avals
        self.out_weak_types = [getattr(a, "weak_type", False) for a in closed.out_avals]
        self.executable = None
        # Taking or returning hijax values: run as `lowered`, the program on their arrays.
        self.hi_boundary, self.lowered = hi_lowering.has_hi_boundary(closed), None
        self.lock = threading.Lock()

    extra_args = ()
    ref_positions = ()     # flat arguments that are mutable array references
    closed_refs = []       # the Refs the function closes over (lifted: more arguments)

    def get_executable(self):
        with self.lock:
            if self.executable is None:
                donated = (False,) * len(self.extra_args) + tuple(self.donated) if any(self.donated) else ()
                self.executable = _compile(hi_lowering.lower_hi_jaxpr(self.closed), self.name, donated)
            return self.executable

    def run(self, flat_args):
        """The outputs for flat arguments (Arrays, numpy values, scalars or hijax values)."""
        if not self.hi_boundary:
            return dispatch.run_entry(self, flat_args)
        if self.lowered is None:
            self.lowered = _CacheEntry(hi_lowering.lower_hi_jaxpr(self.closed), None, self.name)
        lo_args = hi_lowering.lower_values(self.in_avals, flat_args)
        return hi_lowering.raise_values(self.closed.out_avals, dispatch.run_entry(self.lowered, lo_args))

    def free(self):
        """Drop this entry's executable; its machine code goes with the last caller holding
        it (a fast-path table, or a thread running it right now)."""
        self.executable = None


def _compile(closed, name, donated=()):
    """Machine code for `closed`: from the persistent cache when configured (as in JAX, this
    still counts and logs as a compile; disk_cache.stats tells hits apart), else compiled."""
    # Only what a hit in the persistent cache needs is imported here: the compiler (pipeline,
    # ~60 ms of imports: the code generators) when there is something to compile.
    from jaxlite.lower import program_cache
    if config.jax_log_compiles:
        shown = ", ".join(a.str_short() for a in closed.in_avals)
        logger.warning("Compiling %s with arguments (%s)", name, shown)
    _stats["compiles"] += 1
    collectives = sys.modules.get("jaxlite.lower.collectives")   # imported by any MPI job's set-up
    if collectives is not None:
        collectives.check_program(closed, name)     # ranks of an MPI job must agree before they communicate
    closed = extended.physicalize(closed)     # compiled code sees typed keys as their words
    executable = program_cache.compile_cached(closed, name, functools.partial(_compile_program, donated=donated),
                                              donated)
    _warn_unusable_donations(executable.donation.unusable)
    return executable


def _compile_program(closed, name, donated):
    from jaxlite.lower import pipeline
    return pipeline.compile_program(pipeline.lower_jaxpr(closed), name, donated)


def _warn_unusable_donations(avals):
    if avals:
        shown = ", ".join(repr(a.strip_weak_type()) for a in avals)
        warnings.warn(f"Some donated buffers were not usable: {shown}.\nDonated arguments are given up "
                      f"only when an output has the same shape and dtype to take over their buffer.")


# ---------------------------------------------------------------- the jit primitive

jit_p = Primitive("jit", multiple_results=True)
jit_p.def_abstract_eval(lambda *avals, jaxpr, name: list(jaxpr.out_avals))
# Printed as JAX prints a jit: its name first, its body with names of its own.
pp_params_rules[jit_p] = lambda eqn: [("name", eqn.params["name"]), ("jaxpr", FreshlyNamed(eqn.params["jaxpr"]))]
call_primitives.add(jit_p)


def _jit_impl(*args, jaxpr, name):
    entry = _jaxpr_cache.get(jaxpr)
    if entry is None:
        entry = _CacheEntry(jaxpr, None, name)
        _jaxpr_cache.put(jaxpr, entry)
    if entry.hi_boundary:
        return entry.run(list(args))
    return entry.get_executable()(list(args))


jit_p.def_impl(_jit_impl)


# jvp and vmap of a jit call keep its name, as JAX prints them.
ad.jvp_rules[jit_p] = ad.call_jvp_rule(jit_p)
# An axis rule: collectives in the body see the enclosing vmap's axis name.
batching.axis_batch_rules[jit_p] = batching.call_batch_rule(jit_p)
# Reverse mode: the known part of the body runs now as one jitted call, the
# unknown part is staged as another, and transposing it transposes its body.
partial_eval_rules[jit_p] = call_partial_eval_rule(jit_p)
ad.transpose_rules[jit_p] = ad.call_transpose_rule


# ---------------------------------------------------------------- disable_jit

@contextmanager
def disable_jit(disable=True):
    """Run jitted functions as plain Python (for debugging with print and pdb)."""
    previous = config.jax_disable_jit
    config.update("jax_disable_jit", disable)
    try:
        yield
    finally:
        config.update("jax_disable_jit", previous)


# ---------------------------------------------------------------- the API

def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), donate_argnames=(),
        in_shardings=None, out_shardings=None, keep_unused=False, device=None, backend=None, inline=False,
        compiler_options=None):
    """Compile `fun` on first call for each argument signature (usable as a decorator).

    JAX's other keyword arguments are accepted for its code to run unchanged; on
    jaxlite's one CPU device they change no result: shardings place everything on
    it, `inline` is what the compiler does with every nested jit anyway, and an
    unused argument costs nothing. `backend` must be "cpu" (or None).
    """
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                             backend=backend)
    if backend not in (None, "cpu"):
        raise RuntimeError(f"jit(backend={backend!r}): jaxlite has only the 'cpu' backend")
    errors.check_callable(fun, "jit")
    warm_up.start()     # the compiler's start-up, in the background (lower/warm_up.py)
    return JittedFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)


def library_jit(fun, static_argnums=()):
    """jit for jaxlite's own functions made at import: it starts no warm-up, which waits for
    the program's first jit (a program that never jits pays nothing for the compiler)."""
    return JittedFunction(fun, static_argnums, (), ())


def _as_tuple(x):
    if x is None:
        return ()
    return (x,) if isinstance(x, (int, str)) else tuple(x)


class JittedFunction:
    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, donate_argnames=()):
        self.fun = fun
        _check_static_argnums_fit(fun, _as_tuple(static_argnums))
        _check_argnames_exist(fun, _as_tuple(static_argnames), "static_argnames")
        _check_argnames_exist(fun, _as_tuple(donate_argnames), "donate_argnames")
        self.static_argnums, self.static_argnames = _complete_positions_and_names(
            fun, _as_tuple(static_argnums), _as_tuple(static_argnames))
        self.donate_argnums, self.donate_argnames = _complete_positions_and_names(
            fun, _as_tuple(donate_argnums), _as_tuple(donate_argnames))
        self.__name__ = getattr(fun, "__name__", "jitted")
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun
        self._fast_calls = {}       # the arguments' ArraySignatures (a lone one: itself) -> call function
        with _jitted_functions_lock:
            _jitted_functions.add(self)

    def __get__(self, instance, owner=None):
        """A jitted method binds its instance as the first argument (static or a pytree)."""
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args, **kwargs):
        # Fast path: positional Arrays only, looked up by their interned signatures.
        if not kwargs and _trace_context.trace is EVAL_TRACE:
            try:
                # One argument (the common case) is keyed by its signature, not a 1-tuple.
                key = args[0]._signature if len(args) == 1 else tuple(map(_signature_attribute, args))
            except AttributeError:
                key = _UNSIGNED
            if key is _UNSIGNED:      # outside the except block: a user's error is not chained to it
                arrays = _numpy_as_arrays(args)
                key = _fast_key(_array_signatures(arrays))
                call = self._fast_calls.get(key)
                return call(arrays) if call is not None else self._call(args, kwargs)
            call = self._fast_calls.get(key)
            if call is not None:
                return call(args)
        return self._call(args, kwargs)

    @errors.api_boundary
    def _call(self, args, kwargs):
        if config.jax_disable_jit:
            return self.fun(*args, **kwargs)
        if current_trace() is EVAL_TRACE:
            args = _numpy_as_arrays(args)
        entry, flat_args = self._entry(args, kwargs)
        if config.jax_transfer_guard in ("log", "disallow"):
            _guard_transfers(flat_args, entry.in_avals[len(entry.extra_args):])
        refs = [flat_args[i] for i in entry.ref_positions] + entry.closed_refs
        if refs:
            flat_args = [x[...] if isinstance(x, Ref) else x for x in flat_args] + \
                [ref[...] for ref in entry.closed_refs]
        if current_trace() is EVAL_TRACE:
            # Signatures first: a donated argument is deleted by the call.
            signatures = None if kwargs or self.static_argnums or not entry.cacheable or refs \
                or entry.hi_boundary else _array_signatures(args)
            outs = entry.run(flat_args)
            if float_checks.enabled:
                _check_floats(entry, flat_args, outs)
            elif signatures is not None:
                self._remember_fast(signatures, entry)
        else:
            outs = jit_p.bind(*entry.call_args(flat_args), jaxpr=entry.closed, name=self.__name__)
        if refs:
            outs = _write_back(refs, outs)
        return tree_unflatten(entry.out_tree, outs)

    def _remember_fast(self, signatures, entry):
        if len(self._fast_calls) >= 32:
            self._fast_calls.clear()
        self._fast_calls[_fast_key(signatures)] = dispatch.make_call(entry, entry.executable, signatures)

    def trace(self, *args, **kwargs):
        """The jaxpr for these arguments (arrays or ShapeDtypeStructs), as a stages.Traced."""
        entry, _ = self._entry(args, kwargs, specs=True)
        return stages.Traced(entry, entry.in_tree, self.__name__)

    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        from jaxlite.core.staging import eval_shape
        return eval_shape(self.fun, *args, **kwargs)

    # -- tracing and the cache
    def _entry(self, args, kwargs, specs=False):
        """The cache entry for these arguments; `specs`: ShapeDtypeStructs may stand for arrays."""
        dynamic_args, dynamic_kwargs, static = self._split(args, kwargs)
        flat_args, in_tree = tree_flatten((dynamic_args, dynamic_kwargs))
        aval_of = _aval_of_spec if specs else abstractify
        ref_positions = _ref_positions(flat_args, self.fun)
        if ref_positions:
            aval_of = _aval_or_ref_aval(aval_of)
        signature = tuple(_leaf_signature(x, aval_of) for x in flat_args)
        donated = self._donated_leaves(args, kwargs)
        key = (self.fun, in_tree, signature, static, config.jax_enable_x64, donated)
        entry = _calls_cache.get(key)
        if entry is None:
            _explain_miss(self.fun, key)
            entry = self._trace(in_tree, [aval_of(x) for x in flat_args], static, donated, ref_positions)
            if entry.cacheable:
                _calls_cache.put(key, entry)
        return entry, flat_args

    def _donated_leaves(self, args, kwargs):
        """Per flat dynamic argument, whether it is donated (a tuple of bools, or () for none)."""
        if not self.donate_argnums and not self.donate_argnames:
            return ()
        # The same tree as the flattened arguments, a flag at each leaf (dicts flatten by key).
        positional = tuple(tree_map(lambda _, d=i in self.donate_argnums: d, a)
                           for i, a in enumerate(args) if i not in self.static_argnums)
        keywords = {name: tree_map(lambda _, d=name in self.donate_argnames: d, value)
                    for name, value in kwargs.items() if name not in self.static_argnames}
        return tuple(tree_flatten((positional, keywords))[0])

    def _trace(self, in_tree, in_avals, static, donated=(), ref_positions=()):
        static_positional = [(i, v) for kind, i, v in static if kind == "position"]
        static_keywords = {name: v for kind, name, v in static if kind == "name"}

        def with_static(*dynamic, **kwargs):
            full = list(dynamic)
            for i, value in sorted(static_positional):
                full.insert(i, value)
            return self.fun(*full, **kwargs, **static_keywords)
        with_static.__wrapped__ = self.fun

        flat_fun, out_tree = flatten_fun(with_static, in_tree)
        name = f"jit({self.__name__})"
        closed_refs = []
        traced_fun = ref_module.lifting_closed_over_refs(ref_module.discharged(flat_fun, ref_positions), closed_refs)
        closed = trace_to_jaxpr(traced_fun, in_avals, name)
        entry = _TracedCall(closed, out_tree[0], name, donated)
        entry.in_tree, entry.ref_positions, entry.closed_refs = in_tree, ref_positions, closed_refs
        return entry

    def _split(self, args, kwargs):
        static = []
        for i in self.static_argnums:
            if i >= len(args):
                continue
            static.append(("position", i, _hashable(args[i], f"position {i}")))
        dynamic_args = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        dynamic_kwargs = {}
        for name, value in kwargs.items():
            if name in self.static_argnames:
                static.append(("name", name, _hashable(value, f"name {name!r}")))
            else:
                dynamic_kwargs[name] = value
        return dynamic_args, dynamic_kwargs, tuple(static)


def _guard_transfers(flat_args, avals):
    """jax_transfer_guard: numpy values and Python scalars passed to a jitted function are
    what JAX would transfer to the device (Arrays are already there)."""
    for x, aval in zip(flat_args, avals):
        if not isinstance(x, (Array, Tracer, Ref)):
            message = f"host-to-device transfer: aval={aval!r}, dst_sharding=SingleDeviceSharding(device=CpuDevice(id=0))"
            if config.jax_transfer_guard == "disallow":
                raise errors.JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed {message}")
            logger.warning("Transfer guard: %s", message)


def _check_floats(entry, flat_args, outs):
    """jax_debug_nans/infs: a compiled call that produced a nan (inf) is run again
    equation by equation (the de-optimized function), so the error names the primitive."""
    kind = next((k for k in map(float_checks.invalid, outs) if k is not None), None)
    if kind is None:
        return
    logger.warning("Invalid %s value encountered in the output of a jax.jit function. Calling the "
                   "de-optimized version.", kind)
    float_checks.rerun(entry.closed, entry.extra_args + [dispatch.numpy_argument(x, a) for x, a in
                                                         zip(flat_args, entry.in_avals)])
    raise FloatingPointError(
        f"invalid value ({kind}) encountered in {entry.name}. Because jax_debug_nans and/or "
        "jax_debug_infs is set, the de-optimized function (the function as if the `jit` decorator "
        "were removed) was called in an attempt to get a more precise error message. However, the "
        "de-optimized function did not produce invalid values during its execution: the compiled "
        "code computed differently (e.g. with a fused or reordered floating-point computation).")


# ---------------------------------------------------------------- mutable array references
# A Ref argument is one more input (its value now) and one more output (its value at the
# end), which the call writes back into the Ref.

def _ref_positions(flat_args, fun):
    positions = tuple(i for i, x in enumerate(flat_args) if isinstance(x, Ref))
    seen = {}
    for i in positions:
        if id(flat_args[i]) in seen:
            raise ValueError(f"only one reference to a mutable array may be passed as an argument to a "
                             f"function, but when tracing {getattr(fun, '__name__', fun)} for jit the "
                             f"mutable array reference of type {flat_args[i].aval} appeared at flat "
                             f"arguments {seen[id(flat_args[i])]} and {i}.")
        seen[id(flat_args[i])] = i
    return positions


def _aval_or_ref_aval(aval_of):
    """Avals of flat arguments where a Ref stands for its value (marked, to key the cache)."""
    def aval(x):
        return x.aval.inner_aval if isinstance(x, Ref) else aval_of(x)
    return aval


def _write_back(refs, outs):
    for ref, value in zip(refs, outs[len(outs) - len(refs):]):
        ref[...] = value
    return outs[:len(outs) - len(refs)]


class _TracedCall(_CacheEntry):
    """A cache entry whose closed-over tracers (from an enclosing trace) become arguments."""

    def __init__(self, closed, out_tree, name, donated=()):
        outer = [isinstance(c, Tracer) for c in closed.consts]
        self.cacheable = not any(outer)
        self.extra_args = [c for c, is_tracer in zip(closed.consts, outer) if is_tracer]
        if self.extra_args:
            closed = _lift_tracer_consts(closed, outer)
        super().__init__(closed, out_tree, name, donated)

    def call_args(self, flat_args):
        return self.extra_args + list(flat_args)


def _lift_tracer_consts(closed, is_tracer):
    """Turn constvars bound to outer tracers into leading arguments."""
    from jaxlite.core.ir import ClosedJaxpr, Jaxpr
    jaxpr = closed.jaxpr
    lifted = [v for v, t in zip(jaxpr.constvars, is_tracer) if t]
    kept = [(v, c) for v, c, t in zip(jaxpr.constvars, closed.consts, is_tracer) if not t]
    new = Jaxpr([v for v, _ in kept], lifted + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    return ClosedJaxpr(new, [c for _, c in kept])


_signature_attribute = operator.attrgetter("_signature")


def _fast_key(signatures):
    return signatures[0] if signatures is not None and len(signatures) == 1 else signatures


# (shape, dtype, C-contiguous) of a numpy argument -> the signature of its Array (None: it
# goes the general way: its dtype narrows, or a transfer guard reports it).
_numpy_signatures = {}
_UNSIGNED = object()     # an argument without an interned signature (numpy, or an Array not yet seen)


def _numpy_as_arrays(args):
    """numpy arguments as Arrays on their buffers (what jnp.asarray makes), so that calls
    with them take the fast path too."""
    return tuple(_as_array(x) if type(x) is np.ndarray else x for x in args)


def _as_array(x):
    key = (x.shape, x.dtype, x.flags.c_contiguous)
    signature = _numpy_signatures.get(key, False)
    if signature is False:
        signature = _numpy_signature(*key)
    if signature is None:
        return x
    array = Array(x)
    array._signature = signature
    return array


def _numpy_signature(shape, dtype, contiguous):
    if len(_numpy_signatures) >= 256:
        _numpy_signatures.clear()
    kept = (dtype.isnative and dtype in dtypes.SUPPORTED and dtypes.canonicalize_dtype(dtype) == dtype
            and config.jax_transfer_guard not in ("log", "disallow"))
    signature = intern_signature(shape, dtype, False, contiguous) if kept else None
    _numpy_signatures[(shape, dtype, contiguous)] = signature
    return signature


def _array_signatures(args):
    """The interned signature of each argument if all are Arrays (or typed key arrays), else None."""
    if all(type(x) is Array for x in args):
        return tuple(map(signature_of, args))
    if all(type(x) is Array or isinstance(x, extended.ExtendedArray) for x in args):
        return tuple(signature_of(x) if type(x) is Array else extended.signature_of(x) for x in args)
    return None


def _leaf_signature(x, aval_of=abstractify):
    if isinstance(x, Ref):
        return ("ref", x.aval)
    if type(x) is Array:
        signature = signature_of(x)
        return (signature.shape, signature.dtype, signature.weak_type)
    aval = aval_of(x)
    if is_hi(aval):
        return ("hi", aval)
    return (aval.shape, aval.dtype, aval.weak_type)


def _hashable(value, where):
    try:
        hash(value)
    except TypeError as err:
        raise ValueError(f"Non-hashable static arguments are not supported. The static argument at "
                         f"{where} is of type {type(value).__name__} ({value!r}), and hashing it "
                         f"failed: {err}. Pass a hashable value (e.g. a tuple instead of a list), "
                         f"or make the argument non-static.") from None
    return value


def _check_static_argnums_fit(fun, argnums):
    """JAX's error for a static position the function has no parameter at (it would
    otherwise be silently ignored, leaving the argument traced)."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return
    count = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    if any(not -count <= i < count for i in argnums):
        raise ValueError(f"Jitted function has static_argnums={argnums}, but only accepts "
                         f"{count} positional arguments.")


def _check_argnames_exist(fun, argnames, what):
    """JAX's error for a name the function has no parameter of (unless it takes **kwargs)."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return
    names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    invalid = set(argnames) - names
    if invalid:
        raise ValueError(f"Jitted function has invalid argnames {invalid} in {what}. "
                         f"Function does not take these args.")


def _complete_positions_and_names(fun, argnums, argnames):
    """Argument positions and names (static or donated ones), each completed from the
    other through the signature."""
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return tuple(argnums), tuple(argnames)
    positional = [p.name for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    argnums = {i % len(positional) if positional and i < 0 else i for i in argnums}
    names = set(argnames) | {positional[i] for i in argnums if i < len(positional)}
    argnums |= {positional.index(n) for n in argnames if n in positional}
    return tuple(sorted(argnums)), tuple(sorted(names))


# ---------------------------------------------------------------- explaining cache misses

_recent_keys = {}      # code object (or function) -> the last key traced for it


def _explain_miss(fun, key):
    code = getattr(fun, "__code__", fun)
    previous = _recent_keys.get(code)
    _recent_keys[code] = key
    if not config.jax_explain_cache_misses:
        return
    name = getattr(fun, "__name__", repr(fun))
    if previous is None:
        logger.warning("TRACING CACHE MISS at %s: never seen a function with this code before", name)
        return
    logger.warning("TRACING CACHE MISS at %s because %s", name, _difference(previous, key))


def _difference(old, new):
    old_fun, old_tree, old_sig, old_static, old_x64, old_donated = old
    new_fun, new_tree, new_sig, new_static, new_x64, new_donated = new
    if old_fun is not new_fun:
        return "it is a different function object with the same code (e.g. a new lambda or closure)"
    if old_x64 != new_x64:
        return f"jax_enable_x64 changed from {old_x64} to {new_x64}"
    if old_tree != new_tree:
        return f"the argument tree structure changed from {old_tree} to {new_tree}"
    if old_donated != new_donated:
        return "the donated arguments changed"
    if old_static != new_static:
        return f"a static argument changed: {old_static} -> {new_static}"
    for i, (a, b) in enumerate(zip(old_sig, new_sig)):
        if a[0] != b[0]:
            return f"argument leaf {i} has a new shape {b[0]} (was {a[0]})"
        if a[1] != b[1]:
            return f"argument leaf {i} has a new dtype {b[1]} (was {a[1]})"
        if a[2] != b[2]:
            return f"argument leaf {i} changed weak type from {a[2]} to {b[2]}"
    return "the signature was evicted from the cache"
