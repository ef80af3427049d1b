"""Derivatives of every lax primitive and the jnp functions, checked numerically
to second order in forward and reverse mode, plus compositions of transforms."""
import importlib
import pkgutil

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.ir import typecheck
from jaxlite.core.primitive import Primitive
from jaxlite.test_util import check_grads, numerical_jvp
from jaxlite.transforms import ad


pytestmark = pytest.mark.usefixtures("enable_x64")   # gradient checks in float64


def uniform(lo, hi, shape=(3,), seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def normal(shape=(3,), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def complex_normal(shape=(3,), seed=0):
    return normal(shape, seed) + 1j * normal(shape, seed + 1)


def distinct(shape=(2, 3), seed=0):
    """Values at least 0.1 apart, so max/min and sorting are differentiable there."""
    values = np.random.default_rng(seed).permutation(int(np.prod(shape))) * 0.1 + 0.05
    return values.reshape(shape)


def spd(n=3, seed=0):
    """A symmetric positive definite matrix, well away from singular."""
    a = normal((n, n), seed)
    return a @ a.T + n * np.eye(n)


def well_conditioned(shape=(3, 3), seed=0):
    """A matrix dominated by its diagonal: its LU pivots never change under small steps."""
    return normal(shape, seed) + 3 * np.eye(*shape[-2:])


MASK = np.array([True, False, True])
ROWS = np.array([[2], [0], [2]], np.int32)        # a repeated row: scatters combine there
UNIQUE_ROWS = np.array([[2], [0]], np.int32)
OUT_OF_BOUNDS_ROWS = np.array([[2], [5], [-1], [0]], np.int32)
GATHER_ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,))
SCATTER_ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,))


def scatter_case(scatter, operand, updates, indices=ROWS, mode=None):
    return (lambda x, u: scatter(x, indices, u, SCATTER_ROWS, mode=mode), [operand, updates])


def window_case(reducer, init, x, strides=(1, 2), padding="SAME", **dilations):
    return (lambda x: lax.reduce_window(x, init, reducer, (2, 2), strides, padding, **dilations), [x])


