"""mmcv's autograd Function: `from portable_aclnn.compat.mmcv import MultiScaleDeformableAttnFunction`."""

from ..ops.msda import multi_scale_deformable_attn as _msda


class MultiScaleDeformableAttnFunction:
    """mmcv.ops.multi_scale_deform_attn.MultiScaleDeformableAttnFunction: `.apply(value, value_spatial_shapes,
    value_level_start_index, sampling_locations, attention_weights, im2col_step)`. im2col_step is accepted and
    ignored (it only splits mmcv's CUDA kernel's work); any batch size works."""

    @staticmethod
    def apply(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights,
              im2col_step=64):
        del im2col_step
        return _msda(value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights)
