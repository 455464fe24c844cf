"""NsaCompressAttentionInfer: the Python package's function against a float64 reference of its own (a paged-cache
gather of the compressed tokens, softmax attention, the block scores and their top-k). Run with the package's tests
(tests/python/run_tests.py, scripts/python_package_check.sh)."""

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import torch_npu
from package_test_util import close

DIM_QK, DIM_V = 64, 32
BLOCK, STRIDE, SELECT, COUNT, PAGE = 32, 16, 64, 3, 64


def reference(q, k, v, table, cmp_lens, q_lens, sel_lens, scale):
    """q (B, S, N1, D_qk) float64, k/v (pages, page, N2, D) float64: (output (B, S, N1, D_v), scores: a dict (b, i, h)
    -> the block scores, topk (B, S, N2, COUNT)). sel_lens None: every token sees every compressed token."""
    batch, steps, heads, _ = q.shape
    kv_heads = k.shape[2]
    group, r, c = heads // kv_heads, SELECT // STRIDE, BLOCK // STRIDE
    out = torch.zeros(batch, steps, heads, v.shape[3], dtype=torch.float64)
    topk = torch.full((batch, steps, kv_heads, COUNT), -1, dtype=torch.int64)
    scores = {}
    for b in range(batch):
        rows = [(int(table[b, t // PAGE]), t % PAGE) for t in range(cmp_lens[b])]
        blocks = (cmp_lens[b] + r - 1) // r
        for i in range(q_lens[b]):
            visible = cmp_lens[b]
            if sel_lens is not None:
                position = sel_lens[b] - q_lens[b] + i
                visible = min(cmp_lens[b], max((position + 1 - BLOCK) // STRIDE + 1, 0))
            for h in range(kv_heads):
                w = torch.zeros(cmp_lens[b], dtype=torch.float64)
                if visible:
                    keys = torch.stack([k[pg, row, h] for pg, row in rows[:visible]])
                    values = torch.stack([v[pg, row, h] for pg, row in rows[:visible]])
                    for n in range(h * group, (h + 1) * group):
                        p = torch.softmax(scale * (keys @ q[b, i, n]), 0)
                        out[b, i, n] = p @ values
                        w[:visible] += p
                score = [sum(float(w[r * j - m - n]) for m in range(r) for n in range(c)
                             if 0 <= r * j - m - n < cmp_lens[b]) for j in range(blocks)]
                scores[b, i, h] = score
                order = sorted(range(blocks), key=lambda j: (-score[j], j))[:COUNT]
                topk[b, i, h, :len(order)] = torch.tensor(order)
    return out, scores, topk


def problem(dtype, seed, cmp_lens, steps=1, heads=4, kv_heads=2):
    g = torch.Generator().manual_seed(seed)
    batch = len(cmp_lens)
    per_entry = max((n + PAGE - 1) // PAGE for n in cmp_lens)
    cache_pages = batch * per_entry + 1
    q = torch.randn(batch, steps, heads, DIM_QK, generator=g).to(dtype)
    k = torch.randn(cache_pages, PAGE, kv_heads, DIM_QK, generator=g).to(dtype)
    v = torch.randn(cache_pages, PAGE, kv_heads, DIM_V, generator=g).to(dtype)
    table = torch.randperm(cache_pages, generator=g)[:batch * per_entry].reshape(batch, per_entry).to(torch.int32)
    return q, k, v, table


def attributes(heads=4, kv_heads=2):
    return dict(scale_value=DIM_QK ** -0.5, head_num=heads, key_value_head_num=kv_heads, select_block_size=SELECT,
                select_block_count=COUNT, page_block_size=PAGE, compress_block_size=BLOCK, compress_stride=STRIDE)


def check(out, topk, q, k, v, table, cmp_lens, q_lens, sel_lens, dtype):
    """out and topk (B, S, ...) against the reference: topk slot by slot within 1e-5 x G of the reference's score."""
    scale = float(torch.tensor(DIM_QK ** -0.5, dtype=torch.float32))
    ref_out, scores, ref_topk = reference(q.double(), k.double(), v.double(), table, cmp_lens, q_lens, sel_lens,
                                          scale)
    close(out, ref_out.numpy(), dtype)
    topk = torch.as_tensor(topk)
    for b in range(q.shape[0]):
        for i in range(q.shape[1]):
            for h in range(k.shape[2]):
                got, want = topk[b, i, h].tolist(), ref_topk[b, i, h].tolist()
                if i >= q_lens[b]:
                    assert got == [-1] * COUNT
                    continue
                assert [j == -1 for j in got] == [j == -1 for j in want] and len(set(got)) == len(got), (got, want)
                for g, w in zip(got, want):
                    if w >= 0:
                        assert abs(scores[b, i, h][g] - scores[b, i, h][w]) <= 2e-5, (b, i, h, got, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_decoding_in_tnd_matches_float64(dtype):
    cmp_lens = [97, 40, 128]
    q, k, v, table = problem(dtype, 1, cmp_lens)
    out, topk = pa.nsa_compress_attention_infer(q[:, 0], k.flatten(2), v.flatten(2), **attributes(),
                                                block_table=table, actual_cmp_seq_kvlen=cmp_lens)
    assert out.shape == (3, 4, DIM_V) and out.dtype == dtype and topk.shape == (3, 2, COUNT)
    assert topk.dtype == torch.int32
    check(out[:, None], topk[:, None], q, k, v, table, cmp_lens, [1, 1, 1], None, dtype)


def test_several_tokens_see_the_windows_complete_at_their_position_in_bsnd():
    cmp_lens = [60, 30]
    q, k, v, table = problem(torch.float16, 2, cmp_lens, steps=4)
    q_lens = [4, 2]
    sel_lens = [(n - 1) * STRIDE + BLOCK + 5 for n in cmp_lens]
    out, topk = pa.nsa_compress_attention_infer(q, k, v, **attributes(), layout="BSND", block_table=table,
                                                actual_seq_qlen=q_lens, actual_cmp_seq_kvlen=cmp_lens,
                                                actual_sel_seq_kvlen=sel_lens)
    check(out, topk, q, k, v, table, cmp_lens, q_lens, sel_lens, torch.float16)
    assert torch.all(out[1, 2:] == 0)
    # Raw lengths that do not compress to the compressed ones: the single-token form (every token sees all).
    out, topk = pa.nsa_compress_attention_infer(q, k, v, **attributes(), layout="BSND", block_table=table,
                                                actual_seq_qlen=q_lens, actual_cmp_seq_kvlen=cmp_lens,
                                                actual_sel_seq_kvlen=[n + STRIDE for n in sel_lens])
    check(out, topk, q, k, v, table, cmp_lens, q_lens, None, torch.float16)


def test_torch_npu_name_with_its_argument_order():
    cmp_lens = [64, 100]
    q, k, v, table = problem(torch.float16, 5, cmp_lens)
    # torch_npu's page: query (T, N1, D) in TND, key / value (block_num, block_size, N2 * D), the lengths by keyword.
    out, topk = torch_npu.npu_nsa_compress_attention_infer(q[:, 0], k.flatten(2), v.flatten(2), DIM_QK ** -0.5, 4, 2,
                                                           SELECT, COUNT, PAGE, BLOCK, STRIDE, block_table=table,
                                                           actual_cmp_seq_kvlen=cmp_lens)
    check(out[:, None], topk[:, None], q, k, v, table, cmp_lens, [1, 1], None, torch.float16)
    same_out, same_topk = pa.nsa_compress_attention_infer(q[:, 0], k, v, **attributes(), block_table=table,
                                                          actual_cmp_seq_kvlen=cmp_lens)
    assert torch.equal(out, same_out) and torch.equal(topk, same_topk)


def test_numpy_and_the_torch_library_op_agree():
    cmp_lens = [70, 64]
    q, k, v, table = problem(torch.bfloat16, 3, cmp_lens)
    out, topk = pa.nsa_compress_attention_infer(q[:, 0], k, v, **attributes(), block_table=table,
                                                actual_cmp_seq_kvlen=cmp_lens)
    op = torch.ops.portable_aclnn.nsa_compress_attention_infer
    op_out, op_topk = op(q[:, 0], k, v, *attributes().values(), block_table=table, actual_cmp_seq_kvlen=cmp_lens)
    assert torch.equal(op_out, out) and torch.equal(op_topk, topk)
    meta_out, meta_topk = op(q[:, 0].to("meta"), k.to("meta"), v.to("meta"), *attributes().values(),
                             block_table=table.to("meta"), actual_cmp_seq_kvlen=cmp_lens)
    assert tuple(meta_out.shape) == (2, 4, DIM_V) and meta_out.dtype == torch.bfloat16
    assert tuple(meta_topk.shape) == (2, 2, COUNT) and meta_topk.dtype == torch.int32
    half = [t.to(torch.float16) for t in (q, k, v)]
    np_out, np_topk = pa.nsa_compress_attention_infer(half[0][:, 0].numpy(), half[1].numpy(), half[2].numpy(),
                                                      **attributes(), block_table=table.numpy(),
                                                      actual_cmp_seq_kvlen=np.array(cmp_lens))
    assert isinstance(np_out, np.ndarray) and np_out.dtype == np.float16 and np_topk.dtype == np.int32
    check(torch.from_numpy(np_out)[:, None], torch.from_numpy(np_topk)[:, None], *half, table, cmp_lens, [1, 1], None,
          torch.float16)


def test_missing_cache_arguments_and_broken_rules_are_clear_errors():
    cmp_lens = [64, 64]
    q, k, v, table = problem(torch.float16, 4, cmp_lens)
    with pytest.raises(ValueError, match="block_table is required"):
        pa.nsa_compress_attention_infer(q[:, 0], k, v, **attributes(), actual_cmp_seq_kvlen=cmp_lens)
    with pytest.raises(ValueError, match="actual_cmp_seq_kvlen is required"):
        pa.nsa_compress_attention_infer(q[:, 0], k, v, **attributes(), block_table=table)
    with pytest.raises(pa.AclnnError, match=r"actualCmpKvSeqLenOptional\[0\] = 1000 must be in \[0, 64\]"):
        pa.nsa_compress_attention_infer(q[:, 0], k, v, **attributes(), block_table=table,
                                        actual_cmp_seq_kvlen=[1000, 64])
