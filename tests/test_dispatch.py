"""jit's per-call path: the signature fast path, the native trampoline, and buffer donation."""
import gc
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core.array import Array
from jaxlite.lower import native_call
from jaxlite.transforms import jit as jit_module


def _address(array):
    return array._value.__array_interface__["data"][0]


def _fresh(values, dtype=np.float32):
    """An Array that owns its buffer (as any computed Array does)."""
    return jnp.asarray(np.asarray(values, dtype)) + 0


# ---------------------------------------------------------------- the fast path

def test_fast_path_recompiles_on_shape_dtype_and_weak_type_changes():
    f = jaxlite.jit(lambda x: x + 1)
    before = jit_module.compile_count()
    scalar = Array(np.float32(1.0))
    assert float(f(scalar)) == 2.0 and float(f(scalar)) == 2.0
    vector = f(Array(np.arange(3, dtype=np.float32)))
    np.testing.assert_array_equal(vector, [1, 2, 3])
    integer = f(Array(np.int32(4)))
    assert integer.dtype == np.int32 and int(integer) == 5
    weak = f(Array(np.float32(1.0), weak_type=True))
    assert weak.weak_type and not f(scalar).weak_type
    assert jit_module.compile_count() - before == 4
    for _ in range(3):      # all four now hit the fast path, each with its own code
        assert f(vector).shape == (3,) and f(integer).dtype == np.int32 and f(weak).weak_type


@settings(deadline=None, max_examples=15)
@given(dtype=st.sampled_from([np.float32, np.int32, np.float16, np.bool_, np.uint8]),
       shape=st.lists(st.integers(0, 4), max_size=3).map(tuple), weak=st.booleans())
def test_fast_path_result_matches_the_signature(dtype, shape, weak):
    f = jaxlite.jit(lambda x: (x, jnp.logical_not(x) if dtype == np.bool_ else x * 2))
    value = (np.arange(int(np.prod(shape))) % 3).astype(dtype).reshape(shape)
    weak = weak and dtype in (np.float32, np.int32)      # weak types come from Python scalars
    for _ in range(2):
        same, doubled = f(Array(value, weak_type=weak))
        expected = np.logical_not(value) if dtype == np.bool_ else value * dtype(2)
        assert doubled.dtype == value.dtype and doubled.shape == shape and doubled.weak_type == weak
        np.testing.assert_array_equal(doubled, expected)
        np.testing.assert_array_equal(same, value)


def test_fast_path_handles_non_contiguous_arrays():
    f = jaxlite.jit(lambda x: x * 2)
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    transposed = Array(base.T)
    assert not transposed._value.flags.c_contiguous
    for _ in range(2):
        np.testing.assert_array_equal(f(transposed), base.T * 2)
        np.testing.assert_array_equal(f(Array(base[:, ::2])), base[:, ::2] * 2)


def test_fast_path_outputs_are_immutable_and_pass_through_arguments_and_literals():
    f = jaxlite.jit(lambda x: (x, 2.0, x + 1))
    x = _fresh([1, 2])
    for _ in range(2):
        same, literal, computed = f(x)
        np.testing.assert_array_equal(same, [1, 2])
        assert float(literal) == 2.0 and literal.weak_type
        with pytest.raises(ValueError):
            np.asarray(computed)[0] = 5
        np.testing.assert_array_equal(computed, [2, 3])


def test_fast_path_with_pytree_outputs_and_constants():
    table = np.arange(4, dtype=np.float32)
    f = jaxlite.jit(lambda x: {"sum": x + table, "scaled": [x * 2]})
    x = _fresh([1, 1, 1, 1])
    for _ in range(2):
        out = f(x)
        np.testing.assert_array_equal(out["sum"], table + 1)
        np.testing.assert_array_equal(out["scaled"][0], 2)


def test_fast_path_respects_disable_jit():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1
    jitted = jaxlite.jit(f)
    x = _fresh([1.0])
    jitted(x), jitted(x)
    traced = len(calls)
    with jaxlite.disable_jit():
        jitted(x)
    assert len(calls) == traced + 1
    jitted(x)
    assert len(calls) == traced + 1


def test_fast_path_survives_cache_clearing():
    f = jaxlite.jit(lambda x: x * 3)
    x = _fresh([1, 2])
    f(x)
    call = next(iter(f._fast_calls.values()))
    jit_module.clear_caches()
    gc.collect()
    np.testing.assert_array_equal(call((x,)), [3, 6])   # the code it holds is still mapped
    np.testing.assert_array_equal(f(x), [3, 6])


