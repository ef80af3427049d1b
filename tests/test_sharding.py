"""Devices, meshes, shardings, shard_map and pmap in a single process (one CPU device).

The multi-process behaviour (shard_map over MPI) is tested in test_distributed.py.
"""
import numpy as np
import pytest

import jaxlite
from jaxlite import lax
from jaxlite import numpy as jnp
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding


def test_one_cpu_device():
    (device,) = jaxlite.devices()
    assert repr(device) == "CpuDevice(id=0)" and str(device) == "cpu:0"
    assert (device.id, device.process_index, device.platform, device.device_kind) == (0, 0, "cpu", "cpu")
    assert jaxlite.local_devices() == [device] and isinstance(device, jaxlite.Device)
    assert (jaxlite.device_count(), jaxlite.local_device_count(), jaxlite.default_backend()) == (1, 1, "cpu")
    assert (jaxlite.process_index(), jaxlite.process_count()) == (0, 1)
    with pytest.raises(RuntimeError, match="backend"):
        jaxlite.devices("gpu")


def test_array_devices_and_sharding():
    x = jnp.arange(3.0)
    (device,) = jaxlite.devices()
    assert x.devices() == {device}
    assert x.sharding == SingleDeviceSharding(device) and x.sharding.is_fully_replicated
    assert repr(x.sharding) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"


def test_aval_sharding_is_unpartitioned_over_the_empty_abstract_mesh():
    sharding = jaxlite.typeof(jnp.ones((2, 3))).sharding
    assert repr(sharding) == "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None, None))"
    assert sharding.spec == P(None, None) and sharding.mesh.empty
    seen = []
    jaxlite.jit(lambda x: seen.append(jaxlite.typeof(x).sharding.spec))(jnp.ones(3))
    assert seen == [P(None)]


def test_device_put_and_get():
    (device,) = jaxlite.devices()
    tree = jaxlite.device_put({"a": np.arange(3.0), "b": 1.5}, device)
    assert isinstance(tree["a"], jaxlite.Array) and tree["a"].dtype == jnp.float32
    assert tree["b"].weak_type
    back = jaxlite.device_get(tree)
    assert type(back["a"]) is np.ndarray and np.array_equal(back["a"], [0, 1, 2])
    mesh = jaxlite.make_mesh((1,), ("i",))
    assert jaxlite.device_put(back["a"], NamedSharding(mesh, P("i"))).shape == (3,)
    with pytest.raises(TypeError, match="Device, a Sharding"):
        jaxlite.device_put(1.0, "cpu:0")


def test_partition_spec():
    assert repr(P("i")) == "P('i',)" and repr(P("i", ("j", "k"), None)) == "P('i', ('j', 'k'), None)"
    assert repr(P()) == "P()" and P("i") == P("i") and P("i") != ("i",) and hash(P("i")) == hash(P("i"))
    assert len(P("i", None)) == 2 and P("i", None)[0] == "i"
    with pytest.raises(TypeError):
        P(1)


def test_mesh_and_named_sharding():
    mesh = jaxlite.make_mesh((1, 1), ("x", "y"))
    assert mesh.shape == {"x": 1, "y": 1} and mesh.axis_names == ("x", "y") and mesh.size == 1
    assert str(mesh) == "Mesh('x': 1, 'y': 1, axis_types=(Explicit, Explicit))"
    assert Mesh(np.array(jaxlite.devices()), ("i",)) == Mesh(jaxlite.devices(), "i")
    sharding = NamedSharding(mesh, P("x"))
    assert sharding.device_set == set(jaxlite.devices()) and sharding.num_devices == 1
    assert sharding.shard_shape((4, 2)) == (4, 2)
    with pytest.raises(ValueError, match="not an axis"):
        NamedSharding(mesh, P("z"))
    with pytest.raises(ValueError, match="Number of devices 1 must be >="):
        jaxlite.make_mesh((2,), ("i",))
    with pytest.raises(ValueError, match="ndim"):
        Mesh(jaxlite.devices(), ("a", "b"))


