"""Errors for misuse of traced values, as JAX names them.

Each message says where the offending value was computed in the user's code (the
first stack frame outside jaxlite) and how to fix the program.
"""
import functools
import os
import sys
import threading
import types

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class JaxRuntimeError(RuntimeError):
    """An error while running a program (JAX: from its runtime), e.g. a disallowed transfer."""


class SourceInfo:
    """A user's source location: file, line and function name."""

    __slots__ = ("filename", "lineno", "function")

    def __init__(self, filename, lineno, function):
        self.filename, self.lineno, self.function = filename, lineno, function

    def __str__(self):
        return f"{self.filename}:{self.lineno} (in {self.function})"


# Source paths whose frames are not the user's: jaxlite's, and those libraries register.
excluded_paths = [_PACKAGE_DIR]


def register_exclusion(path):
    """Treat frames from files under `path` as internal (left out of error locations and tracebacks)."""
    excluded_paths.append(path)


def _is_internal(filename):
    return filename.startswith(tuple(excluded_paths)) or filename.startswith("<frozen")


class _Replays(threading.local):
    """Per running jaxpr interpreter (its frame): the source info of the equation it runs."""

    def __init__(self):
        self.by_frame = {}


_replays = _Replays()


def user_source_info():
    """The innermost frame that belongs to user code rather than jaxlite, or None.

    Where a jaxpr is being re-run (staging.eval_jaxpr: a transformation re-tracing a body)
    and no user frame is closer, the re-run equation's own source info: the line that
    first computed the value, not the line that called the transformation."""
    frame = sys._getframe(1)
    replays = _replays.by_frame
    while frame is not None and _is_internal(frame.f_code.co_filename):
        if replays and replays.get(frame) is not None:
            return replays[frame]
        frame = frame.f_back
    if frame is None:
        return None
    return SourceInfo(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def replaying(frame):
    """Register an interpreter's frame; set `.by_frame[frame]` per equation, `del` when done."""
    _replays.by_frame[frame] = None
    return _replays.by_frame


_FILTERING_NOTE = ("(jaxlite removed its internal frames from this traceback; set "
                   "JAX_TRACEBACK_FILTERING=off or jaxlite.config.update('jax_traceback_filtering', "
                   "'off') to see them)")


def api_boundary(fun):
    """An entry point of the API (jit, grad, vmap ...): an exception leaving it keeps only the
    user's frames in its traceback, so the last line shown is the user's own, as in JAX."""
    @functools.wraps(fun)
    def entry_point(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except Exception as error:
            from jaxlite.core.config import config
            if config.jax_traceback_filtering == "off":
                raise
            _note_once(error)
            raise error.with_traceback(_user_frames(error.__traceback__))
    return entry_point


def _user_frames(tb):
    kept = []
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    filtered = None
    for frame in reversed(kept):
        filtered = types.TracebackType(filtered, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return filtered


def _note_once(error):
    notes = getattr(error, "__notes__", ())
    if hasattr(error, "add_note") and _FILTERING_NOTE not in notes:
        error.add_note(_FILTERING_NOTE)


def user_stacklevel():
    """The `stacklevel` that makes a warning issued by this function's caller name the
    innermost user frame (warnings.warn counts its own caller as level 1)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


class JaxliteTypeError(TypeError):
    pass


class ConcretizationTypeError(JaxliteTypeError):
    """A traced value was used where a concrete Python value is needed."""


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(JaxliteTypeError):
    pass


class TracerArrayConversionError(JaxliteTypeError):
    pass


@functools.lru_cache(maxsize=None)
def memory_bytes():
    """The machine's physical memory: an array bigger than this cannot be held."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def check_allocation(nbytes, describe):
    """Raise at once for an allocation the machine cannot satisfy, rather than letting the
    kernel overcommit it and the first pass over it thrash (jnp.zeros((10**6, 10**6)).sum()
    would run for hours). describe() names what is allocated (called only to raise)."""
    if nbytes > memory_bytes():
        raise JaxRuntimeError(f"RESOURCE_EXHAUSTED: Out of memory allocating {nbytes} bytes for {describe()}; "
                              f"this machine has {memory_bytes()} bytes of memory")


class UnexpectedTracerError(Exception):
    """A tracer outlived the transformation that created it."""


class JaxprTypeError(TypeError):
    pass


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask used as an index was traced: the result's shape would depend on it."""


def _origin(tracer):
    info = getattr(tracer, "_source_info", None)
    context = tracer._trace.describe() if hasattr(tracer, "_trace") else "a transformation"
    where = f"computed at {info}" if info else "an input"
    return (f"The value is a traced array {tracer.aval.str_short()} ({where}) "
            f"while tracing {context}; its contents are not known until the function runs.")


_BRANCH_FIX = ("Fix: for a value-dependent branch use jaxlite.lax.cond or jnp.where; "
               "for a loop use jaxlite.lax.while_loop or lax.fori_loop; or, if the argument "
               "really is a compile-time constant, mark it static with "
               "jit(f, static_argnums=...) / static_argnames=...")


def bool_conversion_error(tracer):
    return TracerBoolConversionError(
        f"Attempted boolean conversion of traced array with shape {tracer.aval.str_short()}. "
        f"{_origin(tracer)}\n{_BRANCH_FIX}")


def integer_conversion_error(tracer):
    return TracerIntegerConversionError(
        f"Attempted integer conversion of traced array {tracer.aval.str_short()} "
        f"(for example as an index, a shape or a Python int). {_origin(tracer)}\n"
        "Fix: use the array in jaxlite operations (lax.dynamic_slice for indexing), or mark "
        "the argument static with jit(f, static_argnums=...).")


def concretization_error(tracer, what="a concrete value"):
    return ConcretizationTypeError(
        f"Abstract tracer value encountered where {what} is expected. {_origin(tracer)}\n"
        f"{_BRANCH_FIX}")


def check_callable(fun, transform):
    """The TypeError JAX raises for transform(non-callable), e.g. grad(f(x)) for grad(f)(x)."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r:.80}: {transform} takes the "
                        f"function itself, as in {transform}(f)(x), not {transform}(f(x))")


def differentiated_float_error(tracer):
    return ConcretizationTypeError(
        f"Abstract tracer value encountered where a concrete value is expected: float() was "
        f"called on a traced array {tracer.aval.str_short()} that is being differentiated "
        f"({tracer._trace.describe()}); a Python float carries no derivative, so the gradient "
        "through it would silently be zero.\n"
        "Fix: keep the value as an array (use x, not float(x)); if it really is a constant, "
        "write float(jaxlite.lax.stop_gradient(x)).")


def array_conversion_error(tracer):
    return TracerArrayConversionError(
        f"The numpy.ndarray conversion method __array__() was called on a traced array "
        f"{tracer.aval.str_short()}. {_origin(tracer)}\n"
        "Fix: use jaxlite.numpy (jnp) instead of numpy inside transformed functions, or use "
        "jaxlite.debug.callback to run numpy code on runtime values.")


def escaped_tracer_error(tracer):
    info = getattr(tracer, "_source_info", None)
    where = f" It was created at {info}." if info else ""
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer {tracer.aval.str_short()} from "
        f"{tracer._trace.describe()}, which has already finished.{where}\n"
        "A traced value escaped its transformation, for example by being stored in a global, "
        "a list or an object attribute inside a jitted or differentiated function. "
        "Fix: return the value from the function instead of storing it as a side effect.")
