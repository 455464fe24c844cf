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

No backward yet: the C library has no gradient of this operator, so the outputs are not differentiable (no autograd;
torch.ops.portable_aclnn.nsa_compress_attention registers none).

The argument names and order: CANN's document refers to torch_npu.npu_nsa_compress_attention without giving its
Python signature; the one here follows the C API's order with nsa_select_attention's naming style, which is also
the signature of MindSpore's page for the same operator (query, key, value, scale_value, head_num,
compress_block_size, compress_stride, select_block_size, select_block_count, *, topk_mask, atten_mask,
actual_seq_qlen, actual_cmp_seq_kvlen, actual_sel_seq_kvlen), plus sparse_mode.
"""

import ctypes

import numpy as np

from .._library import api
from .._operator import DOUBLE, INT64, INT_ARRAY, REQUIRED, STRING, TENSOR, AclnnCall, Entry
from .._tensors import Operands, empty_like_kind, int_array, is_torch, require_array, sequence_ends, torch

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


def _new(reference, shape, dtype):
    """A new array of reference's kind and device; dtype "float32" or "int32" (the same name in torch and NumPy)."""
    if is_torch(reference):
        return reference.new_empty(shape, dtype=getattr(torch, dtype))
    return np.empty(shape, dtype=dtype)


def plain_forward(query, key, value, scale_value, head_num, compress_block_size, compress_stride, select_block_size,
                  select_block_count, topk_mask=None, atten_mask=None, actual_seq_qlen=None,
                  actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None, sparse_mode=None):
    """nsa_compress_attention's call (the operator has no autograd: the public function only forwards here)."""
    for array, name in ((query, "query"), (key, "key"), (value, "value")):
        require_array(array, name)
        if len(array.shape) != 3:
            raise ValueError(f"{name} must be 3-D (TND: T, N, D), got shape {tuple(array.shape)}")
    mode = _sparse_mode(atten_mask, sparse_mode)
    atten_mask, topk_mask = _mask(atten_mask), _mask(topk_mask)
    tokens, heads = int(query.shape[0]), int(query.shape[1])
    out = empty_like_kind(query, (tokens, heads, int(value.shape[2])))
    stats = (tokens, heads, STATISTICS_LANES)
    softmax_max, softmax_sum = _new(query, stats, "float32"), _new(query, stats, "float32")
    # A negative count makes an empty output, so that the operator reports selectBlockCount's rule.
    topk_indices = _new(query, (tokens, int(key.shape[1]), max(int(select_block_count), 0)), "int32")
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
# Public

def nsa_compress_attention(query, key, value, scale_value, head_num, compress_block_size, compress_stride,
                           select_block_size, select_block_count, topk_mask=None, atten_mask=None,
                           actual_seq_qlen=None, actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None,
                           sparse_mode=None):
    """Native Sparse Attention's compressed attention and top-k block selection (the module's docstring has the
    shapes); returns (attention_out, softmax_max, softmax_sum, topk_indices). Not differentiable: no backward is
    provided yet (the C library has none for this operator)."""
    return plain_forward(query, key, value, scale_value, head_num, compress_block_size, compress_stride,
                         select_block_size, select_block_count, topk_mask, atten_mask, actual_seq_qlen,
                         actual_cmp_seq_kvlen, actual_sel_seq_kvlen, sparse_mode)


# ----------------------------------------------------------------------------------------------------------------
# torch.library (torch.ops.portable_aclnn.*); the sequence ends are lists of ints there. No autograd entry.

def _fake_forward(query, key, value, scale_value, head_num, compress_block_size, compress_stride, select_block_size,
                  select_block_count, topk_mask=None, atten_mask=None, actual_seq_qlen=None,
                  actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None, sparse_mode=None):
    tokens, heads = query.shape[0], query.shape[1]
    stats = (tokens, heads, STATISTICS_LANES)
    return (query.new_empty((tokens, heads, value.shape[2])), query.new_empty(stats, dtype=torch.float32),
            query.new_empty(stats, dtype=torch.float32),
            query.new_empty((tokens, key.shape[1], select_block_count), dtype=torch.int32))


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
          outputs=("attention_out", "softmax_max", "softmax_sum", "topk_indices")),
)
