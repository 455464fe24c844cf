#!/usr/bin/env python3
"""The operators on a CUDA GPU against PyTorch CUDA and the device's copy bandwidth, measured in one run.

    python3 bench/cuda/gpu_bench.py <build-dir> [--json out.json] [--quick] [--cpu] [--only REGEX] [--profile]

Calls the libraries of <build-dir> through ctypes (the public C API, ACLNN_DEVICE=cuda) on tensors that PyTorch
allocates on the GPU (their data pointers, shapes and strides go to aclCreateTensor: no copies), and times
  - each operator and direction at the shapes of issue 14 (softmax (4, 16, 2048, 2048) fp16/bf16; grid sampler
    (8, 64, 256, 256) bilinear zeros; MSDA Deformable DETR encoder and decoder, with locations uniform over the
    maps, and the encoder again with locations near each query's own pixel as Deformable DETR makes them;
    NsaCompress 8 x 4096 tokens, 4 heads of 128; NsaSelectedAttention bfloat16 on issue 49's long context, in
    TFLOP/s against a dense bfloat16 matmul measured in the run), with a repeatable executor and a reused workspace: the calls
    are queued back to back and the stream is synchronised once, best of several rounds;
  - the peer in PyTorch (torch.softmax without mask or scale; F.grid_sample and its autograd backward; the MSDA
    composite of F.grid_sample per level), timed the same way with torch_sync;
  - the device-to-device copy bandwidth (a 1 GiB tensor copied, bytes read + written), and, for MSDA, the L2 read
    rate (a sum over 16 MiB the L2 holds) against which the forward's gather of value rows is reported;
  - the deterministic backward against the atomic one (ACL_OPT_DETERMINISTIC off) where there are both, and checks
    that two deterministic runs give the same bits;
  - the GPU time of each call's kernels and copies alone (CUPTI, through torch.profiler), so that a call's time
    splits into device work and the host's share.
Prints one markdown table (and writes the raw figures as JSON with --json). Needs PyTorch with CUDA; --cpu runs
the same calls on the CPU device (with PyTorch on the CPU), a smoke test of the script where there is no GPU.
--only keeps the suites whose name matches REGEX (re.search). --profile times nothing: it runs each case of the
kept suites twice (a warm-up, then the call to look at) for a profiler such as Nsight Compute to record
(scripts/gpu_check.sh's profile stage), and prints what it ran.
"""
import argparse
import ctypes
import json
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

ACL_DTYPES = {torch.float32: 0, torch.float16: 1, torch.int32: 3, torch.int64: 9, torch.float64: 11,
              torch.bool: 12, torch.bfloat16: 27}
ACL_FORMAT_ND = 2
ACL_OPT_DETERMINISTIC = 0

# Where the tensors live: "cuda", or "cpu" for a smoke test of the script on a machine without a GPU (--cpu).
DEVICE = "cuda"

i64p = ctypes.POINTER(ctypes.c_int64)
vp = ctypes.c_void_p


