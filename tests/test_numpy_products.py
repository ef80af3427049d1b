"""einsum and the tensor products vs numpy, with gradients and batching."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.test_util import check_grads

rng = np.random.default_rng(0)
LETTERS = "abcde"


@st.composite
def einsum_case(draw):
    """Random subscripts over a few labels with random sizes, including repeated labels."""
    sizes = {c: draw(st.integers(1, 3)) for c in LETTERS}
    n_operands = draw(st.integers(1, 4))
    subs = [draw(st.lists(st.sampled_from(LETTERS), min_size=0, max_size=3)) for _ in range(n_operands)]
    used = sorted(set().union(*map(set, subs)))
    explicit = draw(st.booleans())
    output = draw(st.permutations(used))[:draw(st.integers(0, len(used)))] if explicit else None
    spec = ",".join("".join(s) for s in subs) + ("->" + "".join(output) if explicit else "")
    operands = [rng.normal(size=[sizes[c] for c in s]).astype(np.float32) for s in subs]
    return spec, operands


@settings(deadline=None, max_examples=80)
@given(einsum_case())
def test_einsum_matches_numpy(case):
    spec, operands = case
    expected = np.einsum(spec, *operands)
    out = jnp.einsum(spec, *operands)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spec, shapes", [
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...i,...i", [(3, 4), (2, 1, 4)]),
    ("i...->...", [(3, 2, 2)]),
    ("ab,cb->ac", [(3, 1), (2, 4)]),
    ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("ii->", [(4, 4)]),
])
def test_einsum_ellipsis_and_broadcasting(spec, shapes):
    operands = [rng.normal(size=s).astype(np.float32) for s in shapes]
    np.testing.assert_allclose(jnp.einsum(spec, *operands), np.einsum(spec, *operands), rtol=1e-5, atol=1e-5)


def test_einsum_contracts_the_cheap_pair_first():
    a, b, c = np.ones((64, 2), np.float32), np.ones((2, 64), np.float32), np.ones((64,), np.float32)
    jaxpr = str(jaxlite.make_jaxpr(lambda a, b, c: jnp.einsum("ij,jk,k->i", a, b, c))(a, b, c))
    # b @ c first gives a vector; a @ b first would build a 64x64 intermediate.
    assert "f32[64,64]" not in jaxpr


def test_einsum_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="does not match"):
        jnp.einsum("ijk", x)
    with pytest.raises(ValueError, match="inconsistent sizes"):
        jnp.einsum("ij,ij", x, np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="does not appear"):
        jnp.einsum("ij->k", x)
    with pytest.raises(ValueError, match="operands"):
        jnp.einsum("ij,jk", x)


def test_einsum_gradient_and_vmap(enable_x64):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    check_grads(lambda a, b: jnp.einsum("ij,jk->ik", a, b), [a, b], order=2)
    check_grads(lambda a: jnp.einsum("ii->i", a), [rng.normal(size=(3, 3))], order=2)
    batched = jaxlite.vmap(lambda x: jnp.einsum("ij,jk->ik", x, b))(rng.normal(size=(5, 3, 4)))
    assert batched.shape == (5, 3, 2)


@settings(deadline=None, max_examples=30)
@given(st.integers(0, 2), st.data())
def test_tensordot(n_axes, data):
    a = rng.normal(size=data.draw(st.lists(st.integers(1, 3), min_size=n_axes, max_size=3))).astype(np.float32)
    b_shape = list(a.shape[a.ndim - n_axes:]) + data.draw(st.lists(st.integers(1, 3), max_size=2))
    b = rng.normal(size=b_shape).astype(np.float32)
    np.testing.assert_allclose(jnp.tensordot(a, b, n_axes), np.tensordot(a, b, n_axes), rtol=1e-5, atol=1e-5)


def test_products_match_numpy():
    a, b = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    close = lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    close(jnp.tensordot(a, a, ([0, 2], [0, 2])), np.tensordot(a, a, ([0, 2], [0, 2])))
    close(jnp.inner(a, b), np.inner(a, b))
    close(jnp.inner(2.0, b), np.inner(2.0, b))
    close(jnp.outer(a, b[0]), np.outer(a, b[0]))
    close(jnp.vdot(a, a), np.vdot(a, a))
    close(jnp.trace(a, 1, 1, 2), np.trace(a, 1, 1, 2))
    close(jnp.trace(b, -2), np.trace(b, -2))
    close(jnp.kron(b, a[0]), np.kron(b, a[0]))
    close(jnp.cross(a[..., :3], a[..., 1:]), np.cross(a[..., :3], a[..., 1:]))
    close(jnp.cross(a[0, :, :3], b[0, :3], axisc=0), np.cross(a[0, :, :3], b[0, :3], axisc=0))
    assert jnp.trace(np.ones((2, 2), np.int8)).dtype == np.int32


def test_product_errors():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="shape mismatch"):
        jnp.tensordot(a, a, 1)
    with pytest.raises(ValueError, match="last dimensions"):
        jnp.inner(a, np.ones((2,), np.float32))
    with pytest.raises(ValueError, match="vector sizes"):
        jnp.cross(np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="at least 2"):
        jnp.trace(np.ones(3))


@pytest.mark.parametrize("dtype, out_dtype, k", [(np.int8, np.int32, 700), (np.uint8, np.int32, 33),
                                                 (np.int16, np.int32, 5), (np.int32, np.int32, 9)])
def test_integer_dot_general_is_exact(dtype, out_dtype, k):
    """Small integer products run on float64 BLAS when every sum is exact (and fits); wider ones
    on numpy's integer matmul, wrapping as int32 does."""
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (6, k), endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, (k, 4), endpoint=True).astype(dtype)
    out = jaxlite.lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=out_dtype)
    assert out.dtype == out_dtype
    np.testing.assert_array_equal(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(out_dtype))