# primitive name -> (function of arrays, argument values). Every differentiable
# primitive of jaxlite.lax appears here (see test_every_primitive_is_checked).
PRIMITIVE_CASES = {
    "add": (lax.add, [normal(), normal(seed=1)]),
    "add_any": (lax.add_any, [normal(), normal(seed=1)]),
    "sub": (lax.sub, [normal(), normal(seed=1)]),
    "mul": (lax.mul, [normal(), normal(seed=1)]),
    "div": (lax.div, [normal(), uniform(1, 2)]),
    "rem": (lax.rem, [uniform(4.1, 4.3), uniform(1.9, 2.0, seed=1)]),
    "pow": (lax.pow, [uniform(0.5, 2), uniform(0.5, 2, seed=1)]),
    "max": (lax.max, [distinct((3,)), distinct((3,), seed=1) + 0.02]),
    "min": (lax.min, [distinct((3,)), distinct((3,), seed=1) + 0.02]),
    "atan2": (lax.atan2, [uniform(0.5, 2), uniform(0.5, 2, seed=1)]),
    "neg": (lax.neg, [normal()]),
    "conj": (lax.conj, [complex_normal()]),
    "real": (lax.real, [complex_normal()]),
    "imag": (lax.imag, [complex_normal()]),
    "complex": (lax.complex, [normal(), normal(seed=1)]),
    "sign": (lax.sign, [uniform(0.5, 1) * np.array([1, -1, 1])]),
    "floor": (lax.floor, [uniform(0.2, 0.8)]),
    "ceil": (lax.ceil, [uniform(0.2, 0.8)]),
    "round": (lax.round, [uniform(0.2, 0.4)]),
    "abs": (lax.abs, [uniform(0.5, 1) * np.array([1, -1, 1])]),
    "square": (lax.square, [normal()]),
    "integer_pow": (lambda x: lax.integer_pow(x, 3) + lax.integer_pow(x, -2) + lax.integer_pow(x, 0),
                    [uniform(0.5, 2)]),
    "exp": (lax.exp, [normal()]),
    "exp2": (lax.exp2, [normal()]),
    "log": (lax.log, [uniform(0.5, 2)]),
    "log1p": (lax.log1p, [uniform(0.0, 2)]),
    "expm1": (lax.expm1, [normal()]),
    "sqrt": (lax.sqrt, [uniform(0.5, 2)]),
    "rsqrt": (lax.rsqrt, [uniform(0.5, 2)]),
    "cbrt": (lax.cbrt, [uniform(0.5, 2)]),
    "tanh": (lax.tanh, [normal()]),
    "logistic": (lax.logistic, [normal()]),
    "sin": (lax.sin, [normal()]),
    "cos": (lax.cos, [normal()]),
    "select_n": (lambda x, y: lax.select_n(MASK, x, y), [normal(), normal(seed=1)]),
    "convert_element_type": (lambda x: lax.convert_element_type(x, np.float32) * 2,
                             [normal().astype(np.float32)]),
    "reduce_sum": (lambda x: lax.reduce_sum(x, (1,)), [normal((2, 3))]),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (0,)), [uniform(0.5, 2, (2, 3))]),
    "reduce_max": (lambda x: lax.reduce_max(x, (1,)), [distinct()]),
    "reduce_min": (lambda x: lax.reduce_min(x, (0,)), [distinct()]),
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1,)), [normal()]),
    "reshape": (lambda x: lax.reshape(x, (3, 2), dimensions=(1, 0)), [normal((2, 3))]),
    "transpose": (lambda x: lax.transpose(x, (1, 0)), [normal((2, 3))]),
    "squeeze": (lambda x: lax.squeeze(x, (1,)), [normal((3, 1))]),
    "rev": (lambda x: lax.rev(x, (1,)), [normal((2, 3))]),
    "slice": (lambda x: lax.slice(x, (0, 1), (2, 5), (1, 2)), [normal((2, 5))]),
    "pad": (lambda x, v: lax.pad(x, v, ((1, -1, 1), (0, 2, 0))), [normal((3, 2)), np.float64(0.5)]),
    "concatenate": (lambda x, y: lax.concatenate([x, y], 1), [normal((2, 3)), normal((2, 1))]),
    "dot_general": (lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                    [normal((2, 3, 4)), normal((2, 4, 5), seed=1)]),
    "tan": (lax.tan, [uniform(-1, 1)]),
    "asin": (lax.asin, [uniform(-0.8, 0.8)]),
    "acos": (lax.acos, [uniform(-0.8, 0.8)]),
    "atan": (lax.atan, [normal()]),
    "sinh": (lax.sinh, [normal()]),
    "cosh": (lax.cosh, [normal()]),
    "asinh": (lax.asinh, [normal()]),
    "acosh": (lax.acosh, [uniform(1.5, 3)]),
    "atanh": (lax.atanh, [uniform(-0.8, 0.8)]),
    "erf": (lax.erf, [normal()]),
    "erfc": (lax.erfc, [normal()]),
    "erf_inv": (lax.erf_inv, [uniform(-0.8, 0.8)]),
    # Steps of 2**-50 relative, far below the differences' eps: its derivative (as JAX
    # defines it, reduce_precision of the tangent) is the identity's.
    "reduce_precision": (lambda x: lax.reduce_precision(x, 11, 50), [normal()]),
    "lgamma": (lax.lgamma, [uniform(0.5, 3)]),
    "digamma": (lax.digamma, [uniform(0.5, 3)]),
    "polygamma": (lambda x: lax.polygamma(1, x), [uniform(0.5, 3)]),
    "cumsum": (lambda x: lax.cumsum(x, axis=1), [normal((2, 3))]),
    # All four transforms, real in and out: RFFT, FFT of its last axis, IFFT of both, IRFFT.
    "fft": (lambda x: lax.fft(lax.fft(lax.fft(lax.fft(x, "rfft", (3, 6)), "fft", (4,)), "ifft", (3, 4)),
                              "irfft", (3, 6)) * x, [normal((2, 3, 6))]),
    "cumprod": (lambda x: lax.cumprod(x, axis=0, reverse=True), [uniform(0.5, 2, (3, 2))]),
    "cummax": (lambda x: lax.cummax(x, axis=1), [distinct()]),
    "cummin": (lambda x: lax.cummin(x, axis=1, reverse=True), [distinct()]),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, axis=0), [normal((3, 2))]),
    "psum": (jaxlite.vmap(lambda x: lax.psum(jnp.sin(x), "i") * x, axis_name="i"), [normal((3, 2))]),
    "pmax": (jaxlite.vmap(lambda x: lax.pmax(x, "i") * x, axis_name="i"), [distinct((3, 2))]),
    "pmin": (jaxlite.vmap(lambda x: lax.pmin(x, "i"), axis_name="i"), [distinct((3, 2))]),
    "all_gather": (jaxlite.vmap(lambda x: lax.all_gather(x, "i") * x, axis_name="i"), [normal((3, 2))]),
    "cond": (lambda x, y: lax.cond(jnp.sum(x) > 0, lambda a, b: jnp.sin(a) * b,
                                   lambda a, b: a * b * b, x, y),
             [uniform(0.1, 1), normal(seed=1)]),
    "scan": (lambda h, w, xs: lax.scan(lambda c, x: (jnp.tanh(w * c + x), c * x), h, xs),
             [normal((2,)), normal((2,), seed=1), normal((4, 2), seed=2)]),
    "fma": (lax.fma, [normal(), normal(seed=1), normal(seed=2)]),
    "gather": (lambda x: lax.gather(x, ROWS, GATHER_ROWS, (1, 2)), [normal((3, 2))]),
    # Unique rows: which of several writes to one row survives is unspecified.
    "scatter": scatter_case(lax.scatter, normal((3, 2)), normal((2, 2), seed=1), UNIQUE_ROWS),
    "scatter-add": scatter_case(lax.scatter_add, normal((3, 2)), normal((3, 2), seed=1)),
    "scatter-mul": scatter_case(lax.scatter_mul, normal((3, 2)), normal((3, 2), seed=1)),
    "scatter-min": scatter_case(lax.scatter_min, distinct((3, 2)), distinct((3, 2), seed=1) + 0.02),
    "scatter-max": scatter_case(lax.scatter_max, distinct((3, 2)), distinct((3, 2), seed=1) + 0.02),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (1, 0), (2, 2)), [normal((3, 2))]),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(x, u, (1, 0)),
                             [normal((3, 2)), normal((2, 2), seed=1)]),
    "sort": (lambda x, y: lax.sort((x, y), dimension=1), [distinct(), normal((2, 3), seed=1)]),
    "top_k": (lambda x: lax.top_k(x, 2)[0], [distinct()]),
    "reduce_window_sum": window_case(lax.add, 0.0, normal((3, 4))),
    "reduce_window_max": window_case(lax.max, -np.inf, distinct((3, 4))),
    "reduce_window_min": window_case(lax.min, np.inf, distinct((3, 4))),
    "conv_general_dilated": (lambda x, w: lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2),
                                                                   feature_group_count=2),
                             [normal((1, 4, 5, 4)), normal((2, 2, 2, 2), seed=1)]),
    "conv_patches": (lambda x: lax.convolution.conv_patches(x, (2, 2), (1, 2), (2, 1), 1),
                     [normal((2, 6, 5, 3))]),
    "cholesky": (lax.cholesky, [spd()]),
    "zeta": (lax.zeta, [uniform(2, 4), uniform(0.5, 2, seed=1)]),
    # Their partials (and the partials' partials) are values iterated to convergence, so
    # reverse mode reaches second order without transposing a while_loop.
    "igamma": (lax.igamma, [uniform(1.5, 3), uniform(0.5, 2, seed=1)]),
    "igammac": (lax.igammac, [uniform(1.5, 3), uniform(0.5, 2, seed=1)]),
    "regularized_incomplete_beta": (lax.betainc, [uniform(1.5, 3), uniform(1.5, 3, seed=1),
                                                  uniform(0.2, 0.8, seed=2)]),
    "bessel_i0e": (lax.bessel_i0e, [uniform(0.5, 3)]),
    "bessel_i1e": (lax.bessel_i1e, [uniform(0.5, 3)]),
    "ragged_dot_general": (lambda a, b: lax.ragged_dot(a, b, np.array([2, 1], np.int32)),
                           [normal((4, 3)), normal((2, 3, 2), seed=1)]),
    "custom_linear_solve": (lambda a, b: lax.custom_linear_solve(
        lambda x: a @ x, b, lambda m, x: jnp.linalg.solve(a, x), lambda m, x: jnp.linalg.solve(a.T, x)),
        [spd() + normal((3, 3), seed=2), normal()]),
    "triangular_solve": (lambda a, b: lax.triangular_solve(a, b, left_side=True, lower=True),
                         [well_conditioned(), normal((3, 2), seed=1)]),
    "lu": (lambda a: lax.lu(a)[0], [well_conditioned()]),
    # Singular values only: the signs of u and v are arbitrary (tests/test_linalg.py checks them).
    "svd": (lambda a: lax.linalg.svd(a, compute_uv=False), [normal((4, 3))]),
    # Eigenvalues and sign-free eigenvector functions; qr's factors are unique (LAPACK's signs).
    "eigh": (lambda a: (lambda v, w: (w, (v * v * np.arange(1.0, 4.0)).sum(-1)))(*lax.linalg.eigh(a)), [spd()]),
    "qr": (lambda a: lax.linalg.qr(a, full_matrices=False), [well_conditioned((4, 3))]),
    "qr_pivoted": (lambda a: lax.linalg.qr(a, pivoting=True)[:2], [well_conditioned((4, 3))]),
}

