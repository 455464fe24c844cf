"""The Python layer's cost per call: portable_aclnn.scaled_masked_softmax on a small tensor against the same
aclnn call sequence (phase 1, aclrtMalloc, phase 2, synchronise, free) made directly through ctypes with aclTensors
created once, and the MSDA training step (forward + backward) at Deformable DETR's encoder shapes from Python.
With a GPU (PyTorch with CUDA, a CUDA build), also a small call on CUDA tensors against torch.softmax's.
--profile prints where a small call's host time goes (cProfile, CPU and CUDA tensors); --no-msda skips the training
step.

    PYTHONPATH=python PORTABLE_ACLNN_LIBRARY_DIR=build ACLNN_NUM_THREADS=2 /usr/bin/python3 bench/python/python_overhead.py
"""

import argparse
import cProfile
import pstats
import time
import types

import numpy as np
import torch

import portable_aclnn as pa
from portable_aclnn._library import api
from portable_aclnn._tensors import AclTensor


def best_per_call_us(function, calls=2000, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def profile(title, function, calls=20000):
    """cProfile of `calls` calls: the functions with the most time of their own."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        function()
    profiler.disable()
    print(f"--- {title}: {calls} calls under cProfile (its own cost inflates every Python call)")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def own_work_us(x, mask):
    """The package's own work per call: the call with run() (phase 1, phase 2, synchronise) made a no-op."""
    real_run = api().run
    api().run = lambda *arguments: None
    try:
        with torch.no_grad():
            return best_per_call_us(lambda: pa.scaled_masked_softmax(x, mask))
    finally:
        api().run = real_run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", action="store_true", help="print cProfile tables of the small calls")
    parser.add_argument("--no-msda", action="store_true", help="skip the MSDA training step")
    args = parser.parse_args()
    x = torch.randn(1, 2, 4, 16)
    mask = torch.zeros(1, 1, 4, 16, dtype=torch.bool)
    y = torch.empty_like(x)
    tx, tm, ty = AclTensor(x, "x"), AclTensor(mask, "mask"), AclTensor(y, "y")
    host = types.SimpleNamespace(cuda_index=None)  # what run() reads of the call's Operands: host memory
    direct = best_per_call_us(lambda: api().run("aclnnScaledMaskedSoftmax", host, tx.handle, tm.handle, 1.0, False,
                                                ty.handle))
    with torch.no_grad():
        python = best_per_call_us(lambda: pa.scaled_masked_softmax(x, mask))
    with_autograd = best_per_call_us(lambda: pa.scaled_masked_softmax(x.requires_grad_(), mask), calls=1000)
    x.requires_grad_(False)
    own_torch = own_work_us(x, mask)
    own_numpy = own_work_us(x.numpy(), mask.numpy())
    print(f"softmax (1, 2, 4, 16) FLOAT: C sequence through ctypes {direct:.1f} us, portable_aclnn function "
          f"{python:.1f} us (no_grad), {with_autograd:.1f} us (autograd); Python layer +{python - direct:.1f} us; "
          f"the package's own work (run() skipped) {own_torch:.1f} us on CPU tensors, {own_numpy:.1f} us on NumPy "
          f"arrays")
    if args.profile:
        with torch.no_grad():
            profile("softmax (1, 2, 4, 16) on CPU tensors", lambda: pa.scaled_masked_softmax(x, mask))

    if torch.cuda.is_available() and api().gpu_count > 0:
        cuda_call_costs(x, mask, args.profile)
    if args.no_msda:
        return

    # MSDA training step, DETR encoder: bs 2, levels 100x150, 50x75, 25x38, 13x19; nh 8, nl 4, np 4, c 32.
    shapes = torch.tensor([[100, 150], [50, 75], [25, 38], [13, 19]])
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), (shapes[:, 0] * shapes[:, 1]).cumsum(0)[:-1]])
    keys = int((shapes[:, 0] * shapes[:, 1]).sum())
    g = torch.Generator().manual_seed(0)
    # As aclnn_bench's "encoder" case: a uniform reference point per query, offsets in [-0.05, 0.05) per point.
    value = (torch.rand(2, keys, 8, 32, generator=g) * 2 - 1).requires_grad_()
    reference = torch.rand(2, keys, 1, 1, 1, 2, generator=g)
    offsets = (torch.rand(2, keys, 8, 4, 4, 2, generator=g) - 0.5) * 0.1
    locations = (reference + offsets).requires_grad_()
    weights = torch.softmax(torch.randn(2, keys, 8, 16, generator=g), -1).reshape(2, keys, 8, 4, 4).requires_grad_()
    grad = torch.randn(2, keys, 256, generator=g)

    def step():
        for tensor in (value, locations, weights):
            tensor.grad = None  # as optimizer.zero_grad(set_to_none=True): no accumulation into old gradients
        out = pa.multi_scale_deformable_attn(value, shapes, starts, locations, weights)
        out.backward(grad)

    step()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    print(f"MSDA encoder training step (forward + backward) from Python: median {np.median(times) * 1e3:.1f} ms, "
          f"best {min(times) * 1e3:.1f} ms (compare aclnn_bench's MsdaForward/FLOAT/encoder + "
          f"MsdaBackward/FLOAT/encoder fresh_calls)")


def cuda_call_costs(x, mask, with_profile=False):
    """The host's time per call on CUDA tensors (calls queued on PyTorch's stream, one synchronisation at the end),
    against PyTorch's own softmax on the same tensor: what the package adds to a framework call."""
    x, mask = x.cuda(), mask.cuda()

    def queued(function):
        def calls():
            for _ in range(200):
                function()
            torch.cuda.synchronize()

        return best_per_call_us(calls, calls=10) / 200

    # The bare sequence through ctypes: phase 1 and phase 2 on the aclrtStream over PyTorch's current stream, with
    # the aclTensors made once (what a C program calling us on that stream pays).
    y = torch.empty_like(x)
    tx, tm, ty = AclTensor(x, "x"), AclTensor(mask, "mask"), AclTensor(y, "y")
    pa.scaled_masked_softmax(x, mask)  # opens the device and wraps the stream
    device = api().gpus[x.device.index]
    stream = device.native_streams[torch.cuda.current_stream().cuda_stream]
    api().aclrtSetCurrentContext(device.context)

    def bare():
        size, executor = api()._phase1("aclnnScaledMaskedSoftmax", (tx.handle, tm.handle, 1.0, False, ty.handle))
        api().check("aclnnScaledMaskedSoftmax", api().phase2["aclnnScaledMaskedSoftmax"](None, size, executor, stream))

    with torch.no_grad():
        direct = queued(bare)
        ours = queued(lambda: pa.scaled_masked_softmax(x, mask))
        theirs = queued(lambda: torch.softmax(x, -1))
        real_run = api().run
        api().run = lambda *arguments: None
        try:
            own = queued(lambda: pa.scaled_masked_softmax(x, mask))
        finally:
            api().run = real_run
    print(f"softmax (1, 2, 4, 16) FLOAT on {torch.cuda.get_device_name()} (host time per call, queued on PyTorch's "
          f"stream): C sequence through ctypes {direct:.1f} us, portable_aclnn function {ours:.1f} us (Python layer "
          f"+{ours - direct:.1f} us; its own work, run() skipped, {own:.1f} us), torch.softmax {theirs:.1f} us")
    if with_profile:
        with torch.no_grad():
            profile("softmax (1, 2, 4, 16) on CUDA tensors", lambda: pa.scaled_masked_softmax(x, mask), calls=5000)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
