"""The compiler's start-up runs in the background from a program's first jit(f) (lower/warm_up.py)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import sys
import jaxlite
from jaxlite.lower import warm_up
llvm = "llvm" if "llvmlite" in sys.modules else "no llvm"
if {cache_dir!r}:
    jaxlite.config.update("jax_compilation_cache_dir", {cache_dir!r})
print("thread" if warm_up._thread is not None else "no thread", llvm)
f = jaxlite.jit(lambda x: x + 1.0)
warm_up.wait()
from jaxlite.lower import native_call
print("compiler" if "jaxlite.lower.pipeline" in sys.modules else "no compiler",
      "trampoline" if native_call._trampoline is not None else "no trampoline")
print(float(f(1.0)))
"""


def _probe(cache_dir="", **env):
    done = subprocess.run([sys.executable, "-c", _PROBE.format(cache_dir=cache_dir)],
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
                          capture_output=True, text=True, check=True, timeout=300)
    return done.stdout.split("\n")


def test_the_first_jit_starts_the_compiler_in_the_background():
    assert _probe()[:3] == ["no thread no llvm", "compiler trampoline", "2.0"]


def test_with_a_compilation_cache_the_start_up_begins_when_it_is_configured_and_the_compiler_waits_for_a_miss(
        tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    assert _probe(str(cache))[:3] == ["thread no llvm", "no compiler trampoline", "2.0"]


def test_warm_up_can_be_turned_off():
    assert _probe(JAXLITE_WARM_UP="0")[:3] == ["no thread no llvm", "no compiler no trampoline", "2.0"]


def test_a_fork_right_after_the_first_jit_gets_a_working_compiler():
    program = """
import os, jaxlite
f = jaxlite.jit(lambda x: x * 3.0)
pid = os.fork()
if pid == 0:
    os._exit(0 if float(f(2.0)) == 6.0 else 3)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    done = subprocess.run([sys.executable, "-c", program], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, check=True, timeout=300)
    assert "child 0" in done.stdout


# The code generators an x + 1 program has no use for (each a few ms to import).
_GENERATORS = ("gemm", "gemm_lowp", "gemm_calls", "autotune", "linalg_kernels", "sort_kernels", "collectives",
               "lapack")

_IMPORTS_PROBE = """
import sys
import jaxlite
if {cache_dir!r}:
    jaxlite.config.update("jax_compilation_cache_dir", {cache_dir!r})
assert float(jaxlite.jit(lambda x: x + 1.0)(1.0)) == 2.0
from jaxlite.lower import warm_up
warm_up.wait()
pool = sys.modules.get("jaxlite.lower.native_pool")
print("pool started" if pool is not None and pool._pool is not None else "no pool")
print(" ".join(sorted(name[len("jaxlite.lower."):] for name in sys.modules if name.startswith("jaxlite.lower."))))
print("openssl" if "_hashlib" in sys.modules else "no openssl")
"""


def _what_a_first_call_loads(cache_dir=""):
    """(the pool's state, the jaxlite.lower modules imported, whether OpenSSL was loaded)"""
    done = subprocess.run([sys.executable, "-c", _IMPORTS_PROBE.format(cache_dir=cache_dir)],
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, check=True,
                          timeout=300)
    pool, modules, openssl = done.stdout.split("\n")[:3]
    return pool, set(modules.split()), openssl == "openssl"


def test_a_first_small_program_imports_no_product_linalg_or_openssl_code_and_starts_no_pool(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    pool, cold, openssl = _what_a_first_call_loads()
    assert pool == "no pool" and "pipeline" in cold and not cold & set(_GENERATORS) and not openssl
    _what_a_first_call_loads(str(cache))         # fills the cache
    pool, warm, openssl = _what_a_first_call_loads(str(cache))
    assert pool == "no pool" and "runtime" in warm and not openssl
    assert not warm & {"pipeline", "codegen", "llvm_math", "native_pool", *_GENERATORS}


def test_lapack_symbols_start_with_the_prefix_the_linker_looks_for():
    from jaxlite.lower import lapack, llvm_target
    assert lapack.SYMBOL_PREFIX.encode() == llvm_target._NUMPY_LAPACK_PREFIX
    names = [lapack.symbol(routine) for routine in lapack.ROUTINES] + [lapack.GET_THREADS_SYMBOL, lapack.SET_THREADS_SYMBOL]
    assert all(name.startswith(lapack.SYMBOL_PREFIX) for name in names)
