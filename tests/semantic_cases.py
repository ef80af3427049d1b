"""Edge cases whose results JAX defines, written once for either library.

`cases(jax, jnp, lax)` returns (name, function, arguments) triples built from the modules it
is given, so the same table runs in JAX (tests/data/record_jax_semantics.py, run with JAX's
Python, writes tests/data/jax_semantics.json) and in jaxlite (tests/test_semantics_vs_jax.py
compares eager and jit with what JAX gave for each, eager and jit alike).
"""
import numpy as np
import ml_dtypes


def _integer_division(lax):
    out = []
    for dtype in ("int32", "uint32", "int8", "uint8"):
        info = np.iinfo(dtype)
        signed = info.min < 0
        x = np.array([info.min, -7 if signed else 7, 0, 7, info.max], dtype)
        divisors = {"0": np.zeros(5, dtype), "mixed": np.array([3, -3, 2, -2, 5] if signed else [3, 3, 2, 2, 5], dtype)}
        if signed:
            divisors["m1"] = np.full(5, -1, dtype)
        for op, fun in [("floordiv", lambda a, b: a // b), ("mod", lambda a, b: a % b),
                        ("div", lax.div), ("rem", lax.rem)]:
            for label, y in divisors.items():
                out.append((f"{op}_{label}_{dtype}", fun, (x, y)))
        out.append((f"abs_{dtype}", abs, (x,)))
    return out


def _indexing(jnp, lax):
    x = np.arange(5, dtype=np.float32)
    idx = np.array([-7, -1, 0, 4, 5, 9], np.int32)
    out = []
    for mode in ["clip", "wrap", "fill", "promise_in_bounds", None]:
        out.append((f"take_{mode}", lambda a, i, mode=mode: jnp.take(a, i, mode=mode), (x, idx)))
        out.append((f"take_method_{mode}", lambda a, i, mode=mode: a.take(i, mode=mode), (x, idx)))
    out.append(("take_fill_int", lambda a, i: jnp.take(a, i, mode="fill"), (np.arange(5, dtype=np.int32), idx)))
    update = np.float32([10, 20])
    for s in [-7, -3, -1, 0, 3, 4, 10]:
        out.append((f"dynamic_slice_{s}", lambda a, s=s: lax.dynamic_slice(a, (s,), (2,)), (x,)))
        out.append((f"dynamic_slice_traced_{s}", lambda a, s: lax.dynamic_slice(a, (s,), (2,)), (x, np.int32(s))))
        out.append((f"dynamic_update_slice_{s}", lambda a, s=s: lax.dynamic_update_slice(a, update, (s,)), (x,)))
        out.append((f"dynamic_update_slice_traced_{s}",
                    lambda a, s: lax.dynamic_update_slice(a, update, (s,)), (x, np.int32(s))))
    return out


def _arithmetic(jnp, lax):
    ints = np.array([1, 2, 3], np.int32)
    a, b = np.array([True, False, True]), np.array([True, False, False])
    return [
        ("int_pow_negative_python", lambda x: x ** -1, (ints,)),
        ("int_pow_negative_numpy", lambda x: jnp.power(x, np.int32(-1)), (ints,)),
        ("int_pow_negative_lax", lambda x: lax.integer_pow(x, -1), (ints,)),
        ("int_pow_array_exponent", lambda x: jnp.power(x, np.array([-1, 2, 1], np.int32)), (ints,)),
        ("bool_add", lambda a, b: a + b, (a, b)),
        ("bool_mul", lambda a, b: a * b, (a, b)),
        ("bool_add_int", lambda a: a + 1, (a,)),
        ("bool_add_true", lambda a: a + True, (a,)),
    ] + [(f"float32_to_{dtype}_saturates", lambda x, dtype=dtype: x.astype(dtype),
          (np.float32([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 2147483520.0, 65535.5]),))
         for dtype in ("int32", "uint32", "int8", "uint8", "int16")]


def _cumulative(jnp, lax):
    at = np.array([255, 256, 300, 511, 999], np.int32)
    return [
        ("cumsum_bfloat16", lambda a: jnp.cumsum(a)[at], (np.ones(1000, ml_dtypes.bfloat16),)),
        ("lax_cumsum_bfloat16", lambda a: lax.cumsum(a)[at], (np.ones(1000, ml_dtypes.bfloat16),)),
        ("cumsum_float16", lambda a: jnp.cumsum(a)[np.array([255, 2048, 2049, 2999])], (np.ones(3000, np.float16),)),
        ("cumsum_bfloat16_mixed", jnp.cumsum, (_varied(1000, ml_dtypes.bfloat16),)),
        ("cumsum_bfloat16_reverse", lambda a: lax.cumsum(a, reverse=True), (_varied(300, ml_dtypes.bfloat16),)),
        ("cumsum_bfloat16_short", jnp.cumsum, (_varied(13, ml_dtypes.bfloat16),)),
        ("cumsum_float16_axis0", lambda a: jnp.cumsum(a, axis=0), (_varied(120, np.float16).reshape(40, 3),)),
        ("cumsum_float16_axis1_reverse", lambda a: lax.cumsum(a, axis=1, reverse=True),
         (_varied(140, np.float16).reshape(2, 70),)),
    ]


def _varied(n, dtype):
    """n values of mixed signs and sizes whose sums drift upward, so that they round."""
    return (((np.arange(n) * 37) % 101 - 40) * 0.37).astype(dtype)


_SINGULAR = np.array([[[-1, 2, 0, 0], [2, -4, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
                      [[0, 0, 0, 0], [1, -2, 0, 0], [0, 0, -3, 0], [0, 0, 0, 5]]], np.float32)


def _linalg(jnp):
    return [
        ("slogdet_sign_singular_4x4", lambda a: jnp.linalg.slogdet(a)[0], (_SINGULAR,)),
        ("slogdet_sign_singular_2x2", lambda a: jnp.linalg.slogdet(a)[0], (_SINGULAR[:, :2, :2],)),
        ("slogdet_log_singular", lambda a: jnp.linalg.slogdet(a)[1], (_SINGULAR,)),
        ("det_singular_4x4", jnp.linalg.det, (_SINGULAR,)),
        ("det_singular_3x3", jnp.linalg.det, (_SINGULAR[:, 1:, 1:],)),
        ("det_singular_2x2", jnp.linalg.det, (_SINGULAR[:, :2, :2],)),
        ("det_3x3", jnp.linalg.det, (np.array([[0.3, -1.2, 2.0], [1.5, 0.7, -0.4], [2.2, 0.1, 0.9]], np.float32),)),
        ("cholesky_indefinite", jnp.linalg.cholesky, (np.array([[1.0, 2.0], [2.0, 1.0]], np.float32),)),
        ("cholesky_negative", jnp.linalg.cholesky, (-np.eye(3, dtype=np.float32),)),
        ("cholesky_batch_one_bad", jnp.linalg.cholesky,
         (np.stack([np.eye(2, dtype=np.float32) * 4, np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)]),)),
    ]


_ZEROS = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 0.0, -0.0, np.nan, -np.nan, 1.0, -1.0], np.float32)


