"""torch.autograd.Function wrappers: each backward calls the backward operator.

Imported only when PyTorch is installed. Inputs that do not need a gradient are not computed where the operator can
skip them (the grid sampler's outputMask); the others come from one backward call.
"""

import torch

from . import _ops


class ScaledMaskedSoftmaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mask, scale, fixed_triu_mask):
        mask = _ops._softmax_mask(x, mask, fixed_triu_mask)
        y = _ops.scaled_masked_softmax(x, mask, scale, False)
        ctx.save_for_backward(y, mask)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, mask = ctx.saved_tensors
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = _ops.scaled_masked_softmax_backward(grad_y, y, mask, ctx.scale, False)
        return grad_x, None, None, None


class GridSampleFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, grid, mode, padding_mode, align_corners):
        ctx.save_for_backward(input, grid)
        ctx.modes = (mode, padding_mode, align_corners)
        return _ops.grid_sample(input, grid, mode, padding_mode, align_corners)

    @staticmethod
    def backward(ctx, grad_output):
        input, grid = ctx.saved_tensors
        want = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        if not any(want):
            return None, None, None, None, None
        input_grad, grid_grad = _ops.grid_sample_backward(grad_output, input, grid, *ctx.modes, output_mask=want)
        return input_grad, grid_grad, None, None, None


class MultiScaleDeformableAttnFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, spatial_shapes, level_start_index, sampling_locations, attention_weights):
        spatial_shapes = _ops._index_tensor(spatial_shapes, value)
        level_start_index = _ops._index_tensor(level_start_index, value)
        ctx.save_for_backward(value, spatial_shapes, level_start_index, sampling_locations, attention_weights)
        return _ops.multi_scale_deformable_attn(value, spatial_shapes, level_start_index, sampling_locations,
                                                attention_weights)

    @staticmethod
    def backward(ctx, grad_output):
        value, shapes, starts, locations, weights = ctx.saved_tensors
        grad_value, grad_location, grad_attn = _ops.multi_scale_deformable_attn_backward(
            value, shapes, starts, locations, weights, grad_output)
        need = ctx.needs_input_grad
        return (grad_value if need[0] else None, None, None, grad_location if need[3] else None,
                grad_attn if need[4] else None)


class NsaCompressFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, compress_block_size, compress_stride, actual_seq_len):
        ctx.save_for_backward(input, weight)
        ctx.sizes = (compress_block_size, compress_stride, actual_seq_len)
        return _ops.nsa_compress(input, weight, compress_block_size, compress_stride, actual_seq_len)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        input_grad, weight_grad = _ops.nsa_compress_backward(grad_output, input, weight, *ctx.sizes)
        need = ctx.needs_input_grad
        return input_grad if need[0] else None, weight_grad if need[1] else None, None, None, None
