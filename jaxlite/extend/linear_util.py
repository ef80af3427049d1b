"""jaxlite.extend.linear_util: functions wrapped for the tracing APIs (as jax.extend.linear_util).

JAX threads "wrapped functions" through its internal tracing entry points; in
jaxlite they are plain callables with the same small interface, so code that
builds one with `wrap_init` and hands it to `jax.api_util` or
`jax.interpreters.partial_eval` works.
"""


class WrappedFun:
    """A function with fixed keyword parameters; `call_wrapped(*args)` calls it."""

    def __init__(self, f, params, debug_info=None):
        self.f, self.params, self.debug_info = f, dict(params), debug_info

    def call_wrapped(self, *args):
        return self.f(*args, **self.params)

    __call__ = call_wrapped

    def __repr__(self):
        return f"Wrapped function: {getattr(self.f, '__name__', self.f)}"


def wrap_init(f, params=None, *, debug_info=None):
    return WrappedFun(f, params or {}, debug_info)
