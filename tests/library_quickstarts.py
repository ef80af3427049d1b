"""Quickstarts of JAX's libraries, as their READMEs show them, each returning its numbers.

Each function imports `jax` and the library when called: under real JAX
(tests/data/record_library_quickstarts.py, run with JAX installed) they record
the reference values in tests/data/library_quickstarts.json; under jaxlite,
after jaxlite.install_as_jax(), tests/test_libraries.py runs them unmodified
and compares.
"""
import numpy as np


def _regression_data():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(32, 3)).astype(np.float32)
    ys = (xs @ np.array([1.5, -2.0, 0.5], np.float32) + 0.3).astype(np.float32)
    return xs, ys


def optax_linear_regression():
    """optax.adam, and a chain with a schedule, training a linear model with jit(value_and_grad)."""
    import jax
    import jax.numpy as jnp
    import optax
    xs, ys = _regression_data()

    def loss(params):
        return jnp.mean((xs @ params["w"] + params["b"] - ys) ** 2)

    def train(optimizer, steps=30):
        params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
        state = optimizer.init(params)

        @jax.jit
        def step(params, state):
            value, grads = jax.value_and_grad(loss)(params)
            updates, state = optimizer.update(grads, state, params)
            return optax.apply_updates(params, updates), state, value

        losses = []
        for _ in range(steps):
            params, state, value = step(params, state)
            losses.append(float(value))
        return {"losses": losses, "w": np.asarray(params["w"]).tolist(), "b": float(params["b"])}

    schedule = optax.exponential_decay(0.1, transition_steps=10, decay_rate=0.5)
    chain = optax.chain(optax.clip_by_global_norm(1.0), optax.scale_by_adam(),
                        optax.scale_by_schedule(schedule), optax.scale(-1.0))
    return {"adam": train(optax.adam(0.1)), "chain": train(chain)}


def equinox_mlp():
    """An eqx.nn.MLP trained a few steps with filter_jit, filter_value_and_grad and filter_grad."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    model = eqx.nn.MLP(in_size=2, out_size=1, width_size=8, depth=2, key=jax.random.PRNGKey(0))
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(16, 2)).astype(np.float32))
    y = jnp.sin(x[:, :1]) + x[:, 1:] ** 2

    def loss(model):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    @eqx.filter_jit
    def step(model):
        value, _ = eqx.filter_value_and_grad(loss)(model)
        grads = eqx.filter_grad(loss)(model)
        return eqx.apply_updates(model, jax.tree_util.tree_map(lambda g: -0.1 * g, grads)), value

    losses = []
    for _ in range(5):
        model, value = step(model)
        losses.append(float(value))
    return {"losses": losses, "first_layer": np.asarray(model.layers[0].weight).tolist()}


def flax_linen_cnn():
    """A flax.linen model with Conv and Dense layers: init, apply and jit(grad)."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(features=4, kernel_size=(3, 3))(x))
            x = x.reshape((x.shape[0], -1))
            return nn.Dense(features=2)(nn.relu(nn.Dense(features=8)(x)))

    model = CNN()
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 6, 6, 1)).astype(np.float32))
    params = model.init(jax.random.PRNGKey(0), x)
    grads = jax.jit(jax.grad(lambda p: jnp.mean(model.apply(p, x) ** 2)))(params)
    keystr = jax.tree_util.keystr
    return {"out": np.asarray(model.apply(params, x)).tolist(),
            "params": {keystr(k): np.asarray(v).tolist() for k, v in jax.tree_util.tree_leaves_with_path(params)},
            "grads": {keystr(k): np.asarray(v).tolist() for k, v in jax.tree_util.tree_leaves_with_path(grads)}}


def flax_nnx_mlp():
    """flax.nnx, as its README shows it: a Module of Linear, BatchNorm and Dropout layers built
    eagerly from nnx.Rngs, trained with nnx.Optimizer(optax.adam) in an nnx.jit step that takes
    nnx.value_and_grad; then evaluated in eval mode. (The first Linear has no bias: BatchNorm
    cancels it, so its gradient is rounding noise that adam would scale up to full steps.)"""
    import jax.numpy as jnp
    import optax
    from flax import nnx

    class Model(nnx.Module):
        def __init__(self, din, dmid, dout, rngs: nnx.Rngs):
            self.linear = nnx.Linear(din, dmid, use_bias=False, rngs=rngs)
            self.bn = nnx.BatchNorm(dmid, rngs=rngs)
            self.dropout = nnx.Dropout(0.2, rngs=rngs)
            self.linear_out = nnx.Linear(dmid, dout, rngs=rngs)

        def __call__(self, x):
            x = nnx.relu(self.dropout(self.bn(self.linear(x))))
            return self.linear_out(x)

    model = Model(2, 16, 3, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            return ((model(x) - y) ** 2).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(8, 2)).astype(np.float32))
    y = jnp.asarray(rng.normal(size=(8, 3)).astype(np.float32))
    losses = [float(train_step(model, optimizer, x, y)) for _ in range(5)]
    model.eval()
    return {"losses": losses, "eval_out": np.asarray(model(x)).tolist(),
            "kernel": np.asarray(model.linear_out.kernel[...]).tolist(),
            "batch_stats_mean": np.asarray(model.bn.mean[...]).tolist()}


