"""mx_driving's name: `from portable_aclnn.compat import mx_driving`."""

from ..ops.msda import multi_scale_deformable_attn as _msda


def multi_scale_deformable_attn(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                                attention_weights):
    """mx_driving.multi_scale_deformable_attn (differentiable): returns (bs, nq, nh * c)."""
    return _msda(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights)
