"""conv_general_dilated and reduce_window.

Values in data/jax_windowed.npz were recorded from JAX 0.10.2 (lax.conv_general_dilated
and lax.reduce_window, outputs and vjps for the parameters stored alongside).
"""
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
from jaxlite import lax
from jaxlite.lax import convolution
from jaxlite.transforms import ad
from jaxlite.test_util import check_grads, check_vmap

RECORDED = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_windowed.npz"))
CASES = json.loads(str(RECORDED["cases"]))


def _padding(p):
    return p if isinstance(p, str) else [tuple(pair) for pair in p]


def _conv(case):
    dn = tuple(case["dn"]) if case["dn"] else None
    return lambda lhs, rhs: lax.conv_general_dilated(
        lhs, rhs, case["strides"], _padding(case["padding"]), case["ld"], case["rd"], dn,
        case["g"], case["bg"])


@pytest.mark.parametrize("i", range(len(CASES["conv"])))
def test_conv_matches_recorded_jax(i):
    case = CASES["conv"][i]
    lhs, rhs = RECORDED[f"conv{i}_lhs"], RECORDED[f"conv{i}_rhs"]
    np.testing.assert_allclose(_conv(case)(lhs, rhs), RECORDED[f"conv{i}_out"], rtol=1e-5, atol=1e-5)


def _canonical_params(case, lhs, rhs):
    lhs_perm, rhs_perm, out_perm = convolution.conv_dimension_permutations(
        tuple(case["dn"]) if case["dn"] else None, lhs.ndim)
    lhs, rhs = np.transpose(lhs, lhs_perm), np.transpose(rhs, rhs_perm)
    n = lhs.ndim - 2
    rd = tuple(case["rd"] or (1,) * n)
    pads = convolution.padding_pairs(_padding(case["padding"]), lhs.shape[2:],
                                     convolution.dilate_shape(rhs.shape[2:], rd), case["strides"])
    params = dict(window_strides=tuple(case["strides"]), padding=pads,
                  lhs_dilation=tuple(case["ld"] or (1,) * n), rhs_dilation=rd,
                  feature_group_count=case["g"], batch_group_count=case["bg"])
    return lhs, rhs, (lhs_perm, rhs_perm, out_perm), params


@pytest.mark.parametrize("i", [i for i, c in enumerate(CASES["conv"]) if c["bg"] == 1])
def test_conv_transposes_match_recorded_jax_vjp(i):
    case = CASES["conv"][i]
    lhs, rhs, (lhs_perm, rhs_perm, out_perm), params = _canonical_params(
        case, RECORDED[f"conv{i}_lhs"], RECORDED[f"conv{i}_rhs"])
    ct = jaxlite.numpy.asarray(np.transpose(RECORDED[f"conv{i}_ct"], out_perm))
    rule = ad.transpose_rules[convolution.conv_general_dilated_p]
    lhs_ct, _ = rule(ct, ad.UndefinedPrimal(ad.aval_of(jaxlite.numpy.asarray(lhs))), rhs, **params)
    _, rhs_ct = rule(ct, lhs, ad.UndefinedPrimal(ad.aval_of(jaxlite.numpy.asarray(rhs))), **params)
    np.testing.assert_allclose(lhs_ct, np.transpose(RECORDED[f"conv{i}_lhs_ct"], lhs_perm), atol=2e-5)
    np.testing.assert_allclose(rhs_ct, np.transpose(RECORDED[f"conv{i}_rhs_ct"], rhs_perm), atol=2e-5)


