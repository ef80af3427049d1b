"""Devices, meshes and shardings, with JAX's names (jax.devices, jax.sharding).

jaxlite has one CPU device per process. In a single process that is the only device;
once jaxlite.distributed is initialized under mpiexec, `devices()` lists every process's
device (device i belongs to process i) and `local_devices()` this process's one. An
Array lives whole on its process's device, so its sharding is a SingleDeviceSharding.
A Mesh arranges the devices of all processes; shard_map runs a function on each
process's block of its arguments (jaxlite.shard_map).
"""
import enum
import math
from collections import OrderedDict

import numpy as _np

from jaxlite import _process
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.tree_util import tree_map


class Device:
    """A CPU device: the one this process computes on, or another process's."""

    platform = "cpu"
    device_kind = "cpu"

    def __init__(self, id, process_index):
        self.id, self.process_index = id, process_index

    host_id = property(lambda self: self.process_index)
    task_id = property(lambda self: self.process_index)
    local_hardware_id = property(lambda self: 0)

    def __repr__(self):
        return f"CpuDevice(id={self.id})"

    def __str__(self):
        return f"cpu:{self.id}"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("jaxlite.Device", self.id))


def _check_backend(backend):
    if backend not in (None, "cpu"):
        raise RuntimeError(f"Unknown backend {backend!r}: jaxlite has the 'cpu' backend only")


def devices(backend=None):
    """Every process's device, in process order."""
    _check_backend(backend)
    return [Device(i, i) for i in range(_process.count())]


def local_devices(process_index=None, backend=None, host_id=None):
    _check_backend(backend)
    index = _process.index() if process_index is None and host_id is None else (
        process_index if process_index is not None else host_id)
    if not 0 <= index < _process.count():
        raise ValueError(f"process_index {index} is out of range for {_process.count()} processes")
    return [Device(index, index)]


def device_count(backend=None):
    return len(devices(backend))


def local_device_count(backend=None):
    return len(local_devices(backend=backend))


def default_backend():
    return "cpu"


def process_index(backend=None):
    _check_backend(backend)
    return _process.index()


def process_count(backend=None):
    _check_backend(backend)
    return _process.count()


def local_device():
    return Device(_process.index(), _process.index())


# ---------------------------------------------------------------- partition specs and meshes

class PartitionSpec:
    """How each dimension of an array maps onto mesh axes: an axis name, a tuple of axis
    names, or None (not partitioned) per dimension; trailing dimensions are unpartitioned."""

    __slots__ = ("_partitions",)

    def __init__(self, *partitions):
        for p in partitions:
            names = p if isinstance(p, tuple) else (p,)
            if not all(n is None or isinstance(n, str) for n in names) or (isinstance(p, tuple) and None in p):
                raise TypeError(f"PartitionSpec entries must be None, an axis name or a tuple of axis names, got {p!r}")
        self._partitions = tuple(tuple(p) if isinstance(p, list) else p for p in partitions)

    def __getitem__(self, index):
        return self._partitions[index]

    def __len__(self):
        return len(self._partitions)

    def __iter__(self):
        return iter(self._partitions)

    def __eq__(self, other):
        return isinstance(other, PartitionSpec) and self._partitions == other._partitions

    def __hash__(self):
        return hash(("PartitionSpec", self._partitions))

    def __repr__(self):
        trailing = "," if len(self) == 1 else ""   # P('i',), as a one-element tuple prints
        return "P(" + ", ".join(map(repr, self._partitions)) + trailing + ")"

    def axis_names(self):
        """The mesh axes this spec partitions over, in order."""
        names = []
        for p in self._partitions:
            names.extend(p if isinstance(p, tuple) else ([] if p is None else [p]))
        return tuple(names)


P = PartitionSpec


class AxisType(enum.Enum):
    Auto = "Auto"
    Explicit = "Explicit"
    Manual = "Manual"

    def __repr__(self):
        return self.name


