"""NsaCompressWithCache: the Python package's function against a float64 reference of its own. Run with the
package's tests (tests/python/run_tests.py, scripts/python_package_check.sh)."""

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from portable_aclnn.compat import torch_npu
from package_test_util import close


def reference(sequences, weight, slots, lengths, block_size, stride, cache):
    """sequences: per entry a float64 (length, N, D) tensor; returns the expected cache (float64) and the written
    rows."""
    expected = cache.double().clone()
    written = set()
    for b, (tokens, length) in enumerate(zip(sequences, lengths)):
        if length < block_size or (length - block_size) % stride != 0:
            continue
        window = tokens[length - block_size:length]
        expected[slots[b]] = (window * weight.double()[:, :, None]).sum(0)
        written.add(int(slots[b]))
    return expected, written


def problem(dtype, seed, lengths=(32, 40, 48, 208, 0), heads=4, dim=64, block_size=32, stride=16, page=64):
    g = torch.Generator().manual_seed(seed)
    columns = max((n + page - 1) // page for n in lengths)
    pages = len(lengths) * columns + 1
    sequences = [torch.randn(max(n, 0), heads, dim, generator=g).to(dtype) for n in lengths]
    order = torch.randperm(pages, generator=g)
    table = torch.full((len(lengths), columns), -1, dtype=torch.int32)
    paged = torch.full((pages, page, heads, dim), float("nan")).to(dtype)
    used = 0
    for b, n in enumerate(lengths):
        for c in range((n + page - 1) // page):
            table[b, c] = int(order[used])
            rows = sequences[b][c * page:(c + 1) * page]
            paged[int(order[used]), :rows.shape[0]] = rows
            used += 1
    weight = torch.randn(block_size, heads, generator=g).to(dtype)
    result_len = max(2 * len(lengths), (pages * page - block_size) // stride + 1)
    slots = torch.randperm(result_len, generator=g)[:len(lengths)].to(torch.int32)
    cache = (torch.randn(result_len, heads, dim, generator=g) * 4).to(dtype)
    return sequences, paged, table, weight, slots, cache


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("paged", [True, False])
def test_entries_that_complete_a_window_write_their_slot_in_place(dtype, paged):
    lengths = [32, 40, 48, 208, 0]
    sequences, paged_input, table, weight, slots, cache = problem(dtype, 3 if paged else 4, lengths)
    before = cache.clone()
    expected, written = reference([s.double() for s in sequences], weight, slots.tolist(), lengths, 32, 16, before)
    if paged:
        out = pa.nsa_compress_infer(paged_input, weight, slots, 32, 16, 64, block_table=table,
                                    actual_seq_len=lengths, cache=cache)
    else:
        out = pa.nsa_compress_infer(torch.cat(sequences), weight, slots, 32, 16, 64, actual_seq_len=lengths,
                                    cache=cache)
    assert out is cache and len(written) == 3
    for row in range(cache.shape[0]):
        if row in written:
            close(cache[row], expected[row].numpy(), dtype, scale=float(expected[row].abs().max()))
        else:
            assert torch.equal(cache[row], before[row])


def test_torch_npu_name_numpy_and_the_torch_library_op_agree():
    lengths = [48, 64, 17]
    sequences, paged_input, table, weight, slots, cache = problem(torch.bfloat16, 5, lengths)
    first = torch_npu.npu_nsa_compress_infer(paged_input, weight, slots, 32, 16, 64, block_table=table,
                                             actual_seq_len=lengths, cache=cache.clone())
    second = cache.clone()
    torch.ops.portable_aclnn.nsa_compress_infer(paged_input, weight, slots, 32, 16, 64, table, lengths, cache=second)
    assert torch.equal(first, second)
    half = [t.to(torch.float16) for t in (paged_input, weight, cache)]
    array_cache = half[2].numpy().copy()
    returned = pa.nsa_compress_infer(half[0].numpy(), half[1].numpy(), slots.numpy(), 32, 16, 64,
                                     block_table=table.numpy(), actual_seq_len=np.array(lengths), cache=array_cache)
    assert returned is array_cache
    expected, written = reference([s.double() for s in sequences], half[1], slots.tolist(), lengths, 32, 16, half[2])
    for row in written:
        close(torch.from_numpy(array_cache[row]), expected[row].numpy(), torch.float16,
              scale=float(expected[row].abs().max()))


def test_missing_arguments_and_broken_rules_are_clear_errors():
    lengths = [48, 64]
    _, paged_input, table, weight, slots, cache = problem(torch.float16, 6, lengths)
    with pytest.raises(ValueError, match="cache is required"):
        pa.nsa_compress_infer(paged_input, weight, slots, 32, 16, 64, block_table=table, actual_seq_len=lengths)
    with pytest.raises(ValueError, match="actual_seq_len is required"):
        pa.nsa_compress_infer(paged_input, weight, slots, 32, 16, 64, block_table=table, cache=cache)
    with pytest.raises(pa.AclnnError, match="compressStride must be 16, 32, 48 or 64, got 24"):
        pa.nsa_compress_infer(paged_input, weight, slots, 32, 24, 64, block_table=table, actual_seq_len=lengths,
                              cache=cache)
