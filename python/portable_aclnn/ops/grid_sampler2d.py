"""GridSampler2D and its backward (src/ops/grid_sampler2d/): torch.nn.functional.grid_sample for 4-D inputs.

input (N, C, Hin, Win), grid (N, Hout, Wout, 2) with (x, y) in [-1, 1]; FLOAT, FLOAT16, BFLOAT16 or DOUBLE; PyTorch's
argument names and defaults.
"""

from .._library import api
from .._operator import BOOL, BOOL_ARRAY, INT64, TENSOR, AclnnCall, Entry, needs_autograd
from .._tensors import Operands, bool_array, empty_like_kind, require_array, torch

ACLNN = (
    AclnnCall("aclnnGridSampler2D", (TENSOR, TENSOR, INT64, INT64, BOOL, TENSOR)),
    AclnnCall("aclnnGridSampler2DBackward", (TENSOR, TENSOR, TENSOR, INT64, INT64, BOOL, BOOL_ARRAY, TENSOR, TENSOR)),
)

INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


# ----------------------------------------------------------------------------------------------------------------
# Plain functions (torch tensors or NumPy arrays; no autograd)

def _mode(table, value, name):
    if isinstance(value, str):
        if value not in table:
            raise ValueError(f"{name} must be one of {sorted(table)}, got {value!r}")
        return table[value]
    if value not in table.values():
        raise ValueError(f"{name} must be one of {sorted(table)} (or {sorted(table.values())}), got {value!r}")
    return int(value)


def plain_forward(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """grid_sample without autograd."""
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


# ----------------------------------------------------------------------------------------------------------------
# Autograd (PyTorch installed): a gradient nobody needs is not computed (the operator's outputMask)

if torch is not None:
    class GridSampleFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, grid, mode, padding_mode, align_corners):
            ctx.save_for_backward(input, grid)
            ctx.modes = (mode, padding_mode, align_corners)
            return plain_forward(input, grid, mode, padding_mode, align_corners)

        @staticmethod
        def backward(ctx, grad_output):
            input, grid = ctx.saved_tensors
            want = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
            if not any(want):
                return None, None, None, None, None
            input_grad, grid_grad = grid_sample_backward(grad_output, input, grid, *ctx.modes, output_mask=want)
            return input_grad, grid_grad, None, None, None


# ----------------------------------------------------------------------------------------------------------------
# Public

def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """torch.nn.functional.grid_sample for 4-D inputs, the same argument names and defaults. input (N, C, Hin, Win),
    grid (N, Hout, Wout, 2) with (x, y) in [-1, 1]; FLOAT, FLOAT16, BFLOAT16 or DOUBLE."""
    if needs_autograd(input, grid):
        return GridSampleFunction.apply(input, grid, mode, padding_mode, align_corners)
    return plain_forward(input, grid, mode, padding_mode, align_corners)


# ----------------------------------------------------------------------------------------------------------------
# torch.library (torch.ops.portable_aclnn.*)

def _kernel_backward(grad_output, input, grid, mode="bilinear", padding_mode="zeros", align_corners=False,
                     output_mask=(True, True)):
    """The dispatcher's outputs must be tensors: a gradient that output_mask leaves out is zeros."""
    input_grad, grid_grad = grid_sample_backward(grad_output, input, grid, mode, padding_mode, align_corners,
                                                 tuple(output_mask))
    return (input_grad if input_grad is not None else torch.zeros_like(input),
            grid_grad if grid_grad is not None else torch.zeros_like(grid))


def _fake_forward(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    return input.new_empty((input.shape[0], input.shape[1], grid.shape[1], grid.shape[2]))


def _fake_backward(grad_output, input, grid, mode="bilinear", padding_mode="zeros", align_corners=False,
                   output_mask=(True, True)):
    return torch.empty_like(input), torch.empty_like(grid)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.arguments = tuple(inputs[2:])


def _library_backward(ctx, grad_output):
    input, grid = ctx.saved_tensors
    want = [bool(ctx.needs_input_grad[0]), bool(ctx.needs_input_grad[1])]
    input_grad, grid_grad = torch.ops.portable_aclnn.grid_sample_backward(grad_output, input, grid, *ctx.arguments,
                                                                          want)
    return (input_grad if want[0] else None), (grid_grad if want[1] else None), None, None, None


def _legacy_autograd(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    return GridSampleFunction.apply(input, grid, mode, padding_mode, align_corners)


_MODES = {"mode": "bilinear", "padding_mode": "zeros", "align_corners": False}

ENTRIES = (
    Entry(name="grid_sample", public=grid_sample, function=plain_forward,
          schema="(Tensor input, Tensor grid, str mode=\"bilinear\", str padding_mode=\"zeros\", "
                 "bool align_corners=False) -> Tensor",
          fake=_fake_forward, inputs=("input", "grid"), attributes=dict(_MODES), outputs=("output",),
          autograd=(_setup_context, _library_backward), legacy_autograd=_legacy_autograd),
    Entry(name="grid_sample_backward", public=grid_sample_backward, function=grid_sample_backward,
          kernel=_kernel_backward,
          schema="(Tensor grad_output, Tensor input, Tensor grid, str mode=\"bilinear\", str padding_mode=\"zeros\", "
                 "bool align_corners=False, bool[2] output_mask=[True, True]) -> (Tensor, Tensor)",
          fake=_fake_backward, inputs=("grad_output", "input", "grid"), attributes=dict(_MODES),
          outputs=("input_grad", "grid_grad")),
)
