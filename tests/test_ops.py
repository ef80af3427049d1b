"""jaxlite.ops: segment reductions against a numpy loop, under jit, vmap and grad."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import ops

REDUCERS = {"segment_sum": (np.add, 0.0), "segment_prod": (np.multiply, 1.0),
            "segment_max": (np.maximum, -np.inf), "segment_min": (np.minimum, np.inf)}


def _reference(name, data, ids, num_segments):
    combine, identity = REDUCERS[name]
    out = np.full((num_segments,) + data.shape[1:], identity, data.dtype)
    for row, s in zip(data, ids):
        if 0 <= s < num_segments:
            out[s] = combine(out[s], row)
    return out


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(REDUCERS)), rows=st.integers(0, 12), num_segments=st.integers(1, 5),
       bucket_size=st.sampled_from([None, 1, 3]), seed=st.integers(0, 100))
@example(name="segment_max", rows=0, num_segments=1, bucket_size=1, seed=0)
def test_segments_match_a_loop(name, rows, num_segments, bucket_size, seed):
    rng = np.random.default_rng(seed)
    data = rng.uniform(0.5, 2.0, (rows, 2)).astype(np.float32)
    ids = rng.integers(-2, num_segments + 2, rows).astype(np.int32)   # some out of range: dropped
    got = getattr(ops, name)(data, ids, num_segments, bucket_size=bucket_size)
    np.testing.assert_allclose(got, _reference(name, data, ids, num_segments), rtol=1e-5)


def test_defaults_jit_vmap_and_grad():
    data, ids = jnp.arange(6.0), jnp.array([0, 0, 1, 1, 1, 3])
    np.testing.assert_array_equal(ops.segment_sum(data, ids), [1, 9, 0, 5])   # num_segments = max id + 1
    assert ops.segment_max(jnp.array([1, 2], jnp.int32), jnp.array([0, 0]), 2).tolist() == [2, -2 ** 31]
    np.testing.assert_array_equal(ops.segment_sum(data, jnp.array([0, 0, 1, 1, 9, -1]), 2, mode="clip"), [6, 9])
    jitted = jaxlite.jit(lambda d, i: ops.segment_sum(d, i, 4))
    np.testing.assert_array_equal(jitted(data, ids), [1, 9, 0, 5])
    batched = jaxlite.vmap(lambda d: ops.segment_max(d, ids, 4))(jnp.stack([data, -data]))
    np.testing.assert_array_equal(batched[1], [0, -2, -np.inf, -5])
    grad = jaxlite.grad(lambda d: ops.segment_max(d, ids, 4).sum())(data)
    np.testing.assert_array_equal(grad, [0, 1, 0, 0, 1, 1])
    with pytest.raises(TypeError, match="num_segments"):
        jaxlite.jit(lambda d, i: ops.segment_sum(d, i))(data, ids)