class Acl:
    """The C API of one build, through ctypes."""

    def __init__(self, build):
        os.environ.setdefault("ACLNN_DEVICE", DEVICE)
        mode = ctypes.RTLD_GLOBAL
        self.rt = ctypes.CDLL(os.path.join(build, "libascendcl.so"), mode=mode)
        self.base = ctypes.CDLL(os.path.join(build, "libnnopbase.so"), mode=mode)
        self.op = ctypes.CDLL(os.path.join(build, "libopapi.so"), mode=mode)
        self.rt.aclGetRecentErrMsg.restype = ctypes.c_char_p
        self.rt.aclrtGetSocName.restype = ctypes.c_char_p
        self.base.aclCreateTensor.restype = vp
        self.base.aclCreateTensor.argtypes = [i64p, ctypes.c_uint64, ctypes.c_int, i64p, ctypes.c_int64, ctypes.c_int,
                                              i64p, ctypes.c_uint64, vp]
        self.base.aclCreateBoolArray.restype = vp
        self.base.aclCreateBoolArray.argtypes = [ctypes.POINTER(ctypes.c_bool), ctypes.c_uint64]
        self.base.aclCreateIntArray.restype = vp
        self.base.aclCreateIntArray.argtypes = [i64p, ctypes.c_uint64]
        self.base.aclSetAclOpExecutorRepeatable.argtypes = [vp]
        self.base.aclDestroyAclOpExecutor.argtypes = [vp]
        self.rt.aclrtSynchronizeStream.argtypes = [vp]
        self.rt.aclrtCtxSetSysParamOpt.argtypes = [ctypes.c_int, ctypes.c_int64]
        self.check(self.rt.aclInit(None), "aclInit")
        self.check(self.rt.aclrtSetDevice(0), "aclrtSetDevice")
        self.stream = vp()
        self.check(self.rt.aclrtCreateStream(ctypes.byref(self.stream)), "aclrtCreateStream")
        self.keep = []  # ctypes objects that must outlive the executors

    def error(self):
        message = self.rt.aclGetRecentErrMsg()
        return message.decode() if message else ""

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what} returned {status}: {self.error()}")

    def tensor(self, t):
        """An aclTensor viewing torch tensor t (its storage, offset and strides)."""
        dims = (ctypes.c_int64 * t.dim())(*t.shape)
        strides = (ctypes.c_int64 * t.dim())(*t.stride())
        if hasattr(t, "untyped_storage"):  # PyTorch 2
            storage_elements = t.untyped_storage().nbytes() // t.element_size()
        else:
            storage_elements = t.storage().size()
        storage = (ctypes.c_int64 * 1)(storage_elements)
        base = t.data_ptr() - t.storage_offset() * t.element_size()
        handle = self.base.aclCreateTensor(dims, t.dim(), ACL_DTYPES[t.dtype], strides, t.storage_offset(),
                                           ACL_FORMAT_ND, storage, 1, vp(base))
        if not handle:
            raise RuntimeError("aclCreateTensor: " + self.error())
        self.keep += [dims, strides, storage, t]  # t too: the aclTensor points into its memory
        return vp(handle)

    def bool_array(self, values):
        array = (ctypes.c_bool * len(values))(*values)
        self.keep.append(array)
        return vp(self.base.aclCreateBoolArray(array, len(values)))

    def int_array(self, values):
        array = (ctypes.c_int64 * len(values))(*values)
        self.keep.append(array)
        return vp(self.base.aclCreateIntArray(array, len(values)))

    def deterministic(self, on):
        self.check(self.rt.aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1 if on else 0), "aclrtCtxSetSysParamOpt")

    def prepare(self, name, *args):
        """Phase 1 of aclnn<name> on args (then the workspace size and executor out-pointers): a repeatable call."""
        size = ctypes.c_uint64()
        executor = vp()
        phase1 = getattr(self.op, f"aclnn{name}GetWorkspaceSize")
        self.check(phase1(*args, ctypes.byref(size), ctypes.byref(executor)), f"aclnn{name}GetWorkspaceSize")
        self.check(self.base.aclSetAclOpExecutorRepeatable(executor), "aclSetAclOpExecutorRepeatable")
        workspace = torch.empty(max(size.value, 1), dtype=torch.uint8, device=DEVICE)
        phase2 = getattr(self.op, f"aclnn{name}")
        phase2.argtypes = [vp, ctypes.c_uint64, vp, vp]

        def run():
            self.check(phase2(vp(workspace.data_ptr()), size.value, executor, self.stream), f"aclnn{name}")

        return run, size.value

    def sync(self):
        self.check(self.rt.aclrtSynchronizeStream(self.stream), "aclrtSynchronizeStream")


def torch_sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def best_seconds(run, sync, calls, rounds):
    """The best over rounds of (calls queued back to back, then one synchronisation) / calls."""
    run()
    sync()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def kernel_seconds(run, sync, calls):
    """GPU time per call of the kernels and copies a call runs (CUPTI through torch.profiler), without the host's
    share of a call (launches, the stream worker's hand-over and completion wait): None where the profiler
    records no device time (the CPU device)."""
    if DEVICE != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            run()
        sync()
    total_us = 0.0
    for event in prof.key_averages():
        total_us += getattr(event, "self_device_time_total", None) or getattr(event, "self_cuda_time_total", 0) or 0
    return total_us / 1e6 / calls if total_us > 0 else None


def copy_bandwidth(rounds):
    x = torch.empty(1 << (24 if DEVICE == "cpu" else 28), dtype=torch.float32, device=DEVICE).uniform_()
    y = torch.empty_like(x)
    seconds = best_seconds(lambda: y.copy_(x), torch_sync, 10, rounds)
    return 2 * x.numel() * 4 / seconds / 1e9


