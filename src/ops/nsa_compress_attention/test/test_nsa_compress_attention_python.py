"""NsaCompressAttention: the Python package's function against a float64 reference. Run with the package's tests
(tests/python/run_tests.py, scripts/python_package_check.sh)."""

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import torch_npu
from portable_aclnn.ops.nsa_compress_attention import nsa_compress_attention_backward
from package_test_util import close

HEADS, KV_HEADS, DIM_QK, DIM_V = 4, 2, 64, 32


def reference(q, k, v, scale, l, d, l_select, count, q_ends, cmp_ends, atten_mask=None, topk_mask=None):
    """float64, from docs/ops/nsa_compress_attention.md's formulas: softmax(scale q k^T) over the sequence's visible
    compressed keys, P @ value; each select block j's score sums P[n][r j - a - c'] (a < r = l'/d, c' < c = l/d,
    indices inside the sequence) over the group's heads n. Returns out, max, sum (-inf and 0 where no key is
    visible), the block scores (T1, N2, max blocks; NaN past the sequence's) and the candidates (bool, same shape)."""
    q, k, v = q.double(), k.double(), v.double()
    tokens, heads, _ = q.shape
    kv_heads = k.shape[1]
    group = heads // kv_heads
    r, c = l_select // d, l // d
    blocks = [(-(-(e - s) // r)) for s, e in zip([0] + list(cmp_ends[:-1]), cmp_ends)]
    out = torch.zeros(tokens, heads, v.shape[2], dtype=torch.float64)
    row_max = torch.full((tokens, heads), -float("inf"), dtype=torch.float64)
    row_sum = torch.zeros(tokens, heads, dtype=torch.float64)
    score = torch.full((tokens, kv_heads, max(blocks)), float("nan"), dtype=torch.float64)
    candidate = torch.zeros(tokens, kv_heads, max(blocks), dtype=torch.bool)
    q_start = k_start = 0
    for q_end, k_end, s_b in zip(q_ends, cmp_ends, blocks):
        k_b, rows = k_end - k_start, q_end - q_start
        kb = k[k_start:k_end].repeat_interleave(group, dim=1)  # (K, N1, D): query head n uses KV head n / G
        vb = v[k_start:k_end].repeat_interleave(group, dim=1)
        logits = scale * torch.einsum("tnd,knd->tnk", q[q_start:q_end], kb)
        visible = torch.ones(rows, 1, k_b, dtype=torch.bool)
        if atten_mask is not None:
            visible = ~atten_mask[:rows, :k_b].bool().unsqueeze(1)
        logits = logits.masked_fill(~visible, -float("inf"))
        m = logits.max(dim=2).values
        e = torch.exp(logits - m.unsqueeze(2)).nan_to_num(0.0)  # rows with no visible key: all 0
        total = e.sum(dim=2)
        p = e / total.clamp_min(1e-300).unsqueeze(2)
        out[q_start:q_end] = torch.einsum("tnk,knd->tnd", p, vb)
        row_max[q_start:q_end], row_sum[q_start:q_end] = m, total
        # window[i, j]: how many (a, c') pairs give r j - a - c' = i
        window = torch.zeros(k_b, s_b, dtype=torch.float64)
        for j in range(s_b):
            for a in range(r):
                for cc in range(c):
                    if 0 <= r * j - a - cc < k_b:
                        window[r * j - a - cc, j] += 1
        per_kv_head = p.reshape(rows, kv_heads, group, k_b).sum(dim=2)
        score[q_start:q_end, :, :s_b] = per_kv_head @ window
        allowed = torch.ones(rows, s_b, dtype=torch.bool)
        if topk_mask is not None:
            allowed = ~topk_mask[:rows, :s_b].bool()
        candidate[q_start:q_end, :, :s_b] = allowed.unsqueeze(1)
        q_start, k_start = q_end, k_end
    return out, row_max, row_sum, score, candidate


def check_topk(topk, score, candidate, count, tolerance=1e-4):
    """Every slot a distinct candidate, -1 exactly where fewer blocks are candidates; slot k's block has the k-th
    best reference score (higher first, ties by ascending block). Where scores tie within the tolerance the slot may
    hold any of the tied blocks; otherwise it must be that block exactly. Scores of exactly 0 (windows over masked or
    absent keys only, exact in the operator too) tie exactly: those blocks come in ascending order."""
    tokens, kv_heads, _ = topk.shape
    exact = 0
    for t in range(tokens):
        for h in range(kv_heads):
            chosen = topk[t, h].tolist()
            cands = [j for j in range(score.shape[2]) if candidate[t, h, j]]
            order = sorted(cands, key=lambda j: (-float(score[t, h, j]), j))[:count]
            filled = len(order)
            assert chosen[filled:] == [-1] * (count - filled), (t, h, chosen, order)
            assert len(set(chosen[:filled])) == filled and all(j in cands for j in chosen[:filled]), (t, h, chosen)
            for slot, j in enumerate(chosen[:filled]):
                expected = float(score[t, h, order[slot]])
                assert abs(float(score[t, h, j]) - expected) <= tolerance * (1 + abs(expected)), (t, h, chosen, order)
            assert [j for j in chosen[:filled] if score[t, h, j] == 0] == [j for j in order if score[t, h, j] == 0]
            exact += chosen[:filled] == order
    return exact


def problem(dtype, seed, q_ends, cmp_ends):
    g = torch.Generator().manual_seed(seed)
    q = (torch.rand(q_ends[-1], HEADS, DIM_QK, generator=g) * 4 - 2).to(dtype)
    k = (torch.rand(cmp_ends[-1], KV_HEADS, DIM_QK, generator=g) * 4 - 2).to(dtype)
    v = (torch.rand(cmp_ends[-1], KV_HEADS, DIM_V, generator=g) * 2 - 1).to(dtype)
    return q, k, v


def nsa_masks(q_lengths, cmp_lengths, l, d, l_select, seed):
    """NSA training's masks (docs/ops/nsa_compress_attention.md, the C++ test's): compressed key i (tokens i d ..
    i d + l - 1) is visible to position u once i d + l - 1 <= u; select block j is a candidate while j l' <= u; plus a
    few random masked entries in each."""
    g = torch.Generator().manual_seed(seed)
    r = l_select // d
    rows, cols, sel_cols = max(q_lengths), max(cmp_lengths), max(-(-n // r) for n in cmp_lengths)
    u = torch.arange(rows).unsqueeze(1)
    atten = (torch.arange(cols) * d + l - 1 > u) | (torch.rand(rows, cols, generator=g) < 1 / 16)
    topk = (torch.arange(sel_cols) * l_select > u) | (torch.rand(rows, sel_cols, generator=g) < 1 / 8)
    return atten, topk


def cumulative(lengths):
    return np.cumsum(lengths).tolist()


FLOAT_SCALE = float(np.float32(DIM_QK ** -0.5))  # the operator rounds scale_value to float once


def compare(results, expected, dtype, count):
    out, softmax_max, softmax_sum, topk = results
    ref_out, ref_max, ref_sum, score, candidate = expected
    assert out.dtype == dtype and softmax_max.dtype == softmax_sum.dtype == torch.float32
    assert topk.dtype == torch.int32 and topk.shape == (out.shape[0], KV_HEADS, count)
    assert torch.all(softmax_max == softmax_max[..., :1]) and torch.all(softmax_sum == softmax_sum[..., :1])
    close(out, ref_out.numpy(), dtype, scale=1.0)
    seen = torch.isfinite(ref_max)
    close(softmax_max[..., 0][seen], ref_max[seen].numpy(), torch.float32, scale=1.0)
    close(softmax_sum[..., 0][seen], ref_sum[seen].numpy(), torch.float32, scale=1.0)
    # Rows with no visible key: attention_out 0, max -inf, sum 0.
    assert torch.all(softmax_max[..., 0][~seen] == -float("inf")) and torch.all(softmax_sum[..., 0][~seen] == 0)
    assert torch.all(out[~seen] == 0)
    return check_topk(topk, score, candidate, count)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_two_sequences_without_masks_match_float64(dtype):
    # r = l'/d = 4, c = l/d = 2; compressed lengths 9 and 14, not multiples of r: 3 and 4 select blocks.
    l, d, l_select, count = 32, 16, 64, 3
    q_ends, cmp_ends = [24, 64], [9, 23]
    q, k, v = problem(dtype, 1 if dtype == torch.float16 else 2, q_ends, cmp_ends)
    results = pa.nsa_compress_attention(q, k, v, DIM_QK ** -0.5, HEADS, l, d, l_select, count,
                                        actual_seq_qlen=q_ends, actual_cmp_seq_kvlen=cmp_ends)
    expected = reference(q, k, v, FLOAT_SCALE, l, d, l_select, count, q_ends, cmp_ends)
    exact = compare(results, expected, dtype, count)
    assert exact >= 0.9 * q_ends[-1] * KV_HEADS  # random scores hardly ever tie: the order is the reference's


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_causal_masks_and_topk_mask_match_float64(dtype):
    # NSA's causal masks over two sequences of 100 and 150 tokens, compressed by l = 32, d = 16 into 5 and 8 keys;
    # l' = 32 (r = 2): 3 and 4 select blocks. Early rows see no key, and some have fewer candidates than slots.
    l, d, l_select, count = 32, 16, 32, 3
    q_lengths, cmp_lengths = [100, 150], [5, 8]
    q_ends, cmp_ends = cumulative(q_lengths), cumulative(cmp_lengths)
    q, k, v = problem(dtype, 3 if dtype == torch.float16 else 4, q_ends, cmp_ends)
    atten, topk_mask = nsa_masks(q_lengths, cmp_lengths, l, d, l_select, 5)
    results = pa.nsa_compress_attention(q, k, v, DIM_QK ** -0.5, HEADS, l, d, l_select, count, topk_mask=topk_mask,
                                        atten_mask=atten, actual_seq_qlen=q_ends, actual_cmp_seq_kvlen=cmp_ends,
                                        actual_sel_seq_kvlen=[3, 7], sparse_mode=1)
    expected = reference(q, k, v, FLOAT_SCALE, l, d, l_select, count, q_ends, cmp_ends, atten, topk_mask)
    assert not torch.isfinite(expected[1]).all()  # some rows see no key
    compare(results, expected, dtype, count)
    assert (results[3] == -1).any()
    # sparse_mode None (1 with a mask) and 0 (the mask applied when given) compute the same.
    for mode in (None, 0):
        again = pa.nsa_compress_attention(q, k, v, DIM_QK ** -0.5, HEADS, l, d, l_select, count, topk_mask=topk_mask,
                                          atten_mask=atten, actual_seq_qlen=q_ends, actual_cmp_seq_kvlen=cmp_ends,
                                          sparse_mode=mode)
        assert all(torch.equal(a, b) for a, b in zip(again, results))


def test_the_window_on_one_hot_attention():
    # docs/ops/nsa_compress_attention.md's hand-computed case: attention on compressed key 5 alone (the mask hides the
    # others), r = 4, c = 2: only block 2 has pairs (a, c') with 4 * 2 - a - c' = 5, two of them, per head of the
    # group; the other blocks tie at 0 and follow in ascending order.
    q, k, v = problem(torch.float16, 10, [6], [16])
    atten = torch.ones(6, 16, dtype=torch.bool)
    atten[:, 5] = False
    out, softmax_max, softmax_sum, topk = pa.nsa_compress_attention(q, k, v, 0.125, HEADS, 32, 16, 64, 4,
                                                                    atten_mask=atten)
    assert topk.tolist() == [[[2, 0, 1, 3]] * KV_HEADS] * 6
    assert torch.all(softmax_sum == 1) and torch.equal(out, v[5].repeat_interleave(HEADS // KV_HEADS, 0).expand_as(out))


def test_torch_npu_name_numpy_and_uint8_masks_agree():
    l, d, l_select, count = 32, 16, 64, 2
    q_lengths, cmp_lengths = [40, 70], [5, 6]
    q_ends, cmp_ends = cumulative(q_lengths), cumulative(cmp_lengths)
    q, k, v = problem(torch.bfloat16, 6, q_ends, cmp_ends)
    atten, topk_mask = nsa_masks(q_lengths, cmp_lengths, l, d, l_select, 7)
    args = (DIM_QK ** -0.5, HEADS, l, d, l_select, count)
    kwargs = dict(topk_mask=topk_mask, atten_mask=atten, actual_seq_qlen=q_ends, actual_cmp_seq_kvlen=cmp_ends)
    ours = pa.nsa_compress_attention(q, k, v, *args, **kwargs)
    npu = torch_npu.npu_nsa_compress_attention(q, k, v, *args, **kwargs, actual_sel_seq_kvlen=[2, 4])
    assert all(torch.equal(a, b) for a, b in zip(ours, npu))
    as_uint8 = dict(kwargs, topk_mask=topk_mask.to(torch.uint8), atten_mask=atten.to(torch.uint8))
    assert all(torch.equal(a, b) for a, b in zip(ours, pa.nsa_compress_attention(q, k, v, *args, **as_uint8)))
    # NumPy in, NumPy out (FLOAT16: NumPy has no bfloat16), the same values as from tensors.
    q16, k16, v16 = (t.to(torch.float16) for t in (q, k, v))
    from_torch = pa.nsa_compress_attention(q16, k16, v16, *args, **kwargs)
    from_numpy = pa.nsa_compress_attention(q16.numpy(), k16.numpy(), v16.numpy(), *args, topk_mask=topk_mask.numpy(),
                                           atten_mask=atten.numpy(), actual_seq_qlen=np.array(q_ends),
                                           actual_cmp_seq_kvlen=np.array(cmp_ends))
    assert [a.dtype for a in from_numpy] == [np.float16, np.float32, np.float32, np.int32]
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(from_torch, from_numpy))
    # One sequence when the lengths are left out.
    single = pa.nsa_compress_attention(q16[:40], k16[:5], v16[:5], *args)
    assert single[3].shape == (40, KV_HEADS, count) and single[0].shape == (40, HEADS, DIM_V)


def attention_float64(q, k, v, scale, q_ends, cmp_ends, atten_mask=None):
    """attention_out alone, float64 and differentiable (torch's autograd gives the reference gradients): the
    formula of reference() with softmax over the visible keys, 0 in rows without one."""
    group = q.shape[1] // k.shape[1]
    outs, q_start, k_start = [], 0, 0
    for q_end, k_end in zip(q_ends, cmp_ends):
        rows, keys = q_end - q_start, k_end - k_start
        kb = k[k_start:k_end].repeat_interleave(group, dim=1)
        vb = v[k_start:k_end].repeat_interleave(group, dim=1)
        logits = scale * torch.einsum("tnd,knd->tnk", q[q_start:q_end], kb)
        visible = torch.ones(rows, 1, keys, dtype=torch.bool)
        if atten_mask is not None:
            visible = ~atten_mask[:rows, :keys].bool().unsqueeze(1)
        any_visible = visible.any(dim=2, keepdim=True)
        logits = torch.where(visible, logits, torch.where(any_visible, -float("inf"), 0.0))
        p = torch.where(visible, torch.softmax(logits, dim=2), torch.zeros((), dtype=torch.float64))
        outs.append(torch.einsum("tnk,knd->tnd", p, vb))
        q_start, k_start = q_end, k_end
    return torch.cat(outs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gradients_match_float64_autograd(dtype):
    # NSA's causal masks (early rows see no key: their gradients are 0) over two sequences; GQA groups of 2.
    l, d, l_select, count = 32, 16, 32, 2
    q_lengths, cmp_lengths = [90, 150], [4, 8]
    q_ends, cmp_ends = cumulative(q_lengths), cumulative(cmp_lengths)
    q, k, v = problem(dtype, 11 if dtype == torch.float16 else 12, q_ends, cmp_ends)
    atten, topk_mask = nsa_masks(q_lengths, cmp_lengths, l, d, l_select, 13)
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    out, softmax_max, softmax_sum, topk = pa.nsa_compress_attention(
        *inputs, DIM_QK ** -0.5, HEADS, l, d, l_select, count, topk_mask=topk_mask, atten_mask=atten,
        actual_seq_qlen=q_ends, actual_cmp_seq_kvlen=cmp_ends)
    assert out.requires_grad and not any(t.requires_grad for t in (softmax_max, softmax_sum, topk))
    refs = [t.detach().double().requires_grad_() for t in inputs]
    ref = attention_float64(*refs, FLOAT_SCALE, q_ends, cmp_ends, atten)
    close(out, ref.detach().numpy(), dtype, scale=1.0)
    dy = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(14))
    out.backward(dy.to(dtype))
    ref.backward(dy)
    for ours, theirs in zip(inputs, refs):
        assert ours.grad.dtype == dtype and float(theirs.grad.abs().max()) > 0
        close(ours.grad, theirs.grad.numpy(), dtype, scale=float(theirs.grad.abs().max()))
    hidden = ~torch.isfinite(softmax_max[:, 0, 0])
    assert hidden.any() and torch.all(inputs[0].grad[hidden] == 0)


def test_backward_is_the_derivative_of_the_forward():
    # Central differences of the operator's own forward (float16 in, a float64 loss of attention_out): the backward
    # is the derivative of what the forward computes, within the forward's rounding to float16 (a few rows, so that
    # the rounding of the outputs, about 0.01 in the loss, stays well below what a step of 1/4 moves it).
    q, k, v = problem(torch.float16, 15, [8], [6])
    q, k, v = q * 0.25, k * 0.25, v  # moderate logits: the loss is smooth over the steps below
    dy = torch.randn(8, HEADS, DIM_V, dtype=torch.float64, generator=torch.Generator().manual_seed(16))

    def loss(q_, k_, v_):
        out = pa.nsa_compress_attention(q_, k_, v_, 0.125, HEADS, 32, 16, 64, 1)[0]
        return float((out.double() * dy).sum())

    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    out = pa.nsa_compress_attention(*inputs, 0.125, HEADS, 32, 16, 64, 1)[0]
    out.backward(dy.to(torch.float16))
    g = torch.Generator().manual_seed(17)
    for which in range(3):
        grad = inputs[which].grad
        largest = float(grad.abs().max())
        # The two largest components (where a wrong factor shows most) and two random ones.
        flat = grad.abs().float().flatten().topk(2).indices.tolist()
        flat += torch.randint(0, grad.numel(), (2,), generator=g).tolist()
        for position in flat:
            index = tuple(int(i) for i in np.unravel_index(position, tuple(grad.shape)))
            step = 0.25
            plus, minus = [t.detach().clone() for t in (q, k, v)], [t.detach().clone() for t in (q, k, v)]
            plus[which][index] += step
            minus[which][index] -= step
            difference = (loss(*plus) - loss(*minus)) / (plus[which][index] - minus[which][index]).double()
            analytic = float(grad[index])
            assert abs(analytic - float(difference)) <= 0.1 * abs(analytic) + 0.03 * largest, (
                which, index, analytic, float(difference), largest)


def test_the_torch_library_op_and_its_autograd():
    q, k, v = problem(torch.float16, 8, [32], [7])
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    results = pa.nsa_compress_attention(*inputs, 0.125, HEADS, 32, 16, 64, 2)
    op = torch.ops.portable_aclnn.nsa_compress_attention
    with torch.no_grad():
        assert all(torch.equal(a, b) for a, b in zip(op(q, k, v, 0.125, HEADS, 32, 16, 64, 2), results))
    meta = op(q.to("meta"), k.to("meta"), v.to("meta"), 0.125, HEADS, 32, 16, 64, 2)
    assert [tuple(t.shape) for t in meta] == [(32, HEADS, DIM_V), (32, HEADS, 8), (32, HEADS, 8), (32, KV_HEADS, 2)]
    assert [t.dtype for t in meta] == [torch.float16, torch.float32, torch.float32, torch.int32]
    # The dispatcher's autograd gives the public function's gradients.
    grad = torch.randn(32, HEADS, DIM_V, generator=torch.Generator().manual_seed(18)).to(torch.float16)
    results[0].backward(grad)
    again = [t.clone().requires_grad_() for t in (q, k, v)]
    op(*again, 0.125, HEADS, 32, 16, 64, 2)[0].backward(grad)
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(inputs, again))
    # The backward function itself, from the forward's outputs.
    dq, dk, dv = nsa_compress_attention_backward(grad, q, k, v, results[0].detach(), results[1], results[2], 0.125,
                                                 HEADS)
    assert torch.equal(dq, inputs[0].grad) and torch.equal(dk, inputs[1].grad) and torch.equal(dv, inputs[2].grad)


def test_bad_arguments_name_the_parameter():
    q, k, v = problem(torch.float16, 9, [16], [4])
    with pytest.raises(ValueError, match="key must be 3-D"):
        pa.nsa_compress_attention(q, k[0], v, 0.125, HEADS, 32, 16, 64, 1)
    with pytest.raises(TypeError, match="query"):
        pa.nsa_compress_attention(q.tolist(), k, v, 0.125, HEADS, 32, 16, 64, 1)
    with pytest.raises(pa.AclnnError, match="compressStride") as error:
        pa.nsa_compress_attention(q, k, v, 0.125, HEADS, 32, 24, 64, 1)
    assert error.value.status == 161002
    with pytest.raises(pa.AclnnError, match="actualSelSeqKvLenOptional"):
        pa.nsa_compress_attention(q, k, v, 0.125, HEADS, 32, 16, 64, 1, actual_sel_seq_kvlen=[2])
