"""Record JAX's promotion with complex dtypes (run with /work/jaxref/bin/python):
jnp.promote_types over every pair of dtypes, and jnp.result_type of each dtype with each Python
scalar kind (bool, int, float, complex), in both x64 modes -> jax_complex_promotion.json."""
import json
import pathlib
import subprocess
import sys

NAMES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
         "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
SCALARS = {"python bool": "True", "python int": "1", "python float": "1.0", "python complex": "1j"}

RECORD_ONE_MODE = """
import json, sys
import jax
jax.config.update("jax_enable_x64", sys.argv[1] == "1")
import jax.numpy as jnp
names, scalars = json.loads(sys.argv[2]), json.loads(sys.argv[3])
table = {a: {b: jnp.promote_types(a, b).name for b in names} for a in names}
with_scalar = {}
for a in names:
    row = {}
    for kind, literal in scalars.items():
        out = jnp.result_type(jnp.zeros((), a), eval(literal))
        weak = (jnp.zeros((), a) + eval(literal)).weak_type
        row[kind] = [jnp.dtype(out).name, bool(weak)]
    with_scalar[a] = row
scalar_alone = {kind: [jnp.asarray(eval(literal)).dtype.name, bool(jnp.asarray(eval(literal)).weak_type)]
                for kind, literal in scalars.items()}
print(json.dumps({"promote_types": table, "with_python_scalar": with_scalar,
                  "python_scalar_alone": scalar_alone}))
"""


def main():
    import jax
    record = {"source": f"jax {jax.__version__}: jnp.promote_types, jnp.result_type, weak types"}
    for mode in ("0", "1"):
        out = subprocess.run([sys.executable, "-c", RECORD_ONE_MODE, mode, json.dumps(NAMES),
                              json.dumps(SCALARS)], check=True, capture_output=True, text=True).stdout
        record["x64" if mode == "1" else "x32"] = json.loads(out)
    path = pathlib.Path(__file__).parent / "jax_complex_promotion.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
