"""checkify: run-time checks in transformed code, returned as a value (as jax.experimental.checkify).

`checkify(f)` returns a function giving `(error, out)`. Each `check(pred, msg,
...)` reached while f runs records its predicate and message; the error holds
the index of the first failed check (or -1) and the values of the checks'
format arguments, as arrays, so it passes out of jit, vmap and grad like any
output. `error.get()` formats the failure message, `error.throw()` raises it.

Checks are collected while f is traced, by the checkify call that runs it: put
checkify outside jit (`jit(checkify(f))`) to compile the checks with f. A jit inside
checkify (`checkify(jit(f))`, as chex.chexify makes) is inlined into the checkify
call's own trace (jit is disabled while f runs), so its checks are collected too:
called eagerly, f then runs op by op. A check inside another transformation applied
inside checkify (vmap, grad) is reported as an error when the check runs. Only user checks exist
(`errors=user_checks`); JAX's automatic NaN, division and index checks are not
implemented.
"""
import threading

import numpy as np

from jaxlite import numpy as jnp
from jaxlite.core.array import Array
from jaxlite.core.config import config
from jaxlite.core.trace import EVAL_TRACE, Tracer, current_trace
from jaxlite.core.tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten
from jaxlite.transforms.jit import disable_jit, jit


class JaxRuntimeError(ValueError):
    """A failed check, raised by Error.throw() (or by check() outside checkify)."""


class ErrorCategory:
    pass


class _UserChecks(ErrorCategory):
    pass


class _NaNChecks(ErrorCategory):
    pass


class _DivChecks(ErrorCategory):
    pass


class _IndexChecks(ErrorCategory):
    pass


# The error sets JAX names. Only user checks are implemented: checkify refuses the others.
user_checks = frozenset({_UserChecks})
nan_checks = frozenset({_NaNChecks})
div_checks = frozenset({_DivChecks})
index_checks = frozenset({_IndexChecks})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


class Error:
    """The result of the checks: `code` is the index of the first failed check, -1 if none."""

    def __init__(self, code, messages, payloads):
        self.code, self.messages, self.payloads = code, tuple(messages), payloads

    def get(self):
        """The failed check's message with its arguments filled in, or None if every check passed."""
        code = int(np.asarray(self.code))
        if code < 0:
            return None
        args, kwargs = tree_map(np.asarray, self.payloads[code])
        return f"{self.messages[code].format(*args, **kwargs)} (`check` failed)"

    def throw(self):
        message = self.get()
        if message is not None:
            raise JaxRuntimeError(message)

    def __repr__(self):
        return f"Error(code={self.code!r}, messages={self.messages!r})"


register_pytree_node(Error, lambda e: ((e.code, e.payloads), e.messages),
                     lambda messages, children: Error(children[0], messages, children[1]))


class _Collector(threading.local):
    def __init__(self):
        self.stack = []


_collectors = _Collector()


def check(pred, msg, *fmt_args, **fmt_kwargs):
    """Check that `pred` holds; under checkify the outcome goes into the returned Error."""
    for leaf in tree_flatten((fmt_args, fmt_kwargs))[0]:
        if not hasattr(leaf, "dtype"):
            raise TypeError(f"Formatting arguments to checkify.check need to be PyTrees of arrays, "
                            f"but got {leaf!r} of type {type(leaf)}.")
    if _collectors.stack:
        _collectors.stack[-1].append((jnp.all(pred), msg, (fmt_args, fmt_kwargs), current_trace()))
        return
    if isinstance(pred, Tracer):
        raise ValueError("checkify.check in a transformed function must be functionalized: call the "
                         "function through checkify.checkify(f)")
    if not bool(np.all(np.asarray(pred))):
        args, kwargs = tree_map(np.asarray, (fmt_args, fmt_kwargs))
        raise JaxRuntimeError(f"{msg.format(*args, **kwargs)} (`check` failed)")


def check_error(error):
    """Raise the failure an Error holds, if any; under checkify it goes into the returned Error."""
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes a checkify.Error, got {type(error).__name__}")
    if _collectors.stack:
        for index, (msg, payload) in enumerate(zip(error.messages, error.payloads)):
            _collectors.stack[-1].append((error.code != index, msg, payload, current_trace()))
        return
    error.throw()


def _first_failure(preds):
    code = jnp.int32(-1)
    for index in reversed(range(len(preds))):
        code = jnp.where(preds[index], code, jnp.int32(index))
    return code


def _compiled(collected, args, kwargs):
    """Called eagerly, the checked function runs compiled (as JAX stages checkify): its array
    arguments are the compiled function's, the others fixed values of its trace."""
    leaves, tree = tree_flatten((args, kwargs))
    dynamic = [isinstance(x, (Array, np.ndarray, np.generic)) for x in leaves]

    def staged(*arrays):
        values = iter(arrays)
        args, kwargs = tree_unflatten(tree, [next(values) if d else x for x, d in zip(leaves, dynamic)])
        return collected(*args, **kwargs)
    return jit(staged)(*[x for x, d in zip(leaves, dynamic) if d])


def checkify(f, errors=user_checks):
    """f returning (Error, f's output); see the module docstring."""
    if not set(errors) <= set(user_checks):
        raise NotImplementedError("jaxlite's checkify implements user_checks only (no automatic NaN, "
                                  "division or index checks)")

    def checked(*args, **kwargs):
        trace = current_trace()
        if trace is EVAL_TRACE and not config.jax_disable_jit:
            return _compiled(collected, args, kwargs)
        return collected(*args, **kwargs)

    def collected(*args, **kwargs):
        trace = current_trace()
        _collectors.stack.append([])
        try:
            with disable_jit():
                out = f(*args, **kwargs)
        finally:
            checks = _collectors.stack.pop()
        if any(check_trace is not trace for *_, check_trace in checks):
            raise NotImplementedError("checkify.check ran inside a transformation (vmap, grad, ...) applied "
                                      "inside checkify; apply checkify innermost: vmap(checkify(f))")
        code = _first_failure([p for p, *_ in checks])
        return Error(code, [m for _, m, *_ in checks], [payload for *_, payload, _ in checks]), out
    return checked
