"""portable_aclnn: CANN's aclnn operators on the CPU, from Python.

Functions take PyTorch tensors (differentiable with autograd: backward runs the backward operator) or NumPy arrays
(no autograd; PyTorch need not be installed), read them in place whatever their strides, and return new tensors or
arrays of the same kind. docs/python.md documents each one.
"""

from ._library import AclnnError
from . import _ops
from ._ops import (grid_sample_backward, multi_scale_deformable_attn_backward, nsa_compress_backward,
                   scaled_masked_softmax_backward)
from ._tensors import is_torch, torch as _torch_module

__all__ = ["AclnnError", "scaled_masked_softmax", "scaled_masked_softmax_backward", "grid_sample",
           "grid_sample_backward", "multi_scale_deformable_attn", "multi_scale_deformable_attn_backward",
           "nsa_compress", "nsa_compress_backward"]
__version__ = "0.1.0"


def _autograd_functions():
    from . import _autograd as module  # imports torch

    return module


def _needs_autograd(*arrays):
    """Whether a call must be recorded for autograd: some torch input requires grad and grad mode is on. Other
    calls skip torch.autograd.Function (its bookkeeping costs more than the operator on small tensors)."""
    for array in arrays:
        if is_torch(array) and array.requires_grad:
            return _torch_module.is_grad_enabled()  # a torch tensor: torch imported
    return False


def scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """softmax(mask ? -10000 : x * scale) over the last dim. x (B, N, S1, S2) FLOAT/FLOAT16/BFLOAT16; mask BOOL
    (B or 1, N or 1, S1, S2), True = masked. fixed_triu_mask=True masks every key after its query instead (the mask
    argument is then ignored, as in torch_npu)."""
    if _needs_autograd(x):
        return _autograd_functions().ScaledMaskedSoftmaxFunction.apply(x, mask, scale, fixed_triu_mask)
    return _ops.scaled_masked_softmax(x, mask, scale, fixed_triu_mask)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """torch.nn.functional.grid_sample for 4-D inputs, the same argument names and defaults. input (N, C, Hin, Win),
    grid (N, Hout, Wout, 2) with (x, y) in [-1, 1]; FLOAT, FLOAT16, BFLOAT16 or DOUBLE."""
    if _needs_autograd(input, grid):
        return _autograd_functions().GridSampleFunction.apply(input, grid, mode, padding_mode, align_corners)
    return _ops.grid_sample(input, grid, mode, padding_mode, align_corners)


def multi_scale_deformable_attn(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                                attention_weights):
    """Multi-scale deformable attention with mmcv's / mx_driving's layouts: value (bs, nk, nh, c), spatial shapes
    (nl, 2) as (H, W), level start index (nl), sampling locations (bs, nq, nh, nl, np, 2) as (x, y) in [0, 1],
    attention weights (bs, nq, nh, nl, np). Returns (bs, nq, nh * c)."""
    if _needs_autograd(value, sampling_locations, attention_weights):
        return _autograd_functions().MultiScaleDeformableAttnFunction.apply(
            value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights)
    return _ops.multi_scale_deformable_attn(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                                           attention_weights)


def nsa_compress(input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    """Native Sparse Attention's key/value compression. input (T, N, D) FLOAT16/BFLOAT16, weight
    (compress_block_size, N); actual_seq_len: cumulative sequence ends as torch_npu takes them (None: one sequence).
    Returns (blocks, N, D)."""
    if _needs_autograd(input, weight):
        return _autograd_functions().NsaCompressFunction.apply(input, weight, compress_block_size, compress_stride,
                                                     actual_seq_len)
    return _ops.nsa_compress(input, weight, compress_block_size, compress_stride, actual_seq_len)


if _torch_module is not None:  # torch.ops.portable_aclnn.* (docs/python.md, "torch.library")
    from . import _torch_library

    _torch_library.register()
