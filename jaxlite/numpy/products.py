"""Matrix and tensor products, all through lax.dot_general."""
from jaxlite import lax
from jaxlite.core.abstract import broadcast_shapes
from jaxlite.numpy.util import broadcast_to, check_arraylike, promote_dtypes


def matmul(a, b, preferred_element_type=None):
    """NumPy's matmul: 1-D operands are vectors; leading dimensions broadcast as batches."""
    check_arraylike("matmul", a, b)
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must not be scalars, got shapes {a.shape} and {b.shape}")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    a = lax.reshape(a, (1,) + a.shape) if a_vec else a
    b = lax.reshape(b, b.shape + (1,)) if b_vec else b
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {b.shape[-2]} is different from {a.shape[-1]}); "
                         f"shapes {a.shape} and {b.shape}")
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


def dot(a, b, preferred_element_type=None):
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
