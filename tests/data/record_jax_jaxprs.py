"""Record the jaxprs JAX prints for tests/jaxpr_cases.py (run with JAX's Python, not in the suite):

    /work/jaxref/bin/python tests/data/record_jax_jaxprs.py
"""
import json
import sys
from pathlib import Path

import jax
import jax.lax as lax
import jax.numpy as jnp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import jaxpr_cases  # noqa: E402

texts = {name: str(jax.make_jaxpr(fun)(*args)) for name, (fun, args) in jaxpr_cases.cases(jax, jnp, lax).items()}
(HERE / "jax_jaxprs.json").write_text(json.dumps({"jax": jax.__version__, "jaxprs": texts}, indent=1) + "\n")
print(len(texts), "jaxprs recorded")
