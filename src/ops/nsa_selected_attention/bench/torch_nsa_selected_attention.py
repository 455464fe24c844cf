#!/usr/bin/python3
"""PyTorch's side of the NsaSelectedAttention speed comparison.

Times the pure-PyTorch composite formulation of NSA's selected attention in float32 - gather the selected key and
value blocks (index_select on the flattened tokens), then matmul, softmax and matmul, with the causal mask as a
masked_fill - and its autograd backward (gradients of query, key and value) on the cases of
src/ops/nsa_selected_attention/bench/nsa_selected_attention_bench.cpp, under the same names, with the same kinds
of data (the same distributions and selection rules; another generator, which does not change the work done).
PyTorch computes in float32 whatever the case's dtype (inputs converted once, outside the timing). The gathered
blocks of all tokens would not fit in memory (the document's sample shape gathers 3 GB of float32 keys), so both
directions go through the tokens in chunks of CHUNK_TOKENS; the backward runs, per chunk, the forward under autograd
and torch.autograd.grad (a kept graph of every chunk would not fit either), so its time includes a recomputation of
the forward, as our kernel's includes its own recomputation of the scores. Run it with Debian's python3-torch:
/usr/bin/python3 src/ops/nsa_selected_attention/bench/torch_nsa_selected_attention.py.

  torch_nsa_selected_attention.py [--threads N] [--filter REGEX] [--repetitions R] [--min-time S]
      [--aclnn-json FILE] [--json-out FILE]

Without --aclnn-json it prints PyTorch's times; with it (aclnn_bench's --benchmark_out file) both and the speed-up,
PyTorch's time divided by ours. scripts/compare_torch.sh nsa_selected_attention runs the two.
"""

import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "bench"))
import torch_bench_common

# The aclnn_bench cases this script compares with (scripts/compare_torch.sh): their names start with this.
CASE_PREFIX = "NsaSelectedAttention"

# The case table of nsa_selected_attention_bench.cpp (keep the two in step): name, sequences, query and key tokens
# per sequence, N1, N2, D_qk, D_v, block size, block count, causal.
SHAPES = (
    ("2x512x2048_N16_Nkv4", 2, 512, 2048, 16, 4, 192, 128, 64, 16, False),
    ("1x32768_N16_Nkv4_causal", 1, 32768, 32768, 16, 4, 192, 128, 64, 16, True),
    ("1x1x1024_N1_D192", 1, 1, 1024, 1, 1, 192, 192, 64, 16, False),
    ("small_N4_Nkv1", 1, 256, 1024, 4, 1, 192, 128, 64, 4, False),
)
CHUNK_TOKENS = 64
SCALE = 1.0 / 16.0


def cases():
    table = []
    for direction in ("backward", "forward"):
        for shape in SHAPES:
            for dtype in ("FLOAT16", "BFLOAT16"):
                table.append((direction, dtype, shape))
    return table


def case_name(case):
    direction, dtype, shape = case
    op = "NsaSelectedAttentionGrad" if direction == "backward" else "NsaSelectedAttention"
    return "%s/%s/%s" % (op, dtype, shape[0])


def case_bytes(case):
    """As nsa_selected_attention_bench.cpp counts: each tensor once, at the case's element size."""
    direction, _, (_, b, s1, s2, n1, n2, dqk, dv, bs, count, _) = case
    t1, t2 = b * s1, b * s2
    q, k, v, out = t1 * n1 * dqk * 2, t2 * n2 * dqk * 2, t2 * n2 * dv * 2, t1 * n1 * dv * 2
    topk, stats = t1 * n2 * count * 4, 2 * t1 * n1 * 8 * 4
    if direction == "forward":
        return q + k + v + topk + out + stats
    return 2 * (q + k + v) + topk + 2 * out + stats


