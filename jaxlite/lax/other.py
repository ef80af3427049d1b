"""lax's remaining helpers, compositions of other lax operations: batch_matmul, index_take,
scatter_apply, conv_general_dilated_local, platform_dependent, shape_as_value, stage; and
the dot-algorithm and dimension-number types JAX's signatures name."""
import enum
from typing import NamedTuple, Sequence, Union

import numpy as np

from jaxlite.core import dtypes
from jaxlite.lax.base import as_operand
from jaxlite.lax.composites import conv_dimension_numbers, conv_general_dilated_patches
from jaxlite.lax.convolution import ConvDimensionNumbers
from jaxlite.lax.dot import Precision, dot_general
from jaxlite.lax.shapes import transpose
from jaxlite.lax.slicing import gather, GatherDimensionNumbers, scatter

# ---------------------------------------------------------------- types in JAX's signatures

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]


class DotAlgorithm(NamedTuple):
    """How a product is computed (operand and accumulation types). On a CPU jaxlite computes
    every product at its dtypes' full precision, so the algorithm is accepted and not needed."""
    lhs_precision_type: object
    rhs_precision_type: object
    accumulation_type: object
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """JAX's named dot algorithms (operand, operand, accumulator types)."""
    DEFAULT = 1
    ANY_F8_ANY_F8_F32 = 2
    ANY_F8_ANY_F8_F32_FAST_ACCUM = 3
    ANY_F8_ANY_F8_ANY = 4
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = 5
    F16_F16_F16 = 6
    F16_F16_F32 = 7
    BF16_BF16_BF16 = 8
    BF16_BF16_F32 = 9
    BF16_BF16_F32_X3 = 10
    BF16_BF16_F32_X6 = 11
    BF16_BF16_F32_X9 = 12
    TF32_TF32_F32 = 13
    TF32_TF32_F32_X3 = 14
    F32_F32_F32 = 15
    F64_F64_F64 = 16

    def __repr__(self):
        return self.name

    __str__ = __repr__


PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision], DotAlgorithm,
                      DotAlgorithmPreset]


class AccuracyMode(enum.Enum):
    """How accurately a transcendental must be computed (see Tolerance)."""
    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """An accuracy bound for a transcendental function (absolute, relative, in ulps)."""

    def __init__(self, atol=0.0, rtol=0.0, ulps=0):
        self.atol, self.rtol, self.ulps = float(atol), float(rtol), int(ulps)

    def __repr__(self):
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


# ---------------------------------------------------------------- compositions

def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over the leading (batch) axes: (..., m, k) x (..., k, n) -> (..., m, n)."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim:
        raise ValueError("Arguments to batch_matmul must be at least 2D and of equal rank, got "
                         f"{lhs.ndim} and {rhs.ndim}.")
    if lhs.shape[-1] != rhs.shape[-2]:
        raise ValueError(f"Inner dimensions of batch_matmul must match, got {lhs.shape} and {rhs.shape}.")
    batch = tuple(range(lhs.ndim - 2))
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (rhs.ndim - 2,)), (batch, batch)), precision)


def index_take(src, idxs, axes):
    """src at the points idxs[i] (one coordinate per axis in `axes`); the other axes kept whole."""
    src, idxs = as_operand(src), as_operand(idxs)
    axes = tuple(int(a) for a in axes)
    if idxs.ndim != 2 or idxs.shape[1] != len(axes):
        raise ValueError(f"index_take: idxs must have shape (n, {len(axes)}), got {idxs.shape}")
    offset_dims = tuple(range(1, src.ndim - len(axes) + 1))
    dimension_numbers = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=axes,
                                               start_index_map=axes)
    slice_sizes = tuple(1 if d in axes else n for d, n in enumerate(src.shape))
    return gather(src, idxs, dimension_numbers, slice_sizes, mode="clip")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """operand with func applied to the elements the scatter addresses (others unchanged):
    func maps the whole operand, and a scatter of a mask picks where its result is kept."""
    from jaxlite.lax.elementwise import select_n
    from jaxlite.lax.shapes import broadcast_in_dim
    operand = as_operand(operand)
    marks = broadcast_in_dim(np.ones((), np.bool_), tuple(update_shape), ())
    unmarked = broadcast_in_dim(np.zeros((), np.bool_), operand.shape, ())
    chosen = scatter(unmarked, scatter_indices, marks, dimension_numbers, indices_are_sorted=indices_are_sorted,
                     unique_indices=unique_indices, mode=mode)
    return select_n(chosen, operand, func(operand))


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None,
                               rhs_dilation=None, dimension_numbers=None, precision=None):
    """A locally connected convolution: every output position has its own filter. rhs is laid
    out as a convolution kernel whose spatial axes are the output's and whose input-feature
    axis holds input features times filter taps (conv_general_dilated_patches' order)."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    filter_shape = tuple(filter_shape)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation,
                                           rhs_dilation, dimension_numbers)
    dn = conv_dimension_numbers(lhs.shape, (1, 1) + filter_shape, dimension_numbers)
    (n, c, *spatial), (o, i, *rhs_spatial), out_spec = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    # patches come laid out as the output (out_spec); contract features, batch over positions.
    out_n, out_c, *out_spatial = out_spec
    product = dot_general(patches, rhs, (((out_c,), (i,)), (tuple(out_spatial), tuple(rhs_spatial))), precision)
    # product axes: out spatial..., N, O; put them where out_spec says.
    count = len(out_spatial)
    where = {out_n: count, out_c: count + 1, **{d: k for k, d in enumerate(out_spatial)}}
    return transpose(product, tuple(where[d] for d in range(product.ndim)))


def platform_dependent(*args, default=None, **per_platform):
    """The branch for this platform ("cpu"), else `default`, applied to args."""
    branch = per_platform.get("cpu", default)
    if branch is None:
        raise NotImplementedError(f"platform_dependent: no branch for the cpu platform (given: "
                                  f"{sorted(per_platform)}) and no default")
    return branch(*args)


def shape_as_value(shape):
    """A static shape as an int array (its entries are Python ints here: no symbolic shapes)."""
    return as_operand(np.asarray([int(d) for d in shape], dtypes.default_int_dtype()))


def stage(x, /):
    """x lifted into the current trace (an Array when none is active): the identity."""
    return as_operand(x)