def chex_asserts_and_dataclasses():
    """chex dataclasses as pytrees, passing and failing asserts, asserts inside jit."""
    import chex
    import jax
    import jax.numpy as jnp

    @chex.dataclass
    class Params:
        w: chex.Array
        b: chex.Array

    p = Params(w=jnp.ones((2, 3)), b=jnp.zeros(3))
    chex.assert_shape(p.w, (2, 3))
    chex.assert_rank([p.w, p.b], [2, 1])
    chex.assert_type(p.w, float)
    chex.assert_equal_shape([p.b, jnp.ones(3)])
    chex.assert_trees_all_close(p, Params(w=jnp.ones((2, 3)) + 1e-7, b=jnp.zeros(3)))
    chex.assert_tree_all_finite(p)
    failures = []
    for check in (lambda: chex.assert_shape(p.w, (3, 2)), lambda: chex.assert_rank(p.b, 2),
                  lambda: chex.assert_trees_all_close(p, p.replace(b=jnp.ones(3))),
                  lambda: chex.assert_tree_all_finite(p.replace(b=jnp.array([0.0, jnp.nan, 1.0])))):
        try:
            check()
            failures.append(None)
        except AssertionError as error:
            failures.append(str(error).splitlines()[0][:40])

    @jax.jit
    def f(params, x):
        chex.assert_shape(x, (3,))
        return jnp.sum(params.w @ x + params.b[:2].sum())

    x = jnp.arange(3.0)
    return {"f": float(f(p, x)), "grad_w": np.asarray(jax.grad(f)(p, x).w).tolist(),
            "leaves": len(jax.tree_util.tree_leaves(p)), "keys": sorted(p.keys()), "failures": failures}


def chex_chexify():
    """chex.chexify on a jitted function: its chex asserts run as checks of the compiled code and
    raise on the host after the call; the message as chex writes it (up to the source location)."""
    import chex
    import jax
    import jax.numpy as jnp

    @chex.chexify
    @jax.jit
    def log_abs(x, y):
        chex.assert_tree_all_finite(x)
        chex.assert_trees_all_equal(x, y)
        return jnp.log(jnp.abs(x) + 1)

    def message(*args):
        try:
            log_abs(*args)
            chex.block_until_chexify_assertions_complete()
        except AssertionError as error:
            return str(error).split(" [failed at")[0]
        return None
    ones = jnp.ones(2)
    return {"out": np.asarray(log_abs(ones, ones)).tolist(), "passes": message(ones, ones),
            "not_finite": message(jnp.array([1.0, jnp.nan]), ones), "not_equal": message(ones, 2 * ones)}


def distrax_distributions():
    """distrax Normal and Categorical: log_prob, sample, entropy, and a gradient through log_prob."""
    import distrax
    import jax
    import jax.numpy as jnp
    key = jax.random.PRNGKey(0)
    normal = distrax.Normal(loc=jnp.array([0.0, 1.0]), scale=jnp.array([1.0, 2.0]))
    categorical = distrax.Categorical(logits=jnp.array([0.1, 0.5, -1.0]))
    x = jnp.array([0.3, -0.7])

    def loss(loc):
        return jnp.sum(distrax.Normal(loc, 1.5).log_prob(x))
    return {"normal_log_prob": np.asarray(normal.log_prob(x)).tolist(),
            "normal_sample": np.asarray(normal.sample(seed=key, sample_shape=(3,))).tolist(),
            "normal_entropy": np.asarray(normal.entropy()).tolist(),
            "categorical_log_prob": np.asarray(categorical.log_prob(jnp.array([0, 2]))).tolist(),
            "categorical_sample": np.asarray(categorical.sample(seed=key, sample_shape=(5,))).tolist(),
            "categorical_probs": np.asarray(categorical.probs).tolist(),
            "grad_loc": float(jax.grad(loss)(0.2)), "jit_grad_loc": float(jax.jit(jax.grad(loss))(0.2))}


def numpyro_nuts():
    """NUTS on a tiny model (a normal mean with a known scale): a short chain's samples, and the
    posterior mean and spread from a few hundred samples."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS
    data = jnp.asarray(np.random.default_rng(0).normal(1.0, 0.5, size=20).astype(np.float32))

    def model(data):
        mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
        numpyro.sample("obs", dist.Normal(mu, 0.5), obs=data)

    def samples(num_warmup, num_samples):
        mcmc = MCMC(NUTS(model), num_warmup=num_warmup, num_samples=num_samples, progress_bar=False)
        mcmc.run(jax.random.PRNGKey(0), data)
        return mcmc.get_samples()["mu"]

    mu = samples(200, 300)
    return {"short_chain": np.asarray(samples(20, 3)).tolist(),
            "posterior": {"mean": float(jnp.mean(mu)), "std": float(jnp.std(mu))}}


def blackjax_nuts():
    """blackjax NUTS on a 2-D Gaussian, under jit (issue 21 item 3: once silently wrong)."""
    import blackjax
    import jax
    import jax.numpy as jnp
    mu = jnp.array([1.0, -1.0])
    precision = jnp.array([[2.0, 0.5], [0.5, 1.0]])

    def logdensity(x):
        return -0.5 * (x - mu) @ precision @ (x - mu)

    nuts = blackjax.nuts(logdensity, step_size=0.5, inverse_mass_matrix=jnp.ones(2))
    state = nuts.init(jnp.zeros(2))
    step = jax.jit(nuts.step)
    key = jax.random.PRNGKey(0)
    steps = []
    for _ in range(10):
        key, subkey = jax.random.split(key)
        state, info = step(subkey, state)
        steps.append({"position": np.asarray(state.position).tolist(),
                      "acceptance_rate": float(info.acceptance_rate),
                      "num_integration_steps": int(info.num_integration_steps)})
    return {"steps": steps}


QUICKSTARTS = {f.__name__: f for f in (optax_linear_regression, equinox_mlp, flax_linen_cnn, flax_nnx_mlp,
                                       chex_asserts_and_dataclasses, chex_chexify, distrax_distributions,
                                       numpyro_nuts, blackjax_nuts)}