def _reference_conv(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups):
    """A direct sum over kernel offsets (canonical layouts), independent of im2col."""
    n_spatial = lhs.ndim - 2
    dilated = np.zeros(lhs.shape[:2] + tuple((n - 1) * d + 1 for n, d in zip(lhs.shape[2:], lhs_dilation)))
    dilated[(slice(None),) * 2 + tuple(slice(None, None, d) for d in lhs_dilation)] = lhs
    padded = np.pad(dilated, [(0, 0)] * 2 + [(max(lo, 0), max(hi, 0)) for lo, hi in padding])
    padded = padded[(slice(None),) * 2 + tuple(slice(max(-lo, 0), padded.shape[2 + a] - max(-hi, 0))
                                               for a, (lo, hi) in enumerate(padding))]
    extent = [(k - 1) * d + 1 for k, d in zip(rhs.shape[2:], rhs_dilation)]
    out_shape = [max(0, (n - e) // s + 1) for n, e, s in zip(padded.shape[2:], extent, strides)]
    per_group_in, per_group_out = rhs.shape[1], rhs.shape[0] // groups
    out = np.zeros(lhs.shape[:1] + rhs.shape[:1] + tuple(out_shape))
    if out.size == 0:
        return out
    for offset in np.ndindex(*rhs.shape[2:]):
        window = padded[(slice(None),) * 2 + tuple(
            slice(k * d, k * d + (o - 1) * s + 1, s)
            for k, d, o, s in zip(offset, rhs_dilation, out_shape, strides))]
        for g in range(groups):
            x = window[:, g * per_group_in:(g + 1) * per_group_in]
            w = rhs[g * per_group_out:(g + 1) * per_group_out, :, *offset]
            out[:, g * per_group_out:(g + 1) * per_group_out] += np.einsum("ni...,oi->no...", x, w)
    return out


@settings(deadline=None, max_examples=25)
@given(st.data())
def test_conv_matches_direct_sum(data):
    n_spatial = data.draw(st.integers(1, 2))
    groups = data.draw(st.integers(1, 2))
    kernel = data.draw(st.lists(st.integers(1, 3), min_size=n_spatial, max_size=n_spatial))
    size = data.draw(st.lists(st.integers(3, 6), min_size=n_spatial, max_size=n_spatial))
    strides = data.draw(st.lists(st.integers(1, 2), min_size=n_spatial, max_size=n_spatial))
    lhs_dilation = data.draw(st.lists(st.integers(1, 2), min_size=n_spatial, max_size=n_spatial))
    rhs_dilation = data.draw(st.lists(st.integers(1, 2), min_size=n_spatial, max_size=n_spatial))
    padding = data.draw(st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 2)),
                                 min_size=n_spatial, max_size=n_spatial))
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal((2, 2 * groups) + tuple(size)).astype(np.float32)
    rhs = rng.standard_normal((3 * groups, 2) + tuple(kernel)).astype(np.float32)
    expected = _reference_conv(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups)
    out = lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation,
                                   feature_group_count=groups)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv_same_padding_shape_and_derivatives(enable_x64):
    rng = np.random.default_rng(1)
    lhs, rhs = rng.standard_normal((2, 7, 6, 4)), rng.standard_normal((3, 2, 2, 4))
    conv = lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                 feature_group_count=2)
    assert conv(lhs.astype(np.float32), rhs.astype(np.float32)).shape == (2, 4, 3, 4)
    check_grads(conv, [lhs, rhs], order=2)


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 2)])
def test_conv_vmap(groups, in_axes):
    rng = np.random.default_rng(2)
    lhs = rng.standard_normal((3, 2, 4, 6, 5)).astype(np.float32)
    rhs = rng.standard_normal((3, 6, 4 // groups, 3, 2)).astype(np.float32)
    args = [a[0] if d is None else np.moveaxis(a, 0, d) for a, d in zip((lhs, rhs), in_axes)]
    check_vmap(lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (0, 1)), (1, 2), (2, 1),
                                                     feature_group_count=groups),
               args, in_axes, rtol=1e-5)


