"""Every module of the compiler imports on its own, first in a fresh interpreter (an import
cycle shows only when a module other than the usual entry point is imported first)."""
import pkgutil
import subprocess
import sys

import jaxlite.lower


def test_each_lower_module_imports_first():
    names = [f"jaxlite.lower.{module.name}" for module in pkgutil.iter_modules(jaxlite.lower.__path__)]
    processes = {name: subprocess.Popen([sys.executable, "-c", f"import {name}"], stderr=subprocess.PIPE, text=True)
                 for name in names}
    failures = {name: process.communicate()[1].strip().splitlines()[-1:] for name, process in processes.items()
                if process.wait() != 0}
    assert not failures, failures
