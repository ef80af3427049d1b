"""Complex numbers: dtypes and promotion against JAX's recorded tables, the complex primitives,
elementwise arithmetic against numpy, and JAX's refusals (ordering, floor, ...)."""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax

REFERENCE = json.loads((pathlib.Path(__file__).parent / "data" / "jax_complex_promotion.json").read_text())
LITERALS = {"python bool": True, "python int": 1, "python float": 1.0, "python complex": 1j}
WIDE = ("int64", "uint64", "float64", "complex128")


def _mode(x64):
    return REFERENCE["x64" if x64 else "x32"]


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    previous = jaxlite.config.read("jax_enable_x64")
    jaxlite.config.update("jax_enable_x64", request.param)
    yield request.param
    jaxlite.config.update("jax_enable_x64", previous)


def test_promote_types_matches_jax(x64):
    # With x64 off JAX's promote_types keeps explicitly 64-bit names that jaxlite's arrays
    # never hold (they narrow); those rows are compared in x64 mode only.
    for a, row in _mode(x64)["promote_types"].items():
        for b, want in row.items():
            if x64 or not {a, b} & set(WIDE):
                assert jnp.promote_types(a, b).name == want, (a, b)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_python_scalars_promote_weakly_as_in_jax(x64):
    for name, row in _mode(x64)["with_python_scalar"].items():
        for kind, (dtype, weak) in row.items():
            out = jnp.zeros((), name) + LITERALS[kind]
            assert (out.dtype.name, out.weak_type) == (dtype, weak), (name, kind)
    for kind, (dtype, weak) in _mode(x64)["python_scalar_alone"].items():
        out = jnp.asarray(LITERALS[kind])
        assert (out.dtype.name, out.weak_type) == (dtype, weak), kind


def test_complex_scalar_types_and_queries():
    z = jnp.complex64(1 + 2j)
    assert z.dtype == np.complex64 and jnp.asarray(3 + 4j).dtype == np.complex64
    assert jnp.issubdtype(z.dtype, jnp.complexfloating) and jnp.iscomplexobj(z)
    assert not jnp.iscomplexobj(jnp.float32(1)) and jnp.isrealobj(jnp.float32(1))
    np.testing.assert_array_equal(jnp.iscomplex(jnp.array([1 + 0j, 1j])), [False, True])
    np.testing.assert_array_equal(jnp.isreal(jnp.array([1 + 0j, 1j])), [True, False])
    assert jnp.finfo(jnp.complex64).eps == np.finfo(np.float32).eps


def test_parts_and_conjugate():
    z = jnp.array([1 + 2j, -3 - 0.5j])
    np.testing.assert_array_equal(z.real, [1, -3])
    np.testing.assert_array_equal(z.imag, [2, -0.5])
    np.testing.assert_array_equal(z.conj(), [1 - 2j, -3 + 0.5j])
    assert z.real.dtype == np.float32 and jnp.abs(z).dtype == np.float32
    np.testing.assert_allclose(jnp.abs(z), np.abs(np.asarray(z)), rtol=1e-6)
    np.testing.assert_allclose(jnp.angle(z), np.angle(np.asarray(z)), rtol=1e-6)
    np.testing.assert_allclose(jnp.angle(1 + 1j, deg=True), 45.0)
    np.testing.assert_array_equal(lax.complex(z.real, z.imag), z)
    assert lax.conj(jnp.float32(2)).dtype == np.complex64        # as JAX: a complex result
    assert jnp.conj(jnp.float32(2)).dtype == np.float32          # jnp keeps real arrays real
    assert jnp.real(jnp.int32(3)).dtype == np.int32 and jnp.imag(jnp.float32(3)) == 0


@pytest.mark.parametrize("call", [
    lambda z: lax.floor(z), lambda z: lax.round(z), lambda z: lax.is_finite(z), lambda z: lax.cbrt(z),
    lambda z: lax.lt(z, z), lambda z: lax.ge(z, z), lambda z: lax.rem(z, z), lambda z: lax.erf(z),
    lambda z: lax.nextafter(z, z), lambda z: lax.real(z.real), lambda z: lax.complex(z, z),
    lambda z: lax.complex(z.real.astype(jnp.bfloat16), z.real.astype(jnp.bfloat16)),
    lambda z: jnp.floor(z), lambda z: lax.conj(jnp.int32(1)),
], ids=["floor", "round", "is_finite", "cbrt", "lt", "ge", "rem", "erf", "nextafter", "real_of_real",
        "complex_of_complex", "complex_of_bf16", "jnp_floor", "conj_of_int"])
