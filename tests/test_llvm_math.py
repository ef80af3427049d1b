"""Accuracy and special values of the LLVM math emitters, run as JIT-compiled loop kernels."""
import ctypes
import math

import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir

from jaxlite import test_util
from jaxlite.lower import llvm_math, llvm_target

FLOAT, DOUBLE = ir.FloatType(), ir.DoubleType()
I16 = ir.IntType(16)
LANES = 16


class Kernels:
    """One JIT-compiled module holding map kernels `out[i] = f(in[i], ...)` by name."""

    def __init__(self, specs):
        """specs: {kernel name: (emitter, in_type, out_type, arity)}."""
        module = ir.Module()
        self.lanes = {}
        for name, (emitter, in_type, out_type, arity) in specs.items():
            test_util.define_map_kernel(module, name, emitter, in_type, out_type, arity)
            self.lanes[name] = in_type.count if isinstance(in_type, ir.VectorType) else 1
        self.compiled = llvm_target.compile_ir(module)

    def __call__(self, name, *inputs, out_dtype=None):
        inputs = [np.ascontiguousarray(array) for array in inputs]
        out = np.empty(inputs[0].shape, out_dtype or inputs[0].dtype)
        assert out.size % self.lanes[name] == 0
        signature = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (len(inputs) + 1), ctypes.c_int64)
        kernel = signature(self.compiled.address(name))
        kernel(*[array.ctypes.data for array in inputs], out.ctypes.data,
               out.size // self.lanes[name])
        return out


def unary_specs(names, element_type, prefix=""):
    return {prefix + name: (llvm_math.EMITTERS[name], element_type, element_type, 1)
            for name in names}


def ulp_distance(got, want):
    """Units in the last place between arrays of the same float dtype; NaN equals NaN."""
    int_type = np.int32 if got.dtype == np.float32 else np.int64
    sign_bit = np.iinfo(int_type).max

    def ordered(values):
        bits = values.view(int_type).astype(np.int64) if int_type is np.int32 else values.view(np.int64)
        return np.where(bits < 0, -(bits & sign_bit), bits)

    distance = np.abs(ordered(got) - ordered(want)).astype(np.float64)
    distance[np.isnan(got) & np.isnan(want)] = 0
    distance[np.isnan(got) != np.isnan(want)] = np.inf
    return distance


def logistic_reference(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


def pointwise(function):
    return lambda x: np.frompyfunc(function, 1, 1)(x).astype(np.float64)


def safe_pointwise(function):
    """math functions raise where numpy would return inf or NaN."""
    def guarded(v):
        try:
            return function(v)
        except (ValueError, OverflowError):
            return math.nan
    return pointwise(guarded)


# Float64 references; the comments give the max ulp error measured when the emitters were written.
ACCURATE_F32 = {
    "exp": np.exp,                      # 1
    "exp2": np.exp2,                    # 1
    "expm1": np.expm1,                  # 2
    "log": np.log,                      # 1
    "log2": np.log2,                    # 1
    "log1p": np.log1p,                  # 1
    "tanh": np.tanh,                    # 3 over every float32 (test_float32_tanh_exhaustively)
    "logistic": logistic_reference,     # 2
    "sin": np.sin,                      # 0 (evaluated in double)
    "cos": np.cos,                      # 0 (evaluated in double)
    "tan": np.tan,                      # 0 (evaluated in double)
    "atan": np.arctan,                  # 1 (the quotient 1/|x| in float32, the rest in double)
    "erf": pointwise(math.erf),         # 1 (evaluated in double)
    "erfc": pointwise(math.erfc),       # 1 (evaluated in double)
}
SLOW_REFERENCES = {"erf", "erfc"}
MAX_ULP = 4


@pytest.fixture(scope="module")
def kernels():
    accurate = list(ACCURATE_F32)
    libm_unary = [name for name in llvm_math.EMITTERS
                  if name not in llvm_math.BINARY_PRIMITIVES and name not in accurate]
    vector_float, vector_double = ir.VectorType(FLOAT, LANES), ir.VectorType(DOUBLE, LANES)
    specs = {
        **unary_specs(accurate + libm_unary, FLOAT, "f32_"),
        **unary_specs(accurate + libm_unary, DOUBLE, "f64_"),
        **unary_specs(accurate + ["erf_inv"], vector_float, "v32_"),
        **unary_specs(accurate + ["erf_inv", "digamma", "tan"], vector_double, "v64_"),
        "to_bf16": (llvm_math.emit_f32_to_bf16_bits, FLOAT, I16, 1),
        "from_bf16": (llvm_math.emit_bf16_bits_to_f32, I16, FLOAT, 1),
        "v_to_bf16": (llvm_math.emit_f32_to_bf16_bits, vector_float, ir.VectorType(I16, LANES), 1),
        "v_from_bf16": (llvm_math.emit_bf16_bits_to_f32, ir.VectorType(I16, LANES), vector_float, 1),
    }
    for name in llvm_math.BINARY_PRIMITIVES:
        specs["f32_" + name] = (llvm_math.EMITTERS[name], FLOAT, FLOAT, 2)
        specs["f64_" + name] = (llvm_math.EMITTERS[name], DOUBLE, DOUBLE, 2)
    return Kernels(specs)


def strided_bit_patterns(stride):
    """Every stride-th float32 bit pattern: all exponents, both signs, NaNs and subnormals."""
    return np.arange(0, 2 ** 32, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)


SPECIAL_F32 = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -1e-40,
                        1.1754944e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.0], np.float32)