def l2_read_bandwidth(rounds):
    """GB/s of torch.sum over a 16 MiB float32 tensor that stays in the L2 cache (50 MB on an H100), 100 sums replayed
    from one CUDA graph so that no launch gap counts: the measured rate at which the GPU reads data its L2 holds,
    the limit of a gather whose rows the L2 serves (MSDA's value rows). None on the CPU or when capture fails."""
    if DEVICE != "cuda":
        return None
    try:
        x = torch.rand(1 << 22, device=DEVICE)
        total = torch.empty((), device=DEVICE)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.sum(x, out=total)  # warm-up outside the capture, as CUDA graphs want
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        repeats = 100
        with torch.cuda.graph(graph):
            for _ in range(repeats):
                torch.sum(x, out=total)
        seconds = best_seconds(graph.replay, torch_sync, 3, rounds) / repeats
        return x.numel() * 4 / seconds / 1e9
    except RuntimeError as error:
        print(f"(L2 read rate not measured: {error})", file=sys.stderr)
        return None


def matmul_peak(rounds):
    """TFLOP/s of a dense bfloat16 8192^3 matmul (float32 on the CPU smoke test: 1024^3)."""
    n = 8192 if DEVICE == "cuda" else 1024
    dtype = torch.bfloat16 if DEVICE == "cuda" else torch.float32
    a = torch.randn(n, n, dtype=dtype, device=DEVICE)
    b = torch.randn(n, n, dtype=dtype, device=DEVICE)
    seconds = best_seconds(lambda: torch.matmul(a, b), torch_sync, 3, rounds)
    return 2.0 * n ** 3 / seconds / 1e12