def test_refused_as_in_jax(call):
    with pytest.raises(TypeError):
        call(jnp.array([1 + 2j, 3 - 1j]))


def _complex_values(draw, shape, dtype, lo=-2.0, hi=2.0):
    parts = st.floats(lo, hi, width=32)
    flat = draw(st.lists(st.tuples(parts, parts), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.array([complex(a, b) for a, b in flat], dtype).reshape(shape)


@st.composite
def _operands(draw, count):
    shape = draw(st.sampled_from([(), (3,), (2, 3)]))
    return [_complex_values(draw, shape, np.complex64) for _ in range(count)]


UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsinh", "arctan",
         "expm1", "log1p", "square", "negative", "sign", "reciprocal", "exp2", "log10", "abs", "angle"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "equal", "not_equal", "maximum", "minimum"]


@settings(max_examples=15, deadline=None)
@given(_operands(1), st.sampled_from(UNARY))
def test_unary_against_numpy(args, name):
    (z,) = args
    if name in ("log", "log10", "reciprocal"):
        z = z + np.complex64(3)        # away from 0, where both are infinite or undefined
    want = getattr(np, name)(z.astype(np.complex128))
    got = getattr(jnp, name)(jnp.asarray(z))
    assert got.dtype == want.astype(np.complex64 if want.dtype.kind == "c" else np.float32).dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)


@settings(max_examples=15, deadline=None)
@given(_operands(2), st.sampled_from(BINARY))
def test_binary_against_numpy(args, name):
    x, y = args
    if name in ("divide", "power"):
        y = y + np.complex64(3)
        x = x + np.complex64(3) if name == "power" else x
    want = getattr(np, name)(x.astype(np.complex128), y.astype(np.complex128))
    got = getattr(jnp, name)(jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)


def test_complex128_under_x64(x64):
    z = jnp.asarray(np.array([1 + 2j]))
    assert z.dtype == (np.complex128 if x64 else np.complex64)
    assert (jnp.float32(1) * 1j).dtype == np.complex64
    assert (jnp.ones(1) * 1j).dtype == (np.complex128 if x64 else np.complex64)


# ---------------------------------------------------------------- differentiation

AUTODIFF = json.loads((pathlib.Path(__file__).parent / "data" / "jax_complex_autodiff.json").read_text())["cases"]


@pytest.mark.parametrize("name", sorted(AUTODIFF))
def test_differentiation_convention_matches_jax(name):
    from complex_autodiff_cases import CASES
    recorded = AUTODIFF[name]
    if "error" in recorded:
        with pytest.raises(TypeError) as caught:
            CASES[name](jaxlite, jnp)
        assert str(caught.value).split(". For")[0] == recorded["message"].split(". For")[0]
        return
    _assert_recorded(CASES[name](jaxlite, jnp), recorded["values"])


def _assert_recorded(out, recorded):
    leaves = jaxlite.tree_util.tree_leaves(out)
    assert len(leaves) == len(recorded)
    for got, want in zip(leaves, recorded):
        expected = (np.array(want["real"]) + 1j * np.array(want["imag"])).reshape(want["shape"])
        assert np.asarray(got).dtype.name == want["dtype"]
        np.testing.assert_allclose(np.asarray(got), expected, rtol=2e-5, atol=2e-5)


NUMPY_RECORD = json.loads((pathlib.Path(__file__).parent / "data" / "jax_complex_numpy.json").read_text())["cases"]


@pytest.mark.parametrize("name", sorted(NUMPY_RECORD))
def test_numpy_functions_on_complex_match_jax(name):
    from complex_numpy_cases import CASES
    _assert_recorded(CASES[name](jnp, jaxlite.random), NUMPY_RECORD[name]["values"])


def _complex_point(shape=(3,), seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape) + shift + 1j * rng.uniform(-1, 1, shape)


