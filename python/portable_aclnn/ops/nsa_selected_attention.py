"""NsaSelectedAttention and its gradient (src/ops/nsa_selected_attention/): torch_npu's npu_nsa_select_attention,
Native Sparse Attention's attention over the key/value blocks each query selected.

query (T1, N1, D_qk), key (T2, N2, D_qk), value (T2, N2, D_v) FLOAT16 or BFLOAT16 in the TND layout; topk_indices
(T1, N2, select_block_count) INT32: the blocks (of select_block_size keys) each query token and KV head attends to.
actual_seq_qlen / actual_seq_kvlen: cumulative sequence ends, as torch_npu takes them (None: one sequence of all
tokens). Returns (attention_out (T1, N1, D_v), softmax_max (T1, N1, 8), softmax_sum (T1, N1, 8)); the statistics
are FLOAT32, each row's value in all 8 lanes, and are what the gradient needs. sparse_mode: 0 (every selected key)
or 2 (causal: a key after its query within the sequence is masked); None: 2 when atten_mask is given, else 0, as
torch_npu passes it. The mask's contents are not read (docs/ops/nsa_selected_attention.md).
"""

import ctypes

import numpy as np

from .._library import api
from .._operator import DOUBLE, INT64, INT_ARRAY, REQUIRED, STRING, TENSOR, AclnnCall, Entry, needs_autograd
from .._tensors import Operands, empty_like_kind, int_array, is_torch, require_array, sequence_ends, torch

ACLNN = (
    AclnnCall("aclnnNsaSelectedAttention", (TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, INT_ARRAY, INT_ARRAY, DOUBLE,
                                            INT64, STRING, INT64, INT64, INT64, TENSOR, TENSOR, TENSOR)),
    AclnnCall("aclnnNsaSelectedAttentionGrad", (TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, TENSOR,
                                                INT_ARRAY, INT_ARRAY, TENSOR, DOUBLE, INT64, INT64, INT64, STRING,
                                                INT64, TENSOR, TENSOR, TENSOR)),
)

_LAYOUT = ctypes.c_char_p(b"TND")
STATISTICS_LANES = 8


# ----------------------------------------------------------------------------------------------------------------
# Plain functions (torch tensors or NumPy arrays; no autograd)

def _sparse_mode(atten_mask, sparse_mode):
    if sparse_mode is None:
        return 2 if atten_mask is not None else 0
    if sparse_mode not in (0, 2):
        raise ValueError(f"sparse_mode must be 0 (every selected key) or 2 (causal), got {sparse_mode!r}")
    return int(sparse_mode)


def _mask_for(reference, atten_mask, mode):
    """The C operator reads no mask contents, but takes causal masking only with a mask tensor: a 1 x 1 one when
    causal masking is asked for without a mask."""
    if atten_mask is not None or mode == 0:
        return atten_mask
    if is_torch(reference):
        return torch.zeros((1, 1), dtype=torch.bool, device=reference.device)
    return np.zeros((1, 1), dtype=np.bool_)


def _statistics(reference, tokens, heads):
    shape = (tokens, heads, STATISTICS_LANES)
    if is_torch(reference):
        return reference.new_empty(shape, dtype=torch.float32)
    return np.empty(shape, dtype=np.float32)


def plain_forward(query, key, value, topk_indices, scale_value, head_num, select_block_size, select_block_count,
                  atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=None):
    """nsa_select_attention without autograd."""
    for array, name in ((query, "query"), (key, "key"), (value, "value"), (topk_indices, "topk_indices")):
        require_array(array, name)
    if len(query.shape) != 3 or len(value.shape) != 3:
        raise ValueError(f"query and value must be 3-D (TND), got {tuple(query.shape)} and {tuple(value.shape)}")
    mode = _sparse_mode(atten_mask, sparse_mode)
    mask = _mask_for(query, atten_mask, mode)
    tokens, heads = int(query.shape[0]), int(query.shape[1])
    out = empty_like_kind(query, (tokens, heads, int(value.shape[2])))
    softmax_max = _statistics(query, tokens, heads)
    softmax_sum = _statistics(query, tokens, heads)
    q_ends = int_array(sequence_ends(tokens, actual_seq_qlen))
    kv_ends = int_array(sequence_ends(key.shape[0], actual_seq_kvlen))
    with Operands() as views:
        api().run("aclnnNsaSelectedAttention", views, views.tensor(query, "query"), views.tensor(key, "key"),
                  views.tensor(value, "value"), views.tensor(topk_indices, "topk_indices"),
                  views.tensor(mask, "atten_mask") if mask is not None else None, q_ends.handle, kv_ends.handle,
                  float(scale_value), int(head_num), _LAYOUT, mode, int(select_block_size), int(select_block_count),
                  views.tensor(softmax_max, "softmax_max"), views.tensor(softmax_sum, "softmax_sum"),
                  views.tensor(out, "attention_out"))
    return out, softmax_max, softmax_sum