def float32_sample(name):
    if name in SLOW_REFERENCES:
        dense = np.linspace(-11, 11, 2 ** 20, dtype=np.float32)
        return np.concatenate([strided_bit_patterns(2053), dense, SPECIAL_F32])
    return np.concatenate([strided_bit_patterns(257), SPECIAL_F32])


@pytest.mark.parametrize("name", list(ACCURATE_F32))
def test_float32_accuracy_over_full_range(kernels, name):
    reference = ACCURATE_F32[name]
    x = float32_sample(name)
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(np.float32)
    errors = ulp_distance(kernels("f32_" + name, x), want)
    worst = int(np.argmax(errors))
    assert errors[worst] <= MAX_ULP, "%s: %s ulp at x=%r" % (name, errors[worst], x[worst])


def test_float32_tanh_rational_table_approximates_tanh():
    z = np.linspace(1e-6, llvm_math._TANH_SATURATION_F32 / 2, 200_001)
    s = z * z
    ratio = (np.polynomial.polynomial.polyval(s, llvm_math._TANH_OVER_X_NUMERATOR)
             / np.polynomial.polynomial.polyval(s, llvm_math._TANH_OVER_X_DENOMINATOR))
    relative_error = np.abs(z * ratio / np.tanh(z) - 1)
    assert relative_error[z <= llvm_math._TANH_HALVING_F32].max() < 1e-9
    # Beyond, the table serves tanh(2z) = 2t / (1 + t^2), which damps an error of t by cosh(2z).
    assert (relative_error / np.cosh(2 * z)).max() < 1e-9
    assert np.float32(llvm_math._TANH_OVER_X_NUMERATOR[0]) == 1.0     # tiny x come back unchanged


def float32_range(lo, hi, stride=1):
    lo_bits, hi_bits = (int(np.array(v, np.float32).view(np.uint32)) for v in (lo, hi))
    return np.arange(lo_bits, hi_bits, stride, dtype=np.uint32).view(np.float32)


def test_float32_tanh_exhaustively(kernels):
    """The float32 roundings of a rational form add up where tanh nears 1 (evaluated directly
    up to 9 it was 5 ulp off in [6.07, 7.36]); the doubling formula takes over at 1.5: every
    float32 in [1, 9.1], where tanh saturates, every 5th in [0.25, 1), every 1021st
    elsewhere, both signs. From |x| = 7.9988117 it is +-1 exactly, as XLA's tanh (JAX's) and
    eager jaxlite's are (up to 4 ulp from tanh, which rounds to 1 from 9.01)."""
    x = np.concatenate([float32_range(1.0, 9.1), float32_range(0.25, 1.0, 5),
                        float32_range(0.0, 0.25, 1021), float32_range(9.1, math.inf, 1021)])
    x = np.concatenate([x, -x[::7]])
    x = x[:x.size - x.size % LANES]
    got = kernels("v32_tanh", x)
    saturated = np.abs(x) >= np.float32(7.9988117)
    np.testing.assert_array_equal(got[saturated], np.sign(x[saturated]))
    errors = ulp_distance(got[~saturated], np.tanh(x[~saturated].astype(np.float64)).astype(np.float32))
    worst = int(np.argmax(errors))
    assert errors[worst] <= 3, "%s ulp at x=%r" % (errors[worst], x[~saturated][worst])
    below = np.nextafter(np.float32(7.9988117), np.float32(0))
    assert kernels("v32_tanh", np.full(LANES, below, np.float32))[0] < 1      # JAX's last value below 1


