"""Record JAX's printed jaxprs and values for tests/typed_key_cases.py and tests/token_cases.py
(run with JAX's Python, not in the suite):

    /work/jaxref/bin/python tests/data/record_jax_typed_keys.py
"""
import json
import sys
from pathlib import Path

import jax
import jax.lax as lax
import jax.numpy as jnp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import token_cases  # noqa: E402
import typed_key_cases  # noqa: E402

for module, filename in [(typed_key_cases, "jax_typed_keys.json"), (token_cases, "jax_tokens.json")]:
    results = {}
    for name, (fun, make_args) in module.cases(jax, jnp, lax).items():
        args = make_args()
        results[name] = {"jaxpr": str(jax.make_jaxpr(fun)(*args)), "value": module.plain(jax, fun(*args))}
    (HERE / filename).write_text(json.dumps({"jax": jax.__version__, "cases": results}, indent=1) + "\n")
    print(len(results), "cases recorded in", filename)
