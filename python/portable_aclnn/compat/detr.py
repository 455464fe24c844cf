"""The DETR family's deformable-attention extension, drop-in: Deformable DETR, DINO and their descendants build a
C++/CUDA module `MultiScaleDeformableAttention` (Grounding DINO: `groundingdino._C`) with two functions, which their
autograd Function (`MSDeformAttnFunction`) calls. This module has the same two functions on portable_aclnn's
operator, for CPU and CUDA tensors, and `install()` makes those imports find it:

    from portable_aclnn.compat import detr; detr.install()   # before the model's code is imported

It is not installed under the name MultiScaleDeformableAttention by default: that name belongs to those
repositories' own extension, and a second module of the same name in site-packages would shadow it, or be shadowed
by it, depending on the order of sys.path (docs/python.md, "Drop-in names").
"""

import sys
import warnings

from .._library import AclnnError
from ..ops import msda

ERR_PARAM_INVALID = 161002


def _on_the_cpu_if_the_gpu_refuses(function, arguments):
    """function(*arguments); on CUDA tensors that the GPU's kernels refuse (MSDA's DOUBLE, channel counts outside
    CANN's multiples of 8 up to 256: the C operator's CPU extension), the same call on CPU copies, results moved
    back. The GPU's phase 1 refuses before anything is queued, so nothing runs twice."""
    value = arguments[0]
    try:
        return function(*arguments)
    except AclnnError as error:
        if not getattr(value, "is_cuda", False) or error.status != ERR_PARAM_INVALID:
            raise
        results = function(*(a.cpu() if hasattr(a, "cpu") else a for a in arguments))
        warnings.warn(f"MultiScaleDeformableAttention on {value.device}: the GPU's kernels do not take this call "
                      f"(dtype {value.dtype}, {value.shape[-1]} channels); it ran on the CPU ({error.message})",
                      stacklevel=3)
        if isinstance(results, tuple):
            return tuple(r.to(value.device) for r in results)
        return results.to(value.device)


def ms_deform_attn_forward(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                           attention_weights, im2col_step):
    """The extension's forward: value (N, S, M, D), spatial shapes (L, 2) INT64 as (H, W), level start index (L)
    INT64, sampling locations (N, Lq, M, L, P, 2) as (x, y) in [0, 1], attention weights (N, Lq, M, L, P); returns
    (N, Lq, M * D). im2col_step is accepted and ignored (it only splits their CUDA kernel's work); any batch size
    works. FLOAT and DOUBLE as theirs (FLOAT16 and BFLOAT16 too); no autograd (their Function calls the backward)."""
    del im2col_step
    return _on_the_cpu_if_the_gpu_refuses(msda.plain_forward, (value, value_spatial_shapes, value_level_start_index,
                                                               sampling_locations, attention_weights))


def ms_deform_attn_backward(value, value_spatial_shapes, value_level_start_index, sampling_locations,
                            attention_weights, grad_output, im2col_step):
    """The extension's backward: [grad_value, grad_sampling_loc, grad_attn_weight], a list as their C++ returns it.
    grad_output (N, Lq, M * D), any strides."""
    del im2col_step
    return list(_on_the_cpu_if_the_gpu_refuses(
        msda.multi_scale_deformable_attn_backward,
        (value, value_spatial_shapes, value_level_start_index, sampling_locations, attention_weights, grad_output)))


NAMES = ("MultiScaleDeformableAttention", "groundingdino._C")


def install(names=NAMES):
    """Makes `import MultiScaleDeformableAttention` (Deformable DETR, DINO, ...) and `from groundingdino import _C`
    (Grounding DINO) give this module, by entries in sys.modules, for this process. Call it before the model's code
    imports them. `names`: the module names to take (default both)."""
    module = sys.modules[__name__]
    for name in names:
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent and parent in sys.modules:  # a package imported already: its attribute too
            setattr(sys.modules[parent], child, module)
    return module