INF, NAN = math.inf, math.nan
SPECIAL_VALUES = {
    "exp": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN), (89.0, INF),
            (-104.0, 0.0), (88.72283, 3.4027985e38)],
    "exp2": [(0.0, 1.0), (128.0, INF), (-149.0, 1e-45), (-151.0, 0.0), (-INF, 0.0), (NAN, NAN),
             (10.0, 1024.0)],
    "expm1": [(0.0, 0.0), (-0.0, -0.0), (1e-40, 1e-40), (INF, INF), (-INF, -1.0), (NAN, NAN),
              (100.0, INF), (-30.0, -1.0)],
    "log": [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (INF, INF), (-INF, NAN), (NAN, NAN),
            (1.0, 0.0)],
    "log2": [(0.0, -INF), (-2.0, NAN), (INF, INF), (NAN, NAN), (8.0, 3.0), (1e-45, -149.0),
             (1.0, 0.0)],
    "log1p": [(0.0, 0.0), (-0.0, -0.0), (1e-40, 1e-40), (-1.0, -INF), (-2.0, NAN), (INF, INF),
              (-INF, NAN), (NAN, NAN)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (1e-40, 1e-40), (INF, 1.0), (-INF, -1.0), (NAN, NAN),
             (20.0, 1.0)],
    "logistic": [(0.0, 0.5), (INF, 1.0), (-INF, 0.0), (NAN, NAN), (200.0, 1.0)],
    "sin": [(0.0, 0.0), (-0.0, -0.0), (-1e-40, -1e-40), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "cos": [(0.0, 1.0), (-0.0, 1.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "tan": [(0.0, 0.0), (-0.0, -0.0), (-1e-40, -1e-40), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "atan": [(0.0, 0.0), (-0.0, -0.0), (INF, math.pi / 2), (-INF, -math.pi / 2), (NAN, NAN)],
    "erf": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN)],
    "erfc": [(0.0, 1.0), (INF, 0.0), (-INF, 2.0), (NAN, NAN), (11.0, 0.0)],
}


def assert_identical(got, want):
    """Equal including the sign of zero; NaN matches NaN."""
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(got[~same], want[~same]))


@pytest.mark.parametrize("name", list(SPECIAL_VALUES))
def test_float32_special_values(kernels, name):
    x, want = (np.array(column, np.float32) for column in zip(*SPECIAL_VALUES[name]))
    assert_identical(kernels("f32_" + name, x), want)


@pytest.mark.parametrize("name", list(ACCURATE_F32))
def test_vector_emitters_match_scalar_ones(kernels, name):
    x = np.concatenate([strided_bit_patterns(4099), SPECIAL_F32, np.zeros(14, np.float32)])
    x = x[: x.size - x.size % LANES]
    assert_identical(kernels("v32_" + name, x), kernels("f32_" + name, x))
    x64 = np.random.default_rng(0).normal(0, 5, LANES * 1000)
    np.testing.assert_array_equal(kernels("v64_" + name, x64), kernels("f64_" + name, x64))


def random_float64_bit_patterns(count, seed=0):
    bits = np.random.default_rng(seed).integers(0, 2 ** 64, count, dtype=np.uint64)
    return bits.view(np.float64)


# float64 references; the polynomial implementations (exp family) get a few ulp of slack,
# libm-backed ones must agree with numpy to rounding differences between the libraries.
FLOAT64_CASES = {
    "exp": (np.exp, 4), "exp2": (np.exp2, 4), "expm1": (np.expm1, 4), "tanh": (np.tanh, 4),
    "logistic": (logistic_reference, 4), "log": (np.log, 1), "log2": (np.log2, 1),
    "log1p": (np.log1p, 1), "sin": (np.sin, 1), "cos": (np.cos, 1),
    "erf": (pointwise(math.erf), 1), "erfc": (pointwise(math.erfc), 1),
}


@pytest.mark.parametrize("name", list(FLOAT64_CASES))
def test_float64_against_numpy(kernels, name):
    reference, tolerance = FLOAT64_CASES[name]
    rng = np.random.default_rng(1)
    x = np.concatenate([random_float64_bit_patterns(20000), rng.normal(0, 3, 20000),
                        rng.uniform(-800, 800, 20000), [0.0, -0.0, np.inf, -np.inf, np.nan]])
    with np.errstate(all="ignore"):
        want = reference(x)
    errors = ulp_distance(kernels("f64_" + name, x), want)
    assert errors.max() <= tolerance, (name, x[np.argmax(errors)], errors.max())


