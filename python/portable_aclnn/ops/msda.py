"""MultiScaleDeformableAttnFunction and its gradient (src/ops/msda/): mmcv's / mx_driving's
multi_scale_deformable_attn.

value (bs, nk, nh, c), spatial shapes (nl, 2) as (H, W), level start index (nl), sampling locations
(bs, nq, nh, nl, np, 2) as (x, y) in [0, 1], attention weights (bs, nq, nh, nl, np); returns (bs, nq, nh * c).
FLOAT, FLOAT16, BFLOAT16, DOUBLE; any channel count (DOUBLE and channel counts outside CANN's multiples of 8 up to
256 are the C operator's CPU extension). The index tensors are INT32 or INT64 tensors or arrays, or lists.
"""

import numpy as np

from .._library import api
from .._operator import TENSOR, AclnnCall, Entry, needs_autograd
from .._tensors import Operands, empty_like_kind, is_torch, require_array, torch

ACLNN = (
    AclnnCall("aclnnMultiScaleDeformableAttnFunction", (TENSOR,) * 6),
    AclnnCall("aclnnMultiScaleDeformableAttentionGrad", (TENSOR,) * 9),
)


# ----------------------------------------------------------------------------------------------------------------
# Plain functions (torch tensors or NumPy arrays; no autograd)

def index_tensor(array, reference):
    """spatial_shapes / level_start_index as an int tensor of the reference's kind and device (lists, and CPU
    tensors beside a CUDA reference, accepted: they are a few integers)."""
    if is_torch(reference):
        if is_torch(array) and array.device == reference.device:
            return array
        return torch.as_tensor(array, dtype=None if is_torch(array) else torch.int64, device=reference.device)
    if is_torch(array) or isinstance(array, np.ndarray):
        return array
    return np.asarray(array, dtype=np.int64)


def plain_forward(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights):
    """multi_scale_deformable_attn without autograd."""
    require_array(value, "value")
    require_array(sampling_locations, "sampling_locations")
    shapes = index_tensor(value_spatial_shapes, value)
    starts = index_tensor(value_level_start_index, value)
    if len(value.shape) != 4 or len(sampling_locations.shape) != 6:
        raise ValueError(f"value must be 4-D (bs, nk, nh, c) and sampling_locations 6-D (bs, nq, nh, nl, np, 2), "
                         f"got {tuple(value.shape)} and {tuple(sampling_locations.shape)}")
    bs, _, nh, c = value.shape
    nq = sampling_locations.shape[1]
    out = empty_like_kind(value, (bs, nq, nh * c))
    with Operands() as views:
        api().run("aclnnMultiScaleDeformableAttnFunction", views, views.tensor(value, "value"),
                  views.tensor(shapes, "value_spatial_shapes"), views.tensor(starts, "value_level_start_index"),
                  views.tensor(sampling_locations, "sampling_locations"),
                  views.tensor(attention_weights, "attention_weights"), views.tensor(out, "output"))
    return out


def multi_scale_deformable_attn_backward(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                                         attention_weights, grad_output):
    """(grad_value, grad_sampling_locations, grad_attention_weights) of multi_scale_deformable_attn."""
    shapes = index_tensor(value_spatial_shapes, value)
    starts = index_tensor(value_level_start_index, value)
    grad_value = empty_like_kind(value, tuple(value.shape))
    grad_location = empty_like_kind(sampling_locations, tuple(sampling_locations.shape))
    grad_attn = empty_like_kind(attention_weights, tuple(attention_weights.shape))
    with Operands() as views:
        api().run("aclnnMultiScaleDeformableAttentionGrad", views, views.tensor(value, "value"),
                  views.tensor(shapes, "value_spatial_shapes"), views.tensor(starts, "value_level_start_index"),
                  views.tensor(sampling_locations, "sampling_locations"),
                  views.tensor(attention_weights, "attention_weights"), views.tensor(grad_output, "grad_output"),
                  views.tensor(grad_value, "grad_value"), views.tensor(grad_location, "grad_sampling_locations"),
                  views.tensor(grad_attn, "grad_attention_weights"))
    return grad_value, grad_location, grad_attn


