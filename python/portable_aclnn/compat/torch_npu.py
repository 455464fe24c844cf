"""torch_npu's names: `from portable_aclnn.compat import torch_npu` then `torch_npu.npu_scaled_masked_softmax(...)`."""

from ..ops.nsa_compress import nsa_compress, nsa_compress_backward
from ..ops.nsa_compress_attention import nsa_compress_attention
from ..ops.nsa_compress_attention_infer import nsa_compress_attention_infer
from ..ops.nsa_compress_with_cache import nsa_compress_infer
from ..ops.nsa_selected_attention import nsa_select_attention, nsa_select_attention_backward
from ..ops.nsa_selected_attention_infer import nsa_select_attention_infer
from ..ops.scaled_masked_softmax import scaled_masked_softmax, scaled_masked_softmax_backward


def npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """torch_npu.npu_scaled_masked_softmax: softmax(mask ? -10000 : x * scale) over the last dim; with
    fixed_triu_mask=True an upper-triangular mask (diagonal excluded) replaces mask."""
    return scaled_masked_softmax(x, mask, scale, fixed_triu_mask)


def npu_scaled_masked_softmax_backward(y_grad, y, mask, scale, fixed_triu_mask):
    """torch_npu.npu_scaled_masked_softmax_backward: the gradient with respect to x."""
    return scaled_masked_softmax_backward(y_grad, y, mask, scale, fixed_triu_mask)


def npu_nsa_compress(input, weight, compress_block_size, compress_stride, *, actual_seq_len=None):
    """torch_npu.npu_nsa_compress: input (T, N, D), weight (compress_block_size, N); actual_seq_len cumulative ends."""
    return nsa_compress(input, weight, compress_block_size, compress_stride, actual_seq_len)


def npu_nsa_compress_grad(grad, input, weight, compress_block_size, compress_stride, *, actual_seq_len=None):
    """torch_npu.npu_nsa_compress_grad: (input_grad, weight_grad)."""
    return nsa_compress_backward(grad, input, weight, compress_block_size, compress_stride, actual_seq_len)


def npu_nsa_compress_attention(query, key, value, scale_value, head_num, compress_block_size, compress_stride,
                               select_block_size, select_block_count, *, topk_mask=None, atten_mask=None,
                               actual_seq_qlen=None, actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None):
    """torch_npu.npu_nsa_compress_attention: (attention_out, softmax_max, softmax_sum, topk_indices); masks BOOL,
    true = masked; actual_sel_seq_kvlen None: derived from actual_cmp_seq_kvlen. No backward (not differentiable)."""
    return nsa_compress_attention(query, key, value, scale_value, head_num, compress_block_size, compress_stride,
                                  select_block_size, select_block_count, topk_mask, atten_mask, actual_seq_qlen,
                                  actual_cmp_seq_kvlen, actual_sel_seq_kvlen)


def npu_nsa_select_attention(query, key, value, topk_indices, scale_value, head_num, select_block_size,
                             select_block_count, *, atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None):
    """torch_npu.npu_nsa_select_attention: (attention_out, softmax_max, softmax_sum); causal masking when atten_mask
    is given (its contents are not read)."""
    return nsa_select_attention(query, key, value, topk_indices, scale_value, head_num, select_block_size,
                                select_block_count, atten_mask, actual_seq_qlen, actual_seq_kvlen)


def npu_nsa_select_attention_grad(grad, query, key, value, attention_out, softmax_max, softmax_sum, topk_indices,
                                  scale_value, head_num, select_block_size, select_block_count, *, atten_mask=None,
                                  actual_seq_qlen=None, actual_seq_kvlen=None):
    """torch_npu.npu_nsa_select_attention_grad: (dq, dk, dv)."""
    return nsa_select_attention_backward(grad, query, key, value, attention_out, softmax_max, softmax_sum,
                                         topk_indices, scale_value, head_num, select_block_size, select_block_count,
                                         atten_mask, actual_seq_qlen, actual_seq_kvlen)


def npu_nsa_select_attention_infer(query, key, value, topk_indices, scale_value, head_num, key_value_head_num,
                                   select_block_size, select_block_count, page_block_size, layout="BSND",
                                   atten_mask=None, block_table=None, actual_seq_qlen=None, actual_seq_kvlen=None):
    """torch_npu.npu_nsa_select_attention_infer: the output over a paged KV cache; actual_seq_qlen / actual_seq_kvlen
    are lengths per batch entry (not cumulative); block_table and actual_seq_kvlen are required; atten_mask is not
    read."""
    return nsa_select_attention_infer(query, key, value, topk_indices, scale_value, head_num, key_value_head_num,
                                      select_block_size, select_block_count, page_block_size, layout, atten_mask,
                                      block_table, actual_seq_qlen, actual_seq_kvlen)


def npu_nsa_compress_infer(input, weight, slot_mapping, compress_block_size, compress_stride, page_block_size,
                           block_table=None, actual_seq_len=None, *, cache):
    """torch_npu.npu_nsa_compress_infer: cache (resultLen, N, D) updated in place and returned; actual_seq_len holds
    each entry's length (required); block_table None: input (T, N, D)."""
    return nsa_compress_infer(input, weight, slot_mapping, compress_block_size, compress_stride, page_block_size,
                              block_table, actual_seq_len, cache)


def npu_nsa_compress_attention_infer(query, key, value, scale_value, head_num, key_value_head_num, select_block_size,
                                     select_block_count, page_block_size, compress_block_size, compress_stride,
                                     atten_mask=None, block_table=None, topk_mask=None, actual_seq_qlen=None,
                                     actual_cmp_seq_kvlen=None, actual_sel_seq_kvlen=None):
    """torch_npu.npu_nsa_compress_attention_infer: (output, topk_indices) over a paged cache of compressed tokens,
    layout TND; block_table and actual_cmp_seq_kvlen (each entry's compressed length) are required; atten_mask and
    topk_mask are not read."""
    return nsa_compress_attention_infer(query, key, value, scale_value, head_num, key_value_head_num,
                                        select_block_size, select_block_count, page_block_size, compress_block_size,
                                        compress_stride, atten_mask, block_table, topk_mask, actual_seq_qlen,
                                        actual_cmp_seq_kvlen, actual_sel_seq_kvlen)
