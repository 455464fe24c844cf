#!/usr/bin/python3
"""PyTorch's side of the NsaCompressAttention speed comparison.

Times the pure-PyTorch composite formulation of NSA's compressed attention with its block choice, in float32, on the
cases of src/ops/nsa_compress_attention/bench/nsa_compress_attention_bench.cpp, under the same names and with the
same kinds of data (another generator, which does not change the work done): per chunk of query tokens, matmul,
masked_fill with the attention mask, softmax and matmul (the attention), then the importance scores (the
probabilities summed over each group's heads, and over the compressed keys that overlap each select block: a
strided conv1d with weights 1, 2, 2, 2, 1 for l 32, d 16, l' 64), masked_fill with the top-k mask and torch.topk.
PyTorch computes in float32 whatever the case's dtype (inputs converted once, outside the timing). Run it with
Debian's python3-torch: /usr/bin/python3 src/ops/nsa_compress_attention/bench/torch_nsa_compress_attention.py.

  torch_nsa_compress_attention.py [--threads N] [--filter REGEX] [--repetitions R] [--min-time S]
      [--aclnn-json FILE] [--json-out FILE]

Without --aclnn-json it prints PyTorch's times; with it (aclnn_bench's --benchmark_out file) both and the speed-up,
PyTorch's time divided by ours. scripts/compare_torch.sh nsa_compress_attention runs the two.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "bench"))
import torch_bench_common

# The aclnn_bench cases this script compares with (scripts/compare_torch.sh): their names start with this.
CASE_PREFIX = "NsaCompressAttention/"

# The case table of nsa_compress_attention_bench.cpp (keep the two in step): name, query tokens, compressed keys
# (one sequence), N1, N2, selected blocks, masks (sparseMode 1 with both masks), causal.
SHAPES = (
    ("1x1024x64_N16_Nkv4", 1024, 64, 16, 4, 16, True, False),
    ("1x32768_N16_Nkv4_causal", 32768, 2047, 16, 4, 16, True, True),
    ("small_N4_Nkv1", 256, 63, 4, 1, 4, False, False),
)
DIM_QK, DIM_V, BLOCK, STRIDE, SELECT_BLOCK = 192, 128, 32, 16, 64
PER_SELECT = SELECT_BLOCK // STRIDE
CHUNK_TOKENS = 256
SCALE = 1.0 / 16.0


def cases():
    return [(dtype, shape) for shape in SHAPES for dtype in ("FLOAT16", "BFLOAT16")]


def case_name(case):
    dtype, shape = case
    return "NsaCompressAttention/%s/%s" % (dtype, shape[0])


def select_blocks(keys):
    return (keys + PER_SELECT - 1) // PER_SELECT


def case_bytes(case):
    """As nsa_compress_attention_bench.cpp counts: each tensor once, at the case's element size."""
    _, (_, t1, keys, n1, n2, count, masks, _) = case
    q, k, v, out = t1 * n1 * DIM_QK * 2, keys * n2 * DIM_QK * 2, keys * n2 * DIM_V * 2, t1 * n1 * DIM_V * 2
    stats, topk = 2 * t1 * n1 * 8 * 4, t1 * n2 * count * 4
    mask_bytes = t1 * (keys + select_blocks(keys)) if masks else 0
    return q + k + v + out + stats + topk + mask_bytes


def make_call(torch, case):
    _, (_, t1, keys, n1, n2, count, _, causal) = case
    g = n1 // n2
    blocks = select_blocks(keys)
    generator = torch.Generator().manual_seed(1)
    uniform = lambda *size: torch.rand(size, dtype=torch.float32, generator=generator) * 2.0 - 1.0
    q, k, v = uniform(t1, n1, DIM_QK), uniform(keys, n2, DIM_QK), uniform(keys, n2, DIM_V)
    k_heads, v_heads = k.permute(1, 2, 0), v.permute(1, 0, 2)  # (N2, D, K), (N2, K, Dv)
    # The overlap of compressed key i with select block j: i = 4 j - m with weight 1, 2, 2, 2, 1 for m = 0..4.
    window = torch.tensor([1.0, 2.0, 2.0, 2.0, 1.0]).view(1, 1, 5)
    positions = torch.arange(t1)
    key_last_token = torch.arange(keys) * STRIDE + BLOCK - 1
    block_first_token = torch.arange(blocks) * SELECT_BLOCK

    def forward():
        outs, indices = [], []
        for first in range(0, t1, CHUNK_TOKENS):
            last = min(t1, first + CHUNK_TOKENS)
            chunk = last - first
            qg = q[first:last].view(chunk, n2, g, DIM_QK).permute(1, 0, 2, 3).reshape(n2, chunk * g, DIM_QK)
            scores = torch.bmm(qg, k_heads).view(n2, chunk, g, keys) * SCALE
            if causal:
                hidden = key_last_token.view(1, -1) > positions[first:last].view(-1, 1)  # (C, K)
                scores = scores.masked_fill(hidden.view(1, chunk, 1, keys), float("-inf"))
            p = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # rows that see no key: 0
            outs.append(torch.bmm(p.view(n2, chunk * g, keys), v_heads).view(n2, chunk, g, DIM_V))
            importance = p.sum(dim=2).reshape(n2 * chunk, 1, keys)  # the group's heads
            block_scores = torch.nn.functional.conv1d(
                torch.nn.functional.pad(importance, (PER_SELECT, 0)), window, stride=PER_SELECT)
            block_scores = block_scores.view(n2, chunk, blocks)
            if causal:
                later = block_first_token.view(1, -1) > positions[first:last].view(-1, 1)
                block_scores = block_scores.masked_fill(later.view(1, chunk, blocks), float("-inf"))
            indices.append(torch.topk(block_scores, min(count, blocks), dim=-1).indices)
        return torch.cat(outs, dim=1), torch.cat(indices, dim=1)
    return forward


def main():
    return torch_bench_common.main(__doc__.split("\n\n")[0], "torch_nsa_compress_attention.py", cases, case_name,
                                   case_bytes, make_call, inference_mode=True,
                                   note=". PyTorch computes in float32 in chunks of %d tokens (see this script, "
                                        "torch_nsa_compress_attention.py)." % CHUNK_TOKENS)


if __name__ == "__main__":
    sys.exit(main())
