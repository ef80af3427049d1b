"""Global options, set with `jaxlite.config.update(name, value)` as in JAX.

Each option may also come from an environment variable of the same name in upper
case (JAX_ENABLE_X64=1), read once at import.
"""
import os

_DEFAULTS = {
    "jax_enable_x64": False,
    "jax_log_compiles": False,
    "jax_explain_cache_misses": False,
    "jax_compilation_cache_dir": None,
    "jax_disable_jit": False,
    "jax_traceback_filtering": "auto",  # "off": keep jaxlite's own frames in tracebacks
    "jaxlite_dump_passes": False,
    "jaxlite_autotune": True,           # measure close-call GEMM plans once (lower/autotune.py)
    "jaxlite_autotune_max_flops": 32_000_000,   # ... those of at most this many FLOPs
}


def _from_environment(name, default):
    raw = os.environ.get(name.upper())
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return raw


class Config:
    """Attribute access reads an option (`config.jax_enable_x64`); `update` changes it."""

    def __init__(self):
        self._values = {name: _from_environment(name, default) for name, default in _DEFAULTS.items()}
        self._listeners = []

    def update(self, name, value):
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}")
        self._values[name] = value
        for listener in self._listeners:
            listener(name, value)

    def read(self, name):
        return self._values[name]

    def on_change(self, listener):
        """Register `listener(name, value)`, e.g. to drop caches that depend on an option."""
        self._listeners.append(listener)

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)


config = Config()
