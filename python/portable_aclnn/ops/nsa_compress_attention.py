"""NsaCompressAttention (src/ops/nsa_compress_attention/): torch_npu's npu_nsa_compress_attention, Native Sparse
Attention's compressed attention with the importance scores' top-k choice of blocks for the selected branch.

query (T1, N1, D_qk), key (T2, N2, D_qk), value (T2, N2, D_v) FLOAT16 or BFLOAT16 in the TND layout (key and value:
the compressed tokens, NsaCompress's output). atten_mask (max S_q, max CmpS_kv) and topk_mask (max S_q, max SelS_kv)
BOOL (UINT8 is taken as nonzero = masked): true = a compressed key not attended to / a select block not a candidate.
actual_seq_qlen, actual_cmp_seq_kvlen, actual_sel_seq_kvlen: cumulative sequence ends, as torch_npu takes them (None:
one sequence of all tokens; actual_sel_seq_kvlen None: the cumulative ceil(CmpS_kv / (select_block_size /
compress_stride)) of each sequence, the only value the operator accepts). Returns (attention_out (T1, N1, D_v),
softmax_max (T1, N1, 8), softmax_sum (T1, N1, 8), topk_indices (T1, N2, select_block_count)): the statistics FLOAT32,
each row's value in all 8 lanes; topk_indices INT32, the chosen select blocks counted from the start of the sequence,
best first (-1 where fewer blocks are candidates), the input of nsa_select_attention. sparse_mode: 0 (atten_mask
applied when given) or 1 (allMask: atten_mask required); None: 1 when atten_mask is given, else 0 (the two compute the
same). The rules, the formulas and the decisions: docs/ops/nsa_compress_attention.md.

Autograd (torch tensors): attention_out is differentiable in query, key and value; the statistics and topk_indices
are not (the selection is discrete). CANN has no gradient operator for this forward (its users run the general flash
attention gradient over the compressed keys), so there is no API to match in C: the backward is
nsa_compress_attention_backward below, composed of PyTorch operations in float32 from the forward's own statistics,
query rows in chunks (no T x K buffer). It runs wherever the tensors are (CPU or CUDA).

The argument names and order: CANN's document refers to torch_npu.npu_nsa_compress_attention without giving its
Python signature; the one here follows the C API's order with nsa_select_attention's naming style, which is also
the signature of MindSpore's page for the same operator (query, key, value, scale_value, head_num,
compress_block_size, compress_stride, select_block_size, select_block_count, *, topk_mask, atten_mask,
actual_seq_qlen, actual_cmp_seq_kvlen, actual_sel_seq_kvlen), plus sparse_mode.
"""

import ctypes

import numpy as np

from .._library import api
from .._operator import DOUBLE, INT64, INT_ARRAY, REQUIRED, STRING, TENSOR, AclnnCall, Entry, needs_autograd
from .._tensors import (Operands, empty_like_kind, empty_of_dtype, int_array, is_torch, require_array, sequence_ends,
                        torch)

ACLNN = (
    AclnnCall("aclnnNsaCompressAttention", (TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, INT_ARRAY, INT_ARRAY, INT_ARRAY,
                                            DOUBLE, INT64, STRING, INT64, INT64, INT64, INT64, INT64, TENSOR, TENSOR,
                                            TENSOR, TENSOR)),
)

_LAYOUT = ctypes.c_char_p(b"TND")
STATISTICS_LANES = 8


# ----------------------------------------------------------------------------------------------------------------
# Plain function (torch tensors or NumPy arrays; no autograd)

def select_ends(cmp_ends, select_block_size, compress_stride):
    """The cumulative select-block ends the operator requires: ceil(CmpS_kv / (select_block_size / compress_stride))
    blocks per sequence. (Sizes the operator refuses give some list: it reports the sizes first.)"""
    per_block = int(select_block_size) // int(compress_stride) if int(compress_stride) > 0 else 0
    per_block = max(per_block, 1)
    ends, start, total = [], 0, 0
    for end in cmp_ends:
        total += max(end - start + per_block - 1, 0) // per_block
        ends.append(total)
        start = end
    return ends


def _sparse_mode(atten_mask, sparse_mode):
    if sparse_mode is None:
        return 1 if atten_mask is not None else 0
    return int(sparse_mode)  # the operator checks it (0, or 1 with atten_mask)


def _mask(mask):
    """A UINT8 mask as BOOL (nonzero = masked; the package's tensor views have no UINT8)."""
    if mask is None:
        return None
    if is_torch(mask):
        return mask != 0 if mask.dtype == torch.uint8 else mask
    if isinstance(mask, np.ndarray) and mask.dtype == np.uint8:
        return mask != 0
    return mask


