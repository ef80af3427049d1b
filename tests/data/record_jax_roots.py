"""Record jnp.roots of a few float32 polynomials (leading and trailing zeros, degree 0 and 1,
all zeros), with and without strip_zeros (run with /work/jaxref/bin/python) -> jax_roots.json."""
import json
import pathlib

import jax.numpy as jnp
import numpy as np

POLYNOMIALS = [[1., -3, 2], [0., 0, 1, -3, 2], [2., 0, 0], [1., 2], [3.], [0., 0], [0., 1, 0, 0], [1., 0, 1],
               [1., -6, 11, -6], [0., 0, 0], [4., 3, 2, 1, 0.5]]

cases = []
for p in POLYNOMIALS:
    for strip_zeros in (True, False):
        roots = np.asarray(jnp.roots(jnp.asarray(p, jnp.float32), strip_zeros=strip_zeros))
        cases.append(dict(p=p, strip_zeros=strip_zeros, roots=[[float(r.real), float(r.imag)] for r in roots]))
pathlib.Path(__file__).with_name("jax_roots.json").write_text(json.dumps(cases, indent=0))