def selection(shape):
    """topkIndices (T1, N2, count) as nested lists, by the benchmark's rules: random distinct blocks; causal: the
    token's own block, block 0, the one before its own, then distinct random earlier ones."""
    _, b, s1, s2, _, n2, _, _, bs, count, causal = shape
    rng = random.Random(7)
    blocks = s2 // bs
    rows = []
    for _ in range(b):
        for u in range(s1):
            per_head = []
            for _ in range(n2):
                if causal:
                    own = min(blocks - 1, u // bs)
                    chosen = []
                    for block in (own, 0, own - 1):
                        if block >= 0 and block not in chosen:
                            chosen.append(block)
                    while len(chosen) < min(count, own + 1):
                        block = rng.randrange(own + 1)
                        if block not in chosen:
                            chosen.append(block)
                    block = own + 1
                    while len(chosen) < count:
                        chosen.append(block)
                        block += 1
                else:
                    chosen = rng.sample(range(blocks), count)
                per_head.append(chosen)
            rows.append(per_head)
    return rows


def attention(torch, q, k, v, topk, kv_start, positions, shape):
    """The composite for a chunk of query tokens of one sequence. q (C, N1, Dqk); k, v (T2, N2, D) whole; topk (C, N2,
    count) block indices within the sequence; positions (C,) the tokens' positions in their sequence."""
    _, _, _, _, n1, n2, _, _, bs, count, causal = shape
    g = n1 // n2
    offsets = torch.arange(bs)
    keys = (topk.unsqueeze(-1) * bs + offsets).reshape(topk.shape[0], n2, count * bs)  # positions in the sequence
    heads = torch.arange(n2).view(1, n2, 1)
    flat = ((keys + kv_start) * n2 + heads).reshape(-1)
    k_sel = k.reshape(-1, k.shape[-1]).index_select(0, flat).view(topk.shape[0], n2, count * bs, -1)
    v_sel = v.reshape(-1, v.shape[-1]).index_select(0, flat).view(topk.shape[0], n2, count * bs, -1)
    qg = q.view(q.shape[0], n2, g, q.shape[-1])
    scores = torch.matmul(qg, k_sel.transpose(-1, -2)) * SCALE  # (C, N2, G, L)
    if causal:
        masked = (keys > positions.view(-1, 1, 1)).unsqueeze(2)
        scores = scores.masked_fill(masked, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return torch.matmul(p, v_sel).reshape(q.shape[0], n1, -1)


def make_call(torch, case):
    direction, _, shape = case
    _, b, s1, s2, n1, n2, dqk, dv, _, _, _ = shape
    generator = torch.Generator().manual_seed(1)
    uniform = lambda *size: torch.rand(size, dtype=torch.float32, generator=generator) * 2.0 - 1.0
    q, k, v = uniform(b * s1, n1, dqk), uniform(b * s2, n2, dqk), uniform(b * s2, n2, dv)
    topk = torch.tensor(selection(shape), dtype=torch.int64)
    chunks = []  # (sequence start in k/v, token range, positions)
    for seq in range(b):
        for first in range(0, s1, CHUNK_TOKENS):
            last = min(s1, first + CHUNK_TOKENS)
            chunks.append((seq * s2, seq * s1 + first, seq * s1 + last, torch.arange(first, last)))
    if direction == "forward":
        def forward():
            with torch.inference_mode():
                return torch.cat([attention(torch, q[a:e], k, v, topk[a:e], kv_start, positions, shape)
                                  for kv_start, a, e, positions in chunks])
        return forward
    out_grad = uniform(b * s1, n1, dv)

    def backward():
        inputs = [t.detach().requires_grad_() for t in (q, k, v)]
        dq, dk, dv_ = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        for kv_start, a, e, positions in chunks:
            chunk_q = inputs[0][a:e]
            out = attention(torch, chunk_q, inputs[1], inputs[2], topk[a:e], kv_start, positions, shape)
            gq, gk, gv = torch.autograd.grad(out, (chunk_q, inputs[1], inputs[2]), out_grad[a:e])
            dq[a:e] += gq
            dk += gk
            dv_ += gv
        return dq, dk, dv_
    return backward


def main():
    return torch_bench_common.main(__doc__.split("\n\n")[0], "torch_nsa_selected_attention.py", cases, case_name,
                                   case_bytes, make_call, inference_mode=False,
                                   note=". PyTorch computes in float32 in chunks of %d tokens (see this script, "
                                        "torch_nsa_selected_attention.py); its backward recomputes each chunk's "
                                        "forward under autograd." % CHUNK_TOKENS)


if __name__ == "__main__":
    sys.exit(main())
