"""NsaSelectedAttentionInfer: the Python package's function against a float64 reference of its own (a paged-cache
gather, then softmax attention). Run with the package's tests (tests/python/run_tests.py,
scripts/python_package_check.sh)."""

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import torch_npu
from package_test_util import close

DIM_QK, DIM_V = 192, 128


def reference(q, k, v, topk, table, kv_lens, q_lens, scale, select_block, page):
    """q (B, S, N1, D_qk) float64, k/v (pages, page, N2, D) float64, topk (B, S, N2, count): the output (B, S, N1,
    D_v), rows past an entry's query tokens 0."""
    batch, steps, heads, _ = q.shape
    kv_heads = k.shape[2]
    group = heads // kv_heads
    out = torch.zeros(batch, steps, heads, v.shape[3], dtype=torch.float64)
    for b in range(batch):
        for i in range(q_lens[b]):
            position = kv_lens[b] - q_lens[b] + i
            for n in range(heads):
                h = n // group
                rows = []
                for j in topk[b, i, h].tolist():
                    for p in range(j * select_block, (j + 1) * select_block):
                        if j >= 0 and p < kv_lens[b] and p <= position:
                            rows.append((int(table[b, p // page]), p % page))
                if not rows:
                    continue
                keys = torch.stack([k[pg, r, h] for pg, r in rows])
                values = torch.stack([v[pg, r, h] for pg, r in rows])
                p = torch.softmax(scale * (keys @ q[b, i, n]), 0)
                out[b, i, n] = p @ values
    return out


def problem(dtype, seed, batch=3, steps=1, heads=4, kv_heads=2, page=64, pages_per_entry=3, select_block=32,
            count=3):
    g = torch.Generator().manual_seed(seed)
    kv_lens = [int(x) for x in torch.randint(page, pages_per_entry * page + 1, (batch,), generator=g)]
    q_lens = [steps] * batch
    cache_pages = batch * pages_per_entry + 2
    q = torch.randn(batch, steps, heads, DIM_QK, generator=g).to(dtype)
    k = torch.randn(cache_pages, page, kv_heads, DIM_QK, generator=g).to(dtype)
    v = torch.randn(cache_pages, page, kv_heads, DIM_V, generator=g).to(dtype)
    table = torch.randperm(cache_pages, generator=g)[:batch * pages_per_entry].reshape(batch, pages_per_entry)
    topk = torch.empty(batch, steps, kv_heads, count, dtype=torch.int32)
    for b in range(batch):
        blocks = (kv_lens[b] + select_block - 1) // select_block
        for i in range(steps):
            for h in range(kv_heads):
                topk[b, i, h] = torch.randperm(blocks, generator=g)[:count]
    return q, k, v, topk, table.to(torch.int32), kv_lens, q_lens


def attributes(heads=4, kv_heads=2, select_block=32, count=3, page=64):
    return dict(scale_value=DIM_QK ** -0.5, head_num=heads, key_value_head_num=kv_heads,
                select_block_size=select_block, select_block_count=count, page_block_size=page)


def expected(q, k, v, topk, table, kv_lens, q_lens, select_block=32, page=64):
    scale = float(torch.tensor(DIM_QK ** -0.5, dtype=torch.float32))
    return reference(q.double(), k.double(), v.double(), topk, table, kv_lens, q_lens, scale, select_block, page)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["BSND", "BSH", "TND"])
def test_every_layout_matches_float64(dtype, layout):
    q, k, v, topk, table, kv_lens, q_lens = problem(dtype, {"BSND": 1, "BSH": 2, "TND": 3}[layout])
    ref = expected(q, k, v, topk, table, kv_lens, q_lens)
    batch, _, heads, _ = q.shape
    if layout == "BSND":
        out = pa.nsa_select_attention_infer(q, k, v, topk, **attributes(), block_table=table,
                                            actual_seq_kvlen=kv_lens)
        close(out, ref.numpy(), dtype)
    elif layout == "BSH":
        # BSH: query and the cache with the heads folded into the last dim; topk (B, N2, count) for one step.
        out = pa.nsa_select_attention_infer(q.reshape(batch, 1, -1), k.flatten(2), v.flatten(2), topk[:, 0],
                                            **attributes(), layout="BSH", block_table=table,
                                            actual_seq_kvlen=torch.tensor(kv_lens))
        close(out, ref.reshape(batch, 1, -1).numpy(), dtype)
    else:
        out = pa.nsa_select_attention_infer(q[:, 0], k, v, topk[:, 0], **attributes(), layout="TND",
                                            block_table=table, actual_seq_qlen=q_lens, actual_seq_kvlen=kv_lens)
        close(out, ref[:, 0].numpy(), dtype)


def test_several_query_tokens_attend_to_their_past_and_padding_rows_are_zero():
    q, k, v, topk, table, kv_lens, _ = problem(torch.float16, 4, steps=3)
    q_lens = [3, 1, 2]
    ref = expected(q, k, v, topk, table, kv_lens, q_lens)
    out = torch_npu.npu_nsa_select_attention_infer(q, k, v, topk, *attributes().values(), block_table=table,
                                                   actual_seq_qlen=q_lens, actual_seq_kvlen=kv_lens)
    close(out, ref.numpy(), torch.float16)
    assert torch.all(out[1, 1:] == 0) and torch.all(out[2, 2:] == 0)


def test_torch_npu_name_numpy_and_the_torch_library_op_agree():
    q, k, v, topk, table, kv_lens, _ = problem(torch.bfloat16, 5)
    out = torch_npu.npu_nsa_select_attention_infer(q, k, v, topk, *attributes().values(), block_table=table,
                                                   actual_seq_kvlen=kv_lens)
    op = torch.ops.portable_aclnn.nsa_select_attention_infer
    assert torch.equal(op(q, k, v, topk, *attributes().values(), block_table=table, actual_seq_kvlen=kv_lens), out)
    meta = op(q.to("meta"), k.to("meta"), v.to("meta"), topk.to("meta"), *attributes().values(),
              block_table=table.to("meta"), actual_seq_kvlen=kv_lens)
    assert tuple(meta.shape) == (3, 1, 4, DIM_V) and meta.dtype == torch.bfloat16
    half = [t.to(torch.float16) for t in (q, k, v)]
    from_numpy = pa.nsa_select_attention_infer(*(t.numpy() for t in half), topk.numpy(), **attributes(),
                                               block_table=table.numpy(), actual_seq_kvlen=np.array(kv_lens))
    assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float16
    close(torch.from_numpy(from_numpy), expected(*half, topk, table, kv_lens, [1] * 3).numpy(), torch.float16)


def test_missing_cache_arguments_and_broken_rules_are_clear_errors():
    q, k, v, topk, table, kv_lens, _ = problem(torch.float16, 6)
    with pytest.raises(ValueError, match="block_table is required"):
        pa.nsa_select_attention_infer(q, k, v, topk, **attributes(), actual_seq_kvlen=kv_lens)
    with pytest.raises(ValueError, match="actual_seq_kvlen is required"):
        pa.nsa_select_attention_infer(q, k, v, topk, **attributes(), block_table=table)
    with pytest.raises(pa.AclnnError, match=r"actualKvSeqLenOptional\[0\] = 1000 must be in \[0, 192\]"):
        pa.nsa_select_attention_infer(q, k, v, topk, **attributes(), block_table=table,
                                      actual_seq_kvlen=[1000] + kv_lens[1:])