def _mesh():
    return jaxlite.make_mesh((1,), ("i",))


def _collectives(x):
    """Every collective over the one-device axis, combined into one value per element."""
    total = lax.psum(x, "i") + lax.pmax(x, "i") - lax.pmin(x, "i") + lax.pmean(x, "i")
    gathered = lax.all_gather(x, "i", axis=1, tiled=True)
    return total * gathered + lax.axis_index("i")


@pytest.mark.parametrize("jit", [False, True])
def test_shard_map_on_one_device_equals_vmap_over_one(jit):
    x = jnp.arange(6.0).reshape(2, 3)
    f = jaxlite.shard_map(_collectives, mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    f = jaxlite.jit(f) if jit else f
    want = jaxlite.vmap(_collectives, axis_name="i")(x[None])[0]
    np.testing.assert_allclose(f(x), want)


def test_shard_map_replication_check():
    mesh = _mesh()
    ok = jaxlite.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
    np.testing.assert_allclose(ok(jnp.ones(3)), np.ones(3))
    varying = jaxlite.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P())
    with pytest.raises(ValueError, match="can't be statically inferred"):
        varying(jnp.ones(3))
    unchecked = jaxlite.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P(), check_vma=False)
    np.testing.assert_allclose(unchecked(jnp.ones(3)), np.ones(3))
    with pytest.raises(ValueError, match="not an axis"):
        jaxlite.shard_map(lambda x: x, mesh=mesh, in_specs=P("j"), out_specs=P("j"))(jnp.ones(3))


@pytest.mark.parametrize("check_vma", [True, False])
def test_grad_through_shard_map(check_vma):
    def loss(w, x):
        inner = lambda w, x: lax.pmean(jnp.sum((w * x) ** 2), "i")
        return jaxlite.shard_map(inner, mesh=_mesh(), in_specs=(P(), P("i")), out_specs=P(),
                                 check_vma=check_vma)(w, x)
    x = jnp.arange(4.0)
    expected = 2 * 1.5 * np.sum(np.arange(4.0) ** 2)
    np.testing.assert_allclose(jaxlite.grad(loss)(1.5, x), expected, rtol=1e-6)
    np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(loss))(1.5, x), expected, rtol=1e-6)


def test_shard_map_as_decorator_and_with_mesh():
    with _mesh():
        @jaxlite.shard_map(in_specs=P("i"), out_specs=P("i"))
        def double(x):
            return 2 * x
        np.testing.assert_allclose(double(jnp.ones(2)), [2, 2])
    with pytest.raises(ValueError, match="requires a mesh"):
        jaxlite.shard_map(lambda x: x, in_specs=P(), out_specs=P())(jnp.ones(2))


def test_pmap_over_the_local_device():
    f = jaxlite.pmap(lambda x: lax.psum(x, "d") * lax.axis_index("d") + x, axis_name="d")
    np.testing.assert_allclose(f(jnp.ones((1, 3))), np.ones((1, 3)))
    with pytest.raises(ValueError, match="local device"):
        f(jnp.ones((2, 3)))


def test_pmap_static_and_unmapped_arguments():
    f = jaxlite.pmap(lambda scale, x, y: scale * x + y, in_axes=(None, 0, None), static_broadcasted_argnums=0)
    np.testing.assert_allclose(f(3.0, jnp.ones((1, 2)), jnp.ones(2)), [[4, 4]])


def test_out_specs_are_a_prefix_of_the_outputs():
    f = jaxlite.shard_map(lambda x: ([x, x], lax.psum(x, "i")), mesh=_mesh(), in_specs=P("i"),
                          out_specs=(P("i"), P()))
    (a, b), c = f(jnp.ones(2))
    np.testing.assert_allclose(c, [1, 1])
    with pytest.raises(ValueError, match="entry 2 is P()"):
        jaxlite.shard_map(lambda x: ([x, x], x), mesh=_mesh(), in_specs=P("i"), out_specs=(P("i"), P()))(jnp.ones(2))
