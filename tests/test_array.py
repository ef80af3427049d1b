"""Eager Array behaviour against numpy: operators, methods, .at updates, interop."""
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
import jaxlite.numpy as jnp

FLOAT_DTYPES = [np.float32, np.float16]
INT_DTYPES = [np.int8, np.int16, np.int32, np.uint8, np.uint32]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


def arrays(dtype, shape):
    if np.issubdtype(dtype, np.floating):
        # jaxlite flushes float32 subnormals as XLA does, numpy keeps them (test_subnormals.py)
        elements = st.floats(-10, 10, width=np.dtype(dtype).itemsize * 8, allow_subnormal=dtype == np.float16)
    else:
        info = np.iinfo(dtype)
        elements = st.integers(max(info.min, -50), min(info.max, 50))
    return hnp.arrays(dtype, shape, elements=elements)


def pairs(dtypes):
    return st.tuples(st.sampled_from(dtypes), SHAPES).flatmap(
        lambda ds: st.tuples(arrays(ds[0], ds[1]), arrays(ds[0], ds[1][-1:] if ds[1] else ())))


ARITH = [operator.add, operator.sub, operator.mul, operator.truediv]
COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


def assert_matches(actual, expected, rtol=1e-6):
    expected = np.asarray(expected)
    assert isinstance(actual, jaxlite.Array)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=1e-6)


@given(pairs(FLOAT_DTYPES), st.sampled_from(ARITH + COMPARE))
def test_float_operators_match_numpy(data, op):
    a, b = data
    rtol = 1e-3 if a.dtype == np.float16 else 1e-6
    with np.errstate(all="ignore"):
        expected = op(a, b)
    if op is operator.truediv:
        finite = np.isfinite(expected)
        np.testing.assert_allclose(np.asarray(op(jnp.asarray(a), jnp.asarray(b)))[finite],
                                   expected[finite], rtol=rtol, atol=1.2e-38)   # a subnormal quotient is 0
        return
    assert_matches(op(jnp.asarray(a), jnp.asarray(b)), expected, rtol)


@given(pairs(INT_DTYPES), st.sampled_from([operator.add, operator.sub, operator.mul,
                                           operator.floordiv, operator.mod, operator.and_,
                                           operator.or_, operator.xor] + COMPARE))
def test_int_operators_match_numpy(data, op):
    a, b = data
    if op in (operator.floordiv, operator.mod):
        b = np.where(b == 0, 1, b).astype(b.dtype)
    with np.errstate(all="ignore"):
        expected = op(a, b)
    assert_matches(op(jnp.asarray(a), jnp.asarray(b)), expected)


@given(st.sampled_from(FLOAT_DTYPES + INT_DTYPES).flatmap(lambda d: arrays(d, SHAPES)))
def test_unary_operators_and_abs(a):
    x = jnp.asarray(a)
    assert_matches(-x, -a if a.dtype.kind != "u" else np.negative(a))
    assert_matches(abs(x), np.abs(a))
    assert_matches(+x, a)


@given(arrays(np.float32, SHAPES), st.sampled_from(["sum", "mean", "max", "min", "prod"]),
       st.booleans(), st.data())
def test_reduction_methods(a, name, keepdims, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)) if a.ndim else st.none())
    expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
    assert_matches(getattr(jnp.asarray(a), name)(axis=axis, keepdims=keepdims), expected, rtol=1e-5)


def test_python_scalars_with_arrays():
    x = jnp.arange(4, dtype=jnp.int8)
    assert (x + 1).dtype == np.int8
    assert (x * 2.5).dtype == np.float32
    assert (2 - x).tolist() == [2, 1, 0, -1]
    assert (x ** 2).tolist() == [0, 1, 4, 9]
    assert (2.0 ** jnp.arange(3.0)).tolist() == [1.0, 2.0, 4.0]
    assert (7 // jnp.array([2, -2])).tolist() == [3, -4]
    assert (jnp.array([-7.0, 7.0]) % 3).tolist() == [2.0, 1.0]


def test_matmul_shapes_match_numpy():
    rng = np.random.default_rng(0)
    for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                   ((5, 2, 3), (3, 4)), ((5, 2, 3), (1, 3, 4))]:
        a, b = rng.normal(size=sa).astype(np.float32), rng.normal(size=sb).astype(np.float32)
        assert_matches(jnp.asarray(a) @ jnp.asarray(b), a @ b, rtol=1e-5)
    with pytest.raises(TypeError, match="axis has size 3, .* axis has size 4"):
        jnp.ones((2, 3)) @ jnp.ones((4, 2))