# Primitives backed by libm in both precisions: (float64 reference, float32 sample range).
LIBM_UNARY_CASES = {
    "tan": (np.tan, (-100, 100)), "asin": (np.arcsin, (-1.1, 1.1)),
    "acos": (np.arccos, (-1.1, 1.1)), "atan": (np.arctan, (-100, 100)),
    "sinh": (np.sinh, (-90, 90)), "cosh": (np.cosh, (-90, 90)),
    "asinh": (np.arcsinh, (-1e6, 1e6)), "acosh": (np.arccosh, (0.5, 1e6)),
    "atanh": (np.arctanh, (-1.1, 1.1)), "cbrt": (np.cbrt, (-1e6, 1e6)),
    "lgamma": (safe_pointwise(math.lgamma), (-50, 50)),
}


def assert_close_to_libm_accuracy(got, want):
    """Within 4 ulp, or within 16 eps of max(1, |want|) near zeros of the function (lgamma has
    some; relative error means nothing there, and libraries differ by a few eps absolutely)."""
    eps = np.finfo(got.dtype).eps
    with np.errstate(invalid="ignore"):
        near = np.abs(got - want) <= 16 * eps * np.maximum(1, np.abs(want))
        close = (ulp_distance(got, want) <= 4) | near
    assert close.all(), list(zip(got[~close][:5], want[~close][:5]))


@pytest.mark.parametrize("name", list(LIBM_UNARY_CASES))
def test_libm_unary_primitives(kernels, name):
    reference, (lo, hi) = LIBM_UNARY_CASES[name]
    x = np.random.default_rng(2).uniform(lo, hi, 20000)
    with np.errstate(all="ignore"):
        assert_close_to_libm_accuracy(kernels("f64_" + name, x), reference(x))
        x32 = x.astype(np.float32)
        want32 = reference(x32.astype(np.float64)).astype(np.float32)
    assert_close_to_libm_accuracy(kernels("f32_" + name, x32), want32)


def test_libm_binary_primitives(kernels):
    rng = np.random.default_rng(3)
    y, x = rng.normal(0, 10, 20000), rng.normal(0, 10, 20000)
    base, exponent = np.abs(x), rng.uniform(-20, 20, 20000)
    cases = {"atan2": ((y, x), np.arctan2), "pow": ((base, exponent), np.power),
             "nextafter": ((x, y), np.nextafter)}
    for name, (args, reference) in cases.items():
        assert_close_to_libm_accuracy(kernels("f64_" + name, *args), reference(*args))
        args32 = [arg.astype(np.float32) for arg in args]
        with np.errstate(over="ignore"):
            want32 = reference(*args32) if name == "nextafter" else \
                reference(*[arg.astype(np.float64) for arg in args32]).astype(np.float32)
        assert_close_to_libm_accuracy(kernels("f32_" + name, *args32), want32)
    np.testing.assert_array_equal(kernels("f32_nextafter", *args32), np.nextafter(*args32))


def test_float32_atan2_special_values_and_octants(kernels):
    """Signed zeros, infinities and NaN in either argument, as numpy's float64 atan2 gives
    them (rounded), and points on and around the diagonals and axes (where the octant
    logic switches)."""
    values = np.array([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 3e-39, 2.5, -7.0, 1e30], np.float32)
    y, x = (a.ravel() for a in np.meshgrid(values, values))
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
    got = kernels("f32_atan2", y, x)
    # Exact where an argument is special or the parts are equal; elsewhere within an ulp
    # (the quotient is rounded to float32 once, as in JAX's float32 atan2).
    special = ~np.isfinite(y) | ~np.isfinite(x) | (y == 0) | (x == 0) | (np.abs(y) == np.abs(x))
    assert_identical(got[special], want[special])
    assert ulp_distance(got[~special], want[~special]).max() <= 1
    t = np.random.default_rng(7).normal(0, 1, 20000).astype(np.float32)
    for y, x in ((t, t), (t, -t), (t, np.nextafter(t, np.float32(0))), (t * 1e-30, t), (t, t * 1e-30)):
        want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
        assert ulp_distance(kernels("f32_atan2", y, x), want).max() <= 1


def test_erf_inv_inverts_erf(kernels):
    rng = np.random.default_rng(4)
    near_one = 1 - np.logspace(-15, -1, 2000)
    y = np.concatenate([rng.uniform(-1, 1, 20000), near_one, -near_one])
    x = kernels("f64_erf_inv", y)
    erf_x = pointwise(math.erf)(x)
    np.testing.assert_allclose(erf_x, y, rtol=4e-16, atol=0)
    tail = np.abs(y) > 0.5
    one_minus_y = 1 - np.abs(y[tail])
    np.testing.assert_allclose(pointwise(math.erfc)(np.abs(x[tail])), one_minus_y, rtol=4e-14)
    specials = np.array([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.nan])
    want = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.nan, np.nan], np.float32)
    assert_identical(kernels("f64_erf_inv", specials).astype(np.float32), want)
    assert_identical(kernels("f32_erf_inv", specials.astype(np.float32)), want)


