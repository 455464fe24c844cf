"""NsaCompress: the Python package's functions against float64 references. Run with
the package's tests (tests/python/run_tests.py, scripts/python_package_check.sh)."""

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import torch_npu
from package_test_util import close


def nsa_reference(x, weight, block, stride, ends):
    rows, start = [], 0
    for end in ends:
        for first in range(start, end - block + 1, stride):
            rows.append(np.einsum("jn,jnd->nd", weight, x[first:first + block]))
        start = end
    return np.stack(rows) if rows else np.zeros((0,) + x.shape[1:])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nsa_compress_forward_and_gradients(dtype):
    g = torch.Generator().manual_seed(9)
    ends = [40, 40, 100]
    x = torch.randn(100, 2, 24, generator=g).to(dtype).requires_grad_()
    weight = (torch.rand(32, 2, generator=g) / 8).to(dtype).requires_grad_()
    out = pa.nsa_compress(x, weight, 32, 16, ends)
    x64, w64 = x.detach().double().numpy(), weight.detach().double().numpy()
    close(out, nsa_reference(x64, w64, 32, 16, ends), dtype, scale=1.0)
    dy = torch.randn(out.shape, generator=g, dtype=torch.float64)
    out.backward(dy.to(dtype))
    # Gradients of the linear map from its reference, by autograd of a float64 torch formulation.
    x_ref = torch.tensor(x64, requires_grad=True)
    w_ref = torch.tensor(w64, requires_grad=True)
    blocks, start = [], 0
    for end in ends:
        for first in range(start, end - 32 + 1, 16):
            blocks.append(torch.einsum("jn,jnd->nd", w_ref, x_ref[first:first + 32]))
        start = end
    torch.stack(blocks).backward(dy)
    close(x.grad, x_ref.grad.numpy(), dtype, scale=1.0)
    close(weight.grad, w_ref.grad.numpy(), dtype, scale=float(np.abs(w_ref.grad.numpy()).max()))
    compat = torch_npu.npu_nsa_compress(x.detach(), weight.detach(), 32, 16, actual_seq_len=ends)
    assert torch.equal(compat, out.detach())
