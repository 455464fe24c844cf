"""ScaledMaskedSoftmax and its backward (src/ops/scaled_masked_softmax/): torch_npu's npu_scaled_masked_softmax.

softmax over the last dim of (mask ? -10000 : x * scale); x (B, N, S1, S2) FLOAT, FLOAT16 or BFLOAT16, mask BOOL
(B or 1, N or 1, S1, S2), True = masked. fixed_triu_mask=True masks every key after its query instead (the mask
argument is then ignored, as in torch_npu; the C operator itself takes only fixedTriuMask = false, so the package
makes that mask). mask=None means no mask (all False).
"""

import numpy as np

from .._library import api
from .._operator import BOOL, DOUBLE, TENSOR, AclnnCall, Entry, needs_autograd
from .._tensors import Operands, empty_like_kind, is_torch, require_array, torch

ACLNN = (
    AclnnCall("aclnnScaledMaskedSoftmax", (TENSOR, TENSOR, DOUBLE, BOOL, TENSOR)),
    AclnnCall("aclnnScaledMaskedSoftmaxBackward", (TENSOR, TENSOR, TENSOR, DOUBLE, BOOL, TENSOR)),
)


# ----------------------------------------------------------------------------------------------------------------
# Plain functions (torch tensors or NumPy arrays; no autograd)

def triu_mask(like, query_len, key_len):
    """torch_npu's fixed_triu_mask: (1, 1, S1, S2) BOOL, True (masked) above the diagonal (key > query)."""
    if is_torch(like):
        return torch.ones((query_len, key_len), dtype=torch.bool, device=like.device).triu(1).reshape(
            1, 1, query_len, key_len)
    return np.triu(np.ones((query_len, key_len), dtype=np.bool_), 1).reshape(1, 1, query_len, key_len)


_FALSE = {}  # one False element per torch device (and "numpy"), read through zero-stride views


def no_mask(like, query_len, key_len):
    """mask=None: a (1, 1, S1, S2) all-False view of one element (strides 0), nothing allocated per call."""
    if is_torch(like):
        element = _FALSE.get(like.device)
        if element is None:
            with torch.inference_mode(False):  # an ordinary tensor, which autograd may save, even if made in one
                element = torch.zeros((1, 1, 1, 1), dtype=torch.bool, device=like.device)
            element = _FALSE.setdefault(like.device, element)
        return element.expand(1, 1, query_len, key_len)
    element = _FALSE.get("numpy")
    if element is None:
        element = _FALSE.setdefault("numpy", np.zeros((1, 1, 1, 1), dtype=np.bool_))
    return np.broadcast_to(element, (1, 1, query_len, key_len))


def effective_mask(x, mask, fixed_triu_mask):
    """The mask the C operator gets: the upper triangle for fixed_triu_mask, all False for None, else mask."""
    require_array(x, "x")
    if fixed_triu_mask:
        return triu_mask(x, x.shape[-2], x.shape[-1])
    if mask is None:
        return no_mask(x, x.shape[-2], x.shape[-1])
    return mask


def plain_forward(x, mask, scale=1.0, fixed_triu_mask=False):
    """scaled_masked_softmax without autograd."""
    mask = effective_mask(x, mask, fixed_triu_mask)
    y = empty_like_kind(x, tuple(x.shape))
    with Operands() as views:
        api().run("aclnnScaledMaskedSoftmax", views, views.tensor(x, "x"), views.tensor(mask, "mask"), float(scale),
                  False, views.tensor(y, "y"))
    return y


def scaled_masked_softmax_backward(grad_output, y, mask, scale=1.0, fixed_triu_mask=False):
    """The gradient of scaled_masked_softmax with respect to x, from grad_output and the forward's y."""
    mask = effective_mask(y, mask, fixed_triu_mask)
    out = empty_like_kind(y, tuple(y.shape))
    with Operands() as views:
        api().run("aclnnScaledMaskedSoftmaxBackward", views, views.tensor(grad_output, "grad_output"),
                  views.tensor(y, "y"), views.tensor(mask, "mask"), float(scale), False, views.tensor(out, "out"))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Autograd (PyTorch installed)

if torch is not None:
    class ScaledMaskedSoftmaxFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, mask, scale, fixed_triu_mask):
            mask = effective_mask(x, mask, fixed_triu_mask)
            y = plain_forward(x, mask, scale, False)
            ctx.save_for_backward(y, mask)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, grad_y):
            y, mask = ctx.saved_tensors
            grad_x = None
            if ctx.needs_input_grad[0]:
                grad_x = scaled_masked_softmax_backward(grad_y, y, mask, ctx.scale, False)
            return grad_x, None, None, None


# ----------------------------------------------------------------------------------------------------------------
# Public

def scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """softmax(mask ? -10000 : x * scale) over the last dim. x (B, N, S1, S2) FLOAT/FLOAT16/BFLOAT16; mask BOOL
    (B or 1, N or 1, S1, S2), True = masked, or None (no mask). fixed_triu_mask=True masks every key after its query
    instead (the mask argument is then ignored, as in torch_npu)."""
    if needs_autograd(x):
        return ScaledMaskedSoftmaxFunction.apply(x, mask, scale, fixed_triu_mask)
    return plain_forward(x, mask, scale, fixed_triu_mask)


# ----------------------------------------------------------------------------------------------------------------
# torch.library (torch.ops.portable_aclnn.*)

def _fake_forward(x, mask, scale=1.0, fixed_triu_mask=False):
    return torch.empty_like(x)


def _fake_backward(grad_output, y, mask, scale=1.0, fixed_triu_mask=False):
    return torch.empty_like(y)


def _setup_context(ctx, inputs, output):
    x, mask, scale, fixed_triu_mask = inputs
    ctx.save_for_backward(output, mask)
    ctx.arguments = (scale, fixed_triu_mask)


def _library_backward(ctx, grad_y):
    y, mask = ctx.saved_tensors
    return torch.ops.portable_aclnn.scaled_masked_softmax_backward(grad_y, y, mask, *ctx.arguments), None, None, None


def _legacy_autograd(x, mask, scale=1.0, fixed_triu_mask=False):
    return ScaledMaskedSoftmaxFunction.apply(x, mask, scale, fixed_triu_mask)


ENTRIES = (
    Entry(name="scaled_masked_softmax", public=scaled_masked_softmax, function=plain_forward,
          schema="(Tensor x, Tensor? mask, float scale=1.0, bool fixed_triu_mask=False) -> Tensor",
          fake=_fake_forward, inputs=("x", "mask"), attributes={"scale": 1.0, "fixed_triu_mask": False},
          outputs=("y",), autograd=(_setup_context, _library_backward), legacy_autograd=_legacy_autograd),
    Entry(name="scaled_masked_softmax_backward", public=scaled_masked_softmax_backward,
          function=scaled_masked_softmax_backward,
          schema="(Tensor grad_output, Tensor y, Tensor? mask, float scale=1.0, bool fixed_triu_mask=False) -> Tensor",
          fake=_fake_backward, inputs=("grad_output", "y", "mask"),
          attributes={"scale": 1.0, "fixed_triu_mask": False}, outputs=("grad_x",)),
)
