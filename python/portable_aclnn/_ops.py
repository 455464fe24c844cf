"""The eight operators as plain functions on torch tensors or NumPy arrays (no autograd here).

Each makes its outputs (uninitialised, of the inputs' kind and dtype), wraps every operand as an aclTensor view of
its memory and runs CANN's call sequence (_library._Api.run). Errors are AclnnError, ValueError or TypeError.
"""

import ctypes

import numpy as np

from ._library import api
from ._tensors import Operands, bool_array, int_array, empty_like_kind, is_torch, require_array

INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def _mode(table, value, name):
    if isinstance(value, str):
        if value not in table:
            raise ValueError(f"{name} must be one of {sorted(table)}, got {value!r}")
        return table[value]
    if value not in table.values():
        raise ValueError(f"{name} must be one of {sorted(table)} (or {sorted(table.values())}), got {value!r}")
    return int(value)


def triu_mask(like, query_len, key_len):
    """torch_npu's fixed_triu_mask: (1, 1, S1, S2) BOOL, True (masked) above the diagonal (key > query)."""
    if is_torch(like):
        import torch

        return torch.ones((query_len, key_len), dtype=torch.bool, device=like.device).triu(1).reshape(
            1, 1, query_len, key_len)
    return np.triu(np.ones((query_len, key_len), dtype=np.bool_), 1).reshape(1, 1, query_len, key_len)


def _softmax_mask(x, mask, fixed_triu_mask):
    require_array(x, "x")
    if fixed_triu_mask:
        return triu_mask(x, x.shape[-2], x.shape[-1])
    if mask is None:
        raise ValueError("mask must be given unless fixed_triu_mask is True")
    return mask


def scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """softmax over the last dim of mask ? -10000 : x * scale (x: (B, N, S1, S2); mask BOOL, broadcast over B, N)."""
    mask = _softmax_mask(x, mask, fixed_triu_mask)
    y = empty_like_kind(x, tuple(x.shape))
    with Operands() as views:
        api().run("aclnnScaledMaskedSoftmax", views, views.tensor(x, "x"), views.tensor(mask, "mask"), float(scale),
                  False, views.tensor(y, "y"))
    return y


def scaled_masked_softmax_backward(grad_output, y, mask, scale=1.0, fixed_triu_mask=False):
    """The gradient of scaled_masked_softmax with respect to x, from grad_output and the forward's y."""
    mask = _softmax_mask(y, mask, fixed_triu_mask)
    out = empty_like_kind(y, tuple(y.shape))
    with Operands() as views:
        api().run("aclnnScaledMaskedSoftmaxBackward", views, views.tensor(grad_output, "grad_output"),
                  views.tensor(y, "y"), views.tensor(mask, "mask"), float(scale), False, views.tensor(out, "out"))
    return out


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """PyTorch's F.grid_sample for 4-D input (N, C, Hin, Win) and grid (N, Hout, Wout, 2)."""
    interpolation = _mode(INTERPOLATION_MODES, mode, "mode")
    padding = _mode(PADDING_MODES, padding_mode, "padding_mode")
    require_array(input, "input")
    require_array(grid, "grid")
    if len(input.shape) != 4 or len(grid.shape) != 4:
        raise ValueError(f"grid_sample takes 4-D input and grid, got {tuple(input.shape)} and {tuple(grid.shape)}")
    out = empty_like_kind(input, (input.shape[0], input.shape[1], grid.shape[1], grid.shape[2]))
    with Operands() as views:
        api().run("aclnnGridSampler2D", views, views.tensor(input, "input"), views.tensor(grid, "grid"), interpolation,
                  padding, bool(align_corners), views.tensor(out, "out"))
    return out


def grid_sample_backward(grad_output, input, grid, mode="bilinear", padding_mode="zeros", align_corners=False,
                         output_mask=(True, True)):
    """(input_grad, grid_grad) of grid_sample; an output not chosen by output_mask is None."""
    interpolation = _mode(INTERPOLATION_MODES, mode, "mode")
    padding = _mode(PADDING_MODES, padding_mode, "padding_mode")
    input_grad = empty_like_kind(input, tuple(input.shape))
    grid_grad = empty_like_kind(grid, tuple(grid.shape))
    chosen = bool_array([bool(output_mask[0]), bool(output_mask[1])])
    with Operands() as views:
        api().run("aclnnGridSampler2DBackward", views, views.tensor(grad_output, "grad_output"),
                  views.tensor(input, "input"), views.tensor(grid, "grid"), interpolation, padding, bool(align_corners),
                  chosen.handle, views.tensor(input_grad, "input_grad"), views.tensor(grid_grad, "grid_grad"))
    return (input_grad if output_mask[0] else None), (grid_grad if output_mask[1] else None)


def _index_tensor(array, reference):
    """spatial_shapes / level_start_index as an int tensor of the reference's kind and device (lists, and CPU
    tensors beside a CUDA reference, accepted: they are a few integers)."""
    if is_torch(reference):
        import torch

        if is_torch(array) and array.device == reference.device:
            return array
        return torch.as_tensor(array, dtype=None if is_torch(array) else torch.int64, device=reference.device)
    if is_torch(array) or isinstance(array, np.ndarray):
        return array
    return np.asarray(array, dtype=np.int64)


