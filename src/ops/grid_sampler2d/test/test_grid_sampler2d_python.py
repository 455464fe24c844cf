"""GridSampler2D: the Python package's functions against float64 references. Run with
the package's tests (tests/python/run_tests.py, scripts/python_package_check.sh)."""

import pytest
import torch

import portable_aclnn as pa
from package_test_util import FLOAT_DTYPES, close


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_matches_pytorch_in_float64(mode, padding_mode):
    g = torch.Generator().manual_seed(3)
    image = torch.randn(2, 3, 7, 9, generator=g, dtype=torch.float64)
    grid = torch.rand(2, 5, 4, 2, generator=g, dtype=torch.float64) * 2.4 - 1.2
    for align in (False, True):
        ours = pa.grid_sample(image, grid, mode, padding_mode, align)
        theirs = torch.nn.functional.grid_sample(image, grid, mode, padding_mode, align)
        close(ours, theirs.numpy(), torch.float64)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_grid_sample_dtypes_strides_and_gradients(dtype):
    g = torch.Generator().manual_seed(4)
    image64 = torch.randn(2, 9, 6, 5, generator=g, dtype=torch.float64)
    grid64 = torch.rand(2, 3, 4, 2, generator=g, dtype=torch.float64) * 2 - 1
    image = image64.to(dtype).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2).requires_grad_()  # channels-last
    grid = grid64.to(dtype).requires_grad_()
    out = pa.grid_sample(image, grid)
    ref_image = image.detach().double().requires_grad_()
    ref_grid = grid.detach().double().requires_grad_()
    ref = torch.nn.functional.grid_sample(ref_image, ref_grid, align_corners=False)
    close(out, ref.detach().numpy(), dtype)
    dy = torch.randn(out.shape, generator=g, dtype=torch.float64)
    out.backward(dy.to(dtype))
    ref.backward(dy)
    close(image.grad, ref_image.grad.numpy(), dtype, scale=1.0)
    close(grid.grad, ref_grid.grad.numpy(), dtype, scale=10.0)


def test_grid_sample_gradcheck_in_double():
    g = torch.Generator().manual_seed(5)
    image = torch.randn(1, 2, 5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    grid = (torch.rand(1, 3, 3, 2, generator=g, dtype=torch.float64) * 1.6 - 0.8).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: pa.grid_sample(a, b, "bilinear", "border", True), (image, grid))


def test_grid_sample_backward_function_chooses_outputs():
    image = torch.randn(1, 2, 4, 4)
    grid = torch.rand(1, 2, 2, 2) * 2 - 1
    dy = torch.randn(1, 2, 2, 2)
    input_grad, grid_grad = pa.grid_sample_backward(dy, image, grid, output_mask=(True, False))
    assert grid_grad is None and input_grad.shape == image.shape
