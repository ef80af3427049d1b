"""The compiler's start-up runs in the background from `import jaxlite` (lower/warm_up.py)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import sys
import jaxlite
from jaxlite.lower import warm_up
warm_up.wait()
from jaxlite.lower import native_call
print("compiler" if "jaxlite.lower.pipeline" in sys.modules else "no compiler",
      "trampoline" if native_call._trampoline is not None else "no trampoline")
print(float(jaxlite.jit(lambda x: x + 1.0)(1.0)))
"""


def _probe(**env):
    done = subprocess.run([sys.executable, "-c", _PROBE], env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
                          capture_output=True, text=True, check=True, timeout=300)
    return done.stdout.split("\n")


def test_import_starts_the_compiler_in_the_background():
    assert _probe()[:2] == ["compiler trampoline", "2.0"]


def test_warm_up_can_be_turned_off():
    assert _probe(JAXLITE_WARM_UP="0")[:2] == ["no compiler no trampoline", "2.0"]


def test_a_fork_right_after_import_gets_a_working_compiler():
    program = """
import os, jaxlite
pid = os.fork()
if pid == 0:
    os._exit(0 if float(jaxlite.jit(lambda x: x * 3.0)(2.0)) == 6.0 else 3)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    done = subprocess.run([sys.executable, "-c", program], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, check=True, timeout=300)
    assert "child 0" in done.stdout
