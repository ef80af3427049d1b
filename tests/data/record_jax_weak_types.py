"""Record the dtype and weak type of jnp functions applied to Python scalars (run with
/work/jaxref/bin/python) -> jax_weak_types.json. Each case is an expression in `jnp` and `x`;
cases JAX rejects for a scalar kind are left out."""
import json
import pathlib

import jax
import jax.numpy as jnp

SCALARS = {"int": "3", "float": "2.5", "bool": "True", "complex": "(1.5+2j)"}
UNARY = """abs negative positive sign floor ceil round rint trunc sqrt cbrt exp exp2 expm1 log log2
log10 log1p sin cos tan arcsin arctan sinh tanh arcsinh deg2rad rad2deg square reciprocal conj real imag
angle isnan isinf isfinite isneginf isposinf isreal iscomplex signbit logical_not invert sinc i0
nan_to_num max min sum prod mean var std median ptp any all argmax argmin cumsum cumprod nansum nanmax
nanmin nanmean nanprod sort_complex unique ravel atleast_1d atleast_2d squeeze flip zeros_like ones_like
empty_like copy array asarray count_nonzero average transpose modf""".split()
EXTRA = ["jnp.full_like(x, 7)", "jnp.clip(x, 0, 1)", "jnp.where(x, 1.0, 2)", "jnp.where(True, x, x)",
         "jnp.reshape(x, (1,))", "jnp.broadcast_to(x, (3,))", "jnp.tile(x, 2)", "jnp.repeat(x, 2)",
         "jnp.expand_dims(x, 0)", "jnp.roll(x, 1)", "jnp.round(x, 1)", "jnp.quantile(x, 0.5)",
         "jnp.percentile(x, 50)", "jnp.power(x, 2)", "jnp.float_power(x, 2)", "jnp.hypot(x, True)",
         "jnp.copysign(True, x)", "jnp.heaviside(x, True)", "jnp.logaddexp(True, x)", "jnp.add(True, x)"]
BINARY = """add subtract multiply true_divide floor_divide remainder maximum minimum hypot arctan2
copysign nextafter heaviside logaddexp fmax fmin fmod equal not_equal less greater_equal logical_and
logical_or logical_xor bitwise_and left_shift right_shift isclose dot outer inner kron vdot
append""".split()
CASES = [f"jnp.{f}(x)" for f in UNARY] + EXTRA + [f"jnp.{f}(x, 2)" for f in BINARY]


def record():
    jax.config.update("jax_enable_x64", False)
    table = {}
    for case in CASES:
        for kind, literal in SCALARS.items():
            try:
                result = eval(case, {"jnp": jnp, "x": eval(literal)})
            except (TypeError, ValueError, NotImplementedError):
                continue
            result = result[0] if isinstance(result, tuple) else result
            table[f"{case} @ {kind}"] = [str(result.dtype), bool(result.weak_type)]
    return {"jax_version": jax.__version__, "scalars": SCALARS, "results": table}


if __name__ == "__main__":
    out = pathlib.Path(__file__).parent / "jax_weak_types.json"
    out.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
