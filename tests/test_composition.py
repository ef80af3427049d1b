"""The composition matrix: every primitive case of test_ad and test_vmap under jit,
grad, vmap, jvp and their compositions agrees with eager evaluation, in values and
dtypes; plus random programs under random stacks of transforms.

The case tables are imported, not copied: a case added there is checked here too.
Each jitted function is built once per case, so a case compiles each distinct
program once (the jit cache is keyed by the function object).
"""
import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core import dtypes
from jaxlite.core.tree_util import tree_flatten, tree_map
from jaxlite.test_util import check_grads, enable_x64

from test_ad import FORWARD_ONLY_CASES, PRIMITIVE_CASES, VARIANT_CASES
from test_vmap import CASES as VMAP_CASES

# Native code reassociates sums, contracts multiply-adds and uses polynomial
# transcendentals, so results agree with numpy to a few ulps times the depth of the
# computation, not bit for bit.
TOLERANCE = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-4,
             np.dtype(np.float16): 2e-2, np.dtype(dtypes.bfloat16): 5e-2,
             np.dtype(np.complex128): 1e-9, np.dtype(np.complex64): 2e-4}

# case name -> why jit disagrees with eager there (strict: a fix makes the test fail,
# so the entry is removed with the fix). See the report for the owners of these bugs.
JIT_BUGS = {}
# Known failures of jit composed with differentiation, and why.
AD_JIT_BUGS = {}


def assert_same(actual, expected, what):
    """Same tree structure, shapes and dtypes; values equal to the dtype's tolerance."""
    actual_leaves, actual_tree = tree_flatten(actual)
    expected_leaves, expected_tree = tree_flatten(expected)
    assert actual_tree == expected_tree, f"{what}: structure {actual_tree} vs {expected_tree}"
    for a, e in zip(actual_leaves, expected_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape, \
            f"{what}: {a.dtype}{list(a.shape)} vs {e.dtype}{list(e.shape)}"
        tol = TOLERANCE.get(e.dtype, 0)
        wide = np.complex128 if e.dtype.kind == "c" else np.float64     # (complex: both parts compared)
        np.testing.assert_allclose(a.astype(wide), e.astype(wide), rtol=tol, atol=tol, err_msg=what)


def mark_bugs(names, bugs=None):
    bugs = JIT_BUGS if bugs is None else bugs
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=bugs[name]))
            if name in bugs else name for name in names]


def random_like(tree, seed):
    """Random values of each float leaf's shape and dtype (cotangents, tangents)."""
    rng = np.random.default_rng(seed)
    return tree_map(lambda x: jnp.asarray(rng.standard_normal(np.shape(x)).astype(np.asarray(x).dtype)), tree)


# ---------------------------------------------------------------- differentiable cases

AD_CASES = {**PRIMITIVE_CASES, **VARIANT_CASES}


def pulled_back(f, ct):
    """x -> the vjp of f at x applied to the fixed cotangent ct."""
    return lambda *args: jaxlite.vjp(f, *args)[1](ct)


def pushed_forward(f, tangents):
    return lambda *args: jaxlite.jvp(f, args, tangents)


@pytest.mark.parametrize("name", mark_bugs(sorted(AD_CASES) + sorted(FORWARD_ONLY_CASES), AD_JIT_BUGS))
def test_jit_grad_and_jvp_compose(name, enable_x64):
    fun, args = {**AD_CASES, **FORWARD_ONLY_CASES}[name]
    args = [jnp.asarray(a) for a in args]
    jitted = jaxlite.jit(fun)
    expected = fun(*args)
    assert_same(jitted(*args), expected, "jit(f) against f")
    tangents = tuple(random_like(args, seed=1))
    expected_jvp = jaxlite.jvp(fun, args, tangents)
    assert_same(jaxlite.jvp(jitted, args, tangents), expected_jvp, "jvp(jit(f)) against jvp(f)")
    assert_same(jaxlite.jit(pushed_forward(fun, tangents))(*args), expected_jvp, "jit(jvp(f)) against jvp(f)")
    if name in FORWARD_ONLY_CASES:
        return
    ct = random_like(expected, seed=2)
    expected_vjp = pulled_back(fun, ct)(*args)
    assert_same(pulled_back(jitted, ct)(*args), expected_vjp, "vjp(jit(f)) against vjp(f)")
    assert_same(jaxlite.jit(pulled_back(fun, ct))(*args), expected_vjp, "jit(vjp(f)) against vjp(f)")


# ---------------------------------------------------------------- batched cases

BASE_SHAPE, BATCH = (2, 3), 2


