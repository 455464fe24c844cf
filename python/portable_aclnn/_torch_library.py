"""The operators registered with PyTorch's dispatcher as torch.ops.portable_aclnn.*, so that torch.compile, FX and
TorchScript see them as single operators (docs/python.md, "torch.library").

Each operator gets a schema, a CPU and a CUDA kernel (the _ops function, which takes both), a fake kernel that only
makes outputs of the right shape (for meta tensors and torch.compile's FakeTensors), and autograd: on PyTorch >= 2.4
through torch.library.register_autograd, whose backward calls the registered backward operator (so AOTAutograd
traces it); before 2.4 (Debian's 1.13 included) through Python kernels for the AutogradCPU, AutogradCUDA and
AutogradMeta keys (the autograd Functions of _autograd.py; shapes only on meta tensors).

Imported by the package when PyTorch is installed; registration happens once per process.
"""

import torch

from . import _autograd, _ops

NAMESPACE = "portable_aclnn"

SCHEMAS = {
    "scaled_masked_softmax": "(Tensor x, Tensor? mask, float scale=1.0, bool fixed_triu_mask=False) -> Tensor",
    "scaled_masked_softmax_backward":
        "(Tensor grad_output, Tensor y, Tensor? mask, float scale=1.0, bool fixed_triu_mask=False) -> Tensor",
    "grid_sample": "(Tensor input, Tensor grid, str mode=\"bilinear\", str padding_mode=\"zeros\", "
                   "bool align_corners=False) -> Tensor",
    "grid_sample_backward": "(Tensor grad_output, Tensor input, Tensor grid, str mode=\"bilinear\", "
                            "str padding_mode=\"zeros\", bool align_corners=False, "
                            "bool[2] output_mask=[True, True]) -> (Tensor, Tensor)",
    "multi_scale_deformable_attn": "(Tensor value, Tensor value_spatial_shapes, Tensor value_level_start_index, "
                                   "Tensor sampling_locations, Tensor attention_weights) -> Tensor",
    "multi_scale_deformable_attn_backward": "(Tensor value, Tensor value_spatial_shapes, "
                                            "Tensor value_level_start_index, Tensor sampling_locations, "
                                            "Tensor attention_weights, Tensor grad_output) -> (Tensor, Tensor, Tensor)",
    "nsa_compress": "(Tensor input, Tensor weight, int compress_block_size, int compress_stride, "
                    "int[]? actual_seq_len=None) -> Tensor",
    "nsa_compress_backward": "(Tensor grad_output, Tensor input, Tensor weight, int compress_block_size, "
                             "int compress_stride, int[]? actual_seq_len=None) -> (Tensor, Tensor)",
}


# CPU kernels. The dispatcher's outputs must be tensors: a gradient that output_mask leaves out is zeros.
def _grid_sample_backward_cpu(grad_output, input, grid, mode="bilinear", padding_mode="zeros",
                              align_corners=False, output_mask=(True, True)):
    input_grad, grid_grad = _ops.grid_sample_backward(grad_output, input, grid, mode, padding_mode, align_corners,
                                                      tuple(output_mask))
    return (input_grad if input_grad is not None else torch.zeros_like(input),
            grid_grad if grid_grad is not None else torch.zeros_like(grid))


CPU_KERNELS = {
    "scaled_masked_softmax": _ops.scaled_masked_softmax,
    "scaled_masked_softmax_backward": _ops.scaled_masked_softmax_backward,
    "grid_sample": _ops.grid_sample,
    "grid_sample_backward": _grid_sample_backward_cpu,
    "multi_scale_deformable_attn": _ops.multi_scale_deformable_attn,
    "multi_scale_deformable_attn_backward": _ops.multi_scale_deformable_attn_backward,
    "nsa_compress": _ops.nsa_compress,
    "nsa_compress_backward": _ops.nsa_compress_backward,
}


# Fake kernels: outputs of the right shape, dtype and device, nothing computed.
def _nsa_blocks(input, compress_block_size, compress_stride, actual_seq_len):
    ends = [input.shape[0]] if actual_seq_len is None else list(actual_seq_len)
    return _ops.nsa_block_count(ends, compress_block_size, compress_stride)


FAKE_KERNELS = {
    "scaled_masked_softmax": lambda x, mask, scale=1.0, fixed_triu_mask=False: torch.empty_like(x),
    "scaled_masked_softmax_backward":
        lambda grad_output, y, mask, scale=1.0, fixed_triu_mask=False: torch.empty_like(y),
    "grid_sample": lambda input, grid, mode="bilinear", padding_mode="zeros", align_corners=False: input.new_empty(
        (input.shape[0], input.shape[1], grid.shape[1], grid.shape[2])),
    "grid_sample_backward": lambda grad_output, input, grid, mode="bilinear", padding_mode="zeros",
    align_corners=False, output_mask=(True, True): (torch.empty_like(input), torch.empty_like(grid)),
    "multi_scale_deformable_attn": lambda value, shapes, starts, locations, weights: value.new_empty(
        (value.shape[0], locations.shape[1], value.shape[2] * value.shape[3])),
    "multi_scale_deformable_attn_backward": lambda value, shapes, starts, locations, weights, grad_output: (
        torch.empty_like(value), torch.empty_like(locations), torch.empty_like(weights)),
    "nsa_compress": lambda input, weight, block, stride, actual_seq_len=None: input.new_empty(
        (_nsa_blocks(input, block, stride, actual_seq_len), input.shape[1], input.shape[2])),
    "nsa_compress_backward": lambda grad_output, input, weight, block, stride, actual_seq_len=None: (
        torch.empty_like(input), torch.empty_like(weight)),
}