def test_numpy_arguments_take_the_fast_path():
    f = jaxlite.jit(lambda x, y: (x * 2 + y, x))
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)
    for _ in range(2):
        doubled, same = f(x, y)
        np.testing.assert_array_equal(doubled, x * 2 + 1)
        np.testing.assert_array_equal(same, x)
    assert len(f._fast_calls) == 1
    np.testing.assert_array_equal(f(x.T.copy().T, y)[0], x * 2 + 1)     # not C-contiguous


def test_numpy_arguments_that_narrow_or_are_guarded_go_the_general_way():
    f = jaxlite.jit(lambda x: x + 1)
    wide = np.arange(3, dtype=np.float64)
    for _ in range(2):
        assert f(wide).dtype == np.float32
    narrow = np.arange(3, dtype=np.float32)
    f(narrow), f(narrow)
    with jaxlite.transfer_guard("disallow"):
        with pytest.raises(jaxlite.errors.JaxRuntimeError, match="Disallowed host-to-device transfer"):
            f(narrow)
    np.testing.assert_array_equal(f(narrow), [1, 2, 3])


def test_native_entry_rejects_wrong_calls():
    f = jaxlite.jit(lambda x: x + 1)
    x = _fresh([1.0])
    f(x)
    native = f._entry((x,), {})[0].executable._native
    with pytest.raises(TypeError, match="wrong number of buffers"):
        native(np.empty(0, np.uint8))
    with pytest.raises(TypeError, match="numpy ndarrays only"):
        native(np.empty(0, np.uint8), [1.0], np.empty(1, np.float32))
    with pytest.raises(TypeError):
        native(np.empty(0, np.uint8), x._value, out=np.empty(1, np.float32))


def test_builtin_entry_seals_outputs():
    f = jaxlite.jit(lambda x: x + 1)
    x = _fresh([1.0, 2.0])
    f(x)
    executable = f._entry((x,), {})[0].executable
    out = np.empty(2, np.float32)
    executable._native(np.empty(0, np.uint8), np.array([1.0, 2.0], np.float32), out)
    assert not out.flags.writeable and list(out) == [2.0, 3.0]
    assert native_call._check_flags_offset()
    before = sys.getrefcount(None)
    for _ in range(1000):
        executable._native(np.empty(0, np.uint8), np.array([1.0, 2.0], np.float32), out)
    assert abs(sys.getrefcount(None) - before) < 50      # the returned None is counted, not leaked or lost


# ---------------------------------------------------------------- donation

def test_donated_buffer_is_reused_and_the_argument_deleted():
    f = jaxlite.jit(lambda x, y: x * 2 + y, donate_argnums=0)
    y = _fresh(np.ones(1000))
    x = _fresh(np.arange(1000))
    for step in range(3):       # the first call compiles, the others take the fast path
        address = _address(x)
        out = f(x, y)
        assert _address(out) == address and x.is_deleted() and not y.is_deleted()
        np.testing.assert_allclose(out, np.arange(1000) * 2 ** (step + 1) + 2 ** (step + 1) - 1)
        x = out
    old = _fresh([1.0])
    f(old, _fresh([0.0]))
    assert old.shape == (1,) and old.dtype == np.float32
    for use in (lambda: old + 1, lambda: np.asarray(old), lambda: repr(old), lambda: f(old, old)):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[1\]"):
            use()


@pytest.mark.parametrize("fn", [lambda x: x[::-1] + 1, lambda x: x.T + 1, lambda x: x - x.mean(),
                                lambda x: jnp.roll(x, 1, axis=0) * x, lambda x: x @ x])
def test_donation_never_overwrites_what_is_still_read(fn):
    value = np.arange(64, dtype=np.float32).reshape(8, 8) / 10
    expected = np.asarray(jaxlite.jit(fn)(Array(value)))
    f = jaxlite.jit(fn, donate_argnums=0)
    for _ in range(2):
        x = _fresh(value)
        np.testing.assert_allclose(f(x), expected, rtol=1e-5)
        assert x.is_deleted()


def test_donation_across_steps_and_with_several_outputs():
    w = np.eye(16, dtype=np.float32) * 3
    chain = jaxlite.jit(lambda x: jnp.tanh(x * 2) @ w, donate_argnums=0)
    two = jaxlite.jit(lambda x: (x + 1, x * 2), donate_argnums=0)
    passthrough = jaxlite.jit(lambda x: (x, x + 1), donate_argnums=0)
    value = np.linspace(-1, 1, 256, dtype=np.float32).reshape(16, 16)
    for _ in range(2):
        x = _fresh(value)
        address = _address(x)
        out = chain(x)
        np.testing.assert_allclose(out, np.tanh(value * 2) * 3, rtol=1e-5, atol=1e-6)
        assert _address(out) == address       # the GEMM wrote into x: nothing read x after the first kernel
        plus, times = two(_fresh(value))
        np.testing.assert_allclose(plus, value + 1)
        np.testing.assert_allclose(times, value * 2)
        same, plus = passthrough(_fresh(value))
        np.testing.assert_allclose(same, value)
        np.testing.assert_allclose(plus, value + 1)


