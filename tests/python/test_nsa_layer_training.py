"""A Native Sparse Attention layer trains on the CPU through the package's operators: NsaCompress (keys and values),
NsaCompressAttention (the compressed branch and the top-k choice of blocks), NsaSelectedAttention (the selected
branch), with autograd through all three, a few SGD steps against the same layer composed in float64 PyTorch.

The float64 layer follows the documents' formulas (docs/ops/nsa_compress.md, nsa_compress_attention.md,
nsa_selected_attention.md) and shares no code with the package. It takes the top-k blocks from the package's forward
of the same step: the choice is discrete (no gradient flows through it), and near-ties of the scores would otherwise
pick different blocks from rounding alone.
"""

import math

import pytest
import torch

import portable_aclnn as pa

D_MODEL, HEADS, KV_HEADS, DIM = 48, 2, 1, 128  # selected attention takes D 128 or 192
BLOCK, STRIDE, SELECT_BLOCK, COUNT = 32, 16, 32, 2  # compression l, d; selection l', blocks per query
LENGTHS = [64, 128]  # two sequences, each a multiple of l' and at least l' * COUNT
SCALE = DIM ** -0.5


def cumulative(lengths):
    ends, total = [], 0
    for n in lengths:
        total += n
        ends.append(total)
    return ends