def vmap_arguments(name):
    rng = np.random.default_rng(0)
    operands = VMAP_CASES[name][1]
    base = (2,) + BASE_SHAPE if name == "scan" else BASE_SHAPE
    return [values(rng, (BATCH,) + shape_of(base)) for shape_of, values in operands]


@pytest.mark.parametrize("name", mark_bugs(sorted(VMAP_CASES)))
def test_jit_and_vmap_compose(name):
    fun = VMAP_CASES[name][0]
    args = vmap_arguments(name)
    first = [a[0] for a in args]
    assert_same(jaxlite.jit(fun)(*first), fun(*first), "jit(f) against f")
    expected = jaxlite.vmap(fun)(*args)
    assert_same(jaxlite.jit(jaxlite.vmap(fun))(*args), expected, "jit(vmap(f)) against vmap(f)")
    assert_same(jaxlite.vmap(jaxlite.jit(fun))(*args), expected, "vmap(jit(f)) against vmap(f)")


# ---------------------------------------------------------------- random programs under random transforms

UNARY = {"sin": jnp.sin, "tanh": jnp.tanh, "exp": lambda x: jnp.exp(x * 0.5), "square": jnp.square,
         "log1p_sq": lambda x: jnp.log1p(x * x), "sqrt": lambda x: jnp.sqrt(x * x + 1.0),
         "sigmoid": jaxlite.nn.sigmoid, "softplus": jaxlite.nn.softplus,
         "cumsum": lambda x: jnp.cumsum(x, axis=-1), "reverse": lambda x: x[..., ::-1],
         "center": lambda x: x - jnp.mean(x, axis=-1, keepdims=True),
         "softmax": lambda x: jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)}
BINARY = {"add": jnp.add, "mul": jnp.multiply, "sub": jnp.subtract,
          "hypot": lambda x, y: jnp.sqrt(x * x + y * y + 0.5),
          "outer_sum": lambda x, y: x * jnp.sum(y, axis=-1, keepdims=True),
          "matvec": lambda x, y: x * jnp.dot(x, y[::-1])}


@st.composite
def random_programs(draw):
    """Steps reading earlier values: ("unary", name, i) or ("binary", name, i, j)."""
    steps = []
    for count in range(1, draw(st.integers(1, 5)) + 1):
        if draw(st.booleans()):
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY))), draw(st.integers(0, count - 1))))
        else:
            steps.append(("binary", draw(st.sampled_from(sorted(BINARY))),
                          draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1))))
    return tuple(steps)


def program_function(steps):
    """A function of a vector: the values of the steps, each from earlier ones."""
    def fun(x):
        values = [x]
        for kind, name, *reads in steps:
            table = UNARY if kind == "unary" else BINARY
            values.append(table[name](*[values[i] for i in reads]))
        return values[-1]
    return fun


def grad_of_sum(f):
    return jaxlite.grad(lambda x: jnp.sum(f(x)))


TRANSFORMS = {"jit": jaxlite.jit, "grad": grad_of_sum, "vmap": jaxlite.vmap}


def apply_stack(f, stack):
    """Innermost transform first: ("grad", "vmap") is vmap(grad_of_sum(f))."""
    return functools.reduce(lambda g, name: TRANSFORMS[name](g), stack, f)


def without_jit(stack):
    return tuple(name for name in stack if name != "jit")


def check_first_gradient(fun, stack, x):
    """The eager stack below the first grad, summed, against central differences in
    float64 at the slice of x that level sees (outer vmaps strip leading axes)."""
    eager = without_jit(stack)
    first = eager.index("grad")
    inner, outer_vmaps = eager[:first], eager[first:].count("vmap")
    level = lambda v: jnp.sum(apply_stack(fun, inner)(v))
    with enable_x64():
        check_grads(level, (x[(0,) * outer_vmaps].astype(np.float64),), order=1)


@settings(deadline=None, max_examples=25)
@given(random_programs(), st.lists(st.sampled_from(sorted(TRANSFORMS)), min_size=1, max_size=3),
       st.integers(0, 2**16))
def test_random_programs_under_random_transforms(steps, stack, seed):
    """A stack with jits in it agrees with the same stack without them; where
    gradients are involved, the eager gradient is also checked numerically against
    the program itself, so the reference does not rest on the rules under test."""
    stack = tuple(stack)
    x = np.random.default_rng(seed).uniform(-1, 1, (2,) * stack.count("vmap") + (3,)).astype(np.float32)
    fun = program_function(steps)
    assert_same(apply_stack(fun, stack)(x), apply_stack(fun, without_jit(stack))(x), f"{stack} against eager")
    if "grad" in stack:
        check_first_gradient(fun, stack, x)