# ----------------------------------------------------------------------------------------------------------------
# Autograd (PyTorch installed): one backward call computes all three gradients

if torch is not None:
    class MultiScaleDeformableAttnFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, value, spatial_shapes, level_start_index, sampling_locations, attention_weights):
            spatial_shapes = index_tensor(spatial_shapes, value)
            level_start_index = index_tensor(level_start_index, value)
            ctx.save_for_backward(value, spatial_shapes, level_start_index, sampling_locations, attention_weights)
            return plain_forward(value, spatial_shapes, level_start_index, sampling_locations, attention_weights)

        @staticmethod
        def backward(ctx, grad_output):
            value, shapes, starts, locations, weights = ctx.saved_tensors
            grad_value, grad_location, grad_attn = multi_scale_deformable_attn_backward(
                value, shapes, starts, locations, weights, grad_output)
            need = ctx.needs_input_grad
            return (grad_value if need[0] else None, None, None, grad_location if need[3] else None,
                    grad_attn if need[4] else None)


# ----------------------------------------------------------------------------------------------------------------
# Public

def multi_scale_deformable_attn(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                                attention_weights):
    """Multi-scale deformable attention with mmcv's / mx_driving's layouts: value (bs, nk, nh, c), spatial shapes
    (nl, 2) as (H, W), level start index (nl), sampling locations (bs, nq, nh, nl, np, 2) as (x, y) in [0, 1],
    attention weights (bs, nq, nh, nl, np). Returns (bs, nq, nh * c)."""
    if needs_autograd(value, sampling_locations, attention_weights):
        return MultiScaleDeformableAttnFunction.apply(value, value_spatial_shapes, value_level_start_index,
                                                      sampling_locations, attention_weights)
    return plain_forward(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights)


# ----------------------------------------------------------------------------------------------------------------
# torch.library (torch.ops.portable_aclnn.*)

def _fake_forward(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights):
    return value.new_empty((value.shape[0], sampling_locations.shape[1], value.shape[2] * value.shape[3]))


def _fake_backward(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights,
                   grad_output):
    return torch.empty_like(value), torch.empty_like(sampling_locations), torch.empty_like(attention_weights)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _library_backward(ctx, grad_output):
    value, shapes, starts, locations, weights = ctx.saved_tensors
    grad_value, grad_location, grad_attn = torch.ops.portable_aclnn.multi_scale_deformable_attn_backward(
        value, shapes, starts, locations, weights, grad_output)
    return grad_value, None, None, grad_location, grad_attn


def _legacy_autograd(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights):
    return MultiScaleDeformableAttnFunction.apply(value, value_spatial_shapes, value_level_start_index,
                                                  sampling_locations, attention_weights)


_INPUTS = ("value", "value_spatial_shapes", "value_level_start_index", "sampling_locations", "attention_weights")

ENTRIES = (
    Entry(name="multi_scale_deformable_attn", public=multi_scale_deformable_attn, function=plain_forward,
          schema="(Tensor value, Tensor value_spatial_shapes, Tensor value_level_start_index, "
                 "Tensor sampling_locations, Tensor attention_weights) -> Tensor",
          fake=_fake_forward, inputs=_INPUTS, attributes={}, outputs=("output",),
          autograd=(_setup_context, _library_backward), legacy_autograd=_legacy_autograd),
    Entry(name="multi_scale_deformable_attn_backward", public=multi_scale_deformable_attn_backward,
          function=multi_scale_deformable_attn_backward,
          schema="(Tensor value, Tensor value_spatial_shapes, Tensor value_level_start_index, "
                 "Tensor sampling_locations, Tensor attention_weights, Tensor grad_output) "
                 "-> (Tensor, Tensor, Tensor)",
          fake=_fake_backward, inputs=_INPUTS + ("grad_output",), attributes={},
          outputs=("grad_value", "grad_sampling_locations", "grad_attention_weights")),
)
