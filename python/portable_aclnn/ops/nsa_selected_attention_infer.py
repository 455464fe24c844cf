"""NsaSelectedAttentionInfer (src/ops/nsa_selected_attention_infer/): torch_npu's npu_nsa_select_attention_infer,
Native Sparse Attention's selected attention while decoding, over a paged key/value cache.

query (B, S, N1, D_qk) in layout "BSND", (B, S, N1 * D_qk) in "BSH" or (T, N1, D_qk) in "TND"; key (blockNum,
page_block_size, N2, D_qk) or (blockNum, page_block_size, N2 * D_qk), value likewise with D_v: the cache's pages.
block_table INT32 (B, pages per entry): each batch entry's pages in order. topk_indices INT32 (B, S, N2,
select_block_count), (B, N2, select_block_count) when S is 1, or (T, N2, select_block_count) in TND: the blocks of
select_block_size positions each query token attends to, per KV head. actual_seq_kvlen: each entry's cached length;
actual_seq_qlen: each entry's query tokens (None: S in BSND/BSH, one in TND), the last tokens of the sequence.
Both are lengths per entry, not cumulative ends. Returns the output in query's layout with D_v, in query's dtype
(FLOAT16 or BFLOAT16). atten_mask is reserved (accepted, not read). No autograd: an inference operator.

block_table and actual_seq_kvlen are required (the C operator needs both; torch_npu's page marks the lengths as
required). The rules, the formulas and the decisions: docs/ops/nsa_selected_attention_infer.md.
"""

import ctypes

from .._library import api
from .._operator import DOUBLE, INT64, INT_ARRAY, REQUIRED, STRING, TENSOR, AclnnCall, Entry
from .._tensors import Operands, empty_like_kind, int_array, int_list, require_array

ACLNN = (
    AclnnCall("aclnnNsaSelectedAttentionInfer", (TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, TENSOR, INT_ARRAY,
                                                 INT_ARRAY, STRING, INT64, INT64, INT64, INT64, INT64, DOUBLE, INT64,
                                                 TENSOR)),
)

LAYOUTS = ("BSND", "BSH", "TND")


def _value_head_dim(value, key_value_head_num):
    if len(value.shape) == 4:
        return int(value.shape[3])
    if len(value.shape) == 3 and int(key_value_head_num) > 0:
        return int(value.shape[2]) // int(key_value_head_num)
    raise ValueError(f"value must be 3-D (blockNum, page_block_size, N2 * D_v) or 4-D (blockNum, page_block_size, "
                     f"N2, D_v), got {tuple(value.shape)}")


def output_shape(query, value, head_num, key_value_head_num, layout):
    """The output's shape: query's layout with value's head dimension."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    dim_v = _value_head_dim(value, key_value_head_num)
    shape = tuple(int(d) for d in query.shape)
    if layout == "BSH":
        if len(shape) != 3:
            raise ValueError(f"query must be 3-D (B, S, N1 * D_qk) in layout BSH, got {shape}")
        return shape[:2] + (int(head_num) * dim_v,)
    expected = 4 if layout == "BSND" else 3
    if len(shape) != expected:
        raise ValueError(f"query must be {expected}-D in layout {layout}, got {shape}")
    return shape[:-1] + (dim_v,)


def nsa_select_attention_infer(query, key, value, topk_indices, scale_value, head_num, key_value_head_num,
                               select_block_size, select_block_count, page_block_size, layout="BSND",
                               atten_mask=None, block_table=None, actual_seq_qlen=None, actual_seq_kvlen=None):
    """Selected attention over a paged KV cache (the module's docstring has the shapes); returns the output."""
    for array, name in ((query, "query"), (key, "key"), (value, "value"), (topk_indices, "topk_indices")):
        require_array(array, name)
    if block_table is None:
        raise ValueError("block_table is required: the cache is paged (each batch entry's pages, in order)")
    if actual_seq_kvlen is None:
        raise ValueError("actual_seq_kvlen is required: each batch entry's cached length")
    layout = str(layout)
    out = empty_like_kind(query, output_shape(query, value, head_num, key_value_head_num, layout))
    kv_lengths = int_array(int_list(actual_seq_kvlen))
    q_lengths = int_array(int_list(actual_seq_qlen)) if actual_seq_qlen is not None else None
    with Operands() as views:
        api().run("aclnnNsaSelectedAttentionInfer", views, views.tensor(query, "query"), views.tensor(key, "key"),
                  views.tensor(value, "value"), views.tensor(topk_indices, "topk_indices"),
                  views.tensor(atten_mask, "atten_mask") if atten_mask is not None else None,
                  views.tensor(block_table, "block_table"), q_lengths.handle if q_lengths is not None else None,
                  kv_lengths.handle, ctypes.c_char_p(layout.encode()), int(head_num), int(key_value_head_num),
                  int(select_block_size), int(select_block_count), int(page_block_size), float(scale_value), 0,
                  views.tensor(out, "output"))
    return out


def _fake(query, key, value, topk_indices, scale_value, head_num, key_value_head_num, select_block_size,
          select_block_count, page_block_size, layout="BSND", atten_mask=None, block_table=None,
          actual_seq_qlen=None, actual_seq_kvlen=None):
    return query.new_empty(output_shape(query, value, head_num, key_value_head_num, layout))


def _command_line(query, key, value, topk_indices, block_table, **attributes):
    """The command line's form: its inputs come first, in `inputs` order (block_table is the schema's 13th)."""
    return nsa_select_attention_infer(query, key, value, topk_indices, block_table=block_table, **attributes)


ENTRIES = (
    Entry(name="nsa_select_attention_infer", public=nsa_select_attention_infer, function=_command_line,
          schema="(Tensor query, Tensor key, Tensor value, Tensor topk_indices, float scale_value, int head_num, "
                 "int key_value_head_num, int select_block_size, int select_block_count, int page_block_size, "
                 "str layout='BSND', Tensor? atten_mask=None, Tensor? block_table=None, int[]? actual_seq_qlen=None, "
                 "int[]? actual_seq_kvlen=None) -> Tensor",
          fake=_fake, inputs=("query", "key", "value", "topk_indices", "block_table"),
          attributes={"scale_value": REQUIRED, "head_num": REQUIRED, "key_value_head_num": REQUIRED,
                      "select_block_size": REQUIRED, "select_block_count": REQUIRED, "page_block_size": REQUIRED,
                      "layout": "BSND", "actual_seq_qlen": None, "actual_seq_kvlen": REQUIRED},
          outputs=("output",), kernel=nsa_select_attention_infer),
)