def nsa_select_attention_backward(grad, query, key, value, attention_out, softmax_max, softmax_sum, topk_indices,
                                  scale_value, head_num, select_block_size, select_block_count, atten_mask=None,
                                  actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=None):
    """(dq, dk, dv) of nsa_select_attention, from the forward's attention_out and statistics and the gradient of
    attention_out."""
    mode = _sparse_mode(atten_mask, sparse_mode)
    mask = _mask_for(query, atten_mask, mode)
    dq = empty_like_kind(query, tuple(query.shape))
    dk = empty_like_kind(key, tuple(key.shape))
    dv = empty_like_kind(value, tuple(value.shape))
    q_ends = int_array(sequence_ends(query.shape[0], actual_seq_qlen))
    kv_ends = int_array(sequence_ends(key.shape[0], actual_seq_kvlen))
    with Operands() as views:
        api().run("aclnnNsaSelectedAttentionGrad", views, views.tensor(query, "query"), views.tensor(key, "key"),
                  views.tensor(value, "value"), views.tensor(attention_out, "attention_out"),
                  views.tensor(grad, "grad"), views.tensor(softmax_max, "softmax_max"),
                  views.tensor(softmax_sum, "softmax_sum"), views.tensor(topk_indices, "topk_indices"),
                  q_ends.handle, kv_ends.handle, views.tensor(mask, "atten_mask") if mask is not None else None,
                  float(scale_value), int(select_block_size), int(select_block_count), int(head_num), _LAYOUT, mode,
                  views.tensor(dq, "dq"), views.tensor(dk, "dk"), views.tensor(dv, "dv"))
    return dq, dk, dv


# ----------------------------------------------------------------------------------------------------------------
# Autograd (PyTorch installed): attention_out is differentiable in query, key and value; the statistics are not.

if torch is not None:
    class NsaSelectAttentionFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, query, key, value, topk_indices, scale_value, head_num, select_block_size,
                    select_block_count, atten_mask, actual_seq_qlen, actual_seq_kvlen, sparse_mode):
            out, softmax_max, softmax_sum = plain_forward(query, key, value, topk_indices, scale_value, head_num,
                                                          select_block_size, select_block_count, atten_mask,
                                                          actual_seq_qlen, actual_seq_kvlen, sparse_mode)
            ctx.save_for_backward(query, key, value, out, softmax_max, softmax_sum, topk_indices)
            ctx.arguments = (scale_value, head_num, select_block_size, select_block_count, atten_mask,
                             actual_seq_qlen, actual_seq_kvlen, sparse_mode)
            ctx.mark_non_differentiable(softmax_max, softmax_sum)
            return out, softmax_max, softmax_sum

        @staticmethod
        def backward(ctx, grad_out, grad_max, grad_sum):
            query, key, value, out, softmax_max, softmax_sum, topk_indices = ctx.saved_tensors
            dq, dk, dv = nsa_select_attention_backward(grad_out.contiguous(), query, key, value, out, softmax_max,
                                                       softmax_sum, topk_indices, *ctx.arguments)
            need = ctx.needs_input_grad
            return ((dq if need[0] else None), (dk if need[1] else None), (dv if need[2] else None)) + (None,) * 9


# ----------------------------------------------------------------------------------------------------------------
# Public

