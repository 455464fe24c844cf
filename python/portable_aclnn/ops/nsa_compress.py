"""NsaCompress and its gradient (src/ops/nsa_compress/): torch_npu's npu_nsa_compress (Native Sparse Attention's
key/value compression).

input (T, N, D) FLOAT16 or BFLOAT16, weight (compress_block_size, N); actual_seq_len: cumulative sequence ends as
torch_npu takes them (None: one sequence of all T tokens); returns (blocks, N, D).
"""

import ctypes

from .._library import api
from .._operator import INT64, INT_ARRAY, REQUIRED, STRING, TENSOR, AclnnCall, Entry, needs_autograd
from .._tensors import Operands, empty_like_kind, int_array, require_array, sequence_ends, torch

ACLNN = (
    AclnnCall("aclnnNsaCompress", (TENSOR, TENSOR, INT_ARRAY, STRING, INT64, INT64, INT64, TENSOR)),
    AclnnCall("aclnnNsaCompressGrad", (TENSOR, TENSOR, TENSOR, INT_ARRAY, INT64, INT64, INT64, STRING, TENSOR,
                                       TENSOR)),
)

_LAYOUT = ctypes.c_char_p(b"TND")


# ----------------------------------------------------------------------------------------------------------------
# Plain functions (torch tensors or NumPy arrays; no autograd)

def block_count(ends, compress_block_size, compress_stride):
    """The number of compressed blocks of all sequences (cumulative ends)."""
    blocks, start = 0, 0
    for end in ends:
        length = end - start
        if length >= compress_block_size:
            blocks += (length - compress_block_size) // compress_stride + 1
        start = end
    return blocks


def plain_forward(input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    """nsa_compress without autograd."""
    require_array(input, "input")
    if len(input.shape) != 3:
        raise ValueError(f"input must be 3-D (T, N, D), got {tuple(input.shape)}")
    ends = sequence_ends(input.shape[0], actual_seq_len)
    blocks = block_count(ends, compress_block_size, compress_stride)
    out = empty_like_kind(input, (blocks, input.shape[1], input.shape[2]))
    seq = int_array(ends)
    with Operands() as views:
        api().run("aclnnNsaCompress", views, views.tensor(input, "input"), views.tensor(weight, "weight"), seq.handle,
                  _LAYOUT, int(compress_block_size), int(compress_stride), 0, views.tensor(out, "output"))
    return out


def nsa_compress_backward(grad_output, input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    """(input_grad, weight_grad) of nsa_compress."""
    ends = sequence_ends(input.shape[0], actual_seq_len)
    input_grad = empty_like_kind(input, tuple(input.shape))
    weight_grad = empty_like_kind(weight, tuple(weight.shape))
    seq = int_array(ends)
    with Operands() as views:
        api().run("aclnnNsaCompressGrad", views, views.tensor(grad_output, "grad_output"), views.tensor(input, "input"),
                  views.tensor(weight, "weight"), seq.handle, int(compress_block_size), int(compress_stride), 0,
                  _LAYOUT, views.tensor(input_grad, "input_grad"), views.tensor(weight_grad, "weight_grad"))
    return input_grad, weight_grad


# ----------------------------------------------------------------------------------------------------------------
# Autograd (PyTorch installed)

if torch is not None:
    class NsaCompressFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, compress_block_size, compress_stride, actual_seq_len):
            ctx.save_for_backward(input, weight)
            ctx.sizes = (compress_block_size, compress_stride, actual_seq_len)
            return plain_forward(input, weight, compress_block_size, compress_stride, actual_seq_len)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight = ctx.saved_tensors
            input_grad, weight_grad = nsa_compress_backward(grad_output, input, weight, *ctx.sizes)
            need = ctx.needs_input_grad
            return input_grad if need[0] else None, weight_grad if need[1] else None, None, None, None


# ----------------------------------------------------------------------------------------------------------------
# Public

def nsa_compress(input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    """Native Sparse Attention's key/value compression. input (T, N, D) FLOAT16/BFLOAT16, weight
    (compress_block_size, N); actual_seq_len: cumulative sequence ends as torch_npu takes them (None: one sequence).
    Returns (blocks, N, D)."""
    if needs_autograd(input, weight):
        return NsaCompressFunction.apply(input, weight, compress_block_size, compress_stride, actual_seq_len)
    return plain_forward(input, weight, compress_block_size, compress_stride, actual_seq_len)


# ----------------------------------------------------------------------------------------------------------------
# torch.library (torch.ops.portable_aclnn.*); actual_seq_len is a list of ints there

def _fake_forward(input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    ends = [input.shape[0]] if actual_seq_len is None else list(actual_seq_len)
    return input.new_empty((block_count(ends, compress_block_size, compress_stride), input.shape[1], input.shape[2]))


def _fake_backward(grad_output, input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    return torch.empty_like(input), torch.empty_like(weight)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.arguments = tuple(inputs[2:])


def _library_backward(ctx, grad_output):
    input, weight = ctx.saved_tensors
    input_grad, weight_grad = torch.ops.portable_aclnn.nsa_compress_backward(grad_output, input, weight,
                                                                             *ctx.arguments)
    return input_grad, weight_grad, None, None, None


def _legacy_autograd(input, weight, compress_block_size, compress_stride, actual_seq_len=None):
    return NsaCompressFunction.apply(input, weight, compress_block_size, compress_stride, actual_seq_len)


_ATTRIBUTES = {"compress_block_size": REQUIRED, "compress_stride": REQUIRED, "actual_seq_len": None}

ENTRIES = (
    Entry(name="nsa_compress", public=nsa_compress, function=plain_forward,
          schema="(Tensor input, Tensor weight, int compress_block_size, int compress_stride, "
                 "int[]? actual_seq_len=None) -> Tensor",
          fake=_fake_forward, inputs=("input", "weight"), attributes=dict(_ATTRIBUTES), outputs=("output",),
          autograd=(_setup_context, _library_backward), legacy_autograd=_legacy_autograd),
    Entry(name="nsa_compress_backward", public=nsa_compress_backward, function=nsa_compress_backward,
          schema="(Tensor grad_output, Tensor input, Tensor weight, int compress_block_size, int compress_stride, "
                 "int[]? actual_seq_len=None) -> (Tensor, Tensor)",
          fake=_fake_backward, inputs=("grad_output", "input", "weight"), attributes=dict(_ATTRIBUTES),
          outputs=("input_grad", "weight_grad")),
)
