"""Scaled dot-product attention, as JAX's "xla" implementation computes it.

Shapes are (batch B, sequence T or S, heads N, head size H); key and value may have
fewer heads K than the query (grouped-query attention): each of the K groups of
N / K query heads reads the same key and value head. Logits are float32 or wider,
masked entries take a large finite negative (so a fully masked row is uniform, not
NaN), and the softmax runs in float32.
"""
import numpy as np

import jaxlite.numpy as jnp
from jaxlite.core import dtypes


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal=False,
                          query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
    """softmax(Q K^T * scale + bias, masked) V per head; inputs (B, T, N, H) or (T, N, H)."""
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation}"
                         + (" (cuDNN needs a GPU)" if implementation == "cudnn" else ""))
    query, key, value = (jnp.asarray(t) for t in (query, key, value))
    output_shape = query.shape
    q, k, v = (_as_4d(t) for t in (query, key, value))
    bias, mask = (None if t is None else _as_4d(jnp.asarray(t)) for t in (bias, mask))
    batch, kv_len, kv_heads, head_size = k.shape
    _check(q, k, v, mask, kv_heads, head_size)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    scale = 1.0 / np.sqrt(head_size) if scale is None else scale
    lengths = [None if n is None else jnp.asarray(n) for n in (query_seq_lengths, key_value_seq_lengths)]
    logits = _logits(q, k, scale, bias)
    logits = _masked(logits, mask, is_causal, *lengths, local_window_size)
    probs = _softmax32(logits).astype(k.dtype)
    encoded = _weighted_values(probs, v)
    if lengths[0] is not None:
        encoded = encoded * (jnp.arange(q.shape[1])[None, :] < lengths[0][:, None])[:, :, None, None].astype(encoded.dtype)
    encoded = jnp.reshape(encoded, output_shape)
    if not return_residual:
        return encoded
    from jaxlite.nn import logsumexp
    from jaxlite.lax import stop_gradient
    residual = jnp.transpose(logsumexp(logits.astype(np.float32), axis=-1), (0, 2, 1)).astype(k.dtype)
    return encoded, stop_gradient(jnp.reshape(residual, output_shape[:-1]))


def _as_4d(t):
    return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check(q, k, v, mask, kv_heads, head_size):
    if v.shape != k.shape or v.dtype != k.dtype:
        raise ValueError(f"value shape should be {k.shape} with dtype {k.dtype}, got {v.shape} {v.dtype}")
    if q.ndim != 4 or q.shape[0] != k.shape[0] or q.shape[-1] != head_size or q.dtype != k.dtype:
        raise ValueError(f"query shape should be [{k.shape[0]}, -1, -1, {head_size}] with dtype {k.dtype}: "
                         f"but got {q.shape} {q.dtype}")
    if mask is not None and mask.dtype != np.bool_:
        raise ValueError(f"mask dtype should be bool, but got {mask.dtype}")
    if q.shape[2] % kv_heads:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                         f"but got {q.shape[2]} vs {kv_heads}")


def _grouped(q, kv_heads):
    batch, length, heads, size = q.shape
    return jnp.reshape(q, (batch, length, kv_heads, heads // kv_heads, size))


def _logits(q, k, scale, bias):
    logits_dtype = jnp.promote_types(q.dtype, np.float32)
    grouped = jnp.einsum("BTKGH,BSKH->BKGTS", _grouped(q, k.shape[2]), k, preferred_element_type=logits_dtype)
    batch, kv_heads, groups, length, kv_len = grouped.shape
    logits = jnp.reshape(grouped, (batch, kv_heads * groups, length, kv_len))
    logits = logits * jnp.array(scale, dtype=logits.dtype)
    return logits if bias is None else (logits + bias).astype(logits.dtype)


def _masked(logits, mask, is_causal, q_lengths, kv_lengths, window):
    _, _, length, kv_len = logits.shape
    keep = jnp.ones(logits.shape, bool)
    if mask is not None:
        keep = keep & mask
    query_pos, key_pos = jnp.arange(length)[:, None], jnp.arange(kv_len)[None, :]
    if is_causal:
        keep = keep & (key_pos <= query_pos)
    if window is not None:
        left, right = window
        keep = keep & (query_pos <= key_pos + left) & (query_pos >= key_pos - right)
    if q_lengths is not None:
        keep = keep & (jnp.arange(length)[None, None, :, None] < q_lengths[:, None, None, None])
    if kv_lengths is not None:
        keep = keep & (jnp.arange(kv_len)[None, None, None, :] < kv_lengths[:, None, None, None])
    if mask is None and not is_causal and window is None and q_lengths is None and kv_lengths is None:
        return logits
    largest = min(float(dtypes.finfo(logits.dtype).max), float(np.finfo(np.float32).max))
    return jnp.where(keep, logits, jnp.asarray(-0.7 * largest, logits.dtype))


def _softmax32(logits):
    from jaxlite.nn import softmax
    return softmax(logits.astype(np.float32), axis=-1)


def _weighted_values(probs, v):
    batch, heads, length, kv_len = probs.shape
    kv_heads = v.shape[2]
    grouped = jnp.reshape(probs, (batch, kv_heads, heads // kv_heads, length, kv_len))
    encoded = jnp.einsum("BKGTS,BSKH->BTKGH", grouped, v)
    return jnp.reshape(encoded, (batch, length, heads, v.shape[-1]))