GRAD_CASES = {
    **{name: (getattr(lax, name), [_complex_point()]) for name in
       ["exp", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asinh", "atan", "atanh", "asin", "acos",
        "square", "neg", "expm1", "logistic", "exp2"]},
    **{name: (getattr(lax, name), [_complex_point(shift=2.0)]) for name in
       ["log", "sqrt", "rsqrt", "log1p", "abs", "acosh"]},
    **{name: (getattr(lax, name), [_complex_point(), _complex_point(seed=1, shift=2.0)]) for name in
       ["add", "sub", "mul", "div", "pow"]},
    "integer_pow": (lambda z: lax.integer_pow(z, 3) + lax.integer_pow(z, -2), [_complex_point(shift=2.0)]),
    "max": (lax.max, [_complex_point(), _complex_point(seed=1)]),
    "min": (lax.min, [_complex_point(), _complex_point(seed=1)]),
    "angle": (jnp.angle, [_complex_point(shift=2.0)]),
    "dot_general": (lambda a, b: a @ b, [_complex_point((2, 3)), _complex_point((3, 2), seed=1)]),
    "reduce_sum": (lambda z: jnp.sum(z * z, axis=0), [_complex_point((2, 3))]),
    "real_loss": (lambda z: jnp.sum(jnp.abs(jnp.exp(z) - z.conj()) ** 2), [_complex_point()]),
    "real_to_complex": (lambda x: jnp.exp(1j * x) * x, [np.array([0.3, -0.2, 0.8])]),
    "convert": (lambda x: lax.convert_element_type(x, np.complex128) * 2j, [np.array([0.3, -0.2])]),
}


@pytest.mark.usefixtures("enable_x64")
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_complex_derivatives_against_differences(name):
    """Forward and reverse mode to second order, against central differences in random complex
    directions (and <J^T v, u> = <v, J u> in JAX's pairing Re(sum(v * J u)))."""
    from jaxlite.test_util import check_grads
    fun, args = GRAD_CASES[name]
    check_grads(fun, [jnp.asarray(a) for a in args], order=2)


# ---------------------------------------------------------------- under jit

def _loop_functions():
    def while_doubling(z):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * (1 + 1j)), (0, z))[1]

    def scan_products(z):
        return lax.scan(lambda c, y: (c * y + 1j, c - y), z[0], z)

    def cond_on_real_part(z):
        return lax.cond(z[0, 0].real > 0, lambda v: v * 2j, lambda v: jnp.conj(v), z)

    def fori_rotation(z):
        return lax.fori_loop(0, 4, lambda i, c: c * jnp.exp(0.3j * i), z)
    return [while_doubling, scan_products, cond_on_real_part, fori_rotation]


JIT_FUNCTIONS = {
    **{name: getattr(jnp, name) for name in UNARY + ["conj", "real", "imag", "isfinite", "isnan"]},
    **{name: (lambda f: lambda z: f(z, z[::-1] + 2))(getattr(jnp, name)) for name in BINARY},
    "mixed": lambda z: jnp.abs(z) ** 2 + (z * 2.5 + 1j).real * jnp.angle(z),
    "sum_mean": lambda z: (jnp.sum(z, axis=-1), jnp.mean(z * z), jnp.cumsum(z, axis=0)),
    "indexing": lambda z: (z[::2], z.at[0].set(5j), z.at[1:].add(z[:-1] * 1j), z[jnp.array([0, 0, 1])]),
    "where_concat": lambda z: jnp.concatenate([jnp.where(z.real > 0, z, -z), z.T.reshape(-1, z.shape[0])]),
    "matmul": lambda z: z @ z.T.conj(),
    "sort": lambda z: (jnp.sort(z, axis=0), jnp.argsort(z[0])),
    "einsum": lambda z: jnp.einsum("ij,kj->ik", z, z * 1j),
    "real_matmul_complex": lambda z: jnp.ones((2, z.shape[0]), jnp.float32) @ z,
    "variance": lambda z: (jnp.var(z, axis=0), jnp.linalg.norm(z) if hasattr(jnp, "linalg") else jnp.abs(z)),
    "complex_from_parts": lambda z: lax.complex(z.real * 2, jnp.cos(z.imag)),
    "constants": lambda z: z * jnp.array([1 + 1j, 2 - 1j, 0.5j, 3.0])[: z.shape[-1]],
    **{f.__name__: f for f in _loop_functions()},
}


