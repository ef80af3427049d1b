"""jaxlite.ad_checkpoint: names, every policy, print_saved_residuals, static arguments."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.ad_checkpoint import checkpoint_name, print_saved_residuals
from jaxlite.test_util import check_grads
from jaxlite.transforms.checkpoint import saved_residuals

policies = jaxlite.checkpoint_policies


def _layers(x, w):
    h = checkpoint_name(jnp.sin(x @ w), "h")
    z = checkpoint_name(jnp.cos(h), "z")
    return jnp.sum(z * h)


X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
W = np.linspace(0.5, 1.5, 9, dtype=np.float32).reshape(3, 3)

POLICIES = {
    "everything": policies.everything_saveable, "nothing": policies.nothing_saveable,
    "dots": policies.dots_saveable, "dots_no_batch": policies.dots_with_no_batch_dims_saveable,
    "offload_dots": policies.offload_dot_with_no_batch_dims("device", "pinned_host"),
    "only_h": policies.save_only_these_names("h"), "names_but_h": policies.save_any_names_but_these("h"),
    "all_but_h": policies.save_anything_except_these_names("h"),
    "both": policies.save_from_both_policies(policies.dots_saveable, policies.save_only_these_names("z")),
    "save_offload": policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["h"], names_which_can_be_offloaded=["z"], offload_src="device",
        offload_dst="pinned_host"),
}

# What each policy saves besides the arguments x and w (the counts JAX 0.10 gives).
SAVED = {"everything": 4, "nothing": 0, "dots": 1, "dots_no_batch": 1, "offload_dots": 1, "only_h": 1,
         "names_but_h": 1, "all_but_h": 4, "both": 2, "save_offload": 2}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_gives_the_same_gradient_and_saves_what_it_says(name):
    f = jaxlite.checkpoint(_layers, policy=POLICIES[name])
    expected = jaxlite.grad(_layers, argnums=1)(X, W)
    np.testing.assert_allclose(jaxlite.grad(f, argnums=1)(X, W), expected, rtol=1e-5)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(f, argnums=1))(X, W), expected, rtol=1e-5)
    assert len(saved_residuals(f, X, W)) - 2 == SAVED[name]


def test_print_saved_residuals_names_arguments_and_lines(capsys):
    print_saved_residuals(jaxlite.checkpoint(_layers, policy=policies.save_only_these_names("z")), X, W)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["f32[2,3] from the argument x", "f32[3,3] from the argument w"]
    assert lines[2].startswith("f32[2,3] named 'z' from ") and lines[2].endswith("(_layers)")
    assert __file__ in lines[2] and len(lines) == 3


def test_checkpoint_name_under_transforms():
    f = lambda x: checkpoint_name(x * x, "sq")
    check_grads(f, (np.float32(1.5),), order=2)
    np.testing.assert_array_equal(jaxlite.vmap(f)(jnp.arange(3.0)), [0.0, 1.0, 4.0])
    assert "name[name=sq]" in str(jaxlite.make_jaxpr(f)(1.0))


def test_static_argnums_and_argnames_and_decorator_form():
    @jaxlite.remat
    def plain(x):
        return jnp.sin(x)

    def power(x, n, *, scale):
        return scale * x ** n
    f = jaxlite.checkpoint(power, static_argnums=(1,), static_argnames="scale")
    assert float(jaxlite.grad(f)(2.0, 3, scale=2.0)) == 24.0
    deco = jaxlite.checkpoint(policy=policies.everything_saveable)(power)
    assert float(jaxlite.grad(lambda x: deco(x, 2, scale=1.0))(3.0)) == 6.0
    np.testing.assert_allclose(jaxlite.grad(plain)(0.5), np.cos(0.5), rtol=1e-6)
