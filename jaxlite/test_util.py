"""Numerical checks for tests: `check_grads` as in jax.test_util, and `check_vmap`.

Forward mode is compared with central differences along a random direction;
reverse mode with the inner-product identity <v, J u> = <J^T v, u>, where J u
comes from central differences and, when forward mode is checked too, from jvp. Higher orders repeat the
checks on the derivative functions themselves. Integer and boolean arguments
(indices, masks) are held fixed: their tangents and cotangents are zero.
"""
import contextlib
import functools

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.array import as_array_argument
from jaxlite.core.tree_util import tree_flatten, tree_map
from jaxlite.transforms.ad import UndefinedPrimal, jvp, tangent_aval, transpose_rules, vjp
from jaxlite.transforms.batching import vmap

# Central differences lose digits to rounding as eps shrinks and gain truncation
# error as it grows; these steps balance the two for each precision.
DEFAULT_EPS = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 1e-3,
               np.dtype(np.float16): 3e-2, np.dtype(dtypes.bfloat16): 1e-1}
DEFAULT_TOL = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 2e-2,
               np.dtype(np.float16): 5e-2, np.dtype(dtypes.bfloat16): 1e-1}


def _dtype_of_args(args):
    """The lowest precision among the inexact leaves (a complex leaf counts as its parts')."""
    leaves = [as_array_argument(x) for x in tree_flatten(args)[0]]
    return min((dtypes.real_dtype(x.dtype) for x in leaves if dtypes.is_inexact(x.dtype)),
               key=lambda d: d.itemsize, default=np.dtype(np.float32))


def _random_like(tree, rng):
    def draw(x):
        x = as_array_argument(x)
        if not dtypes.is_inexact(x.dtype):
            return as_array_argument(np.zeros(x.shape, x.dtype))
        value = rng.standard_normal(x.shape)
        if dtypes.is_complex(x.dtype):
            value = value + 1j * rng.standard_normal(x.shape)
        return as_array_argument(value.astype(x.dtype))
    return tree_map(draw, tree)


def _axpy(a, x, y):
    """y + a * x leafwise, computed in numpy in each leaf's dtype; non-inexact leaves stay y."""
    def one(xi, yi):
        yv = np.asarray(as_array_argument(yi))
        if not dtypes.is_inexact(yv.dtype):
            return yi
        return as_array_argument((yv + a * np.asarray(as_array_argument(xi))).astype(yv.dtype))
    return tree_map(one, x, y)


def _widened(x):
    """x in float64, or complex128 when complex: the precision differences are taken in."""
    x = np.asarray(x)
    return x.astype(np.complex128 if dtypes.is_complex(x.dtype) else np.float64)


def _inner(x, y):
    """The pairing of cotangents with tangents JAX's transposes follow: Re(sum(x * y)), with no
    conjugation (so a cotangent of a complex value is the conjugate of the gradient)."""
    return sum(float(np.real(np.sum(_widened(a) * _widened(b))))
               for a, b in zip(tree_flatten(x)[0], tree_flatten(y)[0]))


def _assert_close(actual, expected, atol, rtol, what):
    actual_leaves, actual_tree = tree_flatten(actual)
    expected_leaves, expected_tree = tree_flatten(expected)
    if actual_tree != expected_tree:
        raise AssertionError(f"{what}: structure {actual_tree} differs from {expected_tree}")
    for a, e in zip(actual_leaves, expected_leaves):
        np.testing.assert_allclose(_widened(a), _widened(e), atol=atol, rtol=rtol, err_msg=what)


def numerical_jvp(f, primals, tangents, eps):
    plus = f(*_axpy(eps, tangents, primals))
    minus = f(*_axpy(-eps, tangents, primals))
    return tree_map(lambda p, m: (_widened(p) - _widened(m)) / (2 * eps), plus, minus)


def check_jvp(f, args, atol, rtol, eps, rng, what="forward mode"):
    tangents = _random_like(args, rng)
    out, out_dot = jvp(f, args, tangents)
    _assert_close(out, f(*args), atol, rtol, f"{what}: primal output of jvp")
    _assert_close(out_dot, numerical_jvp(f, args, tangents, eps), atol, rtol,
                  f"{what}: jvp against central differences")


