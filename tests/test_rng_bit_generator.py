"""lax.rng_bit_generator against bits recorded from JAX (tests/data/record_jax_rng_bit_generator.py),
lax.mulhi against numpy's double-width products, and lax.rng_uniform."""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.lower.fusion import EqnStep

CASES = json.loads((pathlib.Path(__file__).parent / "data" / "jax_rng_bit_generator.json").read_text())["cases"]


def generate(case):
    key = jnp.array(case["key"], jnp.uint32)
    return lax.rng_bit_generator(key, tuple(case["shape"]), getattr(jnp, case["dtype"]),
                                 lax.RandomAlgorithm[case["algorithm"]])


def assert_matches(case, new_key, bits):
    assert np.asarray(new_key).tolist() == case["new_key"]
    assert bits.shape == tuple(case["shape"]) and bits.dtype == np.dtype(case["dtype"])
    assert np.asarray(bits).ravel().tolist() == case["bits"]


def test_eager_bits_are_jax_bits():
    with jaxlite.enable_x64():
        for case in CASES:
            assert_matches(case, *generate(case))


def test_jit_bits_are_jax_bits():
    with jaxlite.enable_x64():
        # Every dtype and algorithm, on the key whose counter carries (each case compiles).
        for case in [c for c in CASES if c["key"][2] == 0xFFFFFFFE and c["shape"] == [3, 5]]:
            assert_matches(case, *jaxlite.jit(lambda: generate(case))())


def test_jit_runs_without_numpy_steps():
    """rng_bit_generator is rewritten with mulhi, which is rewritten in turn (they ran as a numpy step)."""
    key = jnp.array([1, 2, 3, 4], jnp.uint32)
    for algorithm in lax.RandomAlgorithm:
        program = jaxlite.jit(lambda k: lax.rng_bit_generator(k, (8,), algorithm=algorithm)).lower(key).program
        assert [s.eqn.primitive.name for s in program.steps if isinstance(s, EqnStep) and s.kind == "fallback"] == []


def test_vmap_over_keys_matches_a_loop():
    keys = jnp.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 9, 0xFFFFFFFF, 1]], jnp.uint32)
    for algorithm in lax.RandomAlgorithm:
        new_keys, bits = jaxlite.vmap(lambda k: lax.rng_bit_generator(k, (2, 3), algorithm=algorithm))(keys)
        for i, key in enumerate(keys):
            new_key, row = lax.rng_bit_generator(key, (2, 3), algorithm=algorithm)
            np.testing.assert_array_equal(new_keys[i], new_key)
            np.testing.assert_array_equal(bits[i], row)


def test_jaxpr_and_errors():
    text = str(jaxlite.make_jaxpr(lambda k: lax.rng_bit_generator(k, (3,)))(jnp.zeros(4, jnp.uint32)))
    assert "rng_bit_generator[" in text and "algorithm=RNG_DEFAULT" in text
    with pytest.raises(TypeError, match="uint32\\[4\\] key"):
        lax.rng_bit_generator(jnp.zeros(2, jnp.uint32), (3,))
    with pytest.raises(TypeError, match="unsigned integer"):
        lax.rng_bit_generator(jnp.zeros(4, jnp.uint32), (3,), jnp.int32)
    with pytest.warns(UserWarning, match="truncated to dtype uint32"):
        lax.rng_bit_generator(jnp.zeros(4, jnp.uint32), (3,), jnp.uint64)


INTS = {"int32": st.integers(-2 ** 31, 2 ** 31 - 1), "uint32": st.integers(0, 2 ** 32 - 1),
        "int8": st.integers(-128, 127), "uint16": st.integers(0, 2 ** 16 - 1)}


@settings(deadline=None, max_examples=25)
@given(st.sampled_from(sorted(INTS)), st.data())
def test_mulhi_is_the_high_half_of_the_product(dtype, data):
    values = st.lists(INTS[dtype], min_size=3, max_size=3)
    x, y = (np.array(data.draw(values), dtype) for _ in range(2))
    bits = np.dtype(dtype).itemsize * 8
    want = np.array([(int(a) * int(b)) >> bits for a, b in zip(x, y)]).astype(dtype)
    np.testing.assert_array_equal(lax.mulhi(x, y), want)
    np.testing.assert_array_equal(jaxlite.jit(lax.mulhi)(x, y), want)


def test_rng_uniform():
    draws = lax.rng_uniform(np.float32(2.0), np.float32(3.0), (1000,))
    assert draws.dtype == np.float32 and draws.shape == (1000,)
    assert 2.0 <= float(draws.min()) and float(draws.max()) < 3.0 and abs(float(draws.mean()) - 2.5) < 0.05
    ints = lax.rng_uniform(np.int32(-3), np.int32(4), (500,))
    assert ints.dtype == np.int32 and set(np.asarray(ints).tolist()) == set(range(-3, 4))
    assert "rng_uniform[shape=(3,)]" in str(jaxlite.make_jaxpr(lambda: lax.rng_uniform(0.0, 1.0, (3,)))())