# More parameters of the primitives above: modes, layouts, dilations, batch axes.
VARIANT_CASES = {
    "conj_of_real": (lax.conj, [normal()]),
    "gather_fill_out_of_bounds": (lambda x: lax.gather(x, OUT_OF_BOUNDS_ROWS, GATHER_ROWS, (1, 2),
                                                       mode="fill", fill_value=0.0), [normal((3, 2))]),
    "gather_clip": (lambda x: lax.gather(x, OUT_OF_BOUNDS_ROWS, GATHER_ROWS, (1, 2), mode="clip"),
                    [normal((3, 2))]),
    "scatter_add_drop": scatter_case(lax.scatter_add, normal((3, 2)), normal((4, 2), seed=1),
                                     OUT_OF_BOUNDS_ROWS, mode="drop"),
    "scatter_repeated_rows": scatter_case(lax.scatter, normal((3, 2)), normal((3, 2), seed=1)),
    "dynamic_slice_traced_clamped_start": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 2)),
                                           [normal((3, 2)), np.int32(2)]),
    "sort_two_keys": (lambda y, z: lax.sort((jnp.asarray(np.array([[1., 2, 1], [1, 0, 3]])), y, z),
                                            dimension=0, num_keys=2)[1:],
                      [distinct((2, 3)), normal((2, 3))]),
    "top_k_with_indices": (lambda x: lax.top_k(x, 3), [distinct((2, 4))]),
    "reduce_window_sum_dilated": window_case(lax.add, 0.0, normal((3, 4)), (2, 1), ((1, 0), (0, 1)),
                                             base_dilation=(2, 1), window_dilation=(1, 2)),
    "reduce_window_max_dilated": window_case(lax.max, -np.inf, distinct((3, 4)), (2, 1), ((1, 0), (0, 1)),
                                             window_dilation=(1, 2)),
    "conv_lhs_dilation_nwc": (lambda x, w: lax.conv_general_dilated(
        x, w, (1,), ((1, 2),), lhs_dilation=(2,), dimension_numbers=("NWC", "WIO", "NWC")),
        [normal((2, 4, 3)), normal((3, 3, 2), seed=1)]),
    "conv_batch_groups": (lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID", batch_group_count=2),
                          [normal((4, 2, 5)), normal((4, 2, 2), seed=1)]),
    "cholesky_batched": (lax.cholesky, [np.stack([spd(), spd(seed=1)])]),
    "triangular_solve_right_transposed": (
        lambda a, b: lax.triangular_solve(a, b, left_side=False, lower=False, transpose_a=True),
        [well_conditioned(), normal((2, 3), seed=1)]),
    "triangular_solve_unit_diagonal": (
        lambda a, b: lax.triangular_solve(a, b, left_side=True, lower=True, unit_diagonal=True),
        [well_conditioned(), normal((3, 2), seed=1)]),
    "lu_wide": (lambda a: lax.lu(a)[0], [well_conditioned((2, 3))]),
    "lu_tall": (lambda a: lax.lu(a)[0], [well_conditioned((3, 2))]),
    "lu_batched": (lambda a: lax.lu(a)[0], [well_conditioned((2, 3, 3))]),
}