def check_vjp(f, args, atol, rtol, eps, rng, what="reverse mode", against_jvp=True):
    """<J^T v, u> against <v, J u> by central differences, and by jvp unless told not to
    (a custom_vjp function has no forward mode)."""
    out, vjp_fun = vjp(f, *args)
    _assert_close(out, f(*args), atol, rtol, f"{what}: primal output of vjp")
    u, v = _random_like(args, rng), _random_like(out, rng)
    u_ct = _inner(u, vjp_fun(v))
    scale = np.sqrt(max(_inner(u, u), 1.0) * max(_inner(v, v), 1.0))
    if against_jvp:
        _assert_close(u_ct, _inner(jvp(f, args, u)[1], v), atol * scale, rtol,
                      f"{what}: <J^T v, u> against <v, J u> from jvp")
    _assert_close(u_ct, _inner(numerical_jvp(f, args, u, eps), v), atol * scale, rtol,
                  f"{what}: <J^T v, u> against <v, J u> from central differences")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check derivatives of f at args up to `order`, in the given modes.

    Defaults for eps and tolerances follow the lowest-precision float argument.
    In float16 and bfloat16 the differences are only good for first order;
    check higher orders in float32 or float64.
    """
    dtype = _dtype_of_args(args)
    atol = DEFAULT_TOL[dtype] if atol is None else atol
    rtol = DEFAULT_TOL[dtype] if rtol is None else rtol
    eps = DEFAULT_EPS[dtype] if eps is None else eps
    rng = np.random.default_rng(0)
    _check_grads(f, tuple(args), order, modes, atol, rtol, eps, rng, "")


def _check_grads(f, args, order, modes, atol, rtol, eps, rng, context):
    if "fwd" in modes:
        what = f"order-{order} forward mode{context}"
        check_jvp(f, args, atol, rtol, eps, rng, what)
        if order > 1:
            _check_grads(functools.partial(jvp, f), (args, args), order - 1, modes,
                         atol, rtol, eps, rng, f" of {what}")
    if "rev" in modes:
        what = f"order-{order} reverse mode{context}"
        check_vjp(f, args, atol, rtol, eps, rng, what, against_jvp="fwd" in modes)
        if order > 1:
            def f_vjp(*primals):
                out, vjp_fun = vjp(f, *primals)
                return vjp_fun(out)
            _check_grads(f_vjp, args, order - 1, modes, atol, rtol, eps, rng, f" of {what}")


def fallback_steps(fun, *args):
    """The primitives jit(fun)(*args) runs with their numpy implementation between native
    kernels (an empty list when the whole program runs natively)."""
    from jaxlite.lower.fusion import EqnStep
    from jaxlite.transforms.jit import jit
    steps = jit(fun).lower(*args).program.steps
    return [s.eqn.primitive.name for s in steps if isinstance(s, EqnStep) and s.kind == "fallback"]


def check_vmap(f, args, in_axes=0, atol=1e-6, rtol=1e-6):
    """vmap(f) over in_axes equals f applied to each slice of the batched arguments,
    with the results stacked along axis 0."""
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    size = next(np.shape(a)[d] for a, d in zip(args, axes) if d is not None)
    rows = [f(*[a if d is None else np.take(a, i, axis=d) for a, d in zip(args, axes)])
            for i in range(size)]
    stacked = tree_map(lambda *leaves: np.stack([np.asarray(leaf) for leaf in leaves]), *rows)
    _assert_close(vmap(f, in_axes=axes)(*args), stacked, atol, rtol, "vmap against a loop")


def check_transpose(primitive, args, linear, params, atol=1e-6, rtol=1e-6, seed=1):
    """The transpose rule of `primitive`, linear in the argument positions `linear`:
    <ct, p(x)> = sum_i <ct_i, x_i> for random x_i there and a random ct.

    For rules no JVP emits, which check_grads's reverse mode therefore never reaches.
    """
    rng = np.random.default_rng(seed)
    args = [as_array_argument(a) for a in args]
    xs = {i: _random_like(args[i], rng) for i in linear}
    out = primitive.bind(*[xs.get(i, a) for i, a in enumerate(args)], **params)
    ct = _random_like(out, rng)
    undefined = [UndefinedPrimal(tangent_aval(a.aval)) if i in xs else a for i, a in enumerate(args)]
    cts = transpose_rules[primitive](ct, *undefined, **params)
    _assert_close(_inner(ct, out), sum(_inner(cts[i], xs[i]) for i in linear), atol, rtol,
                  f"transpose of {primitive.name}: <ct, p(x)> against <p^T(ct), x>")


@contextlib.contextmanager
def enable_x64():
    """64-bit mode inside a block (for float64 gradient checks with tight tolerances)."""
    from jaxlite.core.config import config
    previous = config.read("jax_enable_x64")
    config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        config.update("jax_enable_x64", previous)


def _raw_bits(x):
    """The raw bits, so NaN payloads and the signs of zeros and NaNs are compared too."""
    x = np.ascontiguousarray(x)
    if x.dtype.kind == "c":     # its parts' bits (numpy has no 128-bit unsigned integers)
        x = x.view(x.real.dtype)
    return x.view(f"u{x.dtype.itemsize}") if x.dtype != np.bool_ else x


def assert_same_bits(got, want):
    """Equal trees of arrays: dtypes, shapes and every bit."""
    got, want = tree_flatten(got)[0], tree_flatten(want)[0]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(_raw_bits(g), _raw_bits(w))


def assert_jit_matches_eager_bits(fun, *args):
    from jaxlite.transforms.jit import jit
    assert_same_bits(jit(fun)(*args), fun(*args))


def cache_hits_in_a_second_process(script, cache_dir):
    """Run `script` (formatted with cache=cache_dir; it prints disk_cache's hits last) in two
    fresh processes, one after the other; the hits the second one reports."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    runs = [subprocess.run([sys.executable, "-c", script.format(cache=str(cache_dir))], capture_output=True,
                           text=True, env=env, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    return int(runs[1].stdout.split()[-1])


def jit_twice_through_the_disk_cache(fun, args, cache_dir):
    """(first, second): jit(fun)(*args) compiled into the persistent cache at `cache_dir`, then
    again with the in-memory caches cleared, which must load it from the disk cache."""
    from jaxlite.core.config import config
    from jaxlite.lower import disk_cache
    from jaxlite.transforms import jit as jit_module
    previous = config.jax_compilation_cache_dir
    config.update("jax_compilation_cache_dir", str(cache_dir))
    try:
        jit_module.clear_caches()
        first = np.asarray(jit_module.jit(fun)(*args))
        jit_module.clear_caches()
        hits = disk_cache.stats["hits"]
        second = np.asarray(jit_module.jit(fun)(*args))
        assert disk_cache.stats["hits"] > hits, "the second compile did not load from the disk cache"
    finally:
        config.update("jax_compilation_cache_dir", previous)
        jit_module.clear_caches()
    return first, second


def define_map_kernel(module, name, emitter, in_type, out_type=None, arity=1):
    """Define `void name(in_type* in_0, ..., out_type* out, i64 n)` computing
    out[i] = emitter(builder, in_0[i], ...); the types may be scalars or vectors (a loop the
    tests and benchmarks run llvm_math's emitters in)."""
    from llvmlite import ir
    from jaxlite.lower import llvm_target
    from jaxlite.lower.llvm_helpers import I64, emit_loop
    out_type = out_type or in_type
    pointer_types = [ir.PointerType(in_type)] * arity + [ir.PointerType(out_type)]
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), pointer_types + [I64]), name)
    llvm_target.add_function_attributes(function)
    for argument in function.args[:-1]:
        argument.add_attribute("noalias")
    *inputs, output, n = function.args
    builder = ir.IRBuilder(function.append_basic_block("entry"))

    def element(index):
        # Element alignment only: numpy buffers are not aligned to whole vectors.
        values = [builder.load(builder.gep(pointer_in, [index], inbounds=True),
                               align=_element_bytes(in_type)) for pointer_in in inputs]
        builder.store(emitter(builder, *values), builder.gep(output, [index], inbounds=True),
                      align=_element_bytes(out_type))
    emit_loop(builder, 0, n, element)
    builder.ret_void()
    return function


def _element_bytes(ty):
    element = getattr(ty, "element", ty)      # a vector's element type
    return {"float": 4, "double": 8}.get(str(element)) or element.width // 8