def plain_forward(query, key, value, scale_value, head_num, compress_block_size, compress_stride, select_block_size,
                  select_block_count, topk_mask=None, atten_mask=None, actual_seq_qlen=None,
                  actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None, sparse_mode=None):
    """nsa_compress_attention without autograd."""
    for array, name in ((query, "query"), (key, "key"), (value, "value")):
        require_array(array, name)
        if len(array.shape) != 3:
            raise ValueError(f"{name} must be 3-D (TND: T, N, D), got shape {tuple(array.shape)}")
    mode = _sparse_mode(atten_mask, sparse_mode)
    atten_mask, topk_mask = _mask(atten_mask), _mask(topk_mask)
    tokens, heads = int(query.shape[0]), int(query.shape[1])
    out = empty_like_kind(query, (tokens, heads, int(value.shape[2])))
    stats = (tokens, heads, STATISTICS_LANES)
    softmax_max, softmax_sum = empty_of_dtype(query, stats, "float32"), empty_of_dtype(query, stats, "float32")
    # A negative count makes an empty output, so that the operator reports selectBlockCount's rule.
    topk_indices = empty_of_dtype(query, (tokens, int(key.shape[1]), max(int(select_block_count), 0)), "int32")
    cmp_ends = sequence_ends(key.shape[0], actual_cmp_seq_kvlen)
    sel = (select_ends(cmp_ends, select_block_size, compress_stride) if actual_sel_seq_kvlen is None
           else sequence_ends(0, actual_sel_seq_kvlen))
    q_ends, cmp_ends, sel_ends = int_array(sequence_ends(tokens, actual_seq_qlen)), int_array(cmp_ends), int_array(sel)
    with Operands() as views:
        api().run("aclnnNsaCompressAttention", views, views.tensor(query, "query"), views.tensor(key, "key"),
                  views.tensor(value, "value"),
                  views.tensor(atten_mask, "atten_mask") if atten_mask is not None else None,
                  views.tensor(topk_mask, "topk_mask") if topk_mask is not None else None,
                  q_ends.handle, cmp_ends.handle, sel_ends.handle, float(scale_value), int(head_num), _LAYOUT, mode,
                  int(compress_block_size), int(compress_stride), int(select_block_size), int(select_block_count),
                  views.tensor(softmax_max, "softmax_max"), views.tensor(softmax_sum, "softmax_sum"),
                  views.tensor(out, "attention_out"), views.tensor(topk_indices, "topk_indices"))
    return out, softmax_max, softmax_sum, topk_indices


# ----------------------------------------------------------------------------------------------------------------
# Backward (torch tensors): PyTorch operations, float32

# Query rows per chunk: at most this many probabilities (rows x query heads x compressed keys) at a time.
_CHUNK_PROBABILITIES = 1 << 22


