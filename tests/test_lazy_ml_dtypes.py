"""ml_dtypes (~600 ms to import) is imported only when one of its types is first needed."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_NEVER_NAMED = """
import jaxlite, jaxlite.numpy as jnp
from jaxlite.lower import warm_up
warm_up.wait()
x = jnp.arange(16.0).reshape(4, 4)
jaxlite.jit(lambda x: jnp.tanh(x) @ x.T + jnp.sum(x))(x).block_until_ready()
jaxlite.grad(lambda x: jnp.sum(jnp.sin(x) ** 2))(x).block_until_ready()
assert "bfloat16" in dir(jnp) and "float8_e4m3fn" in dir(jnp) and "bfloat16" in dir(jaxlite.dtypes)
assert jnp.result_type(1.0, jnp.int8) == jnp.float32 and jnp.finfo(jnp.float16).bits == 16
"""

_NAMED_BY_STRING = """
import jaxlite, jaxlite.numpy as jnp, numpy as np
x = jnp.zeros(3, "bfloat16")
import ml_dtypes
assert x.dtype == np.dtype(ml_dtypes.bfloat16) and jnp.bfloat16.dtype == np.dtype(ml_dtypes.bfloat16)
assert jaxlite.dtypes.bfloat16 == np.dtype(ml_dtypes.bfloat16)
assert (x + jnp.ones(3, jnp.float32)).dtype == jnp.float32 and (x + 1.0).dtype == jnp.bfloat16
assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and jnp.finfo("bfloat16").bits == 16
assert float(jaxlite.jit(lambda v: jnp.sum(v * 2))(x + 1.5)) == 9.0
assert jnp.int4(3).dtype == np.dtype(ml_dtypes.int4) and jnp.iinfo(jnp.int4).max == 7
"""

_IMPORTED_BY_THE_PROGRAM = """
import ml_dtypes, numpy as np
import jaxlite.numpy as jnp
x = jnp.asarray(np.array([1.0, 2.0], ml_dtypes.float8_e4m3fn))
assert x.dtype == np.dtype(ml_dtypes.float8_e4m3fn) and jnp.issubdtype(x.dtype, jnp.floating)
assert jnp.issubdtype(ml_dtypes.bfloat16, jnp.floating) and not jnp.issubdtype(ml_dtypes.int4, jnp.unsignedinteger)
"""


def _run_all(programs):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    processes = [subprocess.Popen([sys.executable, "-c", program + "\nimport sys\nprint('ml_dtypes' in sys.modules)"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for program in programs]
    results = [process.communicate(timeout=300) for process in processes]
    for process, (_, stderr) in zip(processes, results):
        assert process.returncode == 0, stderr
    return [stdout.split() for stdout, _ in results]


def test_ml_dtypes_is_imported_when_first_needed():
    never, by_string, by_program = _run_all([_NEVER_NAMED, _NAMED_BY_STRING, _IMPORTED_BY_THE_PROGRAM])
    assert never == ["False"]
    assert by_string == ["True"] and by_program == ["True"]
