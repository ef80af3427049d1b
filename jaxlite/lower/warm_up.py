"""The compiler's one-time start-up, begun on a background thread when the program first
makes a jitted function (jit(f), @jit) or configures a persistent compilation cache
(config.update("jax_compilation_cache_dir", path): a program doing so will jit).

Before a process's first jitted call can run anything it imports llvmlite's binding
(which loads LLVM), initializes LLVM's native target, digests the environment for the
kernel directory and builds or loads the call trampoline (native_call); to compile, it
also imports the compiler (jaxlite.lower's code generators, ~60 ms CPU here). None of it
depends on the program, so it starts as soon as a function is jitted: a program that
builds its data or waits for a notebook cell between defining its functions and calling
them finds it done, and its first call pays only for its own program. A call made at
once still runs correctly: it waits for what it needs on the import and initialization
locks, and the work is done once either way.

It costs nothing where it would be wasted: a process that never jits (eager code) and
configures no compilation cache never starts it, and with a persistent compilation cache
configured the compiler is left to the first call that misses (a hit loads machine code
with none of it).

The top-level imports of jaxlite.lower form no cycle (nothing in it imports it back), so
the two threads importing at once cannot deadlock. The thread is not a daemon: the
interpreter joins it before finalizing, so it never runs LLVM while the process tears
LLVM down. A fork waits for it, so that the child never inherits a lock it holds.
Set JAXLITE_WARM_UP=0 to leave everything to the first call.
"""
import os
import threading

from jaxlite.core.config import config

_FORK_WAIT_SECONDS = 10.0
_thread = None


def _warm_up():
    from jaxlite.lower import disk_cache, llvm_target, native_call
    llvm_target.host_cpu_features()
    if disk_cache.kernel_directory() is not None:
        disk_cache.environment_digest()
    native_call.trampoline()
    if disk_cache.directory() is None:
        from jaxlite.lower import pipeline  # noqa: F401


def _run():
    try:
        _warm_up()
    except Exception:       # noqa: BLE001 -- the first compile does this again and reports the error there
        pass


def start():
    """Begin the start-up work on a thread of its own (once per process)."""
    global _thread
    if _thread is not None or os.environ.get("JAXLITE_WARM_UP", "1") == "0":
        return
    _thread = threading.Thread(target=_run, name="jaxlite-warm-up")
    _thread.start()


def wait(timeout=None):
    """Wait until the start-up work is done (if it was begun)."""
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)


def _on_config_change(name, value):
    if name == "jax_compilation_cache_dir" and value:
        start()


config.on_change(_on_config_change)


def _after_fork_in_child():
    global _thread
    _thread = None


os.register_at_fork(before=lambda: wait(_FORK_WAIT_SECONDS), after_in_child=_after_fork_in_child)