def nsa_compress_attention_backward(grad, query, key, value, attention_out, softmax_max, softmax_sum, scale_value,
                                    head_num, atten_mask=None, actual_seq_qlen=None, actual_cmp_seq_kvlen=None):
    """(dq, dk, dv) of nsa_compress_attention's attention_out, from the forward's attention_out and statistics and
    the gradient of attention_out (torch tensors, in the inputs' dtype). With P the forward's probabilities,
    recomputed as exp(s q.k - softmaxMax) / softmaxSum over the visible keys (0 elsewhere, and in rows without one):
    dv = P^T dO, dS = P * (dO v^T - rowsum(dO * attention_out)), dq = s dS k, dk = s dS^T q, each KV head's
    gradients summed over its group of query heads. float32 throughout; dk and dv accumulate over the query chunks
    in order, so a call is deterministic for a given PyTorch and thread count."""
    if torch is None or not all(is_torch(t) for t in (grad, query, key, value, attention_out)):
        raise TypeError("nsa_compress_attention_backward takes torch tensors")
    tokens, heads, dim_qk = (int(v) for v in query.shape)
    kv_heads, dim_v = int(key.shape[1]), int(value.shape[2])
    if heads != int(head_num) or kv_heads == 0 or heads % kv_heads != 0:
        raise ValueError(f"head_num {head_num} must equal query's N ({heads}), a multiple of key's N ({kv_heads})")
    group = heads // kv_heads
    scale = float(np.float32(scale_value))  # the forward's: rounded once to float
    mask = None if atten_mask is None else (atten_mask != 0).to(query.device)
    q_ends = sequence_ends(tokens, actual_seq_qlen)
    k_ends = sequence_ends(key.shape[0], actual_cmp_seq_kvlen)
    if len(q_ends) != len(k_ends):
        raise ValueError(f"actual_seq_qlen has {len(q_ends)} sequences, actual_cmp_seq_kvlen {len(k_ends)}")
    f32 = torch.float32
    dq = torch.zeros(tokens, kv_heads, group, dim_qk, dtype=f32, device=query.device)
    dk = torch.zeros(int(key.shape[0]), kv_heads, dim_qk, dtype=f32, device=query.device)
    dv = torch.zeros(int(value.shape[0]), kv_heads, dim_v, dtype=f32, device=query.device)
    q_start = k_start = 0
    for q_end, k_end in zip(q_ends, k_ends):
        keys = k_end - k_start
        k_b, v_b = key[k_start:k_end].to(f32), value[k_start:k_end].to(f32)
        chunk = max(1, _CHUNK_PROBABILITIES // max(1, heads * keys))
        for start in range(q_start, q_end, chunk):
            rows = slice(start, min(start + chunk, q_end))
            count = rows.stop - rows.start
            q = query[rows].to(f32).view(count, kv_heads, group, dim_qk)
            d_out = grad[rows].to(f32).view(count, kv_heads, group, dim_v)
            out = attention_out[rows].to(f32).view(count, kv_heads, group, dim_v)
            row_max = softmax_max[rows, :, 0].view(count, kv_heads, group, 1)
            row_sum = softmax_sum[rows, :, 0].view(count, kv_heads, group, 1)
            logits = scale * torch.einsum("rhgd,khd->rhgk", q, k_b)
            visible = row_sum > 0
            if mask is not None:
                u = torch.arange(rows.start - q_start, rows.stop - q_start, device=query.device)
                visible = visible & ~mask[u, :keys].view(count, 1, 1, keys)
            p = torch.where(visible, torch.exp(logits - row_max) / row_sum.clamp_min(torch.finfo(f32).tiny),
                            torch.zeros((), dtype=f32, device=query.device))
            d_p = torch.einsum("rhgd,khd->rhgk", d_out, v_b)
            d_s = p * (d_p - (d_out * out).sum(dim=3, keepdim=True))
            dq[rows] = scale * torch.einsum("rhgk,khd->rhgd", d_s, k_b)
            dk[k_start:k_end] += scale * torch.einsum("rhgk,rhgd->khd", d_s, q)
            dv[k_start:k_end] += torch.einsum("rhgk,rhgd->khd", p, d_out)
        q_start, k_start = q_end, k_end
    return dq.view(tokens, heads, dim_qk).to(query.dtype), dk.to(key.dtype), dv.to(value.dtype)


# ----------------------------------------------------------------------------------------------------------------
# Autograd (PyTorch installed): attention_out is differentiable in query, key and value

_BACKWARD_ARGUMENTS = ("scale_value", "head_num", "atten_mask", "actual_seq_qlen", "actual_cmp_seq_kvlen")


def _backward_arguments(arguments):
    """The backward's arguments (scale_value, head_num, atten_mask and the query and compressed-key ends) out of the
    forward's, given as a dict by name."""
    return tuple(arguments[name] for name in _BACKWARD_ARGUMENTS)


_FORWARD_ARGUMENTS = ("scale_value", "head_num", "compress_block_size", "compress_stride", "select_block_size",
                      "select_block_count", "topk_mask", "atten_mask", "actual_seq_qlen", "actual_cmp_seq_kvlen",
                      "actual_sel_seq_kvlen", "sparse_mode")


def _differentiable_grads(ctx, grad_out):
    query, key, value, out, softmax_max, softmax_sum = ctx.saved_tensors
    dq, dk, dv = nsa_compress_attention_backward(grad_out.contiguous(), query, key, value, out, softmax_max,
                                                 softmax_sum, *ctx.backward_arguments)
    need = ctx.needs_input_grad
    return (dq if need[0] else None), (dk if need[1] else None), (dv if need[2] else None)


if torch is not None:
    class NsaCompressAttentionFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, query, key, value, *arguments):
            results = plain_forward(query, key, value, *arguments)
            out, softmax_max, softmax_sum, topk_indices = results
            ctx.save_for_backward(query, key, value, out, softmax_max, softmax_sum)
            ctx.backward_arguments = _backward_arguments(dict(zip(_FORWARD_ARGUMENTS, arguments)))
            ctx.mark_non_differentiable(softmax_max, softmax_sum, topk_indices)
            return results

        @staticmethod
        def backward(ctx, grad_out, grad_max, grad_sum, grad_topk):
            return _differentiable_grads(ctx, grad_out) + (None,) * len(_FORWARD_ARGUMENTS)