class Mesh:
    """An array of devices with named axes."""

    def __init__(self, devices, axis_names, axis_types=None):
        device_array = _np.empty(_np.shape(devices), dtype=object)
        device_array[...] = devices if isinstance(devices, _np.ndarray) else _nested_list(devices)
        axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if device_array.ndim != len(axis_names):
            raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal the length of "
                             f"its second argument (`axis_names`), but got devices.ndim == {device_array.ndim} "
                             f"and len(axis_names) == {len(axis_names)}.")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
        if not all(isinstance(d, Device) for d in device_array.flat):
            raise TypeError("Mesh devices must be jaxlite devices (jaxlite.devices())")
        types = (AxisType.Auto,) * len(axis_names) if axis_types is None else tuple(axis_types)
        if len(types) != len(axis_names):
            raise ValueError(f"Mesh got {len(types)} axis_types for {len(axis_names)} axes")
        device_array.flags.writeable = False
        self.devices, self.axis_names, self.axis_types = device_array, axis_names, types

    shape = property(lambda self: OrderedDict(zip(self.axis_names, self.devices.shape)))
    axis_sizes = property(lambda self: tuple(self.devices.shape))
    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.devices.shape)))
    size = property(lambda self: self.devices.size)
    empty = property(lambda self: self.devices.size == 0)
    device_ids = property(lambda self: _np.vectorize(lambda d: d.id, otypes=[int])(self.devices))
    is_multi_process = property(lambda self: len({d.process_index for d in self.devices.flat}) > 1)

    @property
    def local_devices(self):
        return [d for d in self.devices.flat if d.process_index == _process.index()]

    def _key(self):
        return (tuple(d.id for d in self.devices.flat), self.devices.shape, self.axis_names, self.axis_types)

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        sizes = ", ".join(f"{name!r}: {size}" for name, size in self.shape_tuple)
        return f"Mesh({sizes}, axis_types={self.axis_types})"

    def __repr__(self):
        return f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, axis_types={self.axis_types})"

    def __enter__(self):
        _mesh_stack.append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack.pop()


class AbstractMesh:
    """A mesh's axis names and sizes without its devices (what code tracing for a mesh needs)."""

    def __init__(self, axis_sizes, axis_names, axis_types=None):
        self.axis_sizes, self.axis_names = tuple(axis_sizes), tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh got {len(self.axis_sizes)} axis sizes for {len(self.axis_names)} names")
        self.axis_types = (AxisType.Auto,) * len(self.axis_names) if axis_types is None else tuple(axis_types)

    shape = property(lambda self: OrderedDict(zip(self.axis_names, self.axis_sizes)))
    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
    # A mesh with no axes has no devices: size 0, as JAX counts it.
    size = property(lambda self: int(_np.prod(self.axis_sizes, dtype=int)) if self.axis_names else 0)
    empty = property(lambda self: self.size == 0)

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and (self.axis_sizes, self.axis_names, self.axis_types) == \
            (other.axis_sizes, other.axis_names, other.axis_types)

    def __hash__(self):
        return hash((self.axis_sizes, self.axis_names, self.axis_types))

    def __repr__(self):
        sizes = ", ".join(f"{name!r}: {size}" for name, size in self.shape_tuple)
        return f"AbstractMesh({sizes or '()'}, axis_types={self.axis_types})"


_mesh_stack = []


def current_mesh():
    """The mesh of the innermost `with mesh:` block, or None."""
    return _mesh_stack[-1] if _mesh_stack else None


def _nested_list(devices):
    return [_nested_list(d) for d in devices] if isinstance(devices, (list, tuple)) else devices


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
    """A mesh of the given shape over `devices` (default: all of them, in process order)."""
    axis_shapes, axis_names = tuple(axis_shapes), tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh got {len(axis_shapes)} axis shapes for {len(axis_names)} axis names")
    pool = list(devices if devices is not None else globals()["devices"]())
    needed = math.prod(axis_shapes)
    if len(pool) < needed:
        raise ValueError(f"Number of devices {len(pool)} must be >= the product of mesh_shape {axis_shapes}")
    grid = _np.empty(needed, dtype=object)
    grid[:] = pool[:needed]
    types = (AxisType.Explicit,) * len(axis_names) if axis_types is None else axis_types
    return Mesh(grid.reshape(axis_shapes), axis_names, types)


# ---------------------------------------------------------------- shardings

