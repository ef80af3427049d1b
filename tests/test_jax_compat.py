"""The JAX API surface that libraries written for JAX use (issue 21): the install_as_jax
opt-in, key paths of pytrees, ravel_pytree, symbolic zeros, custom_vmap, the extension
interfaces (jax.extend, jax.interpreters), checkify and JAX's keyword arguments.

Expected values are JAX 0.10.2's behaviour (checked in /work/jaxref).
"""
import collections
import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax, tree_util
from jaxlite.custom_batching import custom_vmap
from jaxlite.custom_derivatives import CustomVJPPrimal, SymbolicZero
from jaxlite.experimental import checkify
from jaxlite.extend.core import Primitive, valid_jaxtype
from jaxlite.flatten_util import ravel_pytree
from jaxlite.interpreters import ad, batching, mlir, partial_eval as pe
from jaxlite.test_util import check_grads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          env=env, timeout=120)


# ---------------------------------------------------------------- install_as_jax

def test_install_as_jax_makes_jax_and_its_submodules_jaxlite():
    result = _run("""
        import sys
        import jaxlite
        assert "jax" not in sys.modules                  # never installed by importing jaxlite
        jaxlite.install_as_jax()
        import jax, jax.numpy as jnp, jax.tree_util, jax.core, jax.extend.core
        from jax import lax
        assert jnp is jaxlite.numpy and lax is jaxlite.lax and jax.tree_util is jaxlite.tree_util
        assert jax.jit is jaxlite.jit and jax.Array is jaxlite.Array
        assert jax.core.Tracer is jaxlite.core.Tracer
        assert jax.__version__ == jaxlite.jax_api_version and jax.__version_info__ >= (0, 10)
        assert jax.__jaxlite_version__ == jaxlite.__version__
        assert jaxlite.numpy.__spec__.name == "jaxlite.numpy"   # jaxlite's own modules are untouched
        try:
            import jax.no_such_module
        except ModuleNotFoundError as error:
            assert "jax.no_such_module" in str(error) and "jaxlite" in str(error), error
        else:
            raise AssertionError("imported a module jaxlite does not have")
        print(float(jax.grad(lambda x: jnp.sin(x))(0.0)))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1.0"


def test_install_as_jax_refuses_when_real_jax_is_imported():
    result = _run("""
        import sys, types
        sys.modules["jax"] = types.ModuleType("jax")     # stands for real JAX, imported first
        import jaxlite
        try:
            jaxlite.install_as_jax()
        except RuntimeError as error:
            print(error)
    """)
    assert result.returncode == 0, result.stderr
    assert "already imported" in result.stdout


# ---------------------------------------------------------------- key paths

Point = collections.namedtuple("Point", "x y")


@tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    name: str = dataclasses.field(default="p", metadata={"static": True})


def test_flatten_with_path_gives_jax_key_types():
    tree = {"b": [1, (2, Point(3, 4))], "a": Params(5)}
    pairs, treedef = tree_util.tree_flatten_with_path(tree)
    paths = [path for path, _ in pairs]
    assert [leaf for _, leaf in pairs] == [5, 1, 2, 3, 4]
    assert paths[0] == (tree_util.DictKey("a"), tree_util.GetAttrKey("w"))
    assert paths[4] == (tree_util.DictKey("b"), tree_util.SequenceKey(1), tree_util.SequenceKey(1),
                        tree_util.GetAttrKey("y"))
    assert [tree_util.keystr(p) for p in paths] == [
        "['a'].w", "['b'][0]", "['b'][1][0]", "['b'][1][1].x", "['b'][1][1].y"]
    assert tree_util.keystr(paths[4], simple=True, separator="/") == "b/1/1/y"
    assert treedef == tree_util.tree_structure(tree)
    assert tree_util.tree_leaves_with_path(tree) == pairs


def test_nodes_without_keys_get_flattened_indices_and_with_keys_their_own():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    class Named:
        def __init__(self, a):
            self.a = a

    tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    tree_util.register_pytree_with_keys(Named, lambda n: (((tree_util.GetAttrKey("a"), n.a),), None),
                                        lambda _, c: Named(*c))
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path([Pair(1, 2), Named(3)])]
    assert paths == ["[0][<flat index 0>]", "[0][<flat index 1>]", "[1].a"]
    doubled = tree_util.tree_map_with_path(lambda path, x: (len(path), x * 2), [Pair(1, 2), Named(3)])
    assert (doubled[0].b, doubled[1].a) == ((2, 4), (2, 6))


def test_register_static_partial_and_unhashable_aux_data_pass_through_jit():
    @tree_util.register_static
    class Config:
        def __init__(self, scale):
            self.scale = scale

    class Box:
        def __init__(self, x, meta):
            self.x, self.meta = x, meta

    tree_util.register_pytree_node(Box, lambda b: ((b.x,), b.meta), lambda meta, c: Box(c[0], meta))
    assert tree_util.tree_leaves(Config(2.0)) == []
    apply = jaxlite.jit(lambda p, c, b: p(b.x) * c.scale + len(b.meta))
    partial = tree_util.Partial(jnp.multiply, jnp.float32(3.0))
    assert tree_util.tree_leaves(partial) == [jnp.float32(3.0)]
    assert float(apply(partial, Config(2.0), Box(jnp.float32(1.0), [1, 2]))) == 8.0
    assert float(apply(partial, Config(2.0), Box(jnp.float32(1.0), [1, 2, 3]))) == 9.0  # list aux data


def test_tree_transpose_broadcast_and_structure_helpers():
    outer, inner = tree_util.tree_structure([0, 0]), tree_util.tree_structure((0, 0))
    assert tree_util.tree_transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    assert tree_util.tree_broadcast([1, {"a": 2}], [(3, 4), {"a": [5, 6]}]) == [(1, 1), {"a": [2, 2]}]
    assert tree_util.all_leaves([1, 2]) and not tree_util.all_leaves([1, [2]])
    assert tree_util.flatten_one_level({"b": 1, "a": [2]}) == ([[2], 1], ("a", "b"))
    with pytest.raises(ValueError):
        tree_util.flatten_one_level(1)
    children = tree_util.treedef_children(tree_util.tree_structure((1, [2, 3])))
    assert tree_util.treedef_tuple(children) == tree_util.tree_structure((1, [2, 3]))
    assert tree_util.is_tree_node(list) and tree_util.is_tree_node(Point) and not tree_util.is_tree_node(int)
    assert tree_util.tree_reduce_associative(lambda a, b: a + b, [1, 2, 3, 4, 5]) == 15


# ---------------------------------------------------------------- ravel_pytree

def test_ravel_pytree_round_trips_with_promoted_dtype_and_differentiates():
    tree = {"a": jnp.ones(2, jnp.int32), "b": (jnp.arange(6.0).reshape(2, 3), jnp.float32(7.0))}
    flat, unravel = ravel_pytree(tree)
    assert flat.shape == (9,) and flat.dtype == np.float32      # int32 and float32 promote
    np.testing.assert_array_equal(flat, [1, 1, 0, 1, 2, 3, 4, 5, 7])
    back = unravel(flat)
    assert back["a"].dtype == np.int32 and back["b"][0].shape == (2, 3)
    gradient = jaxlite.grad(lambda v: jnp.sum(unravel(v)["b"][0] ** 2))(flat)
    np.testing.assert_allclose(gradient, [0, 0, 0, 2, 4, 6, 8, 10, 0])
    with pytest.raises(ValueError):
        unravel(jnp.ones(3))
    assert ravel_pytree([])[0].shape == (0,)


# ---------------------------------------------------------------- symbolic zeros

def test_custom_jvp_with_symbolic_zeros_sees_which_tangents_are_zero():
    seen = []

    @jaxlite.custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append(tuple(isinstance(t, SymbolicZero) for t in tangents))
        out = x * y
        tangent = 0.0
        if not isinstance(tx, SymbolicZero):
            tangent = tangent + tx * y
        if not isinstance(ty, SymbolicZero):
            tangent = tangent + ty * x
        return out, tangent

    f.defjvp(f_jvp, symbolic_zeros=True)
    assert float(jaxlite.grad(f)(2.0, 3.0)) == 3.0 and float(jaxlite.grad(f, 1)(2.0, 3.0)) == 2.0
    assert float(jaxlite.jit(jaxlite.grad(f))(2.0, 3.0)) == 3.0
    assert seen[:2] == [(False, True), (True, False)]
    check_grads(lambda x: f(x, x), (1.5,), order=2)


def test_custom_vjp_with_symbolic_zeros_gets_perturbed_flags_and_zero_cotangents():
    perturbed = []

    @jaxlite.custom_vjp
    def f(x, y):
        return x * y, x + y

    def fwd(x, y):
        assert isinstance(x, CustomVJPPrimal)
        perturbed.append((x.perturbed, y.perturbed))
        return f(x.value, y.value), (x.value, y.value)

    def bwd(residuals, cts):
        x, y = residuals
        ct_prod, ct_sum = cts
        ct_sum = 0.0 if isinstance(ct_sum, SymbolicZero) else ct_sum
        return ct_prod * y + ct_sum, ct_prod * x + ct_sum

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    assert float(jaxlite.grad(lambda x: f(x, 3.0)[0])(2.0)) == 3.0
    assert perturbed[-1] == (True, False)
    assert float(jaxlite.jit(jaxlite.grad(lambda x: f(x, x)[0]))(2.0)) == 4.0


# ---------------------------------------------------------------- custom_vmap

def test_custom_vmap_rule_runs_under_vmap_and_the_body_elsewhere():
    calls = []

    @custom_vmap
    def f(x, scale):
        return jnp.sin(x) * scale

    @f.def_vmap
    def rule(axis_size, in_batched, x, scale):
        calls.append((axis_size, in_batched))
        return jnp.sin(x) * scale, in_batched[0] or in_batched[1]

    x = jnp.arange(3.0)
    np.testing.assert_allclose(jaxlite.vmap(f, (0, None))(x, 2.0), np.sin(x) * 2, rtol=1e-6)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.vmap(f, (0, None)))(x, 2.0), np.sin(x) * 2, rtol=1e-6)
    assert calls[0] == (3, [True, False])
    assert float(f(0.5, 2.0)) == pytest.approx(np.sin(0.5) * 2)
    assert float(jaxlite.grad(f)(0.5, 2.0)) == pytest.approx(np.cos(0.5) * 2)


# ---------------------------------------------------------------- extending: primitives from outside

def _cube_primitive():
    """A primitive defined the way equinox and flax define theirs, through JAX's public tables."""
    cube_p = Primitive("test_cube")
    cube_p.def_impl(lambda x: np.asarray(x) ** 3)
    cube_p.def_abstract_eval(lambda aval: aval)
    ad.primitive_jvps[cube_p] = lambda primals, tangents: (cube_p.bind(primals[0]),
                                                           3 * primals[0] ** 2 * ad.instantiate_zeros(tangents[0]))
    batching.primitive_batchers[cube_p] = lambda args, dims: (cube_p.bind(args[0]), dims[0])
    mlir.register_lowering(cube_p, mlir.lower_fun(lambda x: x * x * x, multiple_results=False))
    return cube_p


def test_a_primitive_registered_through_jax_interfaces_works_under_every_transformation():
    cube_p = _cube_primitive()
    cube = cube_p.bind
    x = jnp.arange(4.0)
    np.testing.assert_allclose(cube(x), x ** 3)
    np.testing.assert_allclose(jaxlite.jit(cube)(x), x ** 3)
    np.testing.assert_allclose(jaxlite.vmap(cube)(x), x ** 3)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.vmap(jaxlite.grad(cube)))(x), 3 * x ** 2)


