"""nextafter in the 16-bit floats, the bitwise reductions and bitcasts of bool
run natively under jit (no numpy fallback step) and agree with eager evaluation bit for
bit: signed zeros, NaNs, infinities and subnormals included."""
import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.lower.fusion import EqnStep
from jaxlite.test_util import enable_x64

seeds = st.integers(0, 2 ** 16)
NARROW_FLOATS = [np.float16, dtypes.bfloat16]
# Zeros, the smallest subnormals, 1, the largest finite values, infinities, quiet and
# signaling NaNs with either sign, in both layouts.
SPECIAL_BITS = [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x007f, 0x0080, 0x3c00, 0xbc00,
                0x3f80, 0xbf80, 0x7bff, 0xfbff, 0x7f7f, 0xff7f, 0x7c00, 0xfc00, 0x7f80, 0xff80,
                0x7e00, 0xfe00, 0x7fc0, 0xffc0, 0x7c01, 0x7f81, 0xffff]
INTEGERS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def fallback_steps(fun, *args):
    steps = jaxlite.jit(fun).lower(*args).program.steps
    return [s.eqn.primitive.name for s in steps if isinstance(s, EqnStep) and s.kind == "fallback"]


def assert_native_and_identical(fun, *args):
    """jit(fun) has no fallback step and gives eager's dtypes, shapes and bits."""
    assert fallback_steps(fun, *args) == []
    want, got = np.asarray(fun(*args)), np.asarray(jaxlite.jit(fun)(*args))
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = f"u{want.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def random_bits(rng, shape, dtype):
    """Any bit pattern of the dtype, special values over-represented."""
    width = np.dtype(dtype).itemsize
    bits = rng.integers(0, 2 ** (8 * width), shape, dtype=np.uint64).astype(f"u{width}")
    if width == 2:
        spots = rng.random(shape) < 0.3
        bits[spots] = rng.choice(np.array(SPECIAL_BITS, np.uint16), size=int(spots.sum()))
    return bits.view(dtype)


# ---------------------------------------------------------------- nextafter

@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=lambda d: np.dtype(d).name)
def test_nextafter_every_16_bit_pattern(dtype):
    """Every pattern as x, each special value as y, and the reverse."""
    x = np.arange(2 ** 16, dtype=np.uint32).astype(np.uint16).view(dtype)
    for y_bits in SPECIAL_BITS:
        y = np.full_like(x, np.uint16(y_bits).view(dtype))
        with np.errstate(all="ignore"):
            assert_native_and_identical(lax.nextafter, x, y)
            assert_native_and_identical(lax.nextafter, y, x)


@settings(deadline=None, max_examples=20)
@given(st.lists(st.integers(1, 5), max_size=3).map(tuple), seeds, st.sampled_from(NARROW_FLOATS))
def test_nextafter_in_a_kernel(shape, seed, dtype):
    """Inside a fused kernel, chained, with a rank-0 operand. (No arithmetic on the
    results: kernels flush subnormal results to zero, which eager numpy does not.)"""
    rng = np.random.default_rng(seed)
    x, y = random_bits(rng, shape, dtype), random_bits(rng, (), dtype)
    with np.errstate(all="ignore"):
        assert_native_and_identical(lambda a, b: lax.nextafter(lax.nextafter(a, b), -a), x, y)
        assert_native_and_identical(lambda a, b: lax.nextafter(-a, a), x, y)


# ---------------------------------------------------------------- reduce_and / reduce_or / reduce_xor

@st.composite
def shape_and_axes(draw):
    shape = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple))
    axes = draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    return shape, tuple(axes)


@settings(deadline=None, max_examples=40)
@given(shape_and_axes(), seeds, st.sampled_from(INTEGERS + [np.bool_]),
       st.sampled_from([lax.reduce_and, lax.reduce_or, lax.reduce_xor]))
def test_bitwise_reductions(shape_axes, seed, dtype, reduce):
    """Any axes (none, all, empty ones: the identity), rows and columns, any bits."""
    shape, axes = shape_axes
    rng = np.random.default_rng(seed)
    # Mostly set bits for and, mostly clear ones for or, so that results are not trivial.
    if dtype == np.bool_:
        x = rng.random(shape) < {lax.reduce_and: 0.8, lax.reduce_or: 0.2}.get(reduce, 0.5)
    elif reduce is lax.reduce_and:
        x = random_bits(rng, shape, dtype) | random_bits(rng, shape, dtype)
    elif reduce is lax.reduce_or:
        x = random_bits(rng, shape, dtype) & random_bits(rng, shape, dtype)
    else:
        x = random_bits(rng, shape, dtype)
    with enable_x64():      # for the 64-bit integers
        assert_native_and_identical(lambda a: reduce(a, axes), x)


def test_bitwise_reductions_are_bitwise_on_integers():
    x = np.array([[6, 3], [5, 7]], np.int32)
    np.testing.assert_array_equal(jaxlite.jit(lambda a: lax.reduce_and(a, (1,)))(x), [2, 5])
    np.testing.assert_array_equal(jaxlite.jit(lambda a: lax.reduce_or(a, (0,)))(x), [7, 7])
    np.testing.assert_array_equal(jaxlite.jit(lambda a: lax.reduce_xor(a, (0, 1)))(x), 7)
    empty = np.zeros((0, 2), np.uint8)
    np.testing.assert_array_equal(jaxlite.jit(lambda a: lax.reduce_and(a, (0,)))(empty), [255, 255])
    np.testing.assert_array_equal(lax.reduce_or(empty, (0,)), [0, 0])


# ---------------------------------------------------------------- bitcast_convert_type and bool

def test_bitcast_of_bool_to_bool_is_native():
    x = np.random.default_rng(0).random((3, 4)) < 0.5
    assert_native_and_identical(lambda a: lax.bitcast_convert_type(a, np.bool_), x)


@pytest.mark.parametrize("source, target", [(np.bool_, np.uint8), (np.int8, np.bool_), (np.uint8, np.bool_)])
def test_bitcast_to_or_from_bool_is_a_type_error(source, target):
    """As in JAX: a bool byte holds 0 or 1 only, so other types' bits do not bitcast to it."""
    x = np.zeros(3, source)
    for fun in (lambda a: lax.bitcast_convert_type(a, target),
                jaxlite.jit(lambda a: lax.bitcast_convert_type(a, target))):
        with pytest.raises(TypeError, match="bitcast_convert_type.*bool"):
            fun(x)


def test_no_fallback_warning_is_logged(caplog):
    rng = np.random.default_rng(1)
    half, bits = random_bits(rng, (4, 6), np.float16), random_bits(rng, (4, 6), np.uint32)

    def everything(h, b):
        brain = h.astype(dtypes.bfloat16)
        narrow = lax.nextafter(h, -h).astype(np.float32) + lax.nextafter(brain, brain[0, 0]).astype(np.float32)
        mask = lax.reduce_and(b, (0,)) ^ lax.reduce_or(b, (1,))[:1] ^ lax.reduce_xor(b, (0,))
        flags = lax.bitcast_convert_type(lax.reduce_or(h > 0, (1,)), np.bool_)
        return narrow, mask, flags
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"), np.errstate(all="ignore"):
        jaxlite.jit(everything)(half, bits)
    assert "numpy implementation" not in caplog.text