def _ordering(jnp, lax):
    bits = lambda v: lax.bitcast_convert_type(v, jnp.int32)
    a0 = np.array([0.0, -0.0, 0.0, -0.0], np.float32)
    b0 = np.array([-0.0, 0.0, 0.0, -0.0], np.float32)
    half = np.array([0.0, 6e-8, -6e-8, -0.0, 1e-5], np.float16)
    return [
        ("sort_signed_zeros_subnormals", lambda a: bits(jnp.sort(a)), (_ZEROS,)),
        ("argsort_signed_zeros_subnormals", jnp.argsort, (_ZEROS,)),
        ("argsort_descending", lambda a: jnp.argsort(-a), (_ZEROS,)),
        ("argsort_bfloat16_subnormals", jnp.argsort, (_ZEROS.astype(ml_dtypes.bfloat16),)),
        ("argsort_float16_subnormals", jnp.argsort, (half,)),
        ("maximum_signed_zeros", lambda a, b: bits(jnp.maximum(a, b)), (a0, b0)),
        ("minimum_signed_zeros", lambda a, b: bits(jnp.minimum(a, b)), (a0, b0)),
        ("max_of_zeros", lambda a: bits(jnp.max(a)), (np.array([-0.0, 0.0], np.float32),)),
        ("max_of_zeros_reversed", lambda a: bits(jnp.max(a)), (np.array([0.0, -0.0], np.float32),)),
        ("max_of_negative_zeros", lambda a: bits(jnp.max(a)), (np.array([-0.0, -0.0], np.float32),)),
        ("min_of_zeros", lambda a: bits(jnp.min(a)), (np.array([0.0, -0.0], np.float32),)),
        ("min_of_zeros_reversed", lambda a: bits(jnp.min(a)), (np.array([-0.0, 0.0], np.float32),)),
        ("maximum_nan", jnp.maximum, (np.float32([np.nan, 1.0, -np.inf]), np.float32([1.0, np.nan, np.nan]))),
    ]