def test_donation_with_a_fallback_step():
    f = jaxlite.jit(lambda x: jnp.sort(x) * 2, donate_argnums=0)
    for _ in range(2):
        x = _fresh([3.0, 1.0, 2.0])
        np.testing.assert_array_equal(f(x), [2.0, 4.0, 6.0])
        assert x.is_deleted()
    sealed_view = jaxlite.jit(lambda v: v * 1)(_fresh([3.0, 1.0, 2.0, 0.0])).reshape(2, 2)[0]
    np.testing.assert_array_equal(jaxlite.jit(lambda x: jnp.sort(x) * 2, donate_argnums=0)(sealed_view), [2, 6])


def test_unusable_donation_warns_and_keeps_the_argument():
    f = jaxlite.jit(lambda x, y: x + 1, donate_argnums=(0, 1))
    x, y = _fresh([1.0, 2.0, 3.0]), _fresh([1, 2], np.int32)
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: ShapedArray\(int32\[2\]\)"):
        f(x, y)
    assert x.is_deleted() and not y.is_deleted()


def test_donation_never_writes_into_caller_numpy_buffers():
    f = jaxlite.jit(lambda x: x * 2 + 1, donate_argnums=0)
    for _ in range(2):
        user = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(f(user), [1, 3, 5, 7])
        shared = jnp.asarray(user)      # shares `user`'s memory
        np.testing.assert_array_equal(f(shared), [1, 3, 5, 7])
        np.testing.assert_array_equal(user, [0, 1, 2, 3])
        assert shared.is_deleted()
        x = _fresh([1.0, 2.0])
        view = x.reshape(2, 1)          # another Array on the same buffer
        f(x)
        np.testing.assert_array_equal(view, [[1], [2]])


def test_donating_an_array_used_twice_is_an_error():
    f = jaxlite.jit(lambda x, y: x + y, donate_argnums=0)
    x = _fresh([1.0])
    with pytest.raises(ValueError, match="also used by the same call"):
        f(x, x)


def test_donate_argnames_and_pytrees():
    f = jaxlite.jit(lambda params, grads: {k: params[k] - 0.1 * grads[k] for k in params},
                    donate_argnames="params")
    grads = {"w": _fresh(np.ones(4)), "b": _fresh([1.0])}
    params = {"w": _fresh(np.ones(4)), "b": _fresh([0.0])}
    for _ in range(2):
        new = f(params=params, grads=grads)
        assert all(p.is_deleted() for p in params.values()) and not grads["w"].is_deleted()
        params = new
    np.testing.assert_allclose(params["w"], 0.8, rtol=1e-6)
    g = jaxlite.jit(lambda a, b: a * b, donate_argnames="b")
    a, b = _fresh([2.0]), _fresh([3.0])
    assert float(g(a, b)[0]) == 6.0 and b.is_deleted() and not a.is_deleted()


_DONATION_CASES = [lambda x: jnp.exp(x) * x, lambda x: jnp.cumsum(x, axis=0) + x, lambda x: x[:, ::-1] * 2,
                   lambda x: jnp.maximum(x, x.T), lambda x: x / x.sum(axis=1, keepdims=True),
                   lambda x: jnp.flip(x, 0) - x, lambda x: jnp.sort(x, axis=1) + x[0]]


@settings(deadline=None, max_examples=12)
@given(case=st.integers(0, len(_DONATION_CASES) - 1), n=st.integers(1, 9), seed=st.integers(0, 2 ** 16))
def test_donation_does_not_change_results(case, n, seed):
    fn = _DONATION_CASES[case]
    value = np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32)
    expected = np.asarray(jaxlite.jit(fn)(Array(value)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        donating = jaxlite.jit(fn, donate_argnums=0)
        for _ in range(2):
            np.testing.assert_allclose(donating(_fresh(value)), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fun", [lambda a: a, lambda a: (a, a + 1), lambda a: (a * 2, a)])
def test_a_numpy_argument_passed_through_jit_is_not_aliased(fun):
    # An output that is the argument unchanged must not follow later writes to the caller's
    # buffer (arrays are immutable; JAX copies the argument to the device).
    x = np.zeros(4, np.float32)
    jitted = jaxlite.jit(fun)
    for call in range(2):      # the first call, then the cached one
        outs = jitted(x)
        outs = outs if isinstance(outs, tuple) else (outs,)
        before = [np.array(o) for o in outs]
        x[0] += 1.0
        for out, value in zip(outs, before):
            np.testing.assert_array_equal(out, value)
            assert not np.shares_memory(np.asarray(out), x)
