"""What the Python package's tests share (tests/python and each operator's src/ops/<op>/test/test_<op>_python.py):
the CUDA check, tolerances, and the float64 references of the operators that the package-wide tests (torch.library,
CUDA tensors, errors) use as their examples. Imported as a plain module: run_tests.py and the package check put this
folder on sys.path."""

import numpy as np
import pytest
import torch

def cuda_runs_here():
    """Whether PyTorch has a GPU and the libraries a CUDA device for it (a build with the CUDA backend)."""
    if not torch.cuda.is_available():
        return False
    from portable_aclnn._library import api

    return api().gpu_count > 0


needs_cuda = pytest.mark.skipif(not cuda_runs_here(), reason="needs an NVIDIA GPU, PyTorch with CUDA and a build "
                                "with the CUDA backend (scripts/gpu_check.sh runs these)")

# Tolerances per dtype for results computed in fp32 and rounded once to the output dtype.
TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def close(actual, expected, dtype, scale=1.0):
    actual = actual.detach().to(torch.float64).numpy() if isinstance(actual, torch.Tensor) else np.float64(actual)
    expected = np.asarray(expected, dtype=np.float64)
    bound = TOLERANCE[dtype] * (scale + np.abs(expected))
    assert actual.shape == expected.shape
    assert np.all(np.abs(actual - expected) <= bound), float(np.max(np.abs(actual - expected) - bound))


def softmax_reference(x, mask, scale):
    logits = np.where(mask, -10000.0, np.asarray(x, np.float64) * scale)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_grad_reference(dy, y, mask, scale):
    dy, y = np.asarray(dy, np.float64), np.asarray(y, np.float64)
    s = (dy * y).sum(axis=-1, keepdims=True)
    return np.where(mask, 0.0, scale * y * (dy - s))


def msda_reference(value, shapes, starts, locations, weights):
    bs, _, nh, c = value.shape
    _, nq, _, nl, npoints, _ = locations.shape
    out = torch.zeros(bs, nq, nh, c, dtype=torch.float64)
    for level, (h, w) in enumerate(shapes.tolist()):
        start = int(starts[level])
        level_value = value[:, start:start + h * w].permute(0, 2, 3, 1).reshape(bs * nh, c, h, w)
        grid = locations[:, :, :, level].permute(0, 2, 1, 3, 4).reshape(bs * nh, nq, npoints, 2) * 2 - 1
        sampled = torch.nn.functional.grid_sample(level_value, grid, "bilinear", "zeros", False)  # (bs*nh, c, nq, np)
        attn = weights[:, :, :, level].permute(0, 2, 1, 3).reshape(bs * nh, 1, nq, npoints)
        out += (sampled * attn).sum(-1).reshape(bs, nh, c, nq).permute(0, 3, 1, 2)
    return out.reshape(bs, nq, nh * c)


def msda_problem(dtype, seed, channels=8, queries=7):
    g = torch.Generator().manual_seed(seed)
    shapes = torch.tensor([[6, 5], [3, 4]], dtype=torch.int64)
    starts = torch.tensor([0, 30], dtype=torch.int64)
    value = torch.randn(2, 42, 2, channels, generator=g, dtype=torch.float64).to(dtype)
    locations = (torch.rand(2, queries, 2, 2, 3, 2, generator=g, dtype=torch.float64) * 1.1 - 0.05).to(dtype)
    weights = torch.rand(2, queries, 2, 2, 3, generator=g, dtype=torch.float64).to(dtype)
    return value, shapes, starts, locations, weights