def test_valid_jaxtype_and_partial_eval_of_known_outputs():
    assert valid_jaxtype(1.0) and valid_jaxtype(jnp.ones(2)) and valid_jaxtype(np.int8(3))
    assert not valid_jaxtype("text") and not valid_jaxtype(object())

    def f(x, y):
        return x * 2.0, y + 1.0
    aval = jaxlite.core.ShapedArray((), np.float32)
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(
        f, [pe.PartialVal.unknown(aval), pe.PartialVal.known(jnp.float32(3.0))])
    assert out_pvals[0].get_aval() == aval and not out_pvals[0].is_known()
    assert out_pvals[1].is_known() and float(out_pvals[1].get_known()) == 4.0
    assert len(jaxpr.invars) == 1 and len(jaxpr.outvars) == 1


# ---------------------------------------------------------------- checkify

def test_checkify_reports_the_first_failed_check_through_jit():
    def f(x):
        checkify.check(x > 0, "x must be positive, got {x}", x=x)
        checkify.check(x < 10, "x must be below 10")
        return jnp.log(x)

    checked = jaxlite.jit(checkify.checkify(f))
    error, out = checked(-1.0)
    assert error.get() == "x must be positive, got -1.0 (`check` failed)"
    with pytest.raises(checkify.JaxRuntimeError, match="positive"):
        error.throw()
    error, out = checked(2.0)
    assert error.get() is None and float(out) == pytest.approx(np.log(2.0))
    assert checkify.checkify(f)(jnp.float32(20.0))[0].get() == "x must be below 10 (`check` failed)"
    with pytest.raises(NotImplementedError):
        checkify.checkify(f, errors=checkify.nan_checks)