def _on_one_process(f, check_vma=True, out_spec=None):
    """f inside shard_map over a one-process mesh axis 'i', where collectives are mesh collectives."""
    from jaxlite.sharding import PartitionSpec as P
    mesh = jaxlite.make_mesh((1,), ("i",))
    return jaxlite.shard_map(f, mesh=mesh, in_specs=P(), out_specs=P() if out_spec is None else out_spec,
                             check_vma=check_vma)


def _mesh_collective(primitive, **params):
    from jaxlite.transforms import batching
    return lambda v: batching.axis_binder("i").collective(primitive, v, "i", **params)


def _process_collective_cases():
    from jaxlite.lax import process_collectives as pc
    from jaxlite.sharding import PartitionSpec as P
    return {
        "process_reduce": (_on_one_process(lambda v: lax.psum(v, "i") * lax.pmax(v, "i")), [normal()]),
        "process_all_gather": (_on_one_process(lambda v: lax.all_gather(v, "i"), check_vma=False), [normal()]),
        "process_psum_scatter": (_on_one_process(_mesh_collective(pc.process_psum_scatter_p), check_vma=False),
                                 [normal((1, 3))]),
        "process_all_to_all": (_on_one_process(_mesh_collective(pc.process_all_to_all_p), check_vma=False),
                               [normal((1, 3))]),
        "process_ppermute": (_on_one_process(_mesh_collective(pc.process_ppermute_p, perm=((0, 0),)),
                                             check_vma=False), [normal()]),
        "pvary": (_on_one_process(lambda w, x: w * x, out_spec=P("i")), [normal(), normal(seed=1)]),
        "replicated_output": (_on_one_process(lambda v: jnp.sin(v), check_vma=False), [normal()]),
    }


def _over_lanes(f):
    return lambda x: jaxlite.vmap(f, axis_name="i")(x)


PRIMITIVE_CASES.update(_process_collective_cases())
PRIMITIVE_CASES.update({
    "ppermute": (_over_lanes(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2)])), [normal((3, 2))]),
    "psum_scatter": (_over_lanes(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True)),
                     [normal((2, 3, 4))]),
    "all_to_all": (_over_lanes(lambda v: lax.all_to_all(v, "i", 0, 1)), [normal((2, 2, 3))]),
})

