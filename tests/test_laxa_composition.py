"""The new lax primitives and jnp functions under tracing and transformations:
each traces to a jaxpr that typechecks and evaluates like eager code, and
composes with jvp and vmap (vmap of jvp, jvp of vmap) consistently."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core.ir import typecheck
from jaxlite.core.staging import eval_jaxpr

rng = np.random.default_rng(0)
X = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)

FUNCTIONS = {
    "special": lambda x: lax.erf(x) + lax.lgamma(x + 1) * lax.digamma(x + 1) + lax.erf_inv(x - 0.5),
    "trig": lambda x: jnp.arcsin(x) * jnp.cosh(x) + jnp.arctanh(x) - jnp.tan(x),
    "cumulative": lambda x: lax.cumsum(x, 1) + lax.cumprod(x, 0, reverse=True) + lax.cumlogsumexp(x, 1),
    "cummax": lambda x: lax.cummax(x, 1) - lax.cummin(x, 0),
    "stats": lambda x: jnp.nanmean(x, axis=0) + jnp.median(x, axis=0) + jnp.ptp(x, axis=0),
    "joining": lambda x: jnp.pad(jnp.roll(x, 1, 1), 1, "reflect").sum(axis=0)[:4] + jnp.tile(x[0], 1),
    "einsum": lambda x: jnp.einsum("ij,kj->ik", x, x).sum(axis=1)[:3] + jnp.trace(x),
    "where": lambda x: jnp.where(x > 0.5, jnp.hypot(x, 1.0), jnp.logaddexp(x, 0.0)),
}


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jaxpr_typechecks_and_matches_eager(name):
    fn = FUNCTIONS[name]
    closed = jaxlite.make_jaxpr(fn)(X)
    typecheck(closed)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, X)
    _close(out, fn(X))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_jaxpr_typechecks(name):
    fn = FUNCTIONS[name]
    closed = jaxlite.make_jaxpr(lambda x, t: jaxlite.jvp(fn, (x,), (t,)))(X, X)
    typecheck(closed)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_vmap_agrees_with_loop_and_commutes_with_jvp(name):
    fn = FUNCTIONS[name]
    batch = np.stack([X, X[::-1], X * 0.9])
    _close(jaxlite.vmap(fn)(batch), np.stack([np.asarray(fn(b)) for b in batch]))
    tangents = rng.normal(size=batch.shape).astype(np.float32)
    vmap_of_jvp = jaxlite.vmap(lambda x, t: jaxlite.jvp(fn, (x,), (t,))[1])(batch, tangents)
    jvp_of_vmap = jaxlite.jvp(jaxlite.vmap(fn), (batch,), (tangents,))[1]
    _close(vmap_of_jvp, jvp_of_vmap)
    _close(vmap_of_jvp, np.stack([np.asarray(jaxlite.jvp(fn, (b,), (t,))[1])
                                  for b, t in zip(batch, tangents)]))


def test_second_order_jvp_of_special_functions():
    """d2/dx2 lgamma = polygamma(1, x), reached through digamma's JVP rule."""
    x = np.float32(2.5)
    def d_lgamma(x):
        return jaxlite.jvp(lax.lgamma, (x,), (np.float32(1),))[1]
    second = jaxlite.jvp(d_lgamma, (x,), (np.float32(1),))[1]
    _close(second, lax.polygamma(1, x))
