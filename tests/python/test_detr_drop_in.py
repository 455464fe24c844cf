"""portable_aclnn.compat.detr as the DETR family's `MultiScaleDeformableAttention` extension (and Grounding DINO's
`groundingdino._C`), tested as those repositories test theirs: the forward against a pure-PyTorch formulation in
DOUBLE and FLOAT, gradcheck in DOUBLE for several channel counts through an autograd Function that calls the two
functions, and a small deformable-attention layer trained beside the same layer on the pure-PyTorch formulation."""

import copy
import importlib
import math
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

from portable_aclnn.compat import detr

detr.install()
import MultiScaleDeformableAttention as MSDA  # noqa: E402  (what install() makes importable)


def cuda_runs_here():
    if not torch.cuda.is_available():
        return False
    from portable_aclnn._library import api

    return api().gpu_count > 0


needs_cuda = pytest.mark.skipif(not cuda_runs_here(), reason="needs an NVIDIA GPU, PyTorch with CUDA and a build "
                                "with the CUDA backend (scripts/gpu_check.sh runs these)")


def pytorch_core(value, spatial_shapes, sampling_locations, attention_weights):
    """Deformable attention in plain PyTorch: each level's (H, W) map of every head sampled bilinearly (zeros
    outside, pixel centres at (i + 0.5) / size) at the points, weighted and summed over levels and points.
    value (N, S, M, D), locations (N, Lq, M, L, P, 2) as (x, y) in [0, 1], weights (N, Lq, M, L, P) ->
    (N, Lq, M * D)."""
    n, _, heads, channels = value.shape
    _, queries, _, levels, points, _ = sampling_locations.shape
    sizes = [int(h) * int(w) for h, w in spatial_shapes.tolist()]
    per_level = value.split(sizes, dim=1)
    grids = 2 * sampling_locations - 1  # grid_sample's [-1, 1]
    total = 0
    for level, (h, w) in enumerate(spatial_shapes.tolist()):
        image = per_level[level].permute(0, 2, 3, 1).reshape(n * heads, channels, h, w)
        grid = grids[:, :, :, level].transpose(1, 2).reshape(n * heads, queries, points, 2)
        sampled = F.grid_sample(image, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        weight = attention_weights[:, :, :, level].transpose(1, 2).reshape(n * heads, 1, queries, points)
        total = total + (sampled * weight).sum(-1)  # (n * heads, channels, queries)
    return total.view(n, heads * channels, queries).transpose(1, 2).contiguous()


class DropInFunction(torch.autograd.Function):
    """How those repositories call their extension: forward and backward through its two functions."""

    @staticmethod
    def forward(ctx, value, shapes, starts, locations, weights, im2col_step):
        ctx.im2col_step = im2col_step
        ctx.save_for_backward(value, shapes, starts, locations, weights)
        return MSDA.ms_deform_attn_forward(value, shapes, starts, locations, weights, im2col_step)

    @staticmethod
    def backward(ctx, grad_output):
        value, shapes, starts, locations, weights = ctx.saved_tensors
        grad_value, grad_locations, grad_weights = MSDA.ms_deform_attn_backward(
            value, shapes, starts, locations, weights, grad_output.contiguous(), ctx.im2col_step)
        return grad_value, None, None, grad_locations, grad_weights, None


SHAPES = torch.as_tensor([(6, 4), (3, 2)], dtype=torch.long)
STARTS = torch.cat((SHAPES.new_zeros((1,)), SHAPES.prod(1).cumsum(0)[:-1]))


def problem(n, heads, channels, queries, points, dtype, seed, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    keys = int(SHAPES.prod(1).sum())
    levels = SHAPES.shape[0]
    value = torch.rand(n, keys, heads, channels, generator=g, dtype=torch.float64) * 0.01
    locations = torch.rand(n, queries, heads, levels, points, 2, generator=g, dtype=torch.float64)
    weights = torch.rand(n, queries, heads, levels, points, generator=g, dtype=torch.float64) + 1e-5
    weights /= weights.sum(-1, keepdim=True).sum(-2, keepdim=True)
    return [t.to(device=device, dtype=dtype) for t in (value, locations, weights)]


@pytest.mark.parametrize("dtype,tolerance", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_forward_against_pytorch(dtype, tolerance):
    value, locations, weights = problem(2, 2, 8, 7, 3, dtype, 1)
    ours = MSDA.ms_deform_attn_forward(value, SHAPES, STARTS, locations, weights, 64)
    theirs = pytorch_core(value.double(), SHAPES, locations.double(), weights.double())
    assert ours.dtype == dtype and ours.shape == (2, 7, 16)
    error = (ours.double() - theirs).abs().max().item()
    relative = error / theirs.abs().max().item()
    assert relative < tolerance, (error, relative)


def test_im2col_step_is_ignored_and_backward_returns_a_list():
    value, locations, weights = problem(3, 2, 4, 5, 2, torch.float32, 2)
    results = [MSDA.ms_deform_attn_forward(value, SHAPES, STARTS, locations, weights, step) for step in (1, 2, 64)]
    assert all(torch.equal(results[0], r) for r in results[1:])  # 2 does not divide the batch of 3: still fine
    grad_output = torch.rand(results[0].shape, generator=torch.Generator().manual_seed(3))
    grads = MSDA.ms_deform_attn_backward(value, SHAPES, STARTS, locations, weights, grad_output, 64)
    assert isinstance(grads, list) and len(grads) == 3
    assert [g.shape for g in grads] == [value.shape, locations.shape, weights.shape]
    # Against autograd of the pure-PyTorch formulation in double.
    leaves = [t.double().requires_grad_() for t in (value, locations, weights)]
    pytorch_core(leaves[0], SHAPES, leaves[1], leaves[2]).backward(grad_output.double())
    for ours, leaf in zip(grads, leaves):
        assert torch.allclose(ours.double(), leaf.grad, rtol=1e-4, atol=1e-6)


# As those repositories' test: one image, two heads, two queries, two levels, two points; channel counts that are
# and are not multiples of 8, and above CANN's 256 (the C operator's CPU extension takes them all).
@pytest.mark.parametrize("channels", [1, 2, 30, 32, 71, 1025])
def test_gradcheck_in_double(channels):
    value, locations, weights = problem(1, 2, channels, 2, 2, torch.float64, 10 + channels)
    inputs = (value.requires_grad_(), SHAPES, STARTS, locations.requires_grad_(), weights.requires_grad_(), 2)
    # Many channels: gradcheck's fast mode (random projections) keeps it to seconds.
    assert torch.autograd.gradcheck(DropInFunction.apply, inputs, eps=1e-6, atol=1e-5, rtol=1e-3,
                                    fast_mode=channels > 100)


def test_gradcheck_catches_a_wrong_gradient():
    # The check above can fail: the same gradcheck on a backward that scales one gradient is refused.
    class Wrong(DropInFunction):
        @staticmethod
        def backward(ctx, grad_output):
            grads = list(DropInFunction.backward(ctx, grad_output))
            grads[3] = grads[3] * 1.01
            return tuple(grads)

    value, locations, weights = problem(1, 2, 4, 2, 2, torch.float64, 5)
    inputs = (value.requires_grad_(), SHAPES, STARTS, locations.requires_grad_(), weights.requires_grad_(), 2)
    assert not torch.autograd.gradcheck(Wrong.apply, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=False)


class DeformableAttention(torch.nn.Module):
    """A small multi-scale deformable attention layer in the DETR style: offsets and weights from the query, the
    value projected, the output projected; `core` computes the sampling."""

    def __init__(self, core, d_model=32, levels=2, heads=4, points=3):
        super().__init__()
        self.core, self.levels, self.heads, self.points = core, levels, heads, points
        self.sampling_offsets = torch.nn.Linear(d_model, heads * levels * points * 2)
        self.attention_weights = torch.nn.Linear(d_model, heads * levels * points)
        self.value_proj = torch.nn.Linear(d_model, d_model)
        self.output_proj = torch.nn.Linear(d_model, d_model)

    def forward(self, query, reference_points, features, shapes, starts):
        n, queries, d_model = query.shape
        value = self.value_proj(features).view(n, features.shape[1], self.heads, d_model // self.heads)
        offsets = self.sampling_offsets(query).view(n, queries, self.heads, self.levels, self.points, 2)
        weights = self.attention_weights(query).view(n, queries, self.heads, self.levels * self.points)
        weights = weights.softmax(-1).view(n, queries, self.heads, self.levels, self.points)
        normaliser = torch.stack([shapes[:, 1], shapes[:, 0]], -1).to(query.dtype)  # (W, H) per level
        locations = reference_points[:, :, None, :, None, :] + offsets / normaliser[None, None, None, :, None, :]
        return self.output_proj(self.core(value, shapes, starts, locations, weights))


def train(model, steps, data):
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        optimiser.zero_grad()
        loss = F.mse_loss(model(*data[:-1]), data[-1])
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return losses


def test_training_a_deformable_attention_layer_matches_pytorch():
    torch.manual_seed(20)
    ours = DeformableAttention(lambda v, s, i, loc, w: DropInFunction.apply(v, s, i, loc, w, 64))
    with torch.no_grad():
        ours.sampling_offsets.weight.mul_(2.0)  # offsets of a few pixels, some points outside the maps
    theirs = copy.deepcopy(ours)
    theirs.core = lambda v, s, i, loc, w: pytorch_core(v, s, loc, w)
    keys = int(SHAPES.prod(1).sum())
    g = torch.Generator().manual_seed(21)
    data = (torch.randn(2, 10, 32, generator=g), torch.rand(2, 10, 2, 2, generator=g),
            torch.randn(2, keys, 32, generator=g), SHAPES, STARTS, torch.randn(2, 10, 32, generator=g))
    # The tolerance tells a real difference: sampling 0.1% further out gives losses 1e-4 apart within these steps.
    off = copy.deepcopy(theirs)
    off.core = lambda v, s, i, loc, w: pytorch_core(v, s, loc * 1.001, w)
    ours_losses, theirs_losses, off_losses = train(ours, 6, data), train(theirs, 6, data), train(off, 6, data)
    assert ours_losses[-1] < ours_losses[0]  # it learns
    for a, b in zip(ours_losses, theirs_losses):
        assert abs(a - b) <= 1e-4 * abs(b), (ours_losses, theirs_losses)
    assert any(abs(a - b) > 1e-4 * abs(b) for a, b in zip(off_losses, theirs_losses)), (off_losses, theirs_losses)


def test_grounding_dino_import_finds_it(tmp_path):
    # A stand-in for Grounding DINO's package: its attention module imports the extension as they do.
    package = tmp_path / "groundingdino"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "ms_deform_attn.py").write_text(
        "try:\n    from groundingdino import _C\nexcept ImportError:\n    _C = None\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "from portable_aclnn.compat import detr; detr.install()\n"
            "from groundingdino.models import ms_deform_attn\n"
            "import MultiScaleDeformableAttention\n"
            "assert ms_deform_attn._C is detr and MultiScaleDeformableAttention is detr, ms_deform_attn._C\n"
            "print('ok')\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr
    # Without install(), the stand-in finds no extension (so the check above is not vacuous).
    result = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1])\n"
                             "from groundingdino.models import ms_deform_attn; print(ms_deform_attn._C)",
                             str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "None", result.stdout + result.stderr


def test_install_sets_an_imported_package_attribute():
    fake = type(sys)("fake_detr_package")
    sys.modules["fake_detr_package"] = fake
    try:
        detr.install(["fake_detr_package._C"])
        assert fake._C is detr and importlib.import_module("fake_detr_package._C") is detr
    finally:
        for name in ("fake_detr_package", "fake_detr_package._C"):
            sys.modules.pop(name, None)


@needs_cuda
@pytest.mark.parametrize("dtype,channels", [(torch.float32, 32), (torch.float64, 30)])
def test_cuda_tensors(dtype, channels):
    # FLOAT on the GPU's kernels; DOUBLE (and 30 channels), which they do not take, on the CPU with a warning, as
    # the drop-in must still answer (those repositories' test runs gradcheck in DOUBLE on CUDA tensors).
    value, locations, weights = problem(2, 2, channels, 5, 2, dtype, 30, device="cuda")
    shapes, starts = SHAPES.cuda(), STARTS.cuda()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        out = MSDA.ms_deform_attn_forward(value, shapes, starts, locations, weights, 64)
        grads = MSDA.ms_deform_attn_backward(value, shapes, starts, locations, weights, torch.ones_like(out), 64)
    assert out.is_cuda and all(g.is_cuda for g in grads)
    assert (dtype == torch.float64) == any("ran on the CPU" in str(w.message) for w in warned)
    expected = pytorch_core(value.cpu().double(), SHAPES, locations.cpu().double(), weights.cpu().double())
    tolerance = 1e-12 if dtype == torch.float64 else 2e-6
    assert (out.cpu().double() - expected).abs().max().item() <= tolerance * expected.abs().max().item()
    leaves = [t.detach().cpu().double().requires_grad_() for t in (value, locations, weights)]
    pytorch_core(leaves[0], SHAPES, leaves[1], leaves[2]).sum().backward()
    for ours, leaf in zip(grads, leaves):
        assert torch.allclose(ours.cpu().double(), leaf.grad, rtol=1e-4, atol=1e-5)


def test_pytorch_core_matches_a_direct_bilinear_formula():
    # The reference itself against bilinear interpolation written out for one point (zeros outside the map).
    value, locations, weights = problem(1, 1, 3, 1, 1, torch.float64, 40)
    out = pytorch_core(value, SHAPES, locations, weights)
    expected = torch.zeros(3, dtype=torch.float64)
    for level, (h, w) in enumerate(SHAPES.tolist()):
        start = int(STARTS[level])
        x = locations[0, 0, 0, level, 0, 0].item() * w - 0.5
        y = locations[0, 0, 0, level, 0, 1].item() * h - 0.5
        x0, y0 = math.floor(x), math.floor(y)
        for yy, xx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
            if 0 <= yy < h and 0 <= xx < w:
                corner = (1 - abs(x - xx)) * (1 - abs(y - yy))
                expected += weights[0, 0, 0, level, 0] * corner * value[0, start + yy * w + xx, 0]
    assert torch.allclose(out[0, 0], expected, rtol=1e-12, atol=1e-15)