# Checked in forward mode only, and why.
# First order only: eig's JVP needs the eigenvectors, whose own JVP asks for enable_eigvec_derivs
# (second order raises in JAX too).
FIRST_ORDER_CASES = {
    "eig": (lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0],
            [well_conditioned()]),
}

FORWARD_ONLY_CASES = {
    # Its second derivative (igamma's third) is a forward-mode pass through while_loops, whose
    # reverse mode does not exist; its first derivative is a value, so reverse first order works.
    "igamma_grad_a": (lax.igamma_grad_a, [uniform(1.5, 3), uniform(0.5, 2, seed=1)]),
    # Reverse mode of while raises JAX's error (see test_grad_of_while_loop).
    "while": (lambda x: lax.while_loop(lambda c: c[0] < 5.0, lambda c: (c[0] * 2.0, jnp.sin(c[1]) * c[0]),
                                       (x[0], x)), [uniform(0.5, 1)]),
}

# Primitives with no case above, and why.
NOT_CHECKED_NUMERICALLY = {
    "nextafter": "defined to have a zero derivative (as in JAX), though its values move with x",
    "stop_gradient": "zero derivative by definition; see test_stop_gradient",
    "is_finite": "boolean output",
    "not": "integer or boolean operands",
    "and": "integer or boolean operands",
    "or": "integer or boolean operands",
    "xor": "integer or boolean operands",
    "eq": "boolean output", "ne": "boolean output", "lt": "boolean output",
    "le": "boolean output", "gt": "boolean output", "ge": "boolean output",
    "reduce_and": "integer or boolean operands", "reduce_or": "integer or boolean operands",
    "reduce_xor": "integer or boolean operands",
    "argmax": "integer output", "argmin": "integer output",
    "bitcast_convert_type": "reinterprets bits: zero derivative by definition",
    "iota": "takes no operands",
    "shift_left": "integer operands", "shift_right_logical": "integer operands",
    "shift_right_arithmetic": "integer operands", "population_count": "integer operands",
    "clz": "integer operands",
    "axis_index": "integer output and no operands",
    "process_axis_index": "integer output and no operands",
    "threefry2x32": "a hash of uint32 words: integer operands and outputs",
    "mulhi": "integer operands",
    "rng_bit_generator": "integer key and bits",
    "rng_uniform": "stateful draws (no JVP rule, as in JAX)",
    "create_token": "a token holds no values: zero derivative", "after_all": "tokens: see create_token",
    "dce_sink": "no results",
}

# Primitives without a JVP rule, and why.
NO_JVP_RULE = {
    "iota": "takes no operands, so no tangent can ever reach it",
    "rng_uniform": "stateful draws between two bounds: JAX defines no derivative for them either",
    "geqrf": "LAPACK's packed Householder form: JAX defines no derivative for it either (qr has its own)",
    "composite": "JAX defines no derivative for lax.composite either (wrap it in custom_jvp)",
}