def _op(name):
    return getattr(getattr(torch.ops, NAMESPACE), name)


# Autograd for PyTorch >= 2.4: (setup_context, backward) per forward operator; backward calls the backward
# operators through the dispatcher.
def _softmax_setup(ctx, inputs, output):
    x, mask, scale, fixed_triu_mask = inputs
    ctx.save_for_backward(output, mask)
    ctx.arguments = (scale, fixed_triu_mask)


def _softmax_backward(ctx, grad_y):
    y, mask = ctx.saved_tensors
    return _op("scaled_masked_softmax_backward")(grad_y, y, mask, *ctx.arguments), None, None, None


def _save_two_tensors_and_arguments(ctx, inputs, output):
    """grid_sample's (input, grid) and nsa_compress's (input, weight), then their other arguments."""
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.arguments = tuple(inputs[2:])


def _grid_backward(ctx, grad_output):
    input, grid = ctx.saved_tensors
    want = [bool(ctx.needs_input_grad[0]), bool(ctx.needs_input_grad[1])]
    input_grad, grid_grad = _op("grid_sample_backward")(grad_output, input, grid, *ctx.arguments, want)
    return (input_grad if want[0] else None), (grid_grad if want[1] else None), None, None, None


def _msda_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _msda_backward(ctx, grad_output):
    value, shapes, starts, locations, weights = ctx.saved_tensors
    grad_value, grad_location, grad_attn = _op("multi_scale_deformable_attn_backward")(
        value, shapes, starts, locations, weights, grad_output)
    return grad_value, None, None, grad_location, grad_attn


def _nsa_backward(ctx, grad_output):
    input, weight = ctx.saved_tensors
    input_grad, weight_grad = _op("nsa_compress_backward")(grad_output, input, weight, *ctx.arguments)
    return input_grad, weight_grad, None, None, None


AUTOGRAD = {
    "scaled_masked_softmax": (_softmax_setup, _softmax_backward),
    "grid_sample": (_save_two_tensors_and_arguments, _grid_backward),
    "multi_scale_deformable_attn": (_msda_setup, _msda_backward),
    "nsa_compress": (_save_two_tensors_and_arguments, _nsa_backward),
}

# Autograd before PyTorch 2.4: the package's autograd Functions, called from an AutogradCPU kernel. (A Python kernel
# receives the arguments its caller gave, not the schema's defaults: hence the defaults here.)
LEGACY_AUTOGRAD = {
    "scaled_masked_softmax": lambda x, mask, scale=1.0, fixed_triu_mask=False:
        _autograd.ScaledMaskedSoftmaxFunction.apply(x, mask, scale, fixed_triu_mask),
    "grid_sample": lambda input, grid, mode="bilinear", padding_mode="zeros", align_corners=False:
        _autograd.GridSampleFunction.apply(input, grid, mode, padding_mode, align_corners),
    "multi_scale_deformable_attn": _autograd.MultiScaleDeformableAttnFunction.apply,
    "nsa_compress": lambda input, weight, compress_block_size, compress_stride, actual_seq_len=None:
        _autograd.NsaCompressFunction.apply(input, weight, compress_block_size, compress_stride, actual_seq_len),
}


_library = None


def register():
    """Defines the operators (once per process; later calls, or a namespace taken already, do nothing)."""
    global _library
    if _library is not None:
        return
    try:
        library = torch.library.Library(NAMESPACE, "DEF")
        for name, schema in SCHEMAS.items():
            library.define(name + schema)
    except RuntimeError:  # defined already in this process (another copy of the package): use those
        return
    modern = hasattr(torch.library, "register_autograd") and hasattr(torch.library, "register_fake")
    for name in SCHEMAS:
        # The package's functions take CPU and CUDA tensors alike (a CUDA call runs on PyTorch's current stream).
        library.impl(name, CPU_KERNELS[name], "CPU")
        library.impl(name, CPU_KERNELS[name], "CUDA")
        qualified = f"{NAMESPACE}::{name}"
        if modern:
            torch.library.register_fake(qualified, FAKE_KERNELS[name], lib=library)
        else:
            library.impl(name, FAKE_KERNELS[name], "Meta")
            library.impl(name, FAKE_KERNELS[name], "AutogradMeta")
    for name, (setup_context, backward) in AUTOGRAD.items():
        if modern:
            torch.library.register_autograd(f"{NAMESPACE}::{name}", backward, setup_context=setup_context,
                                            lib=library)
        else:
            library.impl(name, LEGACY_AUTOGRAD[name], "AutogradCPU")
            library.impl(name, LEGACY_AUTOGRAD[name], "AutogradCUDA")
    if not modern:
        # Backward operators have no derivative of their own (as in the package's functions): AutogradCPU and
        # AutogradCUDA run them as they are.
        for name in SCHEMAS:
            if name not in AUTOGRAD:
                library.impl(name, CPU_KERNELS[name], "AutogradCPU")
                library.impl(name, CPU_KERNELS[name], "AutogradCUDA")
    _library = library
