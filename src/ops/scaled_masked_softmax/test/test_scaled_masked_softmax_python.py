"""ScaledMaskedSoftmax: the Python package's functions against float64 references. Run with
the package's tests (tests/python/run_tests.py, scripts/python_package_check.sh)."""

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import torch_npu
from package_test_util import FLOAT_DTYPES, close, softmax_reference, softmax_grad_reference


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scaled_masked_softmax_forward_and_autograd(dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.rand(2, 3, 5, 40, generator=g) * 8 - 4).to(dtype).requires_grad_()
    mask = torch.rand(2, 1, 5, 40, generator=g) < 0.3
    y = pa.scaled_masked_softmax(x, mask, 0.7)
    expected = softmax_reference(x.detach().double().numpy(), mask.numpy(), 0.7)
    close(y, expected, dtype, scale=0.0)
    dy = (torch.rand(2, 3, 5, 40, generator=g) * 2 - 1).to(dtype)
    y.backward(dy)
    close(x.grad, softmax_grad_reference(dy.double().numpy(), y.detach().double().numpy(), mask.numpy(), 0.7),
          dtype, scale=1e-2)


def test_scaled_masked_softmax_strided_input_and_fixed_triu_mask():
    x = torch.randn(2, 3, 30, 6, dtype=torch.float32).transpose(2, 3)  # (2, 3, 6, 30), not contiguous
    y = pa.scaled_masked_softmax(x, None, 1.5, fixed_triu_mask=True)
    triu = np.triu(np.ones((6, 30), bool), 1)
    close(y, softmax_reference(x.numpy(), triu, 1.5), torch.float32, scale=0.0)
    y_npu = torch_npu.npu_scaled_masked_softmax(x, torch.zeros(1, 1, 6, 30, dtype=torch.bool), 1.5, True)
    assert torch.equal(y, y_npu)


def test_scaled_masked_softmax_backward_function_and_numpy():
    rng = np.random.default_rng(2)
    x = rng.uniform(-3, 3, (1, 2, 4, 17)).astype(np.float32)
    mask = rng.uniform(size=(1, 2, 4, 17)) < 0.2
    y = pa.scaled_masked_softmax(x, mask, 2.0)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    close(y, softmax_reference(x, mask, 2.0), torch.float32, scale=0.0)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    grad = torch_npu.npu_scaled_masked_softmax_backward(dy, y, mask, 2.0, False)
    close(grad, softmax_grad_reference(dy, y, mask, 2.0), torch.float32, scale=1e-2)