def lax_primitives():
    """Every Primitive object defined in a module of jaxlite.lax."""
    found = {}
    for info in pkgutil.iter_modules(lax.__path__):
        module = importlib.import_module(f"jaxlite.lax.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Primitive):
                found[value.name] = value
    return found


@pytest.mark.parametrize("name", sorted(PRIMITIVE_CASES) + sorted(VARIANT_CASES))
def test_primitive_gradients(name):
    fun, args = {**PRIMITIVE_CASES, **VARIANT_CASES}[name]
    check_grads(fun, [jnp.asarray(a) for a in args], order=2)


@pytest.mark.parametrize("name", sorted(FIRST_ORDER_CASES))
def test_primitive_first_order_gradients(name):
    fun, args = FIRST_ORDER_CASES[name]
    check_grads(fun, [jnp.asarray(a) for a in args], order=1)


@pytest.mark.parametrize("name", sorted(FORWARD_ONLY_CASES))
def test_primitive_forward_mode_gradients(name):
    fun, args = FORWARD_ONLY_CASES[name]
    check_grads(fun, [jnp.asarray(a) for a in args], order=2, modes=("fwd",))


def test_every_primitive_has_a_jvp_rule():
    missing = [name for name, p in lax_primitives().items()
               if p not in ad.jvp_rules and name not in NO_JVP_RULE]
    assert not missing, f"primitives without a JVP rule (add one or list in NO_JVP_RULE): {missing}"


def test_every_primitive_is_checked():
    """A primitive with a nonzero derivative must have a numerical check."""
    checked = {**PRIMITIVE_CASES, **FIRST_ORDER_CASES, **FORWARD_ONLY_CASES, **NOT_CHECKED_NUMERICALLY, **NO_JVP_RULE}
    unchecked = [name for name in lax_primitives() if name not in checked]
    assert not unchecked, f"add a case to PRIMITIVE_CASES or explain in NOT_CHECKED_NUMERICALLY: {unchecked}"
    zero_rules = [name for name in NOT_CHECKED_NUMERICALLY if name in lax_primitives()
                  and not getattr(ad.jvp_rules.get(lax_primitives()[name]), "zero_derivative", False)
                  and name not in ("iota", "axis_index", "process_axis_index", "rng_uniform")]
    assert not zero_rules, f"excluded primitives must have zero-derivative rules: {zero_rules}"


def test_linear_primitives_have_transpose_rules():
    """Every primitive the JVPs emit on tangents must be transposable."""
    missing = set()
    for fun, args in [*PRIMITIVE_CASES.values(), *VARIANT_CASES.values()]:
        _, f_jvp = jaxlite.linearize(fun, *[jnp.asarray(a) for a in args])
        linear = typecheck(jaxlite.make_jaxpr(f_jvp)(*[jnp.asarray(a) for a in args]))
        missing |= {e.primitive.name for e in linear.eqns if e.primitive not in ad.transpose_rules}
    assert not missing


# ---------------------------------------------------------------- jnp functions

JNP_CASES = {
    "sum": (lambda x: jnp.sum(x, axis=1), [normal((2, 3))]),
    "mean": (lambda x: jnp.mean(x, axis=0), [normal((2, 3))]),
    "var": (jnp.var, [normal((2, 3))]),
    "std": (lambda x: jnp.std(x, axis=1), [normal((2, 3))]),
    "prod": (jnp.prod, [uniform(0.5, 2, (2, 3))]),
    "max": (lambda x: jnp.max(x, axis=1), [distinct()]),
    "min": (jnp.min, [distinct()]),
    "matmul": (jnp.matmul, [normal((2, 3)), normal((3, 4), seed=1)]),
    "matmul_batched": (jnp.matmul, [normal((2, 2, 3)), normal((3,), seed=1)]),
    "dot": (jnp.dot, [normal((3,)), normal((3, 2), seed=1)]),
    "broadcasting_arith": (lambda x, y: (x + y) * x / (y * y + 1) - 2.0 * x, [normal((2, 3)), normal((3,))]),
    "power": (jnp.power, [uniform(0.5, 2), uniform(0.5, 2, seed=1)]),
    "power_int": (lambda x: x ** 3, [normal()]),
    "reciprocal": (jnp.reciprocal, [uniform(0.5, 2)]),
    "maximum": (jnp.maximum, [distinct((3,)), distinct((3,), seed=1) + 0.02]),
    "arctan2": (jnp.arctan2, [uniform(0.5, 2), uniform(0.5, 2, seed=1)]),
    "shape_ops": (lambda x: jnp.swapaxes(jnp.expand_dims(jnp.ravel(x), 0), 0, 1).reshape(2, 3).T,
                  [normal((2, 3))]),
    "moveaxis": (lambda x: jnp.moveaxis(x, 0, 2), [normal((2, 3, 1))]),
    "concatenate_stack": (lambda x, y: jnp.stack([jnp.concatenate([x, y]), y[::-1].repeat(2)
                                                  if hasattr(y, "repeat") else jnp.concatenate([y, y])]),
                          [normal((2,)), normal((2,), seed=1)]),
    "indexing": (lambda x: x[1:, ::2] * x[0, 1], [normal((3, 4))]),
    "at_set": (lambda x, y: x.at[1].set(y).at[0].add(y), [normal((3, 2)), normal((2,), seed=1)]),
    "transcendental": (lambda x: jnp.exp(jnp.sin(x)) * jnp.log1p(x * x) + jnp.tanh(x) * jnp.sqrt(x * x + 1),
                       [normal()]),
}


@pytest.mark.parametrize("name", sorted(JNP_CASES))
def test_jnp_gradients(name):
    fun, args = JNP_CASES[name]
    check_grads(fun, [jnp.asarray(a) for a in args], order=2)


# ---------------------------------------------------------------- special points

def test_reduce_prod_with_zeros():
    for values in ([2.0, 0.0, 3.0], [0.0, 0.0, 3.0]):
        x = jnp.asarray(np.array(values))
        g = jaxlite.grad(lambda x: lax.reduce_prod(x, (0,)))(x)
        expected = [np.prod(np.delete(values, i)) for i in range(3)]
        np.testing.assert_allclose(np.asarray(g), expected)
        check_grads(lambda x: lax.reduce_prod(x, (0,)), (x,), order=3)


def test_max_ties_share_the_gradient():
    g = jaxlite.grad(lambda x: lax.max(x, x) + lax.reduce_max(jnp.stack([x, x]), (0,)))(2.0)
    assert float(g) == 2.0


def test_stop_gradient():
    x = jnp.asarray(normal())
    g = jaxlite.grad(lambda x: jnp.sum(x * lax.stop_gradient(x)))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(x))
    tree = lax.stop_gradient({"a": x, "n": jnp.asarray(np.int32(3))})
    assert tree["n"].dtype == np.int32
    batched = jaxlite.vmap(lax.stop_gradient)(jnp.ones((2, 3)))
    assert batched.shape == (2, 3)
    assert "stop_gradient" in str(jaxlite.make_jaxpr(lax.stop_gradient)(x))