def test_conv_errors():
    with pytest.raises(TypeError, match="feature_group_count"):
        lax.conv_general_dilated(np.ones((1, 3, 4), np.float32), np.ones((2, 2, 2), np.float32), (1,), "VALID")
    with pytest.raises(ValueError, match="padding"):
        lax.conv_general_dilated(np.ones((1, 2, 4), np.float32), np.ones((2, 2, 2), np.float32), (1,), "FULL")


# ---------------------------------------------------------------- reduce_window


POOLS = {"sum": (lax.add, 0.0), "max": (lax.max, -np.inf), "min": (lax.min, np.inf)}


def _pool(name, case):
    op, init = POOLS[name]
    return lambda x: lax.reduce_window(x, init, op, case["w"], case["s"], _padding(case["padding"]),
                                       case.get("bd"), case.get("wd"))


@pytest.mark.parametrize("name", sorted(POOLS))
@pytest.mark.parametrize("i", range(len(CASES["pool"])))
def test_reduce_window_matches_recorded_jax(name, i):
    case, x = CASES["pool"][i], RECORDED["pool_x"]
    np.testing.assert_allclose(_pool(name, case)(x), RECORDED[f"pool{i}_{name}_out"], rtol=1e-5, atol=1e-6)
    if f"pool{i}_{name}_x_ct" not in RECORDED:
        return  # JAX has no max/min-pool VJP with window dilation; finite differences cover it
    # <ct, J t> from our JVP equals <J^T ct, t> from JAX's recorded vjp.
    t = np.random.default_rng(i).standard_normal(x.shape).astype(np.float32)
    _, jt = jaxlite.jvp(_pool(name, case), (x,), (t,))
    ct = RECORDED[f"pool{i}_{name}_ct"]
    np.testing.assert_allclose(np.sum(np.asarray(jt) * ct), np.sum(RECORDED[f"pool{i}_{name}_x_ct"] * t),
                               rtol=1e-4)


@pytest.mark.parametrize("i", range(len(CASES["pool"])))
def test_reduce_window_sum_derivatives(i, enable_x64):
    """Reverse mode runs the transpose rule for every recorded stride, padding and dilation."""
    check_grads(_pool("sum", CASES["pool"][i]), [RECORDED["pool_x"].astype(np.float64)], order=2)


def test_reduce_window_derivatives_and_vmap(enable_x64):
    x = np.random.default_rng(3).standard_normal((4, 6, 5))
    for op, init in POOLS.values():
        pool = lambda x: lax.reduce_window(x, init, op, (1, 2, 2), (1, 2, 1), "SAME", (1, 1, 2), (1, 2, 1))
        check_grads(pool, [x], order=2)
        check_vmap(lambda x: lax.reduce_window(x, init, op, (2, 2), (2, 1), "VALID"),
                   [x.astype(np.float32)], in_axes=1)


@pytest.mark.parametrize("groups", [(1, 2), (2, 1), (1, 3)])
def test_group_counts_transpose_and_vmap(groups, enable_x64):
    """Batch groups appear in the rhs transpose of feature-grouped convolutions
    (so in second derivatives); both kinds must transpose and batch."""
    g, b = groups
    rng = np.random.default_rng(5)
    params = dict(window_strides=(2,), padding=((1, 0),), lhs_dilation=(1,), rhs_dilation=(2,),
                  feature_group_count=g, batch_group_count=b)
    lhs, rhs = rng.standard_normal((6, 2 * g, 7)), rng.standard_normal((6, 2, 3))
    conv = lambda x, w: convolution.conv_general_dilated_p.bind(x, w, **params)
    check_grads(conv, [lhs, rhs], order=2)
    lhs_batch = rng.standard_normal((3,) + lhs.shape).astype(np.float32)
    rhs_batch = rng.standard_normal((3,) + rhs.shape).astype(np.float32)
    for in_axes in [(0, None), (None, 0), (0, 0)]:
        args = [a[0] if d is None else a for a, d in zip((lhs_batch, rhs_batch), in_axes)]
        check_vmap(conv, args, in_axes, rtol=1e-5)