def test_attributes_and_shape_methods():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = jnp.asarray(a)
    assert (x.shape, x.dtype, x.ndim, x.size) == (a.shape, a.dtype, a.ndim, a.size)
    assert_matches(x.T, a.T)
    assert_matches(x.reshape(6, 4), a.reshape(6, 4))
    assert_matches(x.reshape((4, -1)), a.reshape(4, -1))
    assert_matches(x.transpose(1, 0, 2), a.transpose(1, 0, 2))
    assert_matches(x.astype(jnp.int32), a.astype(np.int32))
    assert_matches(x.ravel(), a.ravel())
    assert_matches(x.argmax(axis=1), a.argmax(axis=1).astype(np.int32))


BASIC_INDICES = [0, -1, (1, 2), slice(None, None, -1), (slice(1, None), None, 2),
                 (Ellipsis, 1), (0, slice(None, None, 2), slice(3, 0, -2)), (None, Ellipsis),
                 (slice(5, 10),), (-2, slice(-1, None))]


@pytest.mark.parametrize("index", BASIC_INDICES, ids=repr)
def test_basic_indexing_matches_numpy(index):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    assert_matches(jnp.asarray(a)[index], a[index])


@pytest.mark.parametrize("index", BASIC_INDICES, ids=repr)
@pytest.mark.parametrize("method", ["set", "add", "multiply", "divide", "min", "max"])
def test_at_updates_match_numpy(index, method):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 20
    values = np.float32(3.5)
    expected = a.copy()
    ufunc = {"set": None, "add": np.add, "multiply": np.multiply, "divide": np.divide,
             "min": np.minimum, "max": np.maximum}[method]
    expected[index] = values if ufunc is None else ufunc(expected[index], values)
    x = jnp.asarray(a)
    out = getattr(x.at[index], method)(values)
    assert_matches(out, expected)
    assert_matches(x.at[index].get(), a[index])
    assert_matches(x, a - 0)  # x itself is unchanged


def test_at_set_with_array_values_and_out_of_range_index():
    x = jnp.zeros((3, 4))
    out = x.at[1, 1:3].set(jnp.array([1.0, 2.0]))
    assert out.tolist()[1] == [0.0, 1.0, 2.0, 0.0]
    np.testing.assert_array_equal(out[3], out[2])     # a static index past the end clamps, as in JAX
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]


def test_arrays_are_immutable():
    x = jnp.arange(3.0)
    with pytest.raises(TypeError):
        x[0] = 1.0
    with pytest.raises(ValueError):
        np.asarray(x)[0] = 1.0


def test_numpy_interop_copies_only_what_the_caller_can_write():
    a = np.arange(6, dtype=np.float32)
    x = jnp.asarray(a)
    a[0] = 100.0     # the Array is immutable: a writable numpy input was copied, as JAX copies it
    assert float(x[0]) == 0.0 and not np.shares_memory(np.asarray(x), a)
    assert np.shares_memory(np.asarray(jnp.asarray(a, copy=False)), a)     # shared, as asked
    frozen = np.arange(3.0, dtype=np.float32)
    frozen.flags.writeable = False
    assert np.shares_memory(np.asarray(jnp.asarray(frozen)), frozen)
    assert np.asarray(x) is np.asarray(x)     # and reading an Array back never copies
    assert isinstance(a + x, jaxlite.Array)


def test_scalar_conversions():
    assert float(jnp.array(2.5)) == 2.5
    assert int(jnp.array(3)) == 3
    assert bool(jnp.array(True))
    assert operator.index(jnp.array(4)) == 4
    assert [10, 20, 30][jnp.array(1)] == 20
    with pytest.raises(TypeError, match="integer arrays"):
        operator.index(jnp.array(1.0))
    assert jnp.array([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert jnp.array([1.5]).item() == 1.5
    assert [row.tolist() for row in jnp.array([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]


def test_repr_and_block_until_ready():
    assert repr(jnp.array([1.0, 2.0])) == "Array([1., 2.], dtype=float32)"
    assert repr(jnp.array([1, 2])) == "Array([1, 2], dtype=int32)"
    x = jnp.ones(2)
    assert x.block_until_ready() is x
    assert jaxlite.block_until_ready({"a": x})["a"] is x


def test_pickling_round_trip():
    x = jnp.arange(6.0).reshape(2, 3)
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, jaxlite.Array) and y.tolist() == x.tolist() and y.dtype == x.dtype


def test_arrays_are_not_hashable():
    with pytest.raises(TypeError, match="unhashable"):
        hash(jnp.ones(2))