# ---------------------------------------------------------------- compositions

def f_scalar(x):
    return jnp.sum(jnp.sin(x) * jnp.exp(x * 0.5) + x ** 3)


def numerical_hessian(f, x, eps=1e-4):
    x = np.asarray(x, np.float64)
    columns = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        gp = np.asarray(jaxlite.grad(f)(jnp.asarray(x + e)))
        gm = np.asarray(jaxlite.grad(f)(jnp.asarray(x - e)))
        columns.append((gp - gm) / (2 * eps))
    return np.stack(columns, -1)


def test_grad_of_grad_matches_finite_differences():
    fun = lambda x: jnp.sin(x) * jnp.exp(x)
    d2 = jaxlite.grad(jaxlite.grad(fun))(0.3)
    expected = numerical_jvp(jaxlite.grad(fun), (jnp.asarray(0.3),), (jnp.asarray(1.0),), 1e-5)
    np.testing.assert_allclose(float(d2), float(expected), rtol=1e-7)
    third = jaxlite.grad(jaxlite.grad(jaxlite.grad(fun)))(0.3)
    np.testing.assert_allclose(float(third), 2 * np.exp(0.3) * (np.cos(0.3) - np.sin(0.3)), rtol=1e-10)


def test_jacfwd_of_jacrev_is_the_hessian():
    x = jnp.asarray(normal((4,)))
    expected = numerical_hessian(f_scalar, x)
    for hess in (jaxlite.jacfwd(jaxlite.jacrev(f_scalar)), jaxlite.hessian(f_scalar),
                 jaxlite.jacrev(jaxlite.jacfwd(f_scalar)), jaxlite.jacrev(jaxlite.jacrev(f_scalar))):
        np.testing.assert_allclose(np.asarray(hess(x)), expected, rtol=1e-6, atol=1e-8)


def test_vmap_of_grad_matches_a_loop_and_finite_differences():
    xs = jnp.asarray(normal((5, 3)))
    batched = jaxlite.vmap(jaxlite.grad(f_scalar))(xs)
    for row, g in zip(np.asarray(xs), np.asarray(batched)):
        np.testing.assert_allclose(g, np.asarray(jaxlite.grad(f_scalar)(jnp.asarray(row))), rtol=1e-12)
        fd = [float(numerical_jvp(f_scalar, (jnp.asarray(row),), (jnp.asarray(np.eye(3)[i]),), 1e-6))
              for i in range(3)]
        np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_grad_of_vmap_and_make_jaxpr_of_grad():
    xs = jnp.asarray(normal((5, 3)))
    g = jaxlite.grad(lambda xs: jnp.sum(jaxlite.vmap(f_scalar)(xs)))(xs)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jaxlite.vmap(jaxlite.grad(f_scalar))(xs)))
    closed = jaxlite.make_jaxpr(jaxlite.grad(f_scalar))(xs[0])
    typecheck(closed)
    from jaxlite.core.staging import eval_jaxpr
    np.testing.assert_allclose(np.asarray(eval_jaxpr(closed.jaxpr, closed.consts, xs[0])[0]),
                               np.asarray(jaxlite.grad(f_scalar)(xs[0])))


def test_jacobians_of_pytrees():
    def fun(params):
        return {"y": params["w"] * params["b"][0], "s": jnp.sum(params["w"])}
    params = {"w": jnp.asarray(normal((2,))), "b": [jnp.asarray(normal((2,), seed=1))]}
    forward, reverse = jaxlite.jacfwd(fun)(params), jaxlite.jacrev(fun)(params)
    for jac in (forward, reverse):
        assert jac["y"]["w"].shape == (2, 2) and jac["s"]["b"][0].shape == (2,)
        np.testing.assert_allclose(np.asarray(jac["y"]["w"]), np.diag(np.asarray(params["b"][0])))
        np.testing.assert_allclose(np.asarray(jac["s"]["w"]), np.ones(2))
        np.testing.assert_allclose(np.asarray(jac["s"]["b"][0]), np.zeros(2))


def test_jacobian_argnums_and_aux():
    fun = lambda x, y: (x * y ** 2, {"aux": x})
    x, y = jnp.asarray(normal((2,))), jnp.asarray(normal((2,), seed=1))
    for jacobian in (jaxlite.jacfwd, jaxlite.jacrev):
        (jx, jy), aux = jacobian(fun, argnums=(0, 1), has_aux=True)(x, y)
        np.testing.assert_allclose(np.asarray(jx), np.diag(np.asarray(y) ** 2))
        np.testing.assert_allclose(np.asarray(jy), np.diag(2 * np.asarray(x * y)))
        np.testing.assert_allclose(np.asarray(aux["aux"]), np.asarray(x))


