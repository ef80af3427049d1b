"""vmap: every lax primitive against a Python loop, collectives over named axes,
per-example gradients, and batching over split PRNG keys."""
import importlib
import pkgutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.primitive import Primitive
from jaxlite.core.tree_util import tree_flatten, tree_leaves
from jaxlite.transforms import batching


def all_lax_primitives():
    found = {}
    for module_info in pkgutil.walk_packages(lax.__path__, "jaxlite.lax."):
        module = importlib.import_module(module_info.name)
        found.update({p.name: p for p in vars(module).values() if isinstance(p, Primitive)})
    return found


# Primitives whose batching rule is never called, with the reason.
NO_BATCHING_RULE = {
    "iota": "takes no operands, so under vmap it is never batched and binds as it is",
    "process_axis_index": "takes no operands, so under vmap it is never batched and binds as it is",
    "rng_uniform": "stateful draws between two scalar bounds; JAX has no batching rule for it either",
    "create_token": "takes no operands, so under vmap it is never batched and binds as it is",
    "composite": "JAX has no batching rule for lax.composite either",
}

# Primitives not compared against a Python loop over the batch, with the reason.
NOT_LOOPABLE = {
    "iota": NO_BATCHING_RULE["iota"],
    "create_token": NO_BATCHING_RULE["create_token"],
    "composite": NO_BATCHING_RULE["composite"],
    "after_all": "a batch of tokens is one token (tokens hold no values): tested in test_tokens",
    "dce_sink": "no results to compare: tested in test_tokens",
    "rng_uniform": NO_BATCHING_RULE["rng_uniform"],
    "psum": "a collective combines the lanes, so a loop over lanes cannot express it: "
            "tested against numpy in the collective tests below",
    "pmax": "collective: see psum",
    "pmin": "collective: see psum",
    "all_gather": "collective: see psum",
    "axis_index": "collective: see psum",
    "ppermute": "collective: see psum (test_collectives.py compares with JAX)",
    "psum_scatter": "collective: see psum (test_collectives.py compares with JAX)",
    "all_to_all": "collective: see psum (test_collectives.py compares with JAX)",
    **{name: "a collective across processes (shard_map over MPI): vmap inside shard_map is compared "
             "with the vmap simulation in test_distributed.py"
       for name in ("process_reduce", "process_all_gather", "process_psum_scatter", "process_all_to_all",
                    "process_ppermute", "process_axis_index", "pvary", "replicated_output")},
}


def test_every_lax_primitive_has_a_batching_rule():
    missing = [name for name, p in all_lax_primitives().items()
               if p not in batching.batch_rules and p not in batching.axis_batch_rules
               and name not in NO_BATCHING_RULE]
    assert not missing, f"primitives without a batching rule: {sorted(missing)}"


# ---------------------------------------------------------------- vmap vs Python loop, per primitive

def floats(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def positive(rng, shape):
    return rng.uniform(0.5, 2.0, shape).astype(np.float32)


def complexes(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def ints(rng, shape):
    return rng.integers(-8, 8, shape).astype(np.int32)


def words(rng, shape):
    return rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)


def spd(rng, shape):
    """Symmetric positive definite matrices in the last two axes (well conditioned)."""
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(np.float32)


def shifts(rng, shape):
    return rng.integers(0, 32, shape).astype(np.int32)


def unit_interval(rng, shape):
    return rng.uniform(-0.9, 0.9, shape).astype(np.float32)


def above_one(rng, shape):
    return rng.uniform(1.1, 3.0, shape).astype(np.float32)


def bools(rng, shape):
    return rng.random(shape) < 0.5


def same(shape):
    return shape


def scalar(shape):
    return ()


def unary(fun, values=floats):
    return fun, [(same, values)]


def binary(fun, values=floats, second=None):
    return fun, [(same, values), (same, second or values)]


def _scalar_loop(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1]) + x), (0, x))[1]


def _take_rows(x, rows):
    dnums = lax.GatherDimensionNumbers(offset_dims=tuple(range(1, x.ndim)),
                                       collapsed_slice_dims=(0,), start_index_map=(0,))
    return lax.gather(x, rows[:, None], dnums, (1,) + x.shape[1:], mode="clip")


