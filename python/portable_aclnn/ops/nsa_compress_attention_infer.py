"""NsaCompressAttentionInfer (src/ops/nsa_compress_attention_infer/): Native Sparse Attention's compress attention
while decoding, over a paged cache of compressed keys and values, with the top-k choice of select blocks.

query (T, N1, D_qk) in layout "TND" or (B, S, N1, D_qk) in "BSND" (S <= 4); key (blockNum, page_block_size,
N2 * D_qk) or (blockNum, page_block_size, N2, D_qk), value likewise with D_v: the cache's pages of compressed tokens.
block_table INT32 (B, pages per entry): each batch entry's pages in order. actual_cmp_seq_kvlen: each entry's
compressed length (required); actual_seq_qlen: each entry's query tokens (None: one per entry in TND, S in BSND);
actual_sel_seq_kvlen: each entry's raw length - with actual_seq_qlen, and consistent with the compressed lengths,
the multi-token form, where each query token sees only the compression windows complete at its position. All are
lengths per entry, not cumulative ends. Returns (output, topk_indices): output in query's layout with D_v, in query's
dtype (FLOAT16 or BFLOAT16); topk_indices INT32 (T, N2, select_block_count) or (B, S, N2, select_block_count), the
select blocks chosen per KV head, best first, -1 past the blocks: the input of nsa_select_attention_infer.
atten_mask and topk_mask are accepted and not read. No autograd: an inference operator.

The argument names and order are torch_npu's npu_nsa_compress_attention_infer (compat.torch_npu has that name), plus
layout at the end ("TND", torch_npu's only layout, or "BSND", which the C operator also takes). torch_npu's page lists
actual_seq_qlen and actual_sel_seq_kvlen as not supported yet; here they select the multi-token form, as in the C
operator. The rules, the formulas and the decisions: docs/ops/nsa_compress_attention_infer.md.
"""

import ctypes

from .._library import api
from .._operator import DOUBLE, INT64, INT_ARRAY, REQUIRED, STRING, TENSOR, AclnnCall, Entry
from .._tensors import Operands, empty_like_kind, empty_of_dtype, int_array, int_list, require_array, torch

ACLNN = (
    AclnnCall("aclnnNsaCompressAttentionInfer", (TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, INT_ARRAY, INT_ARRAY,
                                                 INT_ARRAY, TENSOR, INT64, INT64, INT64, INT64, INT64, INT64, DOUBLE,
                                                 STRING, INT64, INT64, TENSOR, TENSOR)),
)

LAYOUTS = ("TND", "BSND")


def output_shapes(query, value, key_value_head_num, select_block_count, layout):
    """The shapes of (output, topk_indices): query's layout with value's head dimension, and with N2 heads of
    select_block_count slots."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    shape = tuple(int(d) for d in query.shape)
    expected = 4 if layout == "BSND" else 3
    if len(shape) != expected:
        raise ValueError(f"query must be {expected}-D in layout {layout}, got {shape}")
    if len(value.shape) == 4:
        dim_v = int(value.shape[3])
    elif len(value.shape) == 3 and int(key_value_head_num) > 0:
        dim_v = int(value.shape[2]) // int(key_value_head_num)
    else:
        raise ValueError(f"value must be 3-D (blockNum, page_block_size, N2 * D_v) or 4-D (blockNum, page_block_size, "
                         f"N2, D_v), got {tuple(value.shape)}")
    # A negative count makes an empty output, so that the operator reports select_block_count's rule.
    return shape[:-1] + (dim_v,), shape[:-2] + (int(key_value_head_num), max(int(select_block_count), 0))


def nsa_compress_attention_infer(query, key, value, scale_value, head_num, key_value_head_num, select_block_size,
                                 select_block_count, page_block_size, compress_block_size, compress_stride,
                                 atten_mask=None, block_table=None, topk_mask=None, actual_seq_qlen=None,
                                 actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None, layout="TND"):
    """Compress attention over a paged cache (the module's docstring has the shapes); returns (output,
    topk_indices)."""
    for array, name in ((query, "query"), (key, "key"), (value, "value")):
        require_array(array, name)
    if block_table is None:
        raise ValueError("block_table is required: the cache is paged (each batch entry's pages, in order)")
    if actual_cmp_seq_kvlen is None:
        raise ValueError("actual_cmp_seq_kvlen is required: each batch entry's compressed length")
    layout = str(layout)
    out_shape, topk_shape = output_shapes(query, value, key_value_head_num, select_block_count, layout)
    out = empty_like_kind(query, out_shape)
    topk_indices = empty_of_dtype(query, topk_shape, "int32")
    lengths = [int_array(int_list(values)) if values is not None else None
               for values in (actual_seq_qlen, actual_cmp_seq_kvlen, actual_sel_seq_kvlen)]
    handles = [array.handle if array is not None else None for array in lengths]
    with Operands() as views:
        api().run("aclnnNsaCompressAttentionInfer", views, views.tensor(query, "query"), views.tensor(key, "key"),
                  views.tensor(value, "value"), None, views.tensor(block_table, "block_table"), *handles, None,
                  int(head_num), int(key_value_head_num), int(select_block_size), int(select_block_count),
                  int(compress_block_size), int(compress_stride), float(scale_value), ctypes.c_char_p(layout.encode()),
                  int(page_block_size), 0, views.tensor(out, "output"), views.tensor(topk_indices, "topk_indices"))
    return out, topk_indices


def _fake(query, key, value, scale_value, head_num, key_value_head_num, select_block_size, select_block_count,
          page_block_size, compress_block_size, compress_stride, atten_mask=None, block_table=None, topk_mask=None,
          actual_seq_qlen=None, actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None, layout="TND"):
    out_shape, topk_shape = output_shapes(query, value, key_value_head_num, select_block_count, layout)
    return query.new_empty(out_shape), query.new_empty(topk_shape, dtype=torch.int32)


def _command_line(query, key, value, block_table, **attributes):
    """The command line's form: its inputs come first, in `inputs` order (block_table is the schema's 13th)."""
    return nsa_compress_attention_infer(query, key, value, block_table=block_table, **attributes)


ENTRIES = (
    Entry(name="nsa_compress_attention_infer", public=nsa_compress_attention_infer, function=_command_line,
          schema="(Tensor query, Tensor key, Tensor value, float scale_value, int head_num, int key_value_head_num, "
                 "int select_block_size, int select_block_count, int page_block_size, int compress_block_size, "
                 "int compress_stride, Tensor? atten_mask=None, Tensor? block_table=None, Tensor? topk_mask=None, "
                 "int[]? actual_seq_qlen=None, int[]? actual_cmp_seq_kvlen=None, int[]? actual_sel_seq_kvlen=None, "
                 "str layout='TND') -> (Tensor, Tensor)",
          fake=_fake, inputs=("query", "key", "value", "block_table"),
          attributes={"scale_value": REQUIRED, "head_num": REQUIRED, "key_value_head_num": REQUIRED,
                      "select_block_size": REQUIRED, "select_block_count": REQUIRED, "page_block_size": REQUIRED,
                      "compress_block_size": REQUIRED, "compress_stride": REQUIRED, "layout": "TND",
                      "actual_seq_qlen": None, "actual_cmp_seq_kvlen": REQUIRED, "actual_sel_seq_kvlen": None},
          outputs=("output", "topk_indices"), kernel=nsa_compress_attention_infer),
)