# ----------------------------------------------------------------------------------------------------------------
# Public

def nsa_compress_attention(query, key, value, scale_value, head_num, compress_block_size, compress_stride,
                           select_block_size, select_block_count, topk_mask=None, atten_mask=None,
                           actual_seq_qlen=None, actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None,
                           sparse_mode=None):
    """Native Sparse Attention's compressed attention and top-k block selection (the module's docstring has the
    shapes); returns (attention_out, softmax_max, softmax_sum, topk_indices), attention_out differentiable in query,
    key and value (nsa_compress_attention_backward)."""
    arguments = (scale_value, head_num, compress_block_size, compress_stride, select_block_size, select_block_count,
                 topk_mask, atten_mask, actual_seq_qlen, actual_cmp_seq_kvlen, actual_sel_seq_kvlen, sparse_mode)
    if needs_autograd(query, key, value):
        return NsaCompressAttentionFunction.apply(query, key, value, *arguments)
    return plain_forward(query, key, value, *arguments)


# ----------------------------------------------------------------------------------------------------------------
# torch.library (torch.ops.portable_aclnn.*); the sequence ends are lists of ints there.

def _fake_forward(query, key, value, scale_value, head_num, compress_block_size, compress_stride, select_block_size,
                  select_block_count, topk_mask=None, atten_mask=None, actual_seq_qlen=None,
                  actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None, sparse_mode=None):
    tokens, heads = query.shape[0], query.shape[1]
    stats = (tokens, heads, STATISTICS_LANES)
    return (query.new_empty((tokens, heads, value.shape[2])), query.new_empty(stats, dtype=torch.float32),
            query.new_empty(stats, dtype=torch.float32),
            query.new_empty((tokens, key.shape[1], select_block_count), dtype=torch.int32))


def _setup_context(ctx, inputs, output):
    query, key, value = inputs[:3]
    out, softmax_max, softmax_sum, topk_indices = output
    ctx.save_for_backward(query, key, value, out, softmax_max, softmax_sum)
    ctx.backward_arguments = _backward_arguments(dict(zip(_FORWARD_ARGUMENTS, inputs[3:])))
    ctx.mark_non_differentiable(softmax_max, softmax_sum, topk_indices)


def _library_backward(ctx, grad_out, grad_max, grad_sum, grad_topk):
    return _differentiable_grads(ctx, grad_out) + (None,) * len(_FORWARD_ARGUMENTS)


def _legacy_autograd(query, key, value, scale_value, head_num, compress_block_size, compress_stride,
                     select_block_size, select_block_count, topk_mask=None, atten_mask=None, actual_seq_qlen=None,
                     actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None, sparse_mode=None):
    return NsaCompressAttentionFunction.apply(query, key, value, scale_value, head_num, compress_block_size,
                                              compress_stride, select_block_size, select_block_count, topk_mask,
                                              atten_mask, actual_seq_qlen, actual_cmp_seq_kvlen,
                                              actual_sel_seq_kvlen, sparse_mode)


ENTRIES = (
    Entry(name="nsa_compress_attention", public=nsa_compress_attention, function=plain_forward,
          schema="(Tensor query, Tensor key, Tensor value, float scale_value, int head_num, int compress_block_size, "
                 "int compress_stride, int select_block_size, int select_block_count, Tensor? topk_mask=None, "
                 "Tensor? atten_mask=None, int[]? actual_seq_qlen=None, int[]? actual_cmp_seq_kvlen=None, "
                 "int[]? actual_sel_seq_kvlen=None, int? sparse_mode=None) -> (Tensor, Tensor, Tensor, Tensor)",
          fake=_fake_forward, inputs=("query", "key", "value"),
          attributes={"scale_value": REQUIRED, "head_num": REQUIRED, "compress_block_size": REQUIRED,
                      "compress_stride": REQUIRED, "select_block_size": REQUIRED, "select_block_count": REQUIRED,
                      "actual_seq_qlen": None, "actual_cmp_seq_kvlen": None, "actual_sel_seq_kvlen": None,
                      "sparse_mode": None},
          outputs=("attention_out", "softmax_max", "softmax_sum", "topk_indices"),
          autograd=(_setup_context, _library_backward), legacy_autograd=_legacy_autograd),
)
