"""Joining, splitting, tiling, padding and reordering vs numpy."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
import jaxlite.numpy as jnp
from finite_diff import check_jvp, x64  # noqa: F401  (x64 is a fixture)

rng = np.random.default_rng(0)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def _array(shape, dtype=np.float32):
    return (rng.normal(size=shape) * 4).astype(dtype)


def _same(out, expected):
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


@settings(deadline=None, max_examples=40)
@given(nonempty_shapes, st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric"]), st.data())
def test_pad(shape, mode, data):
    widths = [(data.draw(st.integers(0, 9)), data.draw(st.integers(0, 9))) for _ in shape]
    x = _array(shape)
    _same(jnp.pad(x, widths, mode), np.pad(x, widths, mode))


def test_pad_width_forms_and_constants():
    x = _array((3, 4))
    for width in (2, (1,), (1, 3), ((1, 2), (0, 3))):
        _same(jnp.pad(x, width), np.pad(x, width))
    _same(jnp.pad(x, 1, constant_values=7), np.pad(x, 1, constant_values=7))
    _same(jnp.pad(x, 1, constant_values=((1, 2), (3, 4))), np.pad(x, 1, constant_values=((1, 2), (3, 4))))
    with pytest.raises(TypeError, match="integral"):
        jnp.pad(x, 1.5)
    with pytest.raises(ValueError, match="non-negative"):
        jnp.pad(x, -1)
    with pytest.raises(NotImplementedError, match="mode"):
        jnp.pad(x, 1, mode="median")


def test_pad_gradient(x64):
    check_jvp(lambda v: jnp.pad(v, (2, 3), "reflect"), [rng.normal(size=4)])
    check_jvp(lambda v: jnp.pad(v, 2, "symmetric"), [rng.normal(size=(2, 3))])


@settings(deadline=None, max_examples=40)
@given(shapes, st.lists(st.integers(0, 3), max_size=4))
def test_tile(shape, reps):
    x = _array(shape)
    _same(jnp.tile(x, reps), np.tile(x, reps))


@settings(deadline=None, max_examples=40)
@given(nonempty_shapes, st.data())
def test_repeat(shape, data):
    x = _array(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    size = x.size if axis is None else shape[axis]
    repeats = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=size, max_size=size)))
    _same(jnp.repeat(x, repeats, axis), np.repeat(x, repeats, axis))


@settings(deadline=None, max_examples=40)
@given(nonempty_shapes, st.data())
def test_roll_flip_rot90(shape, data):
    x = _array(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    shift = data.draw(st.integers(-10, 10))
    _same(jnp.roll(x, shift, axis), np.roll(x, shift, axis))
    _same(jnp.roll(x, shift), np.roll(x, shift))
    _same(jnp.flip(x, axis), np.flip(x, axis))
    _same(jnp.flip(x), np.flip(x))
    _same(jnp.flipud(x), np.flipud(x))
    if x.ndim >= 2:
        k = data.draw(st.integers(-5, 5))
        axes = tuple(data.draw(st.permutations(range(x.ndim)))[:2])
        _same(jnp.rot90(x, k, axes), np.rot90(x, k, axes))
        _same(jnp.fliplr(x), np.fliplr(x))


@settings(deadline=None, max_examples=40)
@given(nonempty_shapes, st.data())
def test_split(shape, data):
    x = _array(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    sections = data.draw(st.integers(1, 5))
    for got, want in zip(jnp.array_split(x, sections, axis), np.array_split(x, sections, axis)):
        _same(got, want)
    indices = sorted(data.draw(st.lists(st.integers(-6, 6), max_size=3)))
    for got, want in zip(jnp.split(x, indices, axis), np.split(x, indices, axis)):
        _same(got, want)
    if shape[axis] % sections:
        with pytest.raises(ValueError, match="equal division"):
            jnp.split(x, sections, axis)


@settings(deadline=None, max_examples=30)
@given(st.lists(hnp.array_shapes(min_dims=0, max_dims=3, min_side=2, max_side=2), min_size=1, max_size=3))
def test_stacking(shape_list):
    arrays = [_array(s) for s in shape_list]
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        try:
            expected = getattr(np, name)(arrays)
        except ValueError:
            with pytest.raises((ValueError, TypeError)):
                getattr(jnp, name)(arrays)
            continue
        _same(getattr(jnp, name)(arrays), expected)


@settings(deadline=None, max_examples=20)
@given(shapes)
def test_atleast(shape):
    x = _array(shape)
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        _same(getattr(jnp, name)(x), getattr(np, name)(x))


def test_errors_use_numpy_classes():
    x = _array((2, 3))
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.flip(x, 2)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.roll(x, 1, 5)
    with pytest.raises(TypeError):
        jnp.tile(x, 1.5)
    with pytest.raises(TypeError):
        jnp.repeat(x, 1.5)
    with pytest.raises(ValueError, match="at least 2"):
        jnp.fliplr(np.ones(3))


def test_under_vmap():
    x = _array((3, 4))
    np.testing.assert_array_equal(jaxlite.vmap(lambda r: jnp.pad(r, 2, "wrap"))(x),
                                  np.stack([np.pad(r, 2, "wrap") for r in x]))
    np.testing.assert_array_equal(jaxlite.vmap(lambda r: jnp.roll(r, 1))(x), np.roll(x, 1, axis=1))
