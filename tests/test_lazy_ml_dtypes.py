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


# Each program names an ml_dtypes type by a string first, through another entry point, in a
# fresh process (the first such name imports ml_dtypes); `first` must give what JAX gives.
_FIRST_NAMED_BY = {
    "jnp.dtype": ('jnp.dtype("bfloat16")', 'np.dtype(ml_dtypes.bfloat16)'),
    "jnp.dtype, a float8": ('jnp.dtype("float8_e4m3fn")', 'np.dtype(ml_dtypes.float8_e4m3fn)'),
    "can_cast": ('(jnp.can_cast("bfloat16", "float32"), jnp.can_cast(jnp.float32, "int4"))', '(True, False)'),
    "isdtype": ('jnp.isdtype("float8_e5m2", "real floating")', 'True'),
    "bitcast_convert_type": ('jaxlite.lax.bitcast_convert_type(jnp.ones(2, "int16"), "bfloat16").dtype',
                             'np.dtype(ml_dtypes.bfloat16)'),
    "ShapeDtypeStruct": ('jaxlite.eval_shape(lambda x: x * 2, jaxlite.ShapeDtypeStruct((2,), "uint4")).dtype',
                         'np.dtype(ml_dtypes.uint4)'),
}

_NAMED_FIRST = """
import sys
import numpy as np
import jaxlite, jaxlite.numpy as jnp
assert "ml_dtypes" not in sys.modules
first = {first}
import ml_dtypes
assert first == {expected}, first
"""

_EVERY_NAME = """
import numpy as np
import jaxlite.numpy as jnp
names = [name for name, value in vars(__import__("ml_dtypes")).items()
         if isinstance(value, type) and issubclass(value, np.generic)]
assert "bfloat16" in names and "int4" in names
assert all(jnp.dtype(name) == np.dtype(name) for name in names)
assert isinstance(np.dtype("float32"), jnp.dtype) and jnp.dtype[np.float32] == np.dtype[np.float32]
"""


def test_ml_dtypes_names_as_strings_load_it_wherever_a_dtype_is_taken():
    programs = [_NAMED_FIRST.format(first=first, expected=expected) for first, expected in _FIRST_NAMED_BY.values()]
    assert _run_all(programs + [_EVERY_NAME]) == [["True"]] * (len(programs) + 1)