def _scatter_rows(scatter):
    def f(x, rows, updates):
        dnums = lax.ScatterDimensionNumbers(update_window_dims=tuple(range(1, x.ndim)),
                                            inserted_window_dims=(0,),
                                            scatter_dims_to_operand_dims=(0,))
        return scatter(x, rows[:, None], updates, dnums, mode="clip")
    return f


def _leading(x):
    """Starts that move along axis 0 only, for the dynamic slices."""
    return lambda i: (i,) + (0,) * (x.ndim - 1)


def _window(reducer, init):
    return lambda x: lax.reduce_window(x, init, reducer, (min(2, x.shape[0]),) + (1,) * (x.ndim - 1),
                                       (1,) * x.ndim, "VALID")


def _rows_like(count):
    return lambda s: (count,) + s[1:]


def _square(s):
    return (s[0], s[0])


def _scan_loop(x, xs):
    return lax.scan(lambda c, y: (c * 0.5 + y, c * y), x, xs)


# name -> (function of the operands, [(operand shape from the base shape, value generator)])
CASES = {
    **{name: unary(getattr(lax, name)) for name in
       ["abs", "ceil", "conj", "cos", "exp", "exp2", "expm1", "floor", "is_finite", "logistic", "neg",
        "round", "sign", "sin", "square", "tanh", "cbrt", "stop_gradient"]},
    **{name: unary(getattr(lax, name), positive) for name in
       ["log", "log1p", "rsqrt", "sqrt", "lgamma", "digamma"]},
    **{name: unary(getattr(lax, name)) for name in
       ["asinh", "atan", "cosh", "sinh", "tan", "erf", "erfc"]},
    **{name: unary(getattr(lax, name), unit_interval) for name in
       ["acos", "asin", "atanh", "erf_inv"]},
    "acosh": unary(lax.acosh, above_one),
    **{name: unary(getattr(lax, name), complexes) for name in ["real", "imag"]},
    "complex": binary(lax.complex),
    "polygamma": unary(lambda x: lax.polygamma(1, x), positive),
    "reduce_precision": unary(lambda x: lax.reduce_precision(x, 5, 3)),
    "clz": unary(lax.clz, ints),
    "population_count": unary(lax.population_count, ints),
    **{name: binary(getattr(lax, name), ints, shifts) for name in
       ["shift_left", "shift_right_arithmetic", "shift_right_logical"]},
    "threefry2x32": (lax.threefry2x32, [(same, words)] * 4),
    "fma": (lax.fma, [(same, floats)] * 3),
    "gather": (_take_rows, [(same, floats), (lambda s: (3,), ints)]),
    "scatter": (_scatter_rows(lax.scatter),
                [(same, floats), (lambda s: (1,), ints), (_rows_like(1), floats)]),
    **{name: (_scatter_rows(getattr(lax, name.replace("-", "_"))),
              [(same, floats), (lambda s: (3,), ints), (_rows_like(3), floats)])
       for name in ["scatter-add", "scatter-mul", "scatter-min", "scatter-max"]},
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, _leading(x)(i), (1,) + x.shape[1:]),
                      [(same, floats), (scalar, ints)]),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, _leading(x)(i)),
                             [(same, floats), (_rows_like(1), floats), (scalar, ints)]),
    "sort": unary(lambda x: lax.sort(x, 0)),
    "top_k": unary(lambda x: lax.top_k(x, 1)),
    "cholesky": (lax.cholesky, [(_square, spd)]),
    "custom_linear_solve": (lambda a, b: lax.custom_linear_solve(
        lambda x: a @ x, b, lambda m, x: jnp.linalg.solve(a, x), symmetric=True),
        [(_square, spd), (lambda s: (s[0],), floats)]),
    "mulhi": binary(lax.mulhi, ints),
    **{name: binary(getattr(lax, name), positive, positive) for name in ["igamma", "igammac", "igamma_grad_a"]},
    "regularized_incomplete_beta": (lax.betainc, [(same, positive), (same, positive), (same, unit_interval)]),
    "zeta": (lax.zeta, [(same, above_one), (same, positive)]),
    "bessel_i0e": unary(lax.bessel_i0e),
    "bessel_i1e": unary(lax.bessel_i1e),
    "ragged_dot_general": (lambda a, b: lax.ragged_dot(a, b, np.array([1, 1], np.int32)),
                           [(lambda s: (3, s[0]), floats), (lambda s: (2, s[0], 2), floats)]),
    "rng_bit_generator": (lambda k: lax.rng_bit_generator(k, (2, 3), algorithm=1), [(lambda s: (4,), words)]),
    "svd": (lambda a: lax.linalg.svd(a, compute_uv=False), [(_square, spd)]),
    "eigh": (lambda a: lax.linalg.eigh(a)[1], [(_square, spd)]),
    "eig": (lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0],
            [(_square, spd)]),
    **{name: (lambda a, qr=qr: [abs(x) for x in qr(a)[:2]], [(_square, spd)]) for name, qr in [
        ("qr", lax.linalg.qr), ("geqrf", lax.linalg.geqrf),
        ("qr_pivoted", lambda a: lax.linalg.qr(a, pivoting=True))]},
    "lu": (lax.lu, [(_square, spd)]),
    "triangular_solve": (lambda a, b: lax.triangular_solve(a, b, left_side=True, lower=True),
                         [(_square, spd), (lambda s: (s[0], 2), floats)]),
    "conv_general_dilated": (lambda lhs, rhs: lax.conv_general_dilated(lhs, rhs, (1,), "VALID"),
                             [(lambda s: (2, 3, 5), floats), (lambda s: (4, 3, 2), floats)]),
    "conv_patches": (lambda x: lax.convolution.conv_patches(x, (2, 2), (1, 2), (2, 1), 1),
                     [(lambda s: (2, 6, 5, 3), floats)]),
    "reduce_window_sum": unary(_window(lax.add, 0.0)),
    "reduce_window_max": unary(_window(lax.max, -np.inf)),
    "reduce_window_min": unary(_window(lax.min, np.inf)),
    "cumsum": unary(lambda x: lax.cumsum(x, 0)),
    "fft": unary(lambda x: lax.fft(lax.fft(x, "rfft", x.shape[-1:]), "ifft", x.shape[-1:-1] + (x.shape[-1] // 2 + 1,))),
    "cumprod": unary(lambda x: lax.cumprod(x, x.ndim - 1, reverse=True)),
    "cummax": unary(lambda x: lax.cummax(x, 0, reverse=True)),
    "cummin": unary(lambda x: lax.cummin(x, x.ndim - 1)),
    "cumlogsumexp": unary(lambda x: lax.cumlogsumexp(x, 0)),
    "integer_pow": unary(lambda x: lax.integer_pow(x, 3)),
    "convert_element_type": unary(lambda x: lax.convert_element_type(x, np.int32)),
    "bitcast_convert_type": unary(lambda x: lax.bitcast_convert_type(x, np.int32)),
    "not": unary(lax.bitwise_not, ints),
    **{name: binary(getattr(lax, name)) for name in
       ["add", "add_any", "sub", "mul", "max", "min", "nextafter", "atan2",
        "eq", "ne", "lt", "le", "gt", "ge"]},
    "div": binary(lax.div, floats, positive),
    "rem": binary(lax.rem, floats, positive),
    "pow": binary(lax.pow, positive, floats),
    "and": binary(lax.bitwise_and, ints),
    "or": binary(lax.bitwise_or, ints),
    "xor": binary(lax.bitwise_xor, ints),
    "select_n": (lax.select_n, [(same, bools), (same, floats), (same, floats)]),
    "reduce_sum": unary(lambda x: lax.reduce_sum(x, (0,))),
    "reduce_prod": unary(lambda x: lax.reduce_prod(x, (0,))),
    "reduce_max": unary(lambda x: lax.reduce_max(x, tuple(range(x.ndim)))),
    "reduce_min": unary(lambda x: lax.reduce_min(x, (x.ndim - 1,))),
    "reduce_and": unary(lambda x: lax.reduce_and(x, (0,)), bools),
    "reduce_or": unary(lambda x: lax.reduce_or(x, (x.ndim - 1,)), bools),
    "reduce_xor": unary(lambda x: lax.reduce_xor(x, (0,)), ints),
    "argmax": unary(lambda x: lax.argmax(x, 0)),
    "argmin": unary(lambda x: lax.argmin(x, x.ndim - 1)),
    "broadcast_in_dim": unary(lambda x: lax.broadcast_in_dim(
        x, (2,) + x.shape, tuple(range(1, x.ndim + 1)))),
    "reshape": unary(lambda x: lax.reshape(x, (x.size,))),
    "rev": unary(lambda x: lax.rev(x, (0,))),
    "slice": unary(lambda x: lax.slice(x, (0,) * x.ndim, x.shape, (2,) + (1,) * (x.ndim - 1))),
    "squeeze": (lambda x: lax.squeeze(x, (x.ndim - 1,)), [(lambda s: s + (1,), floats)]),
    "transpose": unary(lambda x: lax.transpose(x, tuple(reversed(range(x.ndim))))),
    "pad": (lambda x, v: lax.pad(x, v, ((1, 2, 1),) + ((0, 0, 0),) * (x.ndim - 1)),
            [(same, floats), (scalar, floats)]),
    "concatenate": (lambda x, y: lax.concatenate([x, y], 0), [(same, floats), (same, floats)]),
    "dot_general": (lambda x, y: lax.dot_general(x, y, (((x.ndim - 1,), (0,)), ((), ()))),
                    [(same, floats), (lambda s: s[-1:] + (3,), floats)]),
    "cond": (lambda p, x: lax.cond(p, lambda v: v * 2.0, jnp.sin, x),
             [(scalar, bools), (same, floats)]),
    "while": unary(_scalar_loop),
    "scan": (_scan_loop, [(lambda s: s[1:], floats), (same, floats)]),
}


def test_every_primitive_is_compared_with_a_loop():
    names = set(all_lax_primitives())
    missing = names - set(NOT_LOOPABLE) - set(CASES)
    assert not missing, f"add a CASES entry (or an explained NOT_LOOPABLE one) for {sorted(missing)}"
    assert not set(CASES) - names, f"CASES names unknown primitives: {sorted(set(CASES) - names)}"


def looped(fun, args, axes, size):
    rows = [fun(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
            for i in range(size)]
    return [np.stack(leaves) for leaves in zip(*map(tree_leaves, rows))]


@st.composite
def vmap_problems(draw):
    name = draw(st.sampled_from(sorted(CASES)))
    fun, operands = CASES[name]
    base = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    if name == "scan":
        base = (draw(st.integers(0, 3)),) + base
    size = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    axes = []
    for shape_of, _ in operands:
        rank = len(shape_of(base))
        axes.append(draw(st.sampled_from([None] + list(range(-rank - 1, rank + 1)))))
    if all(a is None for a in axes):
        axes[draw(st.integers(0, len(axes) - 1))] = 0
    return name, base, size, seed, tuple(axes)


@settings(deadline=None, max_examples=300)
@given(vmap_problems())
def test_vmap_agrees_with_a_python_loop(problem):
    name, base, size, seed, axes = problem
    fun, operands = CASES[name]
    rng = np.random.default_rng(seed)
    args = []
    for (shape_of, values), axis in zip(operands, axes):
        shape = shape_of(base)
        if axis is None:
            args.append(values(rng, shape))
        else:
            args.append(np.moveaxis(values(rng, (size,) + shape), 0, axis))
    expected = looped(fun, args, axes, size)
    actual = tree_leaves(jaxlite.vmap(fun, in_axes=axes)(*args))
    for a, e in zip(actual, expected):
        assert np.asarray(a).dtype == e.dtype
        np.testing.assert_allclose(np.asarray(a), e, rtol=1e-5, atol=1e-6, err_msg=name)


@settings(deadline=None, max_examples=20)
@given(st.integers(0, 2), st.integers(-3, 2), st.integers(1, 3))
def test_out_axes_places_the_batch_dim(in_axis, out_axis, size):
    x = np.arange(size * 6, dtype=np.float32).reshape(np.roll((size, 2, 3), in_axis))
    out = jaxlite.vmap(lambda v: lax.scan(lambda c, r: (c + r, c), jnp.zeros(v.shape[1:]), v)[1],
                       in_axes=in_axis, out_axes=out_axis)(x)
    rows = np.moveaxis(x, in_axis, 0)
    expected = np.stack([np.concatenate([np.zeros_like(r[:1]), np.cumsum(r, 0)[:-1]]) for r in rows])
    np.testing.assert_allclose(np.asarray(out), np.moveaxis(expected, 0, out_axis))


# ---------------------------------------------------------------- collectives

def test_collectives_reduce_over_the_named_axis():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    row = lambda f: jaxlite.vmap(f, axis_name="i")(x)
    np.testing.assert_allclose(row(lambda v: lax.psum(v, "i")), np.broadcast_to(x.sum(0), x.shape))
    np.testing.assert_allclose(row(lambda v: v - lax.pmean(v, "i")), x - x.mean(0))
    np.testing.assert_allclose(row(lambda v: lax.pmax(v, "i")), np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_allclose(row(lambda v: lax.pmin(v, "i")), np.broadcast_to(x.min(0), x.shape))
    np.testing.assert_allclose(row(lambda v: lax.all_gather(v, "i")), np.broadcast_to(x, (4,) + x.shape))
    np.testing.assert_allclose(row(lambda v: lax.all_gather(v, "i", axis=1)),
                               np.broadcast_to(x.T, (4,) + x.T.shape))
    np.testing.assert_allclose(row(lambda v: lax.all_gather(v, "i", tiled=True)),
                               np.broadcast_to(x.reshape(-1), (4, 12)))
    np.testing.assert_array_equal(row(lambda v: lax.axis_index("i")), np.arange(4))
    counts = jaxlite.vmap(lambda v: lax.psum(1, "i"), axis_name="i")(x)
    np.testing.assert_array_equal(counts, [4] * 4)


def test_collective_of_unbatched_value_and_pytree():
    out = jaxlite.vmap(lambda v, c: lax.psum({"v": v, "c": c}, "i"), in_axes=(0, None),
                       axis_name="i")(np.ones(5, np.float32), np.float32(2.0))
    np.testing.assert_allclose(out["v"], [5.0] * 5)
    np.testing.assert_allclose(out["c"], [10.0] * 5)


def test_nested_vmaps_find_the_axis_by_name():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    nested = lambda f: jaxlite.vmap(jaxlite.vmap(f, axis_name="j"), axis_name="i")(x)
    np.testing.assert_allclose(nested(lambda v: lax.psum(v, "i")), np.broadcast_to(x.sum(0), x.shape))
    np.testing.assert_allclose(nested(lambda v: lax.psum(v, "j")),
                               np.broadcast_to(x.sum(1, keepdims=True), x.shape))
    np.testing.assert_allclose(nested(lambda v: lax.psum(v, ("i", "j"))),
                               np.broadcast_to(x.sum((0, 1)), x.shape))
    np.testing.assert_allclose(nested(lambda v: lax.pmax(v, "i") - lax.pmin(v, "j")),
                               x.max(0) - x.min(1, keepdims=True))
    index = nested(lambda v: lax.axis_index("i") * 10 + lax.axis_index("j"))
    np.testing.assert_array_equal(index, np.add.outer(np.arange(2) * 10, np.arange(3)))
    gathered = nested(lambda v: lax.all_gather(v, "i"))
    np.testing.assert_allclose(gathered, np.broadcast_to(np.moveaxis(x, 0, 1)[:, None], (3, 2, 2, 4))
                               .transpose(1, 0, 2, 3))


def test_shadowed_axis_names_refer_to_the_innermost_vmap():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = jaxlite.vmap(jaxlite.vmap(lambda v: lax.psum(v, "i"), axis_name="i"), axis_name="i")(x)
    np.testing.assert_allclose(out, np.broadcast_to(x.sum(1, keepdims=True), x.shape))


def test_unbound_axis_name_is_a_name_error():
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(np.float32(1), "i")
    with pytest.raises(NameError, match="unbound axis name: i"):
        jaxlite.vmap(lambda v: lax.pmean(v, "i"), axis_name="j")(np.ones(3, np.float32))
    with pytest.raises(NameError, match="unbound axis name: k"):
        jaxlite.vmap(lambda v: lax.axis_index("k"))(np.ones(3, np.float32))


def test_collectives_inside_control_flow_and_under_jvp():
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)

    def normalized_scan(x):
        def step(c, y):
            return c + y * x / lax.psum(x, "i"), lax.axis_index("i")
        return lax.scan(step, jnp.zeros_like(x), jnp.ones(4))

    carry, idx = jaxlite.vmap(normalized_scan, axis_name="i")(xs)
    np.testing.assert_allclose(carry, 4 * xs / xs.sum(0), rtol=1e-6)
    np.testing.assert_array_equal(idx, np.broadcast_to(np.arange(3)[:, None], (3, 4)))
    # d/dx psum(x^2) along t is psum(2 x t).
    t = np.ones_like(xs)
    _, tangent = jaxlite.vmap(lambda x, t: jaxlite.jvp(lambda v: lax.psum(v * v, "i"), (x,), (t,)),
                              axis_name="i")(xs, t)
    np.testing.assert_allclose(tangent, np.broadcast_to((2 * xs).sum(0), xs.shape))
    closed = jaxlite.make_jaxpr(jaxlite.vmap(lambda v: lax.pmean(v, "i"), axis_name="i"))(xs)
    assert "psum" not in str(closed) and "reduce_sum" in str(closed)


def _custom_jvp_psum():
    @jaxlite.custom_jvp
    def f(v):
        return lax.psum(v, "i")

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), lax.psum(tangents[0], "i")
    return f


def _custom_vjp_psum():
    @jaxlite.custom_vjp
    def f(v):
        return lax.psum(v, "i")

    f.defvjp(lambda v: (f(v), None), lambda _, ct: (lax.psum(ct, "i"),))
    return f


CALL_WRAPPERS = {"jit": jaxlite.jit, "checkpoint": jaxlite.checkpoint,
                 "custom_jvp": lambda g: _custom_jvp_psum(), "custom_vjp": lambda g: _custom_vjp_psum()}


@pytest.mark.parametrize("wrapper", sorted(CALL_WRAPPERS))
def test_collectives_inside_call_primitives_see_the_axis_name(wrapper):
    """jit, checkpoint and custom-rule calls batch their body over the named axis."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    summed = CALL_WRAPPERS[wrapper](lambda v: lax.psum(v, "i"))
    expected = np.broadcast_to(x.sum(0), x.shape)
    np.testing.assert_allclose(jaxlite.vmap(summed, axis_name="i")(x), expected)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.vmap(summed, axis_name="i"))(x), expected)
    # An unbatched operand still sums over the axis: psum(c) = 4 c.
    by_const = jaxlite.vmap(lambda v, c: v + summed(c), in_axes=(0, None), axis_name="i")
    np.testing.assert_allclose(by_const(x, x[0]), x + 4 * x[0])
    # Reverse mode of psum(v)[0] summed over the lanes: each lane's v[0] gets 4.
    grads = jaxlite.vmap(jaxlite.grad(lambda v: summed(v)[0]), axis_name="i")(x)
    np.testing.assert_allclose(grads, np.broadcast_to([4.0, 0.0, 0.0], x.shape))


def test_unbatched_call_without_collectives_binds_its_body_unchanged():
    inner = jaxlite.jit(jnp.sin)
    c = jnp.ones(3)
    closed = jaxlite.make_jaxpr(jaxlite.vmap(lambda x: x + inner(c)))(jnp.ones((2, 3)))
    (call,) = [e for e in closed.eqns if e.primitive.name == "jit"]
    assert call.params["jaxpr"] is inner.trace(c).jaxpr
    with_psum = jaxlite.jit(lambda v: lax.psum(v, "i"))
    closed = jaxlite.make_jaxpr(jaxlite.vmap(lambda x: x + with_psum(c), axis_name="i"))(jnp.ones((2, 3)))
    (call,) = [e for e in closed.eqns if e.primitive.name == "jit"]
    assert call.params["name"] == "<lambda>"    # as JAX: vmap keeps the call's name
    assert call.params["jaxpr"].out_avals[0].shape == (3,) and call.params["jaxpr"] is not with_psum.trace(c).jaxpr


def test_axis_index_inside_jit_under_nested_named_vmaps():
    x = np.zeros((2, 3), np.float32)
    index = jaxlite.jit(lambda v: v + lax.axis_index("i") * 10 + lax.axis_index("j"))
    out = jaxlite.vmap(jaxlite.vmap(index, axis_name="j"), axis_name="i")(x)
    np.testing.assert_array_equal(out, np.add.outer(np.arange(2) * 10, np.arange(3)))


# ---------------------------------------------------------------- per-example gradients

def mlp_params(rng):
    return {"w1": rng.standard_normal((4, 8)).astype(np.float32) * 0.5,
            "b1": rng.standard_normal(8).astype(np.float32) * 0.1,
            "w2": rng.standard_normal((8,)).astype(np.float32) * 0.5,
            "b2": np.float32(0.1)}


def mlp_loss(params, x, y):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return (hidden @ params["w2"] + params["b2"] - y) ** 2


def gradient_by_directional_derivatives(loss, params, *data):
    """grad via vmap over one jvp per basis direction of the flattened parameters."""
    leaves, tree = tree_flatten(params)
    sizes = [int(np.size(leaf)) for leaf in leaves]
    basis = np.eye(sum(sizes), dtype=np.float32)

    def directional(direction):
        pieces, start = [], 0
        for leaf, n in zip(leaves, sizes):
            pieces.append(jnp.reshape(direction[start:start + n], np.shape(leaf)))
            start += n
        tangent = tree.unflatten(pieces)
        return jaxlite.jvp(lambda p: loss(p, *data), (params,), (tangent,))[1]

    return jaxlite.vmap(directional)(basis)


def numpy_mlp_gradient(params, x, y):
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    err = 2 * (hidden @ params["w2"] + params["b2"] - y)
    d_hidden = err * params["w2"] * (1 - hidden ** 2)
    grads = {"b1": d_hidden, "b2": err, "w1": np.outer(x, d_hidden), "w2": err * hidden}
    return np.concatenate([np.ravel(grads[k]) for k in sorted(grads)])


def test_per_example_gradients_of_an_mlp():
    rng = np.random.default_rng(1)
    params = mlp_params(rng)
    xs = rng.standard_normal((5, 4)).astype(np.float32)
    ys = rng.standard_normal(5).astype(np.float32)
    per_example = jaxlite.vmap(lambda x, y: gradient_by_directional_derivatives(mlp_loss, params, x, y))(xs, ys)
    expected = np.stack([numpy_mlp_gradient(params, x, y) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(np.asarray(per_example), expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- keys

def test_vmap_over_split_keys():
    keys = jaxlite.random.split(jaxlite.random.PRNGKey(0), 5)
    draws = jaxlite.vmap(lambda k: jaxlite.random.normal(k, (3,)))(keys)
    np.testing.assert_array_equal(draws, np.stack([jaxlite.random.normal(k, (3,)) for k in keys]))


def test_vmap_over_keys_consumed_inside_loops():
    def noisy_walk(key):
        def step(carry, i):
            carry = carry + jaxlite.random.uniform(jaxlite.random.fold_in(key, i))
            return carry, carry
        return lax.scan(step, 0.0, jnp.arange(4))

    def resample_until_positive(key):
        return lax.while_loop(lambda c: c[1] < 0.5,
                              lambda c: (jaxlite.random.split(c[0])[0],
                                         jaxlite.random.uniform(jaxlite.random.split(c[0])[1])),
                              (key, 0.0))[1]

    keys = jaxlite.random.split(jaxlite.random.PRNGKey(1), 4)
    for f in (noisy_walk, resample_until_positive):
        batched = tree_leaves(jaxlite.vmap(f)(keys))
        looped = [np.stack(leaves) for leaves in zip(*(tree_leaves(f(k)) for k in keys))]
        for b, l in zip(batched, looped):
            np.testing.assert_allclose(np.asarray(b), l, rtol=1e-6)