def nsa_select_attention(query, key, value, topk_indices, scale_value, head_num, select_block_size,
                         select_block_count, atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                         sparse_mode=None):
    """Native Sparse Attention's selected attention (the module's docstring has the shapes); returns
    (attention_out, softmax_max, softmax_sum), differentiable in query, key and value through attention_out."""
    if needs_autograd(query, key, value):
        return NsaSelectAttentionFunction.apply(query, key, value, topk_indices, scale_value, head_num,
                                                select_block_size, select_block_count, atten_mask, actual_seq_qlen,
                                                actual_seq_kvlen, sparse_mode)
    return plain_forward(query, key, value, topk_indices, scale_value, head_num, select_block_size,
                         select_block_count, atten_mask, actual_seq_qlen, actual_seq_kvlen, sparse_mode)


# ----------------------------------------------------------------------------------------------------------------
# torch.library (torch.ops.portable_aclnn.*); the sequence ends are lists of ints there

def _fake_forward(query, key, value, topk_indices, scale_value, head_num, select_block_size, select_block_count,
                  atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=None):
    tokens, heads = query.shape[0], query.shape[1]
    stats = (tokens, heads, STATISTICS_LANES)
    return (query.new_empty((tokens, heads, value.shape[2])), query.new_empty(stats, dtype=torch.float32),
            query.new_empty(stats, dtype=torch.float32))


def _fake_backward(grad, query, key, value, attention_out, softmax_max, softmax_sum, topk_indices, scale_value,
                   head_num, select_block_size, select_block_count, atten_mask=None, actual_seq_qlen=None,
                   actual_seq_kvlen=None, sparse_mode=None):
    return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value)


def _setup_context(ctx, inputs, output):
    query, key, value, topk_indices = inputs[:4]
    out, softmax_max, softmax_sum = output
    ctx.save_for_backward(query, key, value, out, softmax_max, softmax_sum, topk_indices)
    ctx.arguments = tuple(inputs[4:])
    ctx.mark_non_differentiable(softmax_max, softmax_sum)


def _library_backward(ctx, grad_out, grad_max, grad_sum):
    query, key, value, out, softmax_max, softmax_sum, topk_indices = ctx.saved_tensors
    dq, dk, dv = torch.ops.portable_aclnn.nsa_select_attention_backward(
        grad_out.contiguous(), query, key, value, out, softmax_max, softmax_sum, topk_indices, *ctx.arguments)
    return (dq, dk, dv) + (None,) * 9


def _legacy_autograd(query, key, value, topk_indices, scale_value, head_num, select_block_size, select_block_count,
                     atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=None):
    return NsaSelectAttentionFunction.apply(query, key, value, topk_indices, scale_value, head_num, select_block_size,
                                            select_block_count, atten_mask, actual_seq_qlen, actual_seq_kvlen,
                                            sparse_mode)


_ATTRIBUTES = {"scale_value": REQUIRED, "head_num": REQUIRED, "select_block_size": REQUIRED,
               "select_block_count": REQUIRED}
_OPTIONAL = "Tensor? atten_mask=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int? sparse_mode=None"

ENTRIES = (
    Entry(name="nsa_select_attention", public=nsa_select_attention, function=plain_forward,
          schema="(Tensor query, Tensor key, Tensor value, Tensor topk_indices, float scale_value, int head_num, "
                 "int select_block_size, int select_block_count, " + _OPTIONAL + ") -> (Tensor, Tensor, Tensor)",
          fake=_fake_forward, inputs=("query", "key", "value", "topk_indices"),
          attributes=dict(_ATTRIBUTES, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=None),
          outputs=("attention_out", "softmax_max", "softmax_sum"),
          autograd=(_setup_context, _library_backward), legacy_autograd=_legacy_autograd),
    Entry(name="nsa_select_attention_backward", public=nsa_select_attention_backward,
          function=nsa_select_attention_backward,
          schema="(Tensor grad, Tensor query, Tensor key, Tensor value, Tensor attention_out, Tensor softmax_max, "
                 "Tensor softmax_sum, Tensor topk_indices, float scale_value, int head_num, int select_block_size, "
                 "int select_block_count, " + _OPTIONAL + ") -> (Tensor, Tensor, Tensor)",
          fake=_fake_backward,
          inputs=("grad", "query", "key", "value", "attention_out", "softmax_max", "softmax_sum", "topk_indices"),
          attributes=dict(_ATTRIBUTES, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=None),
          outputs=("dq", "dk", "dv")),
)