class Sharding:
    """How an array's data is laid out over devices."""

    memory_kind = "device"

    @property
    def num_devices(self):
        return len(self.device_set)

    @property
    def addressable_devices(self):
        return {d for d in self.device_set if d.process_index == _process.index()}

    @property
    def is_fully_addressable(self):
        return self.addressable_devices == self.device_set

    def with_memory_kind(self, kind):
        return self


class SingleDeviceSharding(Sharding):
    """The whole array on one device (every jaxlite Array's sharding)."""

    def __init__(self, device, *, memory_kind=None):
        if not isinstance(device, Device):
            raise TypeError(f"SingleDeviceSharding takes a jaxlite device, got {device!r}")
        self._device = device

    device_set = property(lambda self: {self._device})
    is_fully_replicated = True

    def shard_shape(self, global_shape):
        return tuple(global_shape)

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self):
        return hash(("SingleDeviceSharding", self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"


class NamedSharding(Sharding):
    """An array's dimensions partitioned over the axes of a mesh, as `spec` says."""

    def __init__(self, mesh, spec, *, memory_kind=None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding's mesh must be a Mesh or an AbstractMesh, got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"NamedSharding's spec must be a PartitionSpec, got {type(spec).__name__}")
        check_spec_axes(spec, mesh, "NamedSharding")
        self.mesh, self.spec = mesh, spec

    device_set = property(lambda self: set(self.mesh.devices.flat))

    @property
    def is_fully_replicated(self):
        return all(self.mesh.shape[name] == 1 for name in self.spec.axis_names())

    def shard_shape(self, global_shape):
        shape = list(global_shape)
        for dim, entry in enumerate(self.spec):
            names = entry if isinstance(entry, tuple) else (() if entry is None else (entry,))
            parts = math.prod(self.mesh.shape[n] for n in names)
            if shape[dim] % parts:
                raise ValueError(f"dimension {dim} of shape {tuple(global_shape)} is not divisible by the "
                                 f"{parts} parts of {self.spec}")
            shape[dim] //= parts
        return tuple(shape)

    def __eq__(self, other):
        return isinstance(other, NamedSharding) and (other.mesh, other.spec) == (self.mesh, self.spec)

    def __hash__(self):
        return hash(("NamedSharding", self.mesh, self.spec))

    def __repr__(self):
        memory = "" if isinstance(self.mesh, AbstractMesh) else ", memory_kind=device"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}{memory})"


def _aval_sharding(aval):
    """`aval.sharding`, as JAX gives it for an array that no mesh partitions: every
    dimension unpartitioned over the empty abstract mesh."""
    return NamedSharding(AbstractMesh((), ()), PartitionSpec(*(None,) * aval.ndim))


ShapedArray.sharding = property(_aval_sharding)


def check_spec_axes(spec, mesh, what):
    """Every axis a spec names is an axis of the mesh, and no axis is named twice."""
    names = spec.axis_names()
    for name in names:
        if name not in mesh.axis_names:
            raise ValueError(f"{what}: {spec} names axis {name!r}, which is not an axis of {mesh}")
    if len(set(names)) != len(names):
        raise ValueError(f"{what}: {spec} names a mesh axis more than once")


# ---------------------------------------------------------------- moving data to and from devices

def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """x (a pytree) as jaxlite arrays on this process's device: the only place arrays live."""
    _check_target(device)
    return tree_map(_as_device_array, x)


def _check_target(target):
    if target is None or isinstance(target, PartitionSpec):
        return
    if isinstance(target, Device):
        if target.process_index != _process.index():
            raise ValueError(f"device_put: {target!r} belongs to process {target.process_index}; "
                             f"this is process {_process.index()}, and arrays live on their own process's device")
        return
    if not isinstance(target, Sharding):
        raise TypeError(f"device_put's device must be a Device, a Sharding or None, got {type(target).__name__}")
    if not target.addressable_devices:
        raise ValueError(f"device_put: {target!r} has no device of this process")


def _as_device_array(leaf):
    from jaxlite.core.trace import Tracer
    return leaf if isinstance(leaf, (Array, Tracer)) else as_array_argument(leaf)


def device_get(x):
    """x (a pytree) with every array as a numpy array on the host."""
    return tree_map(lambda leaf: _np.asarray(leaf) if type(leaf) is Array else leaf, x)