def test_float32_erf_inv_against_scipy(kernels):
    """The float32 polynomial form: within 1 ulp of the rounded erf_inv over (-1, 1), the
    floats closest to +-1 included (where erf_inv is most sensitive to its input)."""
    from scipy.special import erfinv
    below_one = np.arange(0x00800000, 0x3F800000, 61, dtype=np.uint32).view(np.float32)
    closest_to_one = np.float32(1) - np.arange(1, 4097, dtype=np.float32) * np.float32(2 ** -24)
    y = np.concatenate([below_one, -below_one, closest_to_one, -closest_to_one])
    y = y[: y.size - y.size % LANES]
    want = erfinv(y.astype(np.float64)).astype(np.float32)
    errors = ulp_distance(kernels("f32_erf_inv", y), want)
    assert errors.max() <= 1, (y[np.argmax(errors)], errors.max())
    assert_identical(kernels("v32_erf_inv", y), kernels("f32_erf_inv", y))


def test_digamma_values_and_recurrence(kernels):
    euler_gamma = 0.5772156649015329
    known = {1.0: -euler_gamma, 0.5: -euler_gamma - 2 * math.log(2),
             10.0: sum(1 / k for k in range(1, 10)) - euler_gamma,
             -0.5: 2 - euler_gamma - 2 * math.log(2)}
    got = kernels("f64_digamma", np.array(list(known)))
    # Cancellation near the root of digamma (1.46) limits accuracy to ~1e-15 absolutely.
    np.testing.assert_allclose(got, list(known.values()), rtol=1e-14, atol=2e-15)
    x = np.random.default_rng(5).uniform(-30, 30, 20000)
    step = kernels("f64_digamma", x + 1) - kernels("f64_digamma", x)
    scale = 1 + np.abs(kernels("f64_digamma", x)) + np.abs(1 / x)
    np.testing.assert_allclose(step / scale, (1 / x) / scale, atol=1e-12)
    poles = np.array([0.0, -1.0, -7.0, -np.inf, np.nan])
    assert np.isnan(kernels("f64_digamma", poles)).all()
    x32 = x.astype(np.float32)
    want32 = kernels("f64_digamma", x32.astype(np.float64)).astype(np.float32)
    assert ulp_distance(kernels("f32_digamma", x32), want32).max() <= 0


def test_vector_double_libm_and_double_precision_paths(kernels):
    x = np.random.default_rng(6).uniform(-0.99, 0.99, LANES * 500)
    for name in ("erf_inv", "digamma", "tan"):
        np.testing.assert_array_equal(kernels("v64_" + name, x), kernels("f64_" + name, x))


def bf16_sample():
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40, 1e-45,
                         3.4028235e38, -3.4028235e38, 3.3961776e38, 1.0 + 2 ** -8], np.float32)
    signaling_nan = np.array([0x7F800001, 0xFF800001, 0x7F80FFFF], np.uint32).view(np.float32)
    bits = np.concatenate([strided_bit_patterns(251), specials, signaling_nan])
    return bits[: bits.size - bits.size % LANES]


@pytest.mark.parametrize("kernel", ["to_bf16", "v_to_bf16"])
def test_float32_to_bfloat16_rounds_to_nearest_even(kernels, kernel):
    x = bf16_sample()
    got = kernels(kernel, x, out_dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    quiet_nan_bits = 0x7FC0
    assert ((got[nan] & quiet_nan_bits) == quiet_nan_bits).all()
    np.testing.assert_array_equal(got[nan] >> 15, x[nan].view(np.uint32) >> 31)


@pytest.mark.parametrize("kernel", ["from_bf16", "v_from_bf16"])
def test_bfloat16_to_float32_is_exact(kernels, kernel):
    bits = np.arange(2 ** 16, dtype=np.uint32).astype(np.uint16)
    got = kernels(kernel, bits, out_dtype=np.float32)
    want = bits.view(ml_dtypes.bfloat16).astype(np.float32)
    assert_identical(got, want)


@pytest.mark.skipif(not llvm_target.host_has("avx512f"), reason="needs AVX-512")
def test_exp_loop_vectorizes_to_512_bit_registers():
    module = ir.Module()
    test_util.define_map_kernel(module, "exp_loop", llvm_math.emit_exp, FLOAT)
    assembly = llvm_target.compile_ir(module).asm()
    assert "zmm" in assembly
    assert "call" not in assembly.split("exp_loop:")[1]