def test_value_and_grad_with_pytrees_argnums_and_aux():
    def loss(params, x, scale=1.0):
        return scale * jnp.sum((params["w"] * x + params["b"]) ** 2), params["b"]
    params = {"w": jnp.asarray(normal((3,))), "b": jnp.asarray(0.5)}
    x = jnp.asarray(normal((3,), seed=1))
    (value, aux), grads = jaxlite.value_and_grad(loss, has_aux=True)(params, x, scale=2.0)
    residual = np.asarray(params["w"]) * np.asarray(x) + 0.5
    np.testing.assert_allclose(float(value), 2 * np.sum(residual ** 2))
    np.testing.assert_allclose(np.asarray(grads["w"]), 4 * residual * np.asarray(x))
    np.testing.assert_allclose(float(grads["b"]), 4 * residual.sum())
    assert float(aux) == 0.5
    gw, gx = jaxlite.grad(lambda p, x: loss(p, x)[0], argnums=(0, 1))(params, x)
    np.testing.assert_allclose(np.asarray(gx), 2 * residual * np.asarray(params["w"]))
    assert jaxlite.grad(lambda a, b: a * b, argnums=-1)(2.0, 3.0) == 2.0


def test_vjp_and_linearize_agree_with_jvp():
    def fun(x, y):
        return {"a": jnp.sin(x) * y, "b": jnp.sum(x)}
    x, y = jnp.asarray(normal()), jnp.asarray(normal(seed=1))
    tx, ty = jnp.asarray(normal(seed=2)), jnp.asarray(normal(seed=3))
    out, f_jvp = jaxlite.linearize(fun, x, y)
    _, expected = jaxlite.jvp(fun, (x, y), (tx, ty))
    got = f_jvp(tx, ty)
    for key in ("a", "b"):
        np.testing.assert_allclose(np.asarray(got[key]), np.asarray(expected[key]), rtol=1e-12)
    out2, vjp_fun = jaxlite.vjp(fun, x, y)
    ct = {"a": jnp.asarray(normal(seed=4)), "b": jnp.asarray(1.5)}
    cx, cy = vjp_fun(ct)
    lhs = np.vdot(cx, tx) + np.vdot(cy, ty)
    rhs = np.vdot(ct["a"], got["a"]) + 1.5 * float(got["b"])
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


def test_outputs_independent_of_inputs_get_zero_cotangents():
    out, vjp_fun = jaxlite.vjp(lambda x, n: (jnp.ones(2), x * 2.0), jnp.asarray(1.0), jnp.asarray(3))
    cx, cn = vjp_fun((jnp.ones(2), jnp.asarray(1.0)))
    assert float(cx) == 2.0 and cn.dtype == np.int64 and int(cn) == 0
    _, f_jvp = jaxlite.linearize(lambda x: (jnp.ones(2), x), 1.0)
    assert np.asarray(f_jvp(2.0)[0]).tolist() == [0.0, 0.0]


def test_derivatives_are_traceable_and_typecheck():
    x = jnp.asarray(normal())
    for transformed in (jaxlite.grad(f_scalar), jaxlite.jacrev(f_scalar), jaxlite.hessian(f_scalar),
                        jaxlite.jacfwd(jaxlite.grad(f_scalar))):
        typecheck(jaxlite.make_jaxpr(transformed)(x))


# ---------------------------------------------------------------- generated shapes and axes

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def shape_and_axes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    axes = draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    return shape, tuple(sorted(axes))


@settings(deadline=None, max_examples=25)
@given(shape_and_axes(), st.sampled_from(["sum", "prod", "max", "transpose", "broadcast"]))
def test_gradients_over_generated_shapes(shape_axes, op):
    shape, axes = shape_axes
    funs = {
        "sum": lambda x: lax.reduce_sum(jnp.sin(x), axes),
        "prod": lambda x: lax.reduce_prod(x, axes),
        "max": lambda x: lax.reduce_max(x, axes),
        "transpose": lambda x: lax.transpose(x, tuple(reversed(range(x.ndim)))) * 2.0,
        "broadcast": lambda x: lax.broadcast_in_dim(jnp.exp(x), (2,) + shape, tuple(range(1, len(shape) + 1))),
    }
    x = distinct(shape, seed=len(axes)) + 0.5   # distinct values keep max differentiable
    check_grads(funs[op], (jnp.asarray(x),), order=2)


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16, jnp.float32])
def test_low_precision_gradients(dtype):
    x = jnp.asarray(np.array([0.5, 1.0, -0.7]).astype(dtype))
    check_grads(lambda x: jnp.exp(x) * x + jnp.sin(x), (x,), order=1)
    assert jaxlite.grad(lambda x: jnp.sum(x * x))(x).dtype == dtype