def _rounding(jnp, lax):
    h = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -0.49999997, 8388609.0, -0.4], np.float32)
    return [
        ("round", jnp.round, (h,)),
        ("round_decimals", lambda a: jnp.round(a, 1), (np.array([0.25, 0.35, 0.45, -0.25, 1.05], np.float32),)),
        ("lax_round_half_even", lambda a: lax.round(a, 1), (h,)),
        ("lax_round_half_away", lax.round, (h,)),
        ("rint", jnp.rint, (h,)),
        ("round_int", jnp.round, (np.array([1, -3], np.int32),)),
        ("round_bfloat16", jnp.round, (h.astype(ml_dtypes.bfloat16),)),
        ("trunc", jnp.trunc, (h,)),
    ]


SUBNORMALS = np.float32([1e-39, -1e-39, 1e-45, -3e-42, 1.2e-38, 0.0, -0.0])


def _subnormals(jax, jnp, lax):
    """Functions of subnormal inputs. JAX (XLA:CPU) reads them as zeros (DAZ), except where
    the function is x itself near 0 and passes x on (sin, tanh, tan, expm1, arctan)."""
    functions = {"sin": jnp.sin, "tanh": jnp.tanh, "tan": jnp.tan, "expm1": jnp.expm1, "arctan": jnp.arctan,
                 "cos": jnp.cos, "exp": jnp.exp, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt, "log1p": jnp.log1p,
                 "sign": jnp.sign, "floor": jnp.floor, "ceil": jnp.ceil, "round": jnp.round, "erf": lax.erf,
                 "arcsinh": jnp.arcsinh, "arctanh": jnp.arctanh, "sinh": jnp.sinh, "lgamma": lax.lgamma,
                 "digamma": lax.digamma, "logistic": jax.nn.sigmoid, "abs": jnp.abs, "square": jnp.square,
                 "reciprocal": jnp.reciprocal}
    out = [(f"subnormal_{name}", fun, (SUBNORMALS,)) for name, fun in functions.items()]
    for dtype in ("float32", "bfloat16"):
        x = SUBNORMALS.astype(dtype)
        out += [(f"frexp_mantissa_subnormals_{dtype}", lambda a: jnp.frexp(a)[0], (x,)),
                (f"frexp_exponent_subnormals_{dtype}", lambda a: jnp.frexp(a)[1], (x,))]
    half = np.array([6e-8, -3e-5, 1e-4, 0.0], np.float16)
    out += [("frexp_mantissa_subnormals_float16", lambda a: jnp.frexp(a)[0], (half,)),
            ("frexp_exponent_subnormals_float16", lambda a: jnp.frexp(a)[1], (half,))]
    # log of 16 (XLA's vector loop reads subnormals as zeros; its scalar tail after a multiple of
    # 4 or 8 gives -103.97 for any positive one): jaxlite's log is -inf at each, as the loop.
    out.append(("subnormal_log_16", jnp.log, (np.resize(SUBNORMALS, 16),)))
    return out + _subnormal_results(jax, jnp, lax)