def test_checkify_collects_checks_of_a_jit_inside_it_and_check_error():
    @jaxlite.jit
    def f(x):
        checkify.check(jnp.all(x > 0), "x must be positive")
        return jnp.log(x)

    checked = checkify.checkify(f)
    error, out = checked(jnp.array([1.0, -1.0]))
    assert error.get() == "x must be positive (`check` failed)"
    assert checked(jnp.ones(2))[0].get() is None
    rechecked = checkify.checkify(lambda x: checkify.check_error(checked(x)[0]))
    assert rechecked(jnp.array([-1.0]))[0].get() == "x must be positive (`check` failed)"
    with pytest.raises(checkify.JaxRuntimeError, match="positive"):
        checkify.check_error(error)


# ---------------------------------------------------------------- JAX's semantics for library code

def test_tracers_are_instances_of_jax_array():
    assert jaxlite.jit(lambda x: isinstance(x, jaxlite.Array) and isinstance(x, jnp.ndarray))(1.0)
    assert jaxlite.grad(lambda x: x * isinstance(x, jaxlite.Array))(1.0) == 1.0
    assert not isinstance(1.0, jaxlite.Array) and not isinstance(np.ones(2), jnp.ndarray)


def test_bool_operands_of_arithmetic_are_logical_as_in_jax():
    b = jnp.array([True, False])
    for result in (b * b, b + b, jnp.maximum(b, b), jnp.minimum(b, b), jaxlite.jit(lambda x: x * x + x)(b)):
        assert result.dtype == np.bool_ and result.tolist() == [True, False]
    assert jnp.sum(b).dtype == np.int32 and int(jnp.sum(b)) == 1 and int(jnp.prod(b)) == 0
    assert (b * 2).dtype == np.int32 and (b * 2).tolist() == [2, 0]
    with pytest.raises(TypeError):
        b - b


