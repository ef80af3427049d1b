"""Typed PRNG keys (jax.random.key, dtype key<fry>) and the jax.dtypes module."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import dtypes, random, tree_util

RAW = random.PRNGKey(3)
TYPED = random.key(3)


def test_a_typed_key_is_a_scalar_of_the_key_dtype():
    assert TYPED.shape == () and TYPED.ndim == 0 and TYPED.size == 1 and TYPED.itemsize == 8
    assert str(TYPED.dtype) == "key<fry>" and TYPED.dtype == random.key_dtype()
    assert repr(random.key(0)) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    assert jnp.issubdtype(TYPED.dtype, dtypes.prng_key) and jnp.issubdtype(TYPED.dtype, dtypes.extended)
    assert not jnp.issubdtype(TYPED.dtype, jnp.floating) and not jnp.issubdtype(jnp.uint32, dtypes.prng_key)
    assert random.key_impl(TYPED) == random.key_impl(RAW) == "threefry2x32"


@pytest.mark.parametrize("sample", [
    lambda k: random.uniform(k, (3,)), lambda k: random.normal(k, (2,)), lambda k: random.randint(k, (4,), 0, 9),
    lambda k: random.gamma(k, 2.0, (2,)), lambda k: random.permutation(k, 5), lambda k: random.bits(k, (2,)),
])
def test_samplers_take_typed_and_raw_keys_alike(sample):
    np.testing.assert_array_equal(sample(TYPED), sample(RAW))


def test_split_and_fold_in_keep_the_key_form():
    keys = random.split(TYPED, (2, 3))
    assert isinstance(keys, type(TYPED)) and keys.shape == (2, 3)
    np.testing.assert_array_equal(random.key_data(keys), random.split(RAW, (2, 3)))
    np.testing.assert_array_equal(random.key_data(random.fold_in(TYPED, 5)), random.fold_in(RAW, 5))
    np.testing.assert_array_equal(random.key_data(keys[1, 2]), random.split(RAW, (2, 3))[1, 2])
    assert keys[0].shape == (3,) and keys[..., 1].shape == (2,) and keys.reshape(6).shape == (6,)
    assert len(keys) == 2 and [k.shape for k in keys] == [(3,), (3,)] and keys.T.shape == (3, 2)
    assert bool((keys[0] == keys[0]).all()) and not bool((keys[0] != keys[0]).any())


def test_key_data_round_trip():
    words = random.key_data(random.split(TYPED, 4))
    assert words.shape == (4, 2) and words.dtype == np.uint32
    np.testing.assert_array_equal(random.key_data(random.wrap_key_data(words)), words)
    assert bool(random.clone(TYPED) == TYPED) and random.clone(TYPED).dtype == TYPED.dtype


def test_typed_keys_through_jit_vmap_and_tree_functions():
    keys = random.split(TYPED, 3)
    split_jit = jaxlite.jit(lambda k: random.split(k))(TYPED)
    np.testing.assert_array_equal(random.key_data(split_jit), random.key_data(random.split(TYPED)))
    draws = jaxlite.vmap(lambda k: random.normal(k, (2,)))(keys)
    np.testing.assert_array_equal(draws, np.stack([random.normal(k, (2,)) for k in keys]))
    new_keys = jaxlite.vmap(lambda k: random.fold_in(k, 1))(keys)
    assert new_keys.shape == (3,) and new_keys.dtype == TYPED.dtype
    mapped = tree_util.tree_map(lambda x: x, {"rng": TYPED})
    np.testing.assert_array_equal(random.key_data(mapped["rng"]), random.key_data(TYPED))
    jaxpr = jaxlite.make_jaxpr(lambda k: random.uniform(k))(TYPED)
    assert str(jaxpr.jaxpr.invars[0].aval.str_short()) == "key<fry>[]"


def test_key_errors():
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        random.key(0, impl="bogus")
    with pytest.raises(ValueError, match="not available"):
        random.key(0, impl="philox4x32")
    with pytest.raises(ValueError, match="vmap"):
        random.uniform(random.split(TYPED))
    with pytest.raises(TypeError, match="PRNG key"):
        random.wrap_key_data(jnp.zeros(3, jnp.uint32))
    with pytest.raises(TypeError, match="len"):
        len(TYPED)


def test_dtypes_module():
    assert dtypes.canonicalize_dtype(np.float64) == np.float32
    assert dtypes.canonicalize_dtype(TYPED.dtype, allow_extended_dtype=True) == TYPED.dtype
    with pytest.raises(ValueError, match="extended dtype"):
        dtypes.canonicalize_dtype(TYPED.dtype)
    assert [dtypes.scalar_type_of(x) for x in (True, 3, 2.0, jnp.ones(2, jnp.bfloat16), jnp.ones(2, jnp.uint8))] \
        == [bool, int, float, float, int]
    assert dtypes.itemsize_bits(jnp.bfloat16) == 16 and dtypes.itemsize_bits(TYPED.dtype) == 64
    assert dtypes.result_type(1, 2.0) == np.float32 and dtypes.result_type(jnp.int8(1), jnp.uint8(1)) == np.int16
    assert dtypes.issubdtype(dtypes.bfloat16, jnp.floating) and dtypes.finfo(dtypes.bfloat16).bits == 16
    assert dtypes.iinfo(np.int8).max == 127 and dtypes.float0.itemsize == 0
    assert issubclass(dtypes.TypePromotionError, ValueError)
    assert sorted(n for n in dir(dtypes) if not n.startswith("_")) == sorted(
        ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo", "float0", "iinfo",
         "issubdtype", "itemsize_bits", "prng_key", "result_type", "scalar_type_of"])


# ---------------------------------------------------------------- keys inside jaxprs, against JAX

import typed_key_cases  # noqa: E402
from jaxlite import lax  # noqa: E402

_RECORDED = typed_key_cases.recorded("jax_typed_keys.json")
_CASES = typed_key_cases.cases(jaxlite, jnp, lax)


@pytest.mark.parametrize("name", sorted(_CASES))
def test_key_functions_give_jax_values_eagerly_and_under_jit(name):
    fun, make_args = _CASES[name]
    for got in typed_key_cases.eager_and_jit(jaxlite, typed_key_cases.plain, fun, make_args()):
        assert got == _RECORDED[name]["value"]


@pytest.mark.parametrize("name", sorted(set(_CASES) - set(typed_key_cases.PRINTED_DIFFERENTLY)))
def test_jaxprs_with_keys_print_as_jax_prints_them(name):
    fun, make_args = _CASES[name]
    assert str(jaxlite.make_jaxpr(fun)(*make_args())) == _RECORDED[name]["jaxpr"]


def test_keys_in_jaxprs_have_the_key_dtype():
    jaxpr = jaxlite.make_jaxpr(lambda k: (random.split(k, 3), random.key_data(k)))(TYPED).jaxpr
    assert [v.aval.str_short() for v in jaxpr.invars + jaxpr.outvars] == ["key<fry>[]", "key<fry>[3]", "u32[2]"]
    assert str(jaxlite.typeof(random.split(TYPED, 3))) == "key<fry>[3]"


def test_jit_lowers_keys_to_their_words():
    """The compiled program sees uint32 words only: its inputs, outputs and every equation."""
    from jaxlite.core.extended import has_extended, physicalize
    closed = jaxlite.make_jaxpr(lambda k: lax.scan(lambda c, _: (random.split(c)[1], random.normal(c)), k,
                                                  None, length=3))(TYPED)
    physical = physicalize(closed)
    assert has_extended(closed.jaxpr) and not has_extended(physical.jaxpr)
    assert [v.aval.str_short() for v in physical.jaxpr.invars + physical.jaxpr.outvars] == ["u32[2]", "u32[2]", "f32[3]"]
    assert physicalize(closed) is physical     # one physical form, so one executable per jaxpr


def test_key_arrays_of_any_shape_under_vmap_match_a_loop():
    keys = random.split(TYPED, (3, 2))
    data = jnp.arange(6, dtype=jnp.uint32).reshape(3, 2)
    for fun, args in [(lambda k: random.split(k, 3), (keys,)), (lambda k, d: random.fold_in(k, d), (keys, data)),
                      (lambda k: random.uniform(k, (2,)), (keys,)), (lambda k: random.gamma(k, 1.5, (2,)), (keys,)),
                      (lambda k: k.reshape(1)[0], (keys,))]:
        batched = jaxlite.vmap(jaxlite.vmap(fun))(*args)
        rows = [[fun(*(a[i, j] for a in args)) for j in range(2)] for i in range(3)]
        expected = np.array([[np.asarray(_words(r)) for r in row] for row in rows])
        np.testing.assert_array_equal(_words(batched), expected)
        # Compiled float code may round differently by an ulp (gamma's pow and log).
        np.testing.assert_allclose(_words(jaxlite.jit(jaxlite.vmap(jaxlite.vmap(fun)))(*args)), expected, rtol=1e-6)


def _words(x):
    return random.key_data(x) if jnp.issubdtype(x.dtype, dtypes.prng_key) else x


def test_keys_through_control_flow_agree_with_eager():
    def loops(k):
        k = lax.fori_loop(0, 3, lambda i, k: random.fold_in(k, i), k)
        k = lax.cond(random.bits(k) % 2 == 0, lambda k: random.split(k)[0], lambda k: k, k)
        k, draws = lax.scan(lambda c, x: (random.fold_in(c, x), random.uniform(c)), k, jnp.arange(4))
        _, k = lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, random.split(s[1])[1]), (0, k))
        return k, draws
    eager_key, eager_draws = loops(TYPED)
    jit_key, jit_draws = jaxlite.jit(loops)(TYPED)
    assert jit_key.dtype == TYPED.dtype
    np.testing.assert_array_equal(random.key_data(jit_key), random.key_data(eager_key))
    np.testing.assert_array_equal(jit_draws, eager_draws)


def test_keys_in_pytrees_through_jit_and_shape_operations():
    keys = random.split(TYPED, 4)
    state = {"rng": keys, "step": jnp.int32(1)}
    out = jaxlite.jit(lambda s: {"rng": jnp.where(jnp.arange(4) < s["step"], s["rng"], s["rng"][::-1]),
                                 "pair": jnp.stack([s["rng"][0], s["rng"][3]]),
                                 "moved": s["rng"].reshape(2, 2).T})(state)
    words = random.key_data(keys)
    np.testing.assert_array_equal(random.key_data(out["rng"]), np.where((np.arange(4) < 1)[:, None], words, words[::-1]))
    np.testing.assert_array_equal(random.key_data(out["pair"]), words[[0, 3]])
    np.testing.assert_array_equal(random.key_data(out["moved"]), words.reshape(2, 2, 2).transpose(1, 0, 2))
    assert [leaf.dtype for leaf in tree_util.tree_leaves(out)] == [TYPED.dtype] * 3


def test_the_gradient_for_a_key_is_float0():
    def loss(x, k):
        return x * random.normal(k)
    grads = jaxlite.grad(loss, argnums=(0, 1), allow_int=True)(2.0, TYPED)
    assert grads[1].dtype == dtypes.float0 and grads[1].shape == ()
    np.testing.assert_allclose(grads[0], random.normal(TYPED))
    keys_ct = jaxlite.vjp(jaxlite.vmap(lambda k: random.uniform(k, (2,))), random.split(TYPED, 3))[1](jnp.ones((3, 2)))
    assert keys_ct[0].dtype == dtypes.float0 and keys_ct[0].shape == (3,)
    with pytest.raises(TypeError, match="key<fry>"):
        jaxlite.grad(loss, argnums=1)(2.0, TYPED)


@pytest.mark.parametrize("misuse", [lambda k: k + 1, lambda k: k * k, lambda k: lax.add(k, k),
                                    lambda k: jnp.sin(k), lambda k: k < k, lambda k: jnp.sum(k)])
def test_arithmetic_on_keys_raises_type_error(misuse):
    with pytest.raises(TypeError):
        misuse(TYPED)
    with pytest.raises(TypeError):
        jaxlite.jit(misuse)(TYPED)


def test_a_key_plus_a_number_raises_as_in_jax():
    with pytest.raises(TypeError, match=r"^add does not accept dtypes key<fry>, int32\.$"):
        TYPED + 1


def test_make_jaxpr_takes_a_shape_dtype_struct_of_keys():
    spec = jaxlite.ShapeDtypeStruct((3,), random.key_dtype())
    assert str(jaxlite.make_jaxpr(random.key_data)(spec)) == \
        "{ lambda ; a:key<fry>[3]. let b:u32[3,2] = random_unwrap a in (b,) }"


def test_jitted_calls_with_typed_keys_take_the_fast_path():
    split = jaxlite.jit(lambda k, x: (random.split(k), k, x + 1))
    x = jnp.asarray(1.0)
    first = split(TYPED, x)
    assert len(split._fast_calls) == 1
    again = split(TYPED, x)
    for a, b in zip(first[:2], again[:2]):
        assert a.dtype == b.dtype == TYPED.dtype
        np.testing.assert_array_equal(random.key_data(a), random.key_data(b))
    np.testing.assert_array_equal(random.key_data(again[1]), random.key_data(TYPED))


def test_array_methods_on_key_arrays_eagerly_and_under_jit():
    keys = random.split(TYPED, 4)
    words = np.asarray(random.key_data(keys))
    cases = [(lambda ks, k: ks.at[1].set(k), words[[0, 0, 2, 3]]),
             (lambda ks, k: ks.take(jnp.array([3, 1])), words[[3, 1]]),
             (lambda ks, k: ks.reshape(2, 2).transpose().swapaxes(0, 1).reshape(4, 1).squeeze(), words),
             (lambda ks, k: jnp.take(ks, jnp.array([0, 7])), np.array([words[0], [2 ** 32 - 1] * 2]))]
    for fun, expected in cases:
        np.testing.assert_array_equal(random.key_data(fun(keys, keys[0])), expected)
        np.testing.assert_array_equal(random.key_data(jaxlite.jit(fun)(keys, keys[0])), expected)


def test_aot_stages_with_keys():
    lowered = jaxlite.jit(lambda k: random.split(k)).lower(TYPED)
    assert "u32[2]" in lowered.as_text()       # compiled code sees the words
    np.testing.assert_array_equal(random.key_data(lowered.compile()(TYPED)), random.key_data(random.split(TYPED)))
    traced = jaxlite.jit(lambda k: random.split(k, 3)).trace(jaxlite.ShapeDtypeStruct((), random.key_dtype()))
    assert str(traced.jaxpr.jaxpr.outvars[0].aval.str_short()) == "key<fry>[3]"


def test_zeros_like_and_ones_like_of_keys_fill_their_words():
    # As JAX: keys whose uint32 words hold the fill value, eager, under jit and vmap.
    keys = jaxlite.random.split(jaxlite.random.key(0), 3)
    for make, word in ((jnp.zeros_like, 0), (jnp.ones_like, 1), (jnp.empty_like, 0),
                       (lambda k: jnp.full_like(k, 7), 7)):
        for run in (make, jaxlite.jit(make), jaxlite.vmap(make)):
            out = run(keys)
            assert str(out.dtype) == "key<fry>" and out.shape == (3,)
            np.testing.assert_array_equal(jaxlite.random.key_data(out), np.full((3, 2), word, np.uint32))
    assert "random_wrap[impl=fry]" in str(jaxlite.make_jaxpr(jnp.zeros_like)(keys))
