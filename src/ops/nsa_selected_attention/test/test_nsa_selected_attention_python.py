"""NsaSelectedAttention: the Python package's functions against a float64 reference. Run with the package's tests
(tests/python/run_tests.py, scripts/python_package_check.sh)."""

import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import torch_npu
from package_test_util import close


def reference(q, k, v, topk, scale, block, q_ends, kv_ends, causal):
    """Gather the selected blocks, softmax over their scaled scores, weighted sum of their values: float64 torch, so
    that autograd gives the reference gradients. Returns out and each row's (max, sum)."""
    tokens, heads, _ = q.shape
    kv_heads = k.shape[1]
    group = heads // kv_heads
    out = torch.zeros(tokens, heads, v.shape[2], dtype=torch.float64)
    stats = torch.zeros(tokens, heads, 2, dtype=torch.float64)
    q_start = kv_start = 0
    rows = []
    for q_end, kv_end in zip(q_ends, kv_ends):
        kv_len = kv_end - kv_start
        for t in range(q_start, q_end):
            u = t - q_start
            for n in range(heads):
                h = n // group
                keys = []
                for i in topk[t, h].tolist():
                    if 0 <= i < kv_len // block:
                        keys += [kv_start + i * block + j for j in range(block) if not causal or i * block + j <= u]
                if not keys:
                    rows.append((t, n, None))
                    continue
                scores = scale * (k[keys, h] @ q[t, n])
                p = torch.softmax(scores, 0)
                rows.append((t, n, (p @ v[keys, h], scores.max(), torch.exp(scores - scores.max()).sum())))
        q_start, kv_start = q_end, kv_end
    out_rows = [r[2][0] if r[2] is not None else torch.zeros(v.shape[2], dtype=torch.float64) for r in rows]
    out = torch.stack(out_rows).reshape(tokens, heads, v.shape[2])
    for t, n, value in rows:
        if value is not None:
            stats[t, n, 0], stats[t, n, 1] = value[1].detach(), value[2].detach()
    return out, stats


def problem(dtype, seed, q_ends=(40, 96), kv_ends=(128, 320), heads=4, kv_heads=2, dim=128, dim_v=128, block=16,
            count=3):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(q_ends[-1], heads, dim, generator=g).to(dtype)
    k = torch.randn(kv_ends[-1], kv_heads, dim, generator=g).to(dtype)
    v = torch.randn(kv_ends[-1], kv_heads, dim_v, generator=g).to(dtype)
    topk = torch.empty(q_ends[-1], kv_heads, count, dtype=torch.int32)
    q_start, kv_start = 0, 0
    for q_end, kv_end in zip(q_ends, kv_ends):
        blocks = (kv_end - kv_start) // block
        for t in range(q_start, q_end):
            for h in range(kv_heads):
                topk[t, h] = torch.randperm(blocks, generator=g)[:count].to(torch.int32)
        q_start, kv_start = q_end, kv_end
    return q, k, v, topk


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_statistics_and_gradients_match_float64(dtype, causal):
    q_ends, kv_ends, block = [40, 96], [128, 320], 16
    q, k, v, topk = problem(dtype, 3 if causal else 4, q_ends, kv_ends, block=block)
    scale = 128 ** -0.5
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    mask = torch.ones(2048, 2048, dtype=torch.bool).triu(1) if causal else None
    out, softmax_max, softmax_sum = pa.nsa_select_attention(*inputs, topk, scale, 4, block, 3, atten_mask=mask,
                                                            actual_seq_qlen=q_ends, actual_seq_kvlen=kv_ends)
    refs = [t.detach().double().requires_grad_() for t in inputs]
    ref, stats = reference(*refs, topk, float(torch.tensor(scale, dtype=torch.float32)), block, q_ends, kv_ends,
                           causal)
    close(out, ref.detach().numpy(), dtype, scale=1.0)
    visible = torch.isfinite(softmax_max[..., 0])
    assert torch.all(softmax_max == softmax_max[..., :1]) and torch.all(softmax_sum == softmax_sum[..., :1])
    close(softmax_max[..., 0][visible], stats[..., 0][visible].numpy(), torch.float32, scale=1.0)
    close(softmax_sum[..., 0][visible], stats[..., 1][visible].numpy(), torch.float32, scale=1.0)
    dy = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    out.backward(dy.to(dtype))
    ref.backward(dy)
    for ours, theirs in zip(inputs, refs):
        close(ours.grad, theirs.grad.numpy(), dtype, scale=float(theirs.grad.abs().max()))


def test_torch_npu_names_and_the_backward_function_agree():
    q, k, v, topk = problem(torch.bfloat16, 7)
    args = (topk, 0.1, 4, 16, 3)
    out, softmax_max, softmax_sum = torch_npu.npu_nsa_select_attention(
        q, k, v, *args, actual_seq_qlen=[40, 96], actual_seq_kvlen=[128, 320])
    again = pa.nsa_select_attention(q, k, v, *args, actual_seq_qlen=[40, 96], actual_seq_kvlen=[128, 320])
    assert all(torch.equal(a, b) for a, b in zip((out, softmax_max, softmax_sum), again))
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(8)).to(torch.bfloat16)
    dq, dk, dv = torch_npu.npu_nsa_select_attention_grad(grad, q, k, v, out, softmax_max, softmax_sum, *args,
                                                         actual_seq_qlen=[40, 96], actual_seq_kvlen=[128, 320])
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    out2, _, _ = pa.nsa_select_attention(*inputs, *args, actual_seq_qlen=[40, 96], actual_seq_kvlen=[128, 320])
    out2.backward(grad)
    assert torch.equal(dq, inputs[0].grad) and torch.equal(dk, inputs[1].grad) and torch.equal(dv, inputs[2].grad)


def test_torch_library_op_has_meta_shapes_and_autograd():
    q, k, v, topk = problem(torch.float16, 9, q_ends=(32,), kv_ends=(64,))
    op = torch.ops.portable_aclnn.nsa_select_attention
    meta = op(q.to("meta"), k.to("meta"), v.to("meta"), topk.to("meta"), 0.1, 4, 16, 3)
    assert [tuple(t.shape) for t in meta] == [(32, 4, 128), (32, 4, 8), (32, 4, 8)]
    assert meta[1].dtype == torch.float32
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    out = op(*inputs, topk, 0.1, 4, 16, 3)[0]
    out.float().sum().backward()
    assert all(t.grad is not None and t.grad.shape == t.shape for t in inputs)
