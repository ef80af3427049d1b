"""Block-scaled products: scaled_matmul of quantized operands, and scaled_dot_general, which
quantizes its operands (MXFP8 or NVFP4 blocks along the contracting axes) before the product.

JAX runs these on cuDNN only; here they are compositions of lax operations, computed as
JAX's documentation defines them (operands times their blockwise-repeated scales, contracted
in float32), so they run everywhere, fused under jit. scaled_dot_general's gradient is JAX's:
each cotangent product quantizes the output cotangent with the third config.
"""
import dataclasses
import functools

import numpy as np

import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.core import dtypes
from jaxlite.transforms.custom_derivatives import custom_vjp


@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
    """How one operand is quantized: blocks of block_size along the contracting axes, values in
    data_type, one scale in scale_type per block (times global_scale for NVFP4)."""
    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None):
    """The quantization config of scaled_dot_general for mode 'mxfp8' or 'nvfp4'."""
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, jnp.float8_e4m3fn, jnp.float8_e8m0fnu, None, False)
    if mode == "nvfp4":
        scale = jnp.ones((1,), np.float32) if global_scale is None else global_scale
        return BlockScaleConfig("nvfp4", 16, jnp.float4_e2m1fn, jnp.float8_e4m3fn, scale, False)
    raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """einsum('BMK,BNK->BMN') of lhs and rhs times their scales, each scale repeated along K in
    blocks of K // scales.shape[-1]; accumulated in float32."""
    lhs, rhs, lhs_scales, rhs_scales = (jnp.asarray(x) for x in (lhs, rhs, lhs_scales, rhs_scales))
    _check_matmul_shapes(lhs, rhs, lhs_scales, rhs_scales)
    out_dtype = dtypes.canonicalize_dtype(preferred_element_type)
    product = lax.dot_general(_descaled(lhs, lhs_scales), _descaled(rhs, rhs_scales),
                              (((2,), (2,)), ((0,), (0,))), preferred_element_type=np.float32)
    return lax.convert_element_type(product, out_dtype)


def _descaled(x, scales):
    blocks = x.shape[-1] // scales.shape[-1]
    repeated = jnp.repeat(scales.astype(np.float32), blocks, axis=-1)
    return x.astype(np.float32) * repeated


def _check_matmul_shapes(a, b, a_scales, b_scales):
    if not all(x.ndim == 3 for x in (a, b, a_scales, b_scales)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    if a.shape[::2] != b.shape[::2]:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and contract "
                         f"(K) dimensions, but got shapes {a.shape} and {b.shape}")
    if a_scales.shape[::2] != b_scales.shape[::2]:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract (K) "
                         f"dimensions, but got shapes {a_scales.shape} and {b_scales.shape}")
    if a_scales.shape[1] != a.shape[1] or b_scales.shape[1] != b.shape[1]:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of inputs, "
                         f"but got shapes a: {a.shape}, b: {b.shape}, a_scales: {a_scales.shape}, "
                         f"b_scales: {b_scales.shape}")


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32, configs=None,
                       implementation=None):
    """lax.dot_general of lhs and rhs, each first quantized by its config (configs[0], configs[1];
    configs[2] quantizes the cotangent in the backward products). With configs None it is
    lax.dot_general. `implementation` is accepted and ignored, as JAX now ignores it."""
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type)
    out_dtype = np.dtype(dtypes.canonicalize_dtype(preferred_element_type))
    if out_dtype not in (np.dtype(np.float32), np.dtype(dtypes.bfloat16), np.dtype(np.float16)):
        raise TypeError(f"Only support preferred_element_type in (f32, bf16, f16), but got {out_dtype}")
    (lc, rc), (lb, rb) = dimension_numbers
    dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    if lb:
        return _quantized_dot(lhs, rhs, dims, out_dtype, tuple(configs))
    # A trailing unit batch axis on each side, squeezed from the front of the result.
    batched = ((dims[0]), ((lhs.ndim,), (rhs.ndim,)))
    out = _quantized_dot(lhs[..., None], rhs[..., None], batched, out_dtype, tuple(configs))
    return out[0]


@functools.partial(custom_vjp, nondiff_argnums=(2, 3, 4))
def _quantized_dot(lhs, rhs, dimension_numbers, out_dtype, configs):
    return _quantized_product(lhs, rhs, dimension_numbers, out_dtype, configs[:2])


def _quantized_dot_fwd(lhs, rhs, dimension_numbers, out_dtype, configs):
    return _quantized_dot(lhs, rhs, dimension_numbers, out_dtype, configs), (lhs, rhs)


def _quantized_dot_bwd(dimension_numbers, out_dtype, configs, residuals, ct):
    lhs, rhs = residuals
    (lc, rc), (lb, rb) = dimension_numbers
    ct_lhs = _cotangent(ct, rhs, lhs.ndim, (lc, rc), (lb, rb), False, out_dtype, (configs[2], configs[1]))
    ct_rhs = _cotangent(ct, lhs, rhs.ndim, (rc, lc), (rb, lb), True, out_dtype, (configs[2], configs[0]))
    if configs[2].mode == "nvfp4":
        ct_lhs, ct_rhs = _zero_clipped(lhs, ct_lhs, configs[0]), _zero_clipped(rhs, ct_rhs, configs[1])
    return ct_lhs, ct_rhs


