"""NsaCompressWithCache (src/ops/nsa_compress_with_cache/): torch_npu's npu_nsa_compress_infer, Native Sparse
Attention's key/value compression while decoding.

input (blockNum, page_block_size, N, D), the paged cache of the sequences' tokens through block_table INT32
(B, pages per entry); or, block_table None, (T, N, D) with the entries' tokens back to back. weight
(compress_block_size, N); slot_mapping INT32 (B); actual_seq_len: each entry's length (required; not cumulative);
cache (resultLen, N, D): updated in place - each entry whose length has just completed a compression window
(length >= compress_block_size and (length - compress_block_size) % compress_stride == 0) writes its newest window's
compressed token into row slot_mapping[b]; other rows keep their values. Returns cache. FLOAT16 or BFLOAT16. No
autograd: an inference operator. The rules, the formula and the decisions: docs/ops/nsa_compress_with_cache.md.
"""

import ctypes

from .._library import api
from .._operator import INT64, INT_ARRAY, REQUIRED, STRING, TENSOR, AclnnCall, Entry
from .._tensors import Operands, int_array, int_list, require_array

ACLNN = (
    AclnnCall("aclnnNsaCompressWithCache", (TENSOR, TENSOR, TENSOR, INT_ARRAY, TENSOR, STRING, INT64, INT64, INT64,
                                            INT64, TENSOR)),
)

_TND = ctypes.c_char_p(b"TND")
_LENGTHS_PER_ENTRY = 1  # actSeqLenType: each entry's length


def nsa_compress_infer(input, weight, slot_mapping, compress_block_size, compress_stride, page_block_size,
                       block_table=None, actual_seq_len=None, cache=None):
    """Compresses each entry's just-completed window into its cache row (the module's docstring has the shapes);
    returns cache, updated in place."""
    for array, name in ((input, "input"), (weight, "weight"), (slot_mapping, "slot_mapping")):
        require_array(array, name)
    if cache is None:
        raise ValueError("cache is required: the compressed-token cache (resultLen, N, D), updated in place")
    if actual_seq_len is None:
        raise ValueError("actual_seq_len is required: each batch entry's length")
    lengths = int_array(int_list(actual_seq_len))
    with Operands() as views:
        api().run("aclnnNsaCompressWithCache", views, views.tensor(input, "input"), views.tensor(weight, "weight"),
                  views.tensor(slot_mapping, "slot_mapping"), lengths.handle,
                  views.tensor(block_table, "block_table") if block_table is not None else None,
                  None if block_table is not None else _TND, int(compress_block_size), int(compress_stride),
                  _LENGTHS_PER_ENTRY, int(page_block_size), views.tensor(cache, "cache"))
    return cache


def _kernel(input, weight, slot_mapping, compress_block_size, compress_stride, page_block_size, block_table=None,
            actual_seq_len=None, cache=None):
    """The dispatcher's kernel: the schema mutates cache and returns nothing."""
    nsa_compress_infer(input, weight, slot_mapping, compress_block_size, compress_stride, page_block_size,
                       block_table, actual_seq_len, cache)


def _fake(input, weight, slot_mapping, compress_block_size, compress_stride, page_block_size, block_table=None,
          actual_seq_len=None, cache=None):
    return None


def _command_line(input, weight, slot_mapping, block_table, cache, **attributes):
    """The command line's form (paged input, as torch_npu's page documents it): returns the updated cache."""
    return nsa_compress_infer(input, weight, slot_mapping, block_table=block_table, cache=cache, **attributes)


ENTRIES = (
    Entry(name="nsa_compress_infer", public=nsa_compress_infer, function=_command_line,
          schema="(Tensor input, Tensor weight, Tensor slot_mapping, int compress_block_size, int compress_stride, "
                 "int page_block_size, Tensor? block_table=None, int[]? actual_seq_len=None, *, Tensor(a!) cache) "
                 "-> ()",
          fake=_fake, inputs=("input", "weight", "slot_mapping", "block_table", "cache"),
          attributes={"compress_block_size": REQUIRED, "compress_stride": REQUIRED, "page_block_size": REQUIRED,
                      "actual_seq_len": REQUIRED},
          outputs=("cache",), kernel=_kernel),
)