def multi_scale_deformable_attn(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                                attention_weights):
    """mmcv's multi_scale_deformable_attn: value (bs, nk, nh, c), spatial shapes (nl, 2) as (H, W), level start
    index (nl), sampling locations (bs, nq, nh, nl, np, 2) as (x, y) in [0, 1], attention weights
    (bs, nq, nh, nl, np); returns (bs, nq, nh * c)."""
    require_array(value, "value")
    require_array(sampling_locations, "sampling_locations")
    shapes = _index_tensor(value_spatial_shapes, value)
    starts = _index_tensor(value_level_start_index, value)
    if len(value.shape) != 4 or len(sampling_locations.shape) != 6:
        raise ValueError(f"value must be 4-D (bs, nk, nh, c) and sampling_locations 6-D (bs, nq, nh, nl, np, 2), "
                         f"got {tuple(value.shape)} and {tuple(sampling_locations.shape)}")
    bs, _, nh, c = value.shape
    nq = sampling_locations.shape[1]
    out = empty_like_kind(value, (bs, nq, nh * c))
    with Operands() as views:
        api().run("aclnnMultiScaleDeformableAttnFunction", views, *[views.tensor(a, n) for a, n in (
            (value, "value"), (shapes, "value_spatial_shapes"), (starts, "value_level_start_index"),
            (sampling_locations, "sampling_locations"), (attention_weights, "attention_weights"), (out, "output"))])
    return out


def multi_scale_deformable_attn_backward(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                                         attention_weights, grad_output):
    """(grad_value, grad_sampling_locations, grad_attention_weights) of multi_scale_deformable_attn."""
    shapes = _index_tensor(value_spatial_shapes, value)
    starts = _index_tensor(value_level_start_index, value)
    grad_value = empty_like_kind(value, tuple(value.shape))
    grad_location = empty_like_kind(sampling_locations, tuple(sampling_locations.shape))
    grad_attn = empty_like_kind(attention_weights, tuple(attention_weights.shape))
    with Operands() as views:
        api().run("aclnnMultiScaleDeformableAttentionGrad", views, *[views.tensor(a, n) for a, n in (
            (value, "value"), (shapes, "value_spatial_shapes"), (starts, "value_level_start_index"),
            (sampling_locations, "sampling_locations"), (attention_weights, "attention_weights"),
            (grad_output, "grad_output"), (grad_value, "grad_value"), (grad_location, "grad_sampling_locations"),
            (grad_attn, "grad_attention_weights"))])
    return grad_value, grad_location, grad_attn


def _sequence_ends(input, actual_seq_len):
    """torch_npu's actual_seq_len: cumulative sequence ends (None: one sequence of all T tokens)."""
    if actual_seq_len is None:
        return [int(input.shape[0])]
    if is_torch(actual_seq_len) or isinstance(actual_seq_len, np.ndarray):
        return [int(v) for v in actual_seq_len.tolist()]
    return [int(v) for v in actual_seq_len]


def nsa_block_count(ends, compress_block_size, compress_stride):
    """The number of compressed blocks of all sequences (cumulative ends)."""
    blocks, start = 0, 0
    for end in ends:
        length = end - start
        if length >= compress_block_size:
            blocks += (length - compress_block_size) // compress_stride + 1
        start = end
    return blocks


def nsa_compress(input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    """Native Sparse Attention's compression: input (T, N, D), weight (compress_block_size, N) -> (blocks, N, D)."""
    require_array(input, "input")
    if len(input.shape) != 3:
        raise ValueError(f"input must be 3-D (T, N, D), got {tuple(input.shape)}")
    ends = _sequence_ends(input, actual_seq_len)
    blocks = nsa_block_count(ends, compress_block_size, compress_stride)
    out = empty_like_kind(input, (blocks, input.shape[1], input.shape[2]))
    seq = int_array(ends)
    with Operands() as views:
        api().run("aclnnNsaCompress", views, views.tensor(input, "input"), views.tensor(weight, "weight"), seq.handle,
                  ctypes.c_char_p(b"TND"), int(compress_block_size), int(compress_stride), 0,
                  views.tensor(out, "output"))
    return out


def nsa_compress_backward(grad_output, input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    """(input_grad, weight_grad) of nsa_compress."""
    ends = _sequence_ends(input, actual_seq_len)
    input_grad = empty_like_kind(input, tuple(input.shape))
    weight_grad = empty_like_kind(weight, tuple(weight.shape))
    seq = int_array(ends)
    with Operands() as views:
        api().run("aclnnNsaCompressGrad", views, views.tensor(grad_output, "grad_output"), views.tensor(input, "input"),
                  views.tensor(weight, "weight"), seq.handle, int(compress_block_size), int(compress_stride), 0,
                  ctypes.c_char_p(b"TND"), views.tensor(input_grad, "input_grad"),
                  views.tensor(weight_grad, "weight_grad"))
    return input_grad, weight_grad