def test_broadcast_arrays_broadcasts_rank_zero_inputs():
    shapes = [x.shape for x in jnp.broadcast_arrays(jnp.zeros(()), jnp.zeros((5,)), 1.0)]
    assert shapes == [(5,), (5,), (5,)]


def test_ensure_compile_time_eval_computes_concrete_values_inside_jit():
    def f(x):
        with jaxlite.ensure_compile_time_eval():
            y = jnp.arange(3.0) * 2
            n = int(jnp.sum(y))          # concrete: no ConcretizationTypeError
            z = x * y                    # traced: x is a tracer
        return z + n
    np.testing.assert_allclose(jaxlite.jit(f)(1.0), [6.0, 8.0, 10.0])
    assert float(jaxlite.grad(lambda x: jnp.sum(f(x)))(1.0)) == 6.0


def test_jax_keyword_arguments_are_accepted():
    f = jaxlite.jit(lambda x: x + 1, inline=True, keep_unused=True, backend="cpu",
                    in_shardings=None, out_shardings=None, device=None, compiler_options=None)
    assert float(f(1.0)) == 2.0
    with pytest.raises(RuntimeError, match="cpu"):
        jaxlite.jit(lambda x: x, backend="gpu")
    assert float(jaxlite.grad(jnp.sin, holomorphic=False, reduce_axes=())(0.0)) == 1.0
    np.testing.assert_allclose(jaxlite.vmap(jnp.sin, 0, 0, None, None, None)(jnp.zeros(2)), [0.0, 0.0])
    a = jnp.ones((2, 2))
    np.testing.assert_allclose(jnp.dot(a, a, precision=lax.Precision.HIGHEST), 2 * np.ones((2, 2)))
    np.testing.assert_allclose(jnp.matmul(a, a, precision="highest"), 2 * np.ones((2, 2)))
    assert lax.Precision("highest") is lax.Precision.HIGHEST
    assert float(a.sum(out=None)) == 4.0 and float(a.max(axis=None, out=None)) == 1.0
    with pytest.raises(NotImplementedError, match="out"):
        a.sum(out=a)
    with jaxlite.named_scope("block"):
        assert float(jaxlite.named_call(jnp.cos, name="cosine")(0.0)) == 1.0
    jaxlite.clear_caches()


def test_cond_legacy_operand_forms():
    legacy = lambda p: lax.cond(p, 1.0, lambda x: x + 1, 2.0, lambda x: x * 10)
    assert float(legacy(True)) == 2.0 and float(jaxlite.jit(legacy)(False)) == 20.0
    assert float(lax.cond(True, lambda x: x + 1, lambda x: x * 10, operand=3.0)) == 4.0


def test_typed_keys_are_jax_arrays_and_python_round_works_on_arrays():
    key = jaxlite.random.key(0)
    assert isinstance(key, jaxlite.Array) and jnp.asarray(key) is key
    assert jaxlite.jit(lambda k: isinstance(k, jnp.ndarray))(key)
    rounded = round(jnp.float32(2.6))
    assert rounded.dtype == np.int32 and int(rounded) == 3                 # as JAX
    assert float(round(jnp.float32(2.567), 2)) == pytest.approx(2.57)
