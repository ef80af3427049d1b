"""Abstract values: what a tracer knows about an array without its contents."""
import math

import numpy as np

from jaxlite.core import dtypes


class AbstractValue:
    """The base of every type a traced value can have (JAX's core.AbstractValue): arrays'
    ShapedArray, Refs' AbstractRef, and the types code defines with jax.experimental.hijax."""

    __slots__ = ()


# Value classes code registers with jax.experimental.hijax.register_hitype -> their typeof.
hitype_typeof = {}


def hi_type_of(x):
    """The type of a registered hijax value (a HiType), or None for any other value."""
    rule = hitype_typeof.get(type(x))
    return None if rule is None else rule(x)


def is_hi(aval):
    """Whether `aval` is a type code defined with jax.experimental.hijax (lowered to arrays
    only when a program is compiled)."""
    return getattr(aval, "is_high", False)


class ShapedArray(AbstractValue):
    """Shape, dtype and weak type of an array; hashable, so it can key caches."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        # Shapes usually arrive as tuples of ints already; only convert the others.
        self.shape = shape if type(shape) is tuple else tuple(int(d) for d in shape)
        if not (type(dtype) is np.dtype or isinstance(dtype, (np.dtype, dtypes.ExtendedDType))):
            dtype = np.dtype(dtype)
        self.dtype = dtype
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def strip_weak_type(self):
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def update(self, shape=None, dtype=None, weak_type=None):
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def str_short(self):
        """The jaxpr spelling: f32[3,4]."""
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __str__(self):
        """As JAX prints `jax.typeof(x)`: float32[3], with ~ for a weak type."""
        return f"{'~' if self.weak_type else ''}{self.dtype.name}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype.name}[{','.join(map(str, self.shape))}]{weak})"


class ShapeDtypeStruct:
    """A shape and dtype with no data: what `eval_shape` returns, and what `jit(f).trace`,
    `.lower` and `eval_shape` take in place of an array."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else dtypes.as_dtype(dtype)
        self.weak_type = bool(weak_type)
        self.sharding = sharding

    @classmethod
    def like(cls, x):
        """The shape, dtype and weak type of an array (or anything with .shape and .dtype)."""
        return cls(np.shape(x), x.dtype, weak_type=getattr(x, "weak_type", False),
                   sharding=getattr(x, "sharding", None))

    def update(self, **changes):
        fields = {"shape": self.shape, "dtype": self.dtype, "weak_type": self.weak_type,
                  "sharding": self.sharding, **changes}
        shape, dtype = fields.pop("shape"), fields.pop("dtype")
        return ShapeDtypeStruct(shape, dtype, **fields)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def broadcast_shapes(*shapes):
    """numpy broadcasting of shapes, with an error that names every shape."""
    ndim = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    result = []
    for sizes in zip(*padded):
        non_unit = {d for d in sizes if d != 1}
        if len(non_unit) > 1:
            shown = ", ".join(str(tuple(s)) for s in shapes)
            raise ValueError(f"Incompatible shapes for broadcasting: shapes=[{shown}]")
        result.append(non_unit.pop() if non_unit else 1)
    return tuple(result)


def canonicalize_axis(axis, ndim, name="axis"):
    """A non-negative axis, or a ValueError naming the axis and the rank."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{name} must be an integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name} {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % ndim


def canonicalize_axes(axes, ndim, name="axis"):
    """A tuple of non-negative axes in the given order; None means all axes."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    result = tuple(canonicalize_axis(a, ndim, name) for a in axes)
    if len(set(result)) != len(result):
        raise ValueError(f"repeated {name} in {tuple(axes)}")
    return result