@pytest.mark.parametrize("name", sorted(JIT_FUNCTIONS))
def test_jit_matches_eager(name, caplog):
    fun = JIT_FUNCTIONS[name]
    z = jnp.asarray(_complex_point((4, 4), seed=3).astype(np.complex64))
    eager = fun(z)
    with caplog.at_level("WARNING", logger="jaxlite.jit"):
        compiled = jaxlite.jit(fun)(z)
    assert "numpy implementation" not in caplog.text          # every complex step is native code
    for got, want in zip(jaxlite.tree_util.tree_leaves(compiled), jaxlite.tree_util.tree_leaves(eager)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=3e-5, atol=3e-5)


def test_jit_program_holds_no_complex_value():
    z = jnp.asarray(_complex_point((8,)).astype(np.complex64))
    text = jaxlite.jit(lambda z: jnp.exp(z) * z.conj() + 1j).lower(z).as_text()
    assert "c64" not in text and "complex" not in text


def test_jit_of_grad_and_vmap_of_jit():
    z = jnp.asarray(_complex_point((3, 4), seed=5).astype(np.complex64))

    def loss(z):
        return jnp.sum(jnp.abs(jnp.sin(z) @ z.T - 1j) ** 2)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(loss))(z), jaxlite.grad(loss)(z), rtol=1e-4, atol=1e-4)
    row = jaxlite.jit(lambda r: jnp.exp(r) * r.conj() @ r)
    looped = np.stack([np.asarray(row(r)) for r in z])
    np.testing.assert_allclose(jaxlite.vmap(row)(z), looped, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.vmap(row))(z), looped, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [64, 300])     # 4 real products, and Gauss's 3
def test_complex_matmul_on_the_gemm(size):
    rng = np.random.default_rng(size)
    a, b = ((rng.normal(size=(size, size)) + 1j * rng.normal(size=(size, size))).astype(np.complex64)
            for _ in range(2))
    want = a.astype(np.complex128) @ b
    got = np.asarray(jaxlite.jit(jnp.matmul)(jnp.asarray(a), jnp.asarray(b)))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())


def test_complex_only_names():
    np.testing.assert_array_equal(jnp.sort_complex(jnp.array([3, 1 + 1j, 1])), [1, 1 + 1j, 3])
    assert jnp.sort_complex(jnp.array([3, 1])).dtype == np.complex64
    assert jnp.ComplexWarning is np.exceptions.ComplexWarning
    from jaxlite.scipy.linalg import dft
    n = 5
    np.testing.assert_allclose(dft(n) @ jnp.arange(n).astype(jnp.complex64), np.fft.fft(np.arange(n)), atol=1e-5)
    np.testing.assert_allclose(dft(n, "sqrtn"), np.fft.fft(np.eye(n), norm="ortho"), atol=1e-6)


ATAN2 = json.loads((pathlib.Path(__file__).parent / "data" / "jax_complex_atan2.json").read_text())


def _recorded(name):
    return np.array([complex(re, im) for re, im in ATAN2[name]], np.complex64)


def test_atan2_of_complex_matches_jax(caplog):
    """JAX's lax.atan2 takes complex operands (XLA's -i log((x + iy) / sqrt(x^2 + y^2)),
    nan where x^2 + y^2 is 0); eager, natively under jit, and its jvp."""
    y, x, want = _recorded("y"), _recorded("x"), _recorded("out")
    with caplog.at_level("WARNING", logger="jaxlite.jit"):
        for atan2 in (lax.atan2, jnp.arctan2, jaxlite.jit(lax.atan2)):
            got = atan2(y, x)
            assert got.dtype == np.complex64
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    assert "numpy implementation" not in caplog.text
    _, tangent = jaxlite.jvp(lax.atan2, (y, x), (_recorded("t_y"), _recorded("t_x")))
    finite = np.isfinite(want)
    np.testing.assert_allclose(np.asarray(tangent)[finite], _recorded("jvp")[finite], rtol=1e-5, atol=1e-6)
