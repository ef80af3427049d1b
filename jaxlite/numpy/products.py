"""Matrix and tensor products, all through lax.dot_general."""
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.core.abstract import broadcast_shapes, canonicalize_axes
from jaxlite.numpy.util import broadcast_to, check_arraylike, promote_dtypes


def matmul(a, b, precision=None, preferred_element_type=None, *, out_sharding=None):
    """NumPy's matmul: 1-D operands are vectors; leading dimensions broadcast as batches."""
    check_arraylike("matmul", a, b)
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must not be scalars, got shapes {a.shape} and {b.shape}")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    a = lax.reshape(a, (1,) + a.shape) if a_vec else a
    b = lax.reshape(b, b.shape + (1,)) if b_vec else b
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"matmul: the contracting dimensions differ: the first operand's last "
                        f"axis has size {a.shape[-1]}, the second operand's "
                        f"{'only' if b_vec else 'second-to-last'} axis has size {b.shape[-2]} "
                        f"(shapes {a.shape[1:] if a_vec else a.shape} and "
                        f"{b.shape[:-1] if b_vec else b.shape})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    nb = len(batch)
    out = lax.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                          preferred_element_type=preferred_element_type)
    if a_vec:
        out = lax.squeeze(out, (nb,))
    if b_vec:
        out = lax.squeeze(out, (out.ndim - 1,))
    return out


def dot(a, b, precision=None, preferred_element_type=None, *, out_sharding=None):
    """NumPy's dot: scalars multiply; otherwise contract a's last axis with b's second-to-last."""
    check_arraylike("dot", a, b)
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return lax.mul(*broadcast_pair(a, b))
    b_axis = 0 if b.ndim == 1 else b.ndim - 2
    return lax.dot_general(a, b, (((a.ndim - 1,), (b_axis,)), ((), ())),
                           preferred_element_type=preferred_element_type)


def broadcast_pair(a, b):
    shape = broadcast_shapes(a.shape, b.shape)
    return broadcast_to(a, shape), broadcast_to(b, shape)


def _operands(name, *args):
    check_arraylike(name, *args)
    return promote_dtypes(*args)


def vdot(a, b, precision=None, preferred_element_type=None):
    """The dot product of the flattened arrays."""
    a, b = _operands("vdot", a, b)
    if a.size != b.size:
        raise ValueError(f"vdot: arrays of sizes {a.size} and {b.size} differ")
    return dot(lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,)),
               preferred_element_type=preferred_element_type)


def inner(a, b, precision=None, preferred_element_type=None):
    """Contract the last axes of a and b (scalars multiply)."""
    a, b = _operands("inner", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return lax.mul(*broadcast_pair(a, b))
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"inner: last dimensions differ, shapes {a.shape} and {b.shape}")
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())),
                           preferred_element_type=preferred_element_type)


def outer(a, b):
    a, b = _operands("outer", a, b)
    return lax.dot_general(lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,)), (((), ()), ((), ())))


def tensordot(a, b, axes=2, precision=None, preferred_element_type=None, *, out_sharding=None):
    """Contract axes of a with axes of b: an int n pairs a's last n with b's first n."""
    a, b = _operands("tensordot", a, b)
    if isinstance(axes, int):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} exceeds the rank of shapes {a.shape} and {b.shape}")
        a_axes, b_axes = tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")
        a_axes = canonicalize_axes(axes[0], a.ndim)
        b_axes = canonicalize_axes(axes[1], b.ndim)
        if len(a_axes) != len(b_axes):
            raise ValueError(f"tensordot: {len(a_axes)} axes of a paired with {len(b_axes)} of b")
    for i, j in zip(a_axes, b_axes):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: shape mismatch, axis {i} of {a.shape} and axis {j} of {b.shape}")
    return lax.dot_general(a, b, ((a_axes, b_axes), ((), ())), preferred_element_type=preferred_element_type)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """The sum along a diagonal of the plane (axis1, axis2)."""
    from jaxlite.numpy.reductions import sum
    (a,) = _operands("trace", a)
    if a.ndim < 2:
        raise ValueError(f"trace needs an array of at least 2 dimensions, got shape {a.shape}")
    axis1, axis2 = canonicalize_axes((axis1, axis2), a.ndim)
    rows = lax.broadcasted_iota(dtypes.int32, a.shape, axis1)
    cols = lax.broadcasted_iota(dtypes.int32, a.shape, axis2)
    on_diagonal = lax.eq(lax.add(rows, offset), cols)
    return sum(lax.select_n(on_diagonal, lax.full_like(a, 0), a), (axis1, axis2), dtype=dtype)


def kron(a, b):
    """The Kronecker product: blocks a[i, j] * b."""
    a, b = _operands("kron", a, b)
    ndim = max(a.ndim, b.ndim)
    a = lax.reshape(a, (1,) * (ndim - a.ndim) + a.shape)
    b = lax.reshape(b, (1,) * (ndim - b.ndim) + b.shape)
    interleaved = tuple(d for pair in zip(a.shape, b.shape) for d in pair)
    a_wide = lax.broadcast_in_dim(a, interleaved, tuple(range(0, 2 * ndim, 2)))
    b_wide = lax.broadcast_in_dim(b, interleaved, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(lax.mul(a_wide, b_wide), tuple(m * n for m, n in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 2- or 3-vectors along the given axes (2-vectors give the z component)."""
    from jaxlite.numpy.shape_ops import moveaxis, stack
    a, b = _operands("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(f"cross: incompatible vector sizes {a.shape[-1]} and {b.shape[-1]} "
                         "(must be 2 or 3)")
    ax, ay, az = _components(a)
    bx, by, bz = _components(b)
    shape = broadcast_shapes(a.shape[:-1], b.shape[:-1])
    z = lax.sub(lax.mul(*broadcast_pair(ax, by)), lax.mul(*broadcast_pair(ay, bx)))
    if az is None and bz is None:
        return broadcast_to(z, shape)
    az = lax.full_like(ax, 0) if az is None else az
    bz = lax.full_like(bx, 0) if bz is None else bz
    x = lax.sub(lax.mul(*broadcast_pair(ay, bz)), lax.mul(*broadcast_pair(az, by)))
    y = lax.sub(lax.mul(*broadcast_pair(az, bx)), lax.mul(*broadcast_pair(ax, bz)))
    return moveaxis(stack([broadcast_to(c, shape) for c in (x, y, z)], -1), -1, axisc)


def _components(v):
    parts = [lax.index_in_dim(v, i, v.ndim - 1, keepdims=False) for i in range(v.shape[-1])]
    return parts + [None] * (3 - len(parts))