def compressed_lengths():
    return [(n - BLOCK) // STRIDE + 1 for n in LENGTHS]


def causal_masks():
    """NSA training's masks: compressed key i (tokens i d .. i d + l - 1) visible to position u once
    i d + l - 1 <= u; select block j a candidate once j l' <= u; and the selected branch's causal mask (its contents
    are not read: sparse_mode 2 masks key positions after the query's within the sequence)."""
    rows = max(LENGTHS)
    u = torch.arange(rows).unsqueeze(1)
    atten = torch.arange(max(compressed_lengths())).unsqueeze(0) * STRIDE + BLOCK - 1 > u
    topk = torch.arange(rows // SELECT_BLOCK).unsqueeze(0) * SELECT_BLOCK > u
    causal = torch.ones(rows, rows, dtype=torch.bool).triu(1)
    return atten, topk, causal


def parameters(seed):
    g = torch.Generator().manual_seed(seed)

    def init(*shape, fan_in):
        return (torch.randn(*shape, generator=g) / math.sqrt(fan_in)).requires_grad_()

    return {"wq": init(D_MODEL, HEADS * DIM, fan_in=D_MODEL), "wk": init(D_MODEL, KV_HEADS * DIM, fan_in=D_MODEL),
            "wv": init(D_MODEL, KV_HEADS * DIM, fan_in=D_MODEL),
            "compress_k": (torch.rand(BLOCK, KV_HEADS, generator=g) / BLOCK * 2).requires_grad_(),
            "compress_v": (torch.rand(BLOCK, KV_HEADS, generator=g) / BLOCK * 2).requires_grad_(),
            "wo": init(HEADS * DIM, D_MODEL, fan_in=HEADS * DIM)}


def layer_with_package(x, p, dtype, masks):
    """The layer through the package's operators (dtype FLOAT16 or BFLOAT16 for them, float32 around them); returns
    the output and the top-k blocks the compressed branch chose."""
    atten, topk_mask, causal = masks
    ends, cmp_ends = cumulative(LENGTHS), cumulative(compressed_lengths())
    tokens = x.shape[0]
    q = (x @ p["wq"]).view(tokens, HEADS, DIM).to(dtype)
    k = (x @ p["wk"]).view(tokens, KV_HEADS, DIM).to(dtype)
    v = (x @ p["wv"]).view(tokens, KV_HEADS, DIM).to(dtype)
    k_cmp = pa.nsa_compress(k, p["compress_k"].to(dtype), BLOCK, STRIDE, actual_seq_len=ends)
    v_cmp = pa.nsa_compress(v, p["compress_v"].to(dtype), BLOCK, STRIDE, actual_seq_len=ends)
    out_cmp, _, _, topk = pa.nsa_compress_attention(q, k_cmp, v_cmp, SCALE, HEADS, BLOCK, STRIDE, SELECT_BLOCK, COUNT,
                                                    topk_mask=topk_mask, atten_mask=atten, actual_seq_qlen=ends,
                                                    actual_cmp_seq_kvlen=cmp_ends)
    out_sel, _, _ = pa.nsa_select_attention(q, k, v, topk, SCALE, HEADS, SELECT_BLOCK, COUNT, atten_mask=causal,
                                            actual_seq_qlen=ends, actual_seq_kvlen=ends)
    both = out_cmp.float() + out_sel.float()
    return both.view(tokens, HEADS * DIM) @ p["wo"], topk


def attention64(q, k, v, visible):
    """softmax(s q k^T) v over the visible keys (visible: (rows, heads or 1, keys)); 0 in rows without one."""
    logits = SCALE * torch.einsum("tnd,knd->tnk", q, k)
    any_visible = visible.any(dim=2, keepdim=True)
    logits = torch.where(visible, logits, torch.where(any_visible, -math.inf, 0.0))
    weights = torch.where(visible, torch.softmax(logits, dim=2), torch.zeros((), dtype=torch.float64))
    return torch.einsum("tnk,knd->tnd", weights, v)


def layer_float64(x, p, masks, topk):
    atten, _, _ = masks
    p = {name: value.double() for name, value in p.items()}
    x = x.double()
    tokens, group = x.shape[0], HEADS // KV_HEADS
    q = (x @ p["wq"]).view(tokens, HEADS, DIM)
    k = (x @ p["wk"]).view(tokens, KV_HEADS, DIM)
    v = (x @ p["wv"]).view(tokens, KV_HEADS, DIM)
    outs, start = [], 0
    for length, n_cmp in zip(LENGTHS, compressed_lengths()):
        rows = slice(start, start + length)
        # NsaCompress: block i = sum over j < l of weight[j] * token[i d + j].
        blocks = torch.arange(n_cmp).unsqueeze(1) * STRIDE + torch.arange(BLOCK).unsqueeze(0)  # (n_cmp, l)
        k_cmp = torch.einsum("ijhd,jh->ihd", k[rows][blocks], p["compress_k"])
        v_cmp = torch.einsum("ijhd,jh->ihd", v[rows][blocks], p["compress_v"])
        k_g, v_g = k_cmp.repeat_interleave(group, 1), v_cmp.repeat_interleave(group, 1)
        out_cmp = attention64(q[rows], k_g, v_g, ~atten[:length, :n_cmp].unsqueeze(1))
        # Selected branch: query u of head n sees the keys of its KV head's chosen blocks at positions <= u.
        chosen = torch.zeros(length, HEADS, length, dtype=torch.bool)
        for u in range(length):
            for n in range(HEADS):
                for j in topk[start + u, n // group].tolist():
                    if j >= 0:
                        chosen[u, n, j * SELECT_BLOCK:(j + 1) * SELECT_BLOCK] = True
        chosen &= torch.arange(length).view(1, 1, length) <= torch.arange(length).view(length, 1, 1)
        out_sel = attention64(q[rows], k[rows].repeat_interleave(group, 1), v[rows].repeat_interleave(group, 1),
                              chosen)
        outs.append(out_cmp + out_sel)
        start += length
    return torch.cat(outs).view(tokens, HEADS * DIM) @ p["wo"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nsa_layer_trains_like_its_float64_composite(dtype):
    g = torch.Generator().manual_seed(1)
    tokens = sum(LENGTHS)
    x = torch.randn(tokens, D_MODEL, generator=g)
    target = torch.randn(tokens, D_MODEL, generator=g)
    ours, theirs = parameters(2), parameters(2)
    masks = causal_masks()
    tolerance = {torch.float16: 1e-2, torch.bfloat16: 6e-2}[dtype]
    learning_rate = 0.5
    losses = []
    for step in range(4):
        y, topk = layer_with_package(x, ours, dtype, masks)
        assert (topk >= 0).any() and (topk == -1).any()  # blocks chosen; the earliest rows have too few candidates
        loss = torch.nn.functional.mse_loss(y, target)
        expected_loss = torch.nn.functional.mse_loss(layer_float64(x, theirs, masks, topk), target.double())
        for p in list(ours.values()) + list(theirs.values()):
            p.grad = None
        loss.backward()
        expected_loss.backward()
        assert abs(float(loss) - float(expected_loss)) <= tolerance * float(expected_loss), (step, float(loss),
                                                                                            float(expected_loss))
        for name in ours:
            got, want = ours[name].grad, theirs[name].grad
            assert got is not None and float(want.abs().max()) > 0, name  # every parameter takes part
            error = float((got.double() - want).abs().max())
            assert error <= tolerance * float(want.abs().max()), (step, name, error, float(want.abs().max()))
        with torch.no_grad():
            for name in ours:
                ours[name] -= learning_rate * ours[name].grad
                theirs[name] -= learning_rate * theirs[name].grad
        losses.append(float(expected_loss))
    assert losses[-1] < losses[0]  # it trains
