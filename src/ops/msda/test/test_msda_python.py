"""MultiScaleDeformableAttention: the Python package's functions against float64 references. Run with
the package's tests (tests/python/run_tests.py, scripts/python_package_check.sh)."""

import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import mmcv, mx_driving
from package_test_util import FLOAT_DTYPES, close, msda_reference, msda_problem


# DOUBLE and channel counts outside CANN's rule (mmcv's test sizes) are the C operator's CPU extension.
@pytest.mark.parametrize("dtype,channels", [(d, 8) for d in FLOAT_DTYPES] +
                         [(torch.float64, c) for c in (4, 30, 32, 71, 1025)] + [(torch.float32, 30)])
def test_msda_forward_and_gradients(dtype, channels):
    value, shapes, starts, locations, weights = msda_problem(dtype, 6, channels)
    inputs = [t.clone().requires_grad_() for t in (value, locations, weights)]
    out = pa.multi_scale_deformable_attn(inputs[0], shapes, starts, inputs[1], inputs[2])
    refs = [t.detach().double().requires_grad_() for t in inputs]
    ref = msda_reference(refs[0], shapes, starts, refs[1], refs[2])
    close(out, ref.detach().numpy(), dtype, scale=1.0)
    dy = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    out.backward(dy.to(dtype))
    ref.backward(dy)
    for ours, theirs, scale in zip(inputs, refs, (1.0, 30.0, 4.0)):
        close(ours.grad, theirs.grad.numpy(), dtype, scale=scale)


@pytest.mark.parametrize("channels", [4, 30])
def test_msda_gradcheck_in_double_through_mmcv(channels):
    value, shapes, starts, locations, weights = msda_problem(torch.float64, 10, channels, queries=2)
    inputs = tuple(t.clone().requires_grad_() for t in (value, locations, weights))
    assert torch.autograd.gradcheck(
        lambda v, loc, w: mmcv.MultiScaleDeformableAttnFunction.apply(v, shapes, starts, loc, w, 64), inputs,
        eps=1e-6, atol=1e-7)


def test_msda_compat_names_agree():
    value, shapes, starts, locations, weights = msda_problem(torch.float32, 8)
    a = pa.multi_scale_deformable_attn(value, shapes, starts, locations, weights)
    b = mx_driving.multi_scale_deformable_attn(value, shapes, starts, locations, weights)
    c = mmcv.MultiScaleDeformableAttnFunction.apply(value, shapes, starts, locations, weights, 64)
    assert torch.equal(a, b) and torch.equal(a, c)
    ga, gl, gw = pa.multi_scale_deformable_attn_backward(value, shapes, starts, locations, weights, torch.ones_like(a))
    assert ga.shape == value.shape and gl.shape == locations.shape and gw.shape == weights.shape