_quantized_dot.defvjp(_quantized_dot_fwd, _quantized_dot_bwd)


def _zero_clipped(x, ct, config):
    """A straight-through estimator: no gradient where quantization clipped the input."""
    bound = config.global_scale * _finfo_max(config.data_type, x.dtype) * _finfo_max(config.scale_type, x.dtype)
    return jnp.where(jnp.abs(x) <= bound, ct, 0)


def _cotangent(ct, other, ndim, contracting, batch, other_is_lhs, out_dtype, configs):
    """The cotangent of one operand (x): ct contracted with the other operand (y) over y's kept
    axes, then laid out as x. ct's axes are (batch, lhs kept, rhs kept)."""
    (x_contract, y_contract), (x_batch, y_batch) = contracting, batch
    x_kept = _kept(ndim, x_contract, x_batch)
    y_kept = _kept(other.ndim, y_contract, y_batch)
    nb = len(x_batch)
    kept_first = range(nb, nb + len(y_kept)) if other_is_lhs else range(nb + len(x_kept), ct.ndim)
    dims = ((tuple(kept_first), tuple(y_kept)), (tuple(range(nb)), tuple(y_batch)))
    if configs[0].mode == "nvfp4":
        product = lax.dot_general(ct, other, dims, preferred_element_type=out_dtype)
    else:
        product = _quantized_product(ct, other, dims, out_dtype, configs)
    contract_in_y_order = [x_contract[i] for i in np.argsort(y_contract)]
    return lax.transpose(product, tuple(np.argsort(list(x_batch) + x_kept + contract_in_y_order)))


def _kept(ndim, contracting, batch):
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def _quantized_product(lhs, rhs, dimension_numbers, out_dtype, configs):
    """Both operands quantized as (batch, kept, contracting) matrices, their scaled_matmul,
    reshaped to dot_general's result."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_q, lhs_scales = _quantize(_as_matrices(lhs, lc, lb), configs[0])
    rhs_q, rhs_scales = _quantize(_as_matrices(rhs, rc, rb), configs[1])
    nvfp4 = configs[0].mode == "nvfp4"
    out = scaled_matmul(lhs_q, rhs_q, lhs_scales, rhs_scales, np.float32 if nvfp4 else out_dtype)
    if nvfp4:
        out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(out_dtype)
    shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in _kept(lhs.ndim, lc, lb)]
             + [rhs.shape[d] for d in _kept(rhs.ndim, rc, rb)])
    return out.reshape(shape)


def _as_matrices(x, contracting, batch):
    """x as (batch, kept, contracting), each group of axes in x's order, flattened."""
    in_order = lambda axes: [d for d in range(x.ndim) if d in axes]
    kept = _kept(x.ndim, contracting, batch)
    size = lambda axes: int(np.prod([x.shape[d] for d in axes], dtype=int))
    moved = lax.transpose(x, tuple(in_order(batch) + kept + in_order(contracting)))
    return moved.reshape(size(batch), size(kept), size(contracting))


def _quantize(x, config):
    """x (B, M, K) as data_type values and one scale per block of block_size along K."""
    b, m, k = x.shape
    if k < config.block_size or k % config.block_size:
        raise ValueError(f"scaled_dot_general: a contracting size of {k} is not a multiple of the "
                         f"{config.mode} block size {config.block_size}")
    blocks = x.reshape(b, m, k // config.block_size, config.block_size)
    top = _finfo_max(config.data_type, x.dtype)
    if config.mode == "mxfp8":
        scale_bits = _e8m0_rounding_up(_block_amax(blocks) / top)
        scaled = blocks / _e8m0_value(scale_bits, x.dtype)
        scales = lax.bitcast_convert_type(scale_bits, config.scale_type)
    else:
        blocks = blocks / config.global_scale
        scale_top = _finfo_max(config.scale_type, x.dtype)
        scales = jnp.clip(_block_amax(blocks) / top, 0, scale_top).astype(config.scale_type)
        scaled = blocks / scales.astype(np.float32)
    values = jnp.clip(scaled, -top, top).astype(config.data_type)
    return values.reshape(b, m, k), scales.reshape(b, m, k // config.block_size)


def _finfo_max(dtype, like):
    return np.asarray(dtypes.finfo(dtype).max).astype(like)


def _block_amax(blocks):
    return jnp.max(jnp.abs(blocks), axis=-1, keepdims=True)


def _e8m0_rounding_up(x):
    """The biased exponent of the smallest power of two >= x (float8_e8m0fnu's bits), as uint8;
    subnormals of at most half the smallest normal stay at exponent 0, and 2**127 does not
    round up into the NaN code."""
    bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
    exponent, mantissa = bits >> 23, bits & 0x7FFFFF
    rounds_up = (mantissa > 0) & (exponent != 0xFE) & ~((exponent == 0) & (mantissa <= 0x400000))
    return jnp.where(rounds_up, exponent + 1, exponent).astype(np.uint8)


def _e8m0_value(scale_bits, dtype):
    """The scale a biased exponent stands for, exponent 0 read as the smallest value dtype keeps."""
    value = lax.bitcast_convert_type(scale_bits.astype(np.uint32) << 23, np.float32)
    tiny = np.float32(2.0 ** -15 if np.dtype(dtype) == np.float16 else 2.0 ** -127)
    return jnp.where(value == 0, tiny, value).astype(dtype)
