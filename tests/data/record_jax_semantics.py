"""Record JAX's results for tests/semantic_cases.py (run with JAX's Python, not in the suite):

    /work/jaxref/bin/python tests/data/record_jax_semantics.py
"""
import json
import sys
from pathlib import Path

import jax
import jax.lax as lax
import jax.numpy as jnp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import semantic_cases  # noqa: E402

results = {}
for name, fun, args in semantic_cases.cases(jax, jnp, lax):
    results[name] = {"eager": semantic_cases.run(fun, args, None), "jit": semantic_cases.run(fun, args, jax.jit)}
(HERE / "jax_semantics.json").write_text(json.dumps({"jax": jax.__version__, "cases": results}, indent=1) + "\n")
print(len(results), "cases recorded")