def nbytes(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def bench_softmax(acl, dtype, quick):
    shape = (1, 4, 512, 2048) if quick else (4, 16, 2048, 2048)
    x = torch.randn(shape, dtype=dtype, device=DEVICE)
    mask = torch.ones(shape[-2:], dtype=torch.bool, device=DEVICE).triu(1).expand(1, 1, *shape[-2:]).contiguous()
    y = torch.empty_like(x)
    dy = torch.randn_like(x)
    dx = torch.empty_like(x)
    forward, _ = acl.prepare("ScaledMaskedSoftmax", acl.tensor(x), acl.tensor(mask), ctypes.c_double(0.125),
                             ctypes.c_bool(False), acl.tensor(y))
    backward, _ = acl.prepare("ScaledMaskedSoftmaxBackward", acl.tensor(dy), acl.tensor(y), acl.tensor(mask),
                              ctypes.c_double(0.125), ctypes.c_bool(False), acl.tensor(dx))
    return [("forward", forward, nbytes(x, y, mask), lambda: torch.softmax(x, -1), 0),
            ("backward", backward, nbytes(dy, y, dx, mask),
             lambda: torch._softmax_backward_data(dy, y, -1, dtype), 0)], (dx,)


def bench_grid(acl, dtype, quick):
    n, c, h, w = (2, 16, 128, 128) if quick else (8, 64, 256, 256)
    inp = torch.randn(n, c, h, w, dtype=dtype, device=DEVICE)
    base = F.affine_grid(torch.eye(2, 3, dtype=dtype, device=DEVICE).expand(n, 2, 3), (n, c, h, w), False)
    grid = (base + 0.05 * torch.randn_like(base)).contiguous()
    out = torch.empty_like(inp)
    gout = torch.randn_like(inp)
    ginp = torch.empty_like(inp)
    ggrid = torch.empty_like(grid)
    forward, _ = acl.prepare("GridSampler2D", acl.tensor(inp), acl.tensor(grid), ctypes.c_int64(0), ctypes.c_int64(0),
                             ctypes.c_bool(False), acl.tensor(out))
    mask = acl.bool_array([True, True])

    def backward_call():
        return acl.prepare("GridSampler2DBackward", acl.tensor(gout), acl.tensor(inp), acl.tensor(grid),
                           ctypes.c_int64(0), ctypes.c_int64(0), ctypes.c_bool(False), mask, acl.tensor(ginp),
                           acl.tensor(ggrid))

    backward, _ = backward_call()
    acl.deterministic(False)
    atomic, _ = backward_call()
    acl.deterministic(True)
    inp_r = inp.clone().requires_grad_()
    grid_r = grid.clone().requires_grad_()
    peer_out = F.grid_sample(inp_r, grid_r, "bilinear", "zeros", False)

    def peer_backward():
        torch.autograd.grad(peer_out, (inp_r, grid_r), gout, retain_graph=True)

    return [("forward", forward, nbytes(inp, grid, out),
             lambda: F.grid_sample(inp, grid, "bilinear", "zeros", False), 0),
            ("backward", backward, nbytes(gout, inp, grid, ginp, ggrid), peer_backward, 0),
            ("backward-atomic", atomic, nbytes(gout, inp, grid, ginp, ggrid), None, 0)], (ginp, ggrid)


def msda_composite(value, shapes, locations, weights):
    """Multi-scale deformable attention from F.grid_sample, one call per level (the usual PyTorch fallback)."""
    bs, _, nh, c = value.shape
    _, nq, _, nl, np_, _ = locations.shape
    per_level = value.split([hh * ww for hh, ww in shapes], dim=1)
    grids = 2 * locations - 1
    samples = []
    for level, (hh, ww) in enumerate(shapes):
        v = per_level[level].flatten(2).transpose(1, 2).reshape(bs * nh, c, hh, ww)
        g = grids[:, :, :, level].transpose(1, 2).flatten(0, 1)
        samples.append(F.grid_sample(v, g, mode="bilinear", padding_mode="zeros", align_corners=False))
    w = weights.transpose(1, 2).reshape(bs * nh, 1, nq, nl * np_)
    out = (torch.stack(samples, dim=-2).flatten(-2) * w).sum(-1).view(bs, nh * c, nq)
    return out.transpose(1, 2).contiguous()


def local_encoder_locations(shapes, bs, nh, np_, dtype):
    """Sampling locations as Deformable DETR's encoder makes them: query q is pixel q of the flattened levels, its
    reference point that pixel's centre (normalised, used on every level), each point offset by up to 2 pixels of
    the level it samples."""
    refs = []
    for h, w in shapes:
        y, x = torch.meshgrid(torch.arange(h, device=DEVICE), torch.arange(w, device=DEVICE), indexing="ij")
        refs.append(torch.stack(((x.flatten() + 0.5) / w, (y.flatten() + 0.5) / h), -1))
    ref = torch.cat(refs).to(dtype)  # (nq, 2) as (x, y)
    level_size = torch.tensor([[w, h] for h, w in shapes], dtype=dtype, device=DEVICE)  # (nl, 2)
    nq, nl = ref.shape[0], len(shapes)
    offsets = (torch.rand(bs, nq, nh, nl, np_, 2, dtype=dtype, device=DEVICE) * 4 - 2) / level_size[:, None, :]
    return (ref[None, :, None, None, None, :] + offsets).contiguous()


def msda_gathered_bytes(value, shapes, loc):
    """Bytes of the value rows (c channels of one head) the forward reads: one per corner inside its level's map."""
    c, size = value.shape[3], value.element_size()
    corners = 0
    for level, (h, w) in enumerate(shapes):
        x = loc[:, :, :, level, :, 0].float() * w - 0.5
        y = loc[:, :, :, level, :, 1].float() * h - 0.5
        x0, y0 = torch.floor(x), torch.floor(y)
        for dy in (0, 1):
            for dx in (0, 1):
                inside = (x0 + dx >= 0) & (x0 + dx < w) & (y0 + dy >= 0) & (y0 + dy < h)
                corners += int(inside.sum())
    return corners * c * size


def bench_msda(acl, dtype, queries, quick, local=False, misaligned=False):
    """misaligned: value starts one element into its buffer, so its rows are not 16-byte aligned and the CUDA
    kernels take their channel-at-a-time versions: the same run times both (no PyTorch peer)."""
    shapes = [(50, 75), (25, 38)] if quick else [(100, 150), (50, 75), (25, 38), (13, 19)]
    bs, nh, c, np_ = (2, 8, 32, 4) if quick else (4, 8, 32, 4)
    nk = sum(h * w for h, w in shapes)
    nq = nk if queries is None else queries
    nl = len(shapes)
    value = torch.randn(bs, nk, nh, c, dtype=dtype, device=DEVICE)
    if misaligned:
        value = torch.empty(value.numel() + 1, dtype=dtype, device=DEVICE)[1:].view(value.shape).copy_(value)
    spatial = torch.tensor(shapes, dtype=torch.int64, device=DEVICE)
    starts = torch.tensor([0] + [h * w for h, w in shapes][:-1], dtype=torch.int64, device=DEVICE).cumsum(0)
    if local:
        loc = local_encoder_locations(shapes, bs, nh, np_, dtype)
    else:
        loc = torch.rand(bs, nq, nh, nl, np_, 2, dtype=dtype, device=DEVICE)
    attn = torch.rand(bs, nq, nh, nl, np_, dtype=dtype, device=DEVICE)
    attn = (attn / attn.sum((-1, -2), keepdim=True)).contiguous()
    out = torch.empty(bs, nq, nh * c, dtype=dtype, device=DEVICE)
    gout = torch.randn_like(out)
    gvalue, gloc, gattn = torch.empty_like(value), torch.empty_like(loc), torch.empty_like(attn)
    args = (acl.tensor(value), acl.tensor(spatial), acl.tensor(starts), acl.tensor(loc), acl.tensor(attn))
    forward, _ = acl.prepare("MultiScaleDeformableAttnFunction", *args, acl.tensor(out))
    grads = (acl.tensor(gout), acl.tensor(gvalue), acl.tensor(gloc), acl.tensor(gattn))
    backward, _ = acl.prepare("MultiScaleDeformableAttentionGrad", *args, *grads)
    acl.deterministic(False)
    atomic, _ = acl.prepare("MultiScaleDeformableAttentionGrad", *args, *grads)
    acl.deterministic(True)
    v_r, l_r, a_r = (t.clone().requires_grad_() for t in (value, loc, attn))
    peer_out = msda_composite(v_r, shapes, l_r, a_r)

    def peer_backward():
        torch.autograd.grad(peer_out, (v_r, l_r, a_r), gout, retain_graph=True)

    peer_forward = None if misaligned else (lambda: msda_composite(value, shapes, loc, attn))
    return [("forward", forward, nbytes(value, loc, attn, out), peer_forward, 0,
             msda_gathered_bytes(value, shapes, loc)),
            ("backward", backward, nbytes(value, loc, attn, gout, gvalue, gloc, gattn),
             None if misaligned else peer_backward, 0),
            ("backward-atomic", atomic, nbytes(value, loc, attn, gout, gvalue, gloc, gattn), None, 0)], (
        gvalue, gloc, gattn)


def bench_nsa(acl, dtype, quick):
    sequences, length, heads, dim, block, stride = (2, 1024, 4, 128, 32, 16) if quick else (8, 4096, 4, 128, 32, 16)
    tokens = sequences * length
    blocks = sequences * ((length - block) // stride + 1)
    inp = torch.randn(tokens, heads, dim, dtype=dtype, device=DEVICE)
    weight = torch.rand(block, heads, dtype=dtype, device=DEVICE)
    out = torch.empty(blocks, heads, dim, dtype=dtype, device=DEVICE)
    gout = torch.randn_like(out)
    ginp, gweight = torch.empty_like(inp), torch.empty_like(weight)
    ends = acl.int_array([length * (i + 1) for i in range(sequences)])
    layout = ctypes.c_char_p(b"TND")
    forward, _ = acl.prepare("NsaCompress", acl.tensor(inp), acl.tensor(weight), ends, layout, ctypes.c_int64(block),
                             ctypes.c_int64(stride), ctypes.c_int64(0), acl.tensor(out))
    backward, _ = acl.prepare("NsaCompressGrad", acl.tensor(gout), acl.tensor(inp), acl.tensor(weight), ends,
                              ctypes.c_int64(block), ctypes.c_int64(stride), ctypes.c_int64(0), layout,
                              acl.tensor(ginp), acl.tensor(gweight))
    return [("forward", forward, nbytes(inp, weight, out), None, 0),
            ("backward", backward, nbytes(gout, inp, weight, ginp, gweight), None, 0)], (ginp, gweight)


def nsa_selected_topk(tokens_per_seq, sequences, kv_heads, blocks, bs, count):
    """topkIndices (T, N2, count) int32, causal: each token's own block and block 0 first, then distinct random
    earlier blocks, then (for tokens with fewer than count earlier blocks) later ones, which the mask hides."""
    u = torch.arange(tokens_per_seq, device=DEVICE).repeat(sequences)
    own = (u // bs).view(-1, 1, 1)
    block = torch.arange(blocks, device=DEVICE).view(1, 1, -1)
    rank = torch.rand(u.numel(), kv_heads, blocks, device=DEVICE)
    rank = torch.where(block > own, rank + 2.0, rank)
    rank = torch.where((block == own) | (block == 0), rank - 2.0, rank)
    return rank.argsort(dim=-1)[..., :count].to(torch.int32).contiguous()


def nsa_selected_composite(q, k, v, topk, tokens_per_seq, bs, scale, chunk, first_token=0):
    """PyTorch's formulation on the GPU: gather the selected key and value blocks, matmul, causal mask, softmax,
    matmul (in the tensors' dtype: tensor cores), chunk by chunk of query tokens (the gathered blocks of all tokens
    would not fit). q and topk are the rows of query tokens [first_token, first_token + len(q))."""
    t, n1, _ = q.shape
    n2, count = topk.shape[1], topk.shape[2]
    offsets = torch.arange(bs, device=q.device)
    heads = torch.arange(n2, device=q.device).view(1, n2, 1)
    outs = []
    for a in range(0, t, chunk):
        e = min(t, a + chunk)
        tokens = torch.arange(first_token + a, first_token + e, device=q.device)
        start = (tokens // tokens_per_seq) * tokens_per_seq
        positions = tokens - start
        keys = (topk[a:e].long().unsqueeze(-1) * bs + offsets).reshape(e - a, n2, count * bs)
        flat = ((keys + start.view(-1, 1, 1)) * n2 + heads).reshape(-1)
        k_sel = k.reshape(-1, k.shape[-1]).index_select(0, flat).view(e - a, n2, count * bs, -1)
        v_sel = v.reshape(-1, v.shape[-1]).index_select(0, flat).view(e - a, n2, count * bs, -1)
        qg = q[a:e].view(e - a, n2, n1 // n2, q.shape[-1])
        scores = torch.matmul(qg, k_sel.transpose(-1, -2)).float() * scale
        scores = scores.masked_fill((keys > positions.view(-1, 1, 1)).unsqueeze(2), float("-inf"))
        p = torch.softmax(scores, dim=-1).to(q.dtype)
        outs.append(torch.matmul(p, v_sel).reshape(e - a, n1, -1))
    return torch.cat(outs)


def bench_nsa_selected(acl, dtype, quick):
    """Issue 49's long context: 4 sequences of 32K tokens (--quick: 2 of 1K), 16 query heads, 4 KV heads, D_qk 192,
    D_v 128, 16 blocks of 64, causal. FLOP (the 5th entry): 2 L (D_qk + D_v) per query row forward and FlashAttention's
    2 L (3 D_qk + 2 D_v) backward, L its visible keys. The peer's backward is the composite's forward under autograd
    then its backward, chunk by chunk (a kept graph of every chunk would not fit), so it includes a recomputation
    of the forward, as ours includes its own recomputation of the scores."""
    sequences, length = (2, 1024) if quick else (4, 32768)
    n1, n2, dqk, dv, bs, count = 16, 4, 192, 128, 64, 16
    scale = 1.0 / dqk ** 0.5
    tokens = sequences * length
    q = torch.rand(tokens, n1, dqk, device=DEVICE).mul_(2).sub_(1).to(dtype)
    k = torch.rand(tokens, n2, dqk, device=DEVICE).mul_(2).sub_(1).to(dtype)
    v = torch.rand(tokens, n2, dv, device=DEVICE).mul_(2).sub_(1).to(dtype)
    topk = nsa_selected_topk(length, sequences, n2, length // bs, bs, count)
    out = torch.empty(tokens, n1, dv, dtype=dtype, device=DEVICE)
    smax = torch.empty(tokens, n1, 8, device=DEVICE)
    ssum = torch.empty_like(smax)
    gout = torch.rand_like(out).mul_(2).sub_(1)
    dq, dk, dvv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    ends = acl.int_array([length * (i + 1) for i in range(sequences)])
    mask = torch.ones(2048, 2048, dtype=torch.bool, device=DEVICE).triu_(1)
    layout = ctypes.c_char_p(b"TND")
    common = (ctypes.c_double(scale), ctypes.c_int64(n1), layout, ctypes.c_int64(2), ctypes.c_int64(bs),
              ctypes.c_int64(count))
    forward, _ = acl.prepare("NsaSelectedAttention", acl.tensor(q), acl.tensor(k), acl.tensor(v), acl.tensor(topk),
                             acl.tensor(mask), ends, ends, *common, acl.tensor(smax), acl.tensor(ssum),
                             acl.tensor(out))
    forward()
    acl.sync()
    backward, _ = acl.prepare("NsaSelectedAttentionGrad", acl.tensor(q), acl.tensor(k), acl.tensor(v),
                              acl.tensor(out), acl.tensor(gout), acl.tensor(smax), acl.tensor(ssum), acl.tensor(topk),
                              ends, ends, acl.tensor(mask), ctypes.c_double(scale), ctypes.c_int64(bs),
                              ctypes.c_int64(count), ctypes.c_int64(n1), layout, ctypes.c_int64(2), acl.tensor(dq),
                              acl.tensor(dk), acl.tensor(dvv))
    # Visible keys per query row: a slot's block holds min(bs, u - first + 1) keys at or before position u.
    u = torch.arange(length, device=DEVICE).repeat(sequences).view(-1, 1, 1)
    first = topk.long() * bs
    visible = (u - first + 1).clamp(0, bs).sum().item() * (n1 // n2)
    forward_flop = 2.0 * visible * (dqk + dv)
    backward_flop = 2.0 * visible * (3 * dqk + 2 * dv)
    chunk = 256 if quick else 1024

    def peer_forward():
        with torch.no_grad():
            nsa_selected_composite(q, k, v, topk, length, bs, scale, chunk)

    def peer_backward():
        qr, kr, vr = (x.detach().requires_grad_() for x in (q, k, v))
        for a in range(0, tokens, chunk):
            e = min(tokens, a + chunk)
            o = nsa_selected_composite(qr[a:e], kr, vr, topk[a:e], length, bs, scale, chunk, first_token=a)
            torch.autograd.grad(o, (qr, kr, vr), gout[a:e])

    return [("forward", forward, nbytes(q, k, v, topk, out, smax, ssum), peer_forward, forward_flop),
            ("backward", backward, nbytes(q, k, v, out, gout, smax, ssum, topk, dq, dk, dvv), peer_backward,
             backward_flop)], (out, smax, ssum, dq, dk, dvv)


def same_bits_twice(run, sync, outputs):
    run()
    sync()
    first = [t.clone() for t in outputs]
    run()
    sync()
    return all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(first, outputs))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true", help="small shapes (a smoke test of the script)")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU device (a smoke test without a GPU)")
    parser.add_argument("--only", help="only the suites whose name matches this regular expression")
    parser.add_argument("--profile", action="store_true",
                        help="no timing: run each case twice, for a profiler to record")
    args = parser.parse_args()
    global DEVICE
    DEVICE = "cpu" if args.cpu else "cuda"
    if DEVICE == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_bench.py needs PyTorch with a CUDA device (or --cpu)")
    acl = Acl(args.build)
    rounds = 3 if args.quick else 5
    calls = 3 if args.quick else 10
    suites = []
    for dtype in (torch.float16, torch.bfloat16):
        suites.append((f"ScaledMaskedSoftmax {str(dtype)[6:]}", lambda d=dtype: bench_softmax(acl, d, args.quick)))
    suites.append(("GridSampler2D float32", lambda: bench_grid(acl, torch.float32, args.quick)))
    for label, queries in (("encoder", None), ("decoder", 300)):
        suites.append((f"MSDA {label} float32", lambda q=queries: bench_msda(acl, torch.float32, q, args.quick)))
    # Issue 14's encoder case draws every location uniformly over the maps; Deformable DETR's own sample near their
    # query's pixel, which is what its kernels see in training.
    suites.append(("MSDA encoder, DETR-like locations, float32",
                   lambda: bench_msda(acl, torch.float32, None, args.quick, local=True)))
    # The same encoder with value one element off 16-byte alignment: the channel-at-a-time kernels, for comparison.
    suites.append(("MSDA encoder, value misaligned, float32",
                   lambda: bench_msda(acl, torch.float32, None, args.quick, misaligned=True)))
    for dtype in (torch.float16, torch.bfloat16):
        suites.append((f"NsaCompress {str(dtype)[6:]}", lambda d=dtype: bench_nsa(acl, d, args.quick)))
    # Compute-bound, seconds a call at full size: bfloat16 only (the goal's dtype).
    suites.append(("NsaSelectedAttention bfloat16", lambda: bench_nsa_selected(acl, torch.bfloat16, args.quick)))
    if args.only:
        suites = [(name, make) for name, make in suites if re.search(args.only, name)]
    if args.profile:
        for name, make in suites:
            cases, _ = make()
            for direction, run, *_ in cases:
                for _ in range(2):
                    run()
                    acl.sync()
                print(f"ran {name} {direction} twice")
        return
    bandwidth = copy_bandwidth(rounds)
    l2_gbps = l2_read_bandwidth(rounds) if any(name.startswith("MSDA") for name, _ in suites) else None
    # The compute-bound suites' limit: a dense bfloat16 matmul on the tensor cores, measured in the same run.
    matmul_tflops = matmul_peak(rounds) if any(name.startswith("NsaSelected") for name, _ in suites) else None
    device = acl.rt.aclrtGetSocName().decode()
    results = []
    print(f"device: {device}; device-to-device copy: {bandwidth:.0f} GB/s (read + write)")
    print(f"PyTorch {torch.__version__}; ACLNN_DEVICE={os.environ.get('ACLNN_DEVICE')}")
    if matmul_tflops:
        print(f"dense matmul (torch.matmul; bfloat16 8192^3 on a GPU): {matmul_tflops:.1f} TFLOP/s")
    if l2_gbps:
        print(f"L2 read rate (torch.sum over 16 MiB held in the L2, from a CUDA graph): {l2_gbps:.0f} GB/s")
    gather_notes = []
    print()
    print("| operator | direction | ours (ms) | GB/s | % of copy | kernels (ms) | PyTorch (ms) | speed-up | "
          "same bits twice |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, make in suites:
        try:
            cases, outputs = make()
        except RuntimeError as error:
            print(f"| {name} | - | failed: {error} | | | | | | |")
            results.append({"suite": name, "error": str(error)})
            continue
        # A case: (direction, its call, bytes it moves, PyTorch's peer or None, FLOP (0: memory-bound, rated in GB/s
        # against the copy), and optionally the bytes of value rows it gathers (rated against the L2 read rate)).
        for direction, run, bytes_moved, peer, flop, *gathered in cases:
            # A call of a teraFLOP takes long enough to time alone, and twice is enough.
            case_calls, case_rounds = (1, 2) if flop > 1e12 else (calls, rounds)
            ours = best_seconds(run, acl.sync, case_calls, case_rounds)
            gbps = bytes_moved / ours / 1e9
            try:
                kernels = kernel_seconds(run, acl.sync, case_calls)
            except Exception as error:  # a profiler that cannot start must not cost the table
                print(f"(profiler on {name} {direction} failed: {error})", file=sys.stderr)
                kernels = None
            peer_s = None
            if peer is not None:
                try:
                    peer_s = best_seconds(peer, torch_sync, case_calls, case_rounds)
                except RuntimeError as error:  # e.g. no fp16 kernel in PyTorch's CPU build (--cpu)
                    print(f"(PyTorch peer of {name} {direction} failed: {error})", file=sys.stderr)
            bits = same_bits_twice(run, acl.sync, outputs) if direction != "backward-atomic" else None
            row = {"suite": name, "direction": direction, "ms": ours * 1e3, "gbps": gbps,
                   "copy_fraction": gbps / bandwidth,
                   "kernel_ms": kernels * 1e3 if kernels else None, "peer_ms": peer_s * 1e3 if peer_s else None,
                   "speedup": peer_s / ours if peer_s else None, "same_bits_twice": bits}
            if gathered and gathered[0]:  # rows gathered from the L2: their rate by kernel (else call) time
                gather_gbps = gathered[0] / (kernels or ours) / 1e9
                row["gathered_bytes"], row["gather_gbps"] = gathered[0], gather_gbps
                row["l2_fraction"] = gather_gbps / l2_gbps if l2_gbps else None
                l2_text = f", {100 * gather_gbps / l2_gbps:.0f}% of the L2 read rate" if l2_gbps else ""
                gather_notes.append(f"{name} {direction}: {gathered[0] / 1e9:.2f} GB of value rows gathered at "
                                    f"{gather_gbps:.0f} GB/s by {'kernel' if kernels else 'call'} time{l2_text}")
            if flop:
                row["tflops"] = flop / ours / 1e12
                row["matmul_fraction"] = row["tflops"] / matmul_tflops if matmul_tflops else None
            results.append(row)
            peer_text = f"{peer_s * 1e3:.3f} | {peer_s / ours:.2f}x" if peer_s else "- | -"
            bits_text = "-" if bits is None else ("yes" if bits else "NO")
            kernel_text = f"{kernels * 1e3:.3f}" if kernels else "-"
            rate_text = f"{gbps:.0f} | {100 * gbps / bandwidth:.0f}%"
            if flop:  # compute-bound: TFLOP/s and the fraction of the matmul's
                rate_text = f"{row['tflops']:.1f} TFLOP/s | {100 * (row['matmul_fraction'] or 0):.0f}% of matmul"
            print(f"| {name} | {direction} | {ours * 1e3:.3f} | {rate_text} | "
                  f"{kernel_text} | {peer_text} | {bits_text} |")
    if gather_notes:
        print()
        for note in gather_notes:
            print(f"- {note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "copy_gbps": bandwidth, "l2_read_gbps": l2_gbps, "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
