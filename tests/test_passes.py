"""Each graph pass on small jaxprs: the result typechecks, computes the same, and is simpler."""
import numpy as np

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.ir import typecheck
from jaxlite.core.staging import eval_jaxpr
from jaxlite.lower import passes, pipeline


def primitive_names(closed):
    return [eqn.primitive.name for eqn in closed.jaxpr.eqns]


def check_same(before, after, *args):
    typecheck(after)
    want = eval_jaxpr(before.jaxpr, before.consts, *args)
    got = eval_jaxpr(after.jaxpr, after.consts, *args)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert g.dtype == w.dtype


X = np.linspace(-2, 2, 6).astype(np.float32).reshape(2, 3)


def test_inline_calls():
    inner = jaxlite.jit(lambda x: jnp.sin(x) * 2)
    closed = jaxlite.make_jaxpr(lambda x: inner(x) + inner(x))(X)
    assert "jit" in primitive_names(closed)
    inlined = passes.inline_calls(closed)
    assert "jit" not in primitive_names(inlined)
    check_same(closed, inlined, X)


def test_inline_keeps_inner_constants():
    table = jnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    inner = jaxlite.jit(lambda x: x * table)
    closed = jaxlite.make_jaxpr(lambda x: inner(x) + 1)(X)
    inlined = passes.inline_calls(closed)
    assert len(inlined.consts) == 1
    check_same(closed, inlined, X)


def test_dce_removes_unused_equations_and_constants():
    unused = jnp.asarray(np.ones(3, np.float32))
    closed = jaxlite.make_jaxpr(lambda x: (jnp.exp(x), jnp.sin(x) + unused)[0])(X)
    cleaned = passes.dce(closed)
    assert primitive_names(cleaned) == ["exp"] and cleaned.consts == []
    check_same(closed, cleaned, X)


def test_cse_merges_equal_equations():
    closed = jaxlite.make_jaxpr(lambda x: jnp.exp(x) + jnp.exp(x))(X)
    merged = passes.dce(passes.cse(closed))
    assert primitive_names(merged).count("exp") == 1
    check_same(closed, merged, X)


def test_fold_constants_only_small():
    closed = jaxlite.make_jaxpr(lambda x: x * (lax.exp(lax.convert_element_type(1.0, np.float32)) + 1)
                                + lax.full((2, 3), 2.0, np.float32))(X)
    folded = passes.dce(passes.fold_constants(closed))
    names = primitive_names(folded)
    assert "exp" not in names
    assert "broadcast_in_dim" in names      # a full array is never turned into a constant
    typecheck(folded)
    np.testing.assert_allclose(np.asarray(eval_jaxpr(folded.jaxpr, folded.consts, X)[0]),
                               X * (np.e + 1) + 2, rtol=1e-6)


def test_simplify_identities():
    def f(x, n):
        a = lax.mul(x, 1.0)
        b = lax.neg(lax.neg(a))
        c = lax.sub(b, 0.0)
        d = lax.add(n, 0)
        return c, d
    closed = jaxlite.make_jaxpr(f)(X, np.int32(4))
    simplified = passes.dce(passes.simplify(closed))
    assert primitive_names(simplified) == []
    check_same(closed, simplified, X, np.int32(4))


def test_float_plus_zero_is_kept():
    closed = jaxlite.make_jaxpr(lambda x: lax.add(x, 0.0))(np.float32(-0.0))
    assert primitive_names(passes.simplify(closed)) == ["add"]     # -0.0 + 0.0 is +0.0


def test_transpose_and_reshape_chains():
    def f(x):
        t = lax.transpose(lax.transpose(x, (1, 0)), (1, 0))
        r = lax.reshape(lax.reshape(x, (6,)), (3, 2))
        return t, r
    closed = jaxlite.make_jaxpr(f)(X)
    simplified = passes.dce(pipeline.run_stages(closed, pipeline.CLEANUP))
    assert primitive_names(simplified) == ["reshape"]
    check_same(closed, simplified, X)


def test_broadcast_scalar_literal_becomes_literal():
    closed = jaxlite.make_jaxpr(lambda x: x * lax.full((2, 3), 3.0, np.float32))(X)
    simplified = passes.dce(passes.simplify(passes.fold_constants(closed)))
    assert primitive_names(simplified) == ["mul"]
    check_same(closed, simplified, X)


def test_dump_passes_logs_every_pass(caplog):
    import logging
    from jaxlite.core.config import config
    closed = jaxlite.make_jaxpr(lambda x: jnp.exp(x) + 0)(X)
    config.update("jaxlite_dump_passes", True)
    try:
        with caplog.at_level(logging.INFO, logger="jaxlite.jit"):
            pipeline.run_stages(closed, pipeline.CLEANUP)
    finally:
        config.update("jaxlite_dump_passes", False)
    for stage in pipeline.CLEANUP:
        assert f"after {stage.name}" in caplog.text


def test_dump_passes_shows_the_fused_kernels(caplog):
    import logging
    from jaxlite.core.config import config
    config.update("jaxlite_dump_passes", True)
    try:
        with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
            jaxlite.jit(lambda x: jnp.exp(x) * 2).lower(X)
    finally:
        config.update("jaxlite_dump_passes", False)
    assert "after fusion" in caplog.text and "kernel fused" in caplog.text


def test_transposed_dot_operands_fold_into_dimension_numbers():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(20, dtype=np.float32).reshape(5, 4)
    closed = jaxlite.make_jaxpr(lambda x, y: (lax.dot(x, y.T), lax.dot_general(
        lax.transpose(x, (1, 0)), x, (((1,), (0,)), ((), ())))))(a, b)
    simplified = passes.dce(passes.simplify(closed))
    assert "transpose" not in primitive_names(simplified)
    check_same(closed, simplified, a, b)
