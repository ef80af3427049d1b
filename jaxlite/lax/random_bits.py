"""The Threefry-2x32 block cipher as a primitive: the hash behind jaxlite.random.

Threefry (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011)
encrypts a pair of 32-bit counters under a pair of 32-bit key words in 20 rounds
of add-rotate-xor, injecting the key every four rounds. A counter-based generator
needs no state: element i of a random draw is the hash of i, so draws of any
shape are one elementwise operation that vectorizes, batches and compiles.

It is one primitive rather than a composition of lax ops so that the jaxpr
stays small (one equation, not ~100) and a code generator can emit its rounds
directly; vmap batches it like any elementwise operation of four operands.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.primitive import Primitive
from jaxlite.lax.base import ANY, FLOAT, as_operand, as_operands, elementwise_aval, naryop_primitive
from jaxlite.lax.elementwise import mul
from jaxlite.lower import fusion_rules
from jaxlite.transforms import ad, batching
from jaxlite.transforms.ad import defjvp

# Rotation distances of Threefry-2x32, applied in groups of four; the groups alternate.
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
# Parity constant of the key schedule (Threefish's C240 truncated to 32 bits).
KEY_PARITY = 0x1BD11BDA


def _threefry2x32(key1, key2, count1, count2):
    """Encrypt the counter pairs (count1, count2) under (key1, key2), elementwise."""
    key1, key2, x1, x2 = np.broadcast_arrays(key1, key2, count1, count2)
    shape = x1.shape
    # 1-d arrays wrap around silently on overflow, where numpy scalars would warn.
    key1, key2, x1, x2 = (np.array(a, dtype=np.uint32).reshape(-1) for a in (key1, key2, x1, x2))
    schedule = (key1, key2, key1 ^ key2 ^ np.uint32(KEY_PARITY))
    x1 += schedule[0]
    x2 += schedule[1]
    spill = np.empty_like(x2)  # in-place updates: no temporaries for the big arrays
    for group in range(5):
        for distance in ROTATIONS[group % 2]:
            x1 += x2
            np.right_shift(x2, np.uint32(32 - distance), out=spill)
            x2 <<= np.uint32(distance)
            x2 |= spill  # x2 rotated left by `distance`
            x2 ^= x1
        x1 += schedule[(group + 1) % 3]
        x2 += schedule[(group + 2) % 3] + np.uint32(group + 1)
    return [x1.reshape(shape), x2.reshape(shape)]


def _threefry2x32_aval(key1, key2, count1, count2):
    operands = [key1, key2, count1, count2]
    for position, aval in enumerate(operands):
        if aval.dtype != dtypes.uint32:
            raise TypeError(f"threefry2x32 requires uint32 arguments, got {aval.dtype.name} "
                            f"for argument {position}")
    out = elementwise_aval("threefry2x32", operands, ANY).strip_weak_type()
    return [out, out]


threefry2x32_p = Primitive("threefry2x32", multiple_results=True)
fusion_rules.fused(threefry2x32_p, fusion_rules.threefry2x32_rule)
threefry2x32_p.def_impl(_threefry2x32)
threefry2x32_p.def_abstract_eval(_threefry2x32_aval)
batching.broadcasting_rule(threefry2x32_p)
ad.defjvp_zero(threefry2x32_p)


def threefry2x32(key1, key2, count1, count2):
    """The two output words of Threefry-2x32 for each counter pair (uint32 operands;
    rank-0 operands broadcast)."""
    operands = [as_operand(x, dtypes.uint32) for x in (key1, key2, count1, count2)]
    return threefry2x32_p.bind(*operands)


# ---------------------------------------------------------------- fused multiply-add

def _fma(x, y, z):
    """x * y + z rounded once (up to rare ties of a double rounding).

    Narrower types compute in float64, where their product is exact. float64 has
    no wider numpy type: its product is split exactly into a rounded part and an
    error term (Dekker), and the error joins the sum after the rounded part.
    """
    if x.dtype.itemsize < 8:
        wide = x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)
        return wide.astype(x.dtype)
    product, product_error = _exact_product(x, y)
    total = product + z
    # (product + z) - total exactly, by Knuth's two-sum.
    z_part = total - product
    sum_error = (product - (total - z_part)) + (z - z_part)
    return total + (sum_error + product_error)


def _exact_product(x, y):
    """(x * y rounded, its rounding error), both float64, by Veltkamp splitting."""
    product = x * y
    x_high, x_low = _split_halves(x)
    y_high, y_low = _split_halves(y)
    error = ((x_high * y_high - product) + x_high * y_low + x_low * y_high) + x_low * y_low
    return product, error


def _split_halves(x):
    """x = high + low exactly, each with at most 26 significant bits."""
    scaled = x * (2.0 ** 27 + 1)
    high = scaled - (scaled - x)
    return high, x - high


# XLA contracts a float32 multiply followed by an add into one fused operation on
# CPU, so JAX's uniform(minval, maxval) rounds once where separate mul and add
# would round twice; this primitive reproduces those bits eagerly, and a code
# generator lowers it to the hardware instruction.
fma_p = naryop_primitive("fma", _fma, FLOAT)
fusion_rules.elementwise(fma_p, "fma")
defjvp(fma_p,
       lambda t, x, y, z: mul(t, y),
       lambda t, x, y, z: mul(x, t),
       lambda t, x, y, z: t)


def fma(x, y, z):
    """x * y + z with a single rounding."""
    return fma_p.bind(*as_operands(x, y, z))