def _subnormal_results(jax, jnp, lax):
    """Functions of normal inputs whose values are subnormal: zeros (FTZ), eager and jit."""
    f32 = np.float32
    return [("underflow_exp", jnp.exp, (f32([-100, -88, -103, -87.4, 1.0]),)),
            ("underflow_exp_bfloat16", jnp.exp, (np.array([-100, -90, 1], ml_dtypes.bfloat16),)),
            ("underflow_exp2", jnp.exp2, (f32([-140, -130, -149, 2]),)),
            ("underflow_logistic", jax.nn.sigmoid, (f32([-100, -95, -88, 0]),)),
            ("underflow_erfc", lax.erfc, (f32([9.3, 9.5, 10.0, 1.0]),)),
            ("underflow_mul", lambda a: jnp.multiply(a, f32(1e-10)), (f32([1e-30, -1e-30, 3e-20]),)),
            ("underflow_cumsum", jnp.cumsum, (f32([1.5e-38, -1.4e-38, 1.0]),)),
            ("underflow_cumprod", jnp.cumprod, (f32([1e-20, 1e-20, 1e10]),))]


def _near_poles(lax):
    x = np.float32([-1e-20, -1e-10, -1e-7, -1e-3, -0.5, -1.5, -2.0000002, -1.0000001, -0.9999999, -3.7,
                    1e-20, 1e-8, 0.0, -1.0, -2.0, -40.5])
    return [("digamma_near_poles", lax.digamma, (x,))]


def _gradients(jax, jnp):
    grad, f32 = jax.grad, np.float32
    singular = {"singular_2x2": f32([[1, 2], [2, 4]]), "singular_3x3": f32([[1, 2, 3], [4, 5, 6], [7, 8, 10]]) * f32([[1], [1], [0]]),
                "zero_3x3": np.zeros((3, 3), f32), "rank1_3x3": f32([[1, 0, 0], [0, 0, 0], [0, 0, 0]]),
                "regular_2x2": f32([[2, 1], [1, 3]]), "batch": f32([[[1, 2], [2, 4]], [[2, 1], [1, 3]]])}
    out = [(f"grad_det_{name}", grad(lambda a: jnp.sum(jnp.linalg.det(a))), (a,)) for name, a in singular.items()]
    derivative = jnp.sinc
    for order in range(1, 5):
        derivative = grad(derivative)
        out.append((f"sinc_derivative_{order}_at_0", derivative, (f32(0),)))
    out += [("grad_abs_at_0", grad(jnp.abs), (f32(0),)), ("grad_abs_at_minus_0", grad(jnp.abs), (f32(-0.0),)),
            ("grad_hypot_at_0_0", lambda x, y: jnp.stack(grad(jnp.hypot, argnums=(0, 1))(x, y)), (f32(0), f32(0))),
            ("grad_hypot_at_3_0", lambda x, y: jnp.stack(grad(jnp.hypot, argnums=(0, 1))(x, y)), (f32(3), f32(0)))]
    for a, b in [(np.inf, np.inf), (-np.inf, -np.inf), (np.inf, -np.inf), (-np.inf, np.inf), (np.inf, 1.0),
                 (-np.inf, 1.0), (1.0, -np.inf), (2.0, 3.0)]:
        for name in ("logaddexp", "logaddexp2"):
            fun = getattr(jnp, name)
            out.append((f"grad_{name}_at_{a}_{b}", lambda x, y, fun=fun: jnp.stack(grad(fun, argnums=(0, 1))(x, y)),
                        (f32(a), f32(b))))
    return out


def cases(jax, jnp, lax):
    return (_integer_division(lax) + _indexing(jnp, lax) + _arithmetic(jnp, lax) + _cumulative(jnp, lax)
            + _linalg(jnp) + _ordering(jnp, lax) + _rounding(jnp, lax) + _subnormals(jax, jnp, lax)
            + _near_poles(lax) + _gradients(jax, jnp))


def run(fun, args, jit):
    """(dtype name, values as a JSON-able list) or ("raises", exception class name)."""
    try:
        out = np.asarray((jit(fun) if jit else fun)(*args))
    except Exception as err:             # noqa: BLE001 (the class is the recorded result)
        return ["raises", type(err).__name__]
    if out.dtype.kind == "f" or out.dtype == ml_dtypes.bfloat16:
        return [str(out.dtype), [repr(float(v)) for v in out.astype(np.float64).ravel()]]
    return [str(out.dtype), out.ravel().tolist()]
