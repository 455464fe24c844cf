"""One process of test_data_parallel.py: a training step of a small model that uses portable_aclnn's masked softmax
and deformable attention, under DistributedDataParallel (gloo, CPU) when world_size > 1, on this rank's share of a
fixed batch; then a measurement of how many threads a large deformable-attention call keeps busy.

    python3 ddp_worker.py RANK WORLD_SIZE STORE_FILE OUTPUT_FILE

Writes {"grads": {name: tensor}, "num_threads": the package's choice, "env": ACLNN_NUM_THREADS, "busy": threads
busy during the call, "cpus": CPUs of this process} with torch.save.
"""

import math
import os
import sys
import time

import torch
import torch.distributed as dist

import portable_aclnn as pa
from portable_aclnn._library import api

BATCH, TOKENS, D_MODEL, HEADS, LEVELS, POINTS = 4, 12, 32, 4, 2, 3
SHAPES = torch.tensor([[8, 6], [4, 3]])
STARTS = torch.tensor([0, 48])


class Model(torch.nn.Module):
    """Self-attention through pa.scaled_masked_softmax, then deformable attention over a feature map through
    pa.multi_scale_deformable_attn."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.offsets = torch.nn.Linear(D_MODEL, HEADS * LEVELS * POINTS * 2)
        self.weights = torch.nn.Linear(D_MODEL, HEADS * LEVELS * POINTS)
        self.value = torch.nn.Linear(D_MODEL, D_MODEL)
        self.out = torch.nn.Linear(D_MODEL, D_MODEL)

    def forward(self, tokens, mask, features, reference_points):
        b, s, d = tokens.shape
        q, k, v = self.qkv(tokens).view(b, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        attention = pa.scaled_masked_softmax(q @ k.transpose(-1, -2), mask, 1 / math.sqrt(d // HEADS))
        x = tokens + (attention @ v).transpose(1, 2).reshape(b, s, d)
        value = self.value(features).view(b, features.shape[1], HEADS, d // HEADS)
        offsets = torch.tanh(self.offsets(x)).view(b, s, HEADS, LEVELS, POINTS, 2) * 0.2
        locations = reference_points[:, :, None, None, None, :] + offsets
        weights = self.weights(x).view(b, s, HEADS, LEVELS * POINTS).softmax(-1).view(b, s, HEADS, LEVELS, POINTS)
        return self.out(pa.multi_scale_deformable_attn(value, SHAPES, STARTS, locations, weights))


def batch():
    g = torch.Generator().manual_seed(7)
    keys = int(SHAPES.prod(1).sum())
    return (torch.randn(BATCH, TOKENS, D_MODEL, generator=g),
            torch.rand(BATCH, 1, TOKENS, TOKENS, generator=g) < 0.2,
            torch.randn(BATCH, keys, D_MODEL, generator=g),
            torch.rand(BATCH, TOKENS, 2, generator=g),
            torch.randn(BATCH, TOKENS, D_MODEL, generator=g))


def thread_cpu_seconds():
    """CPU seconds of each thread of this process, by thread id (from /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    times = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        times[tid] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return times


def busy_threads():
    """How many threads a large deformable-attention forward keeps busy: those with at least a third of the CPU time
    of the busiest thread. Relative to the busiest thread rather than to the wall time, so that a machine shared with
    other work (CI runs a build beside these tests) slows every thread alike and changes nothing; the calls repeat
    until the busiest thread has run 0.3 s (the clock's tick is 10 ms) or 20 s have passed."""
    g = torch.Generator().manual_seed(3)
    shapes = torch.tensor([[100, 150], [50, 75]])
    starts = torch.tensor([0, 15000])
    value = torch.rand(1, 18750, 8, 32, generator=g)
    locations = torch.rand(1, 6000, 8, 2, 4, 2, generator=g)
    weights = torch.rand(1, 6000, 8, 2, 4, generator=g)
    pa.multi_scale_deformable_attn(value, shapes, starts, locations, weights)  # warm: threads started
    before, start = thread_cpu_seconds(), time.perf_counter()
    while True:
        pa.multi_scale_deformable_attn(value, shapes, starts, locations, weights)
        used = [seconds - before.get(tid, 0.0) for tid, seconds in thread_cpu_seconds().items()]
        if max(used) >= 0.3 or time.perf_counter() - start > 20.0:
            break
    return sum(1 for seconds in used if seconds > 0 and seconds >= max(used) / 3)


def main():
    rank, world_size, store, output = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    torch.manual_seed(0)
    model = Model()
    tokens, mask, features, reference_points, target = batch()
    share = slice(rank * BATCH // world_size, (rank + 1) * BATCH // world_size)
    if world_size > 1:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
        model = torch.nn.parallel.DistributedDataParallel(model)
    loss = torch.nn.functional.mse_loss(model(tokens[share], mask[share], features[share], reference_points[share]),
                                        target[share])
    loss.backward()  # DDP: gradients averaged over the ranks, as one process's on the whole batch
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    result = {"grads": {name.replace("module.", "", 1): g for name, g in grads.items()},
              "num_threads": api().num_threads, "env": os.environ.get("ACLNN_NUM_THREADS"), "busy": busy_threads(),
              "cpus": len(os.sched_getaffinity(0))}
    if world_size > 1:
        dist.barrier()
        dist.destroy_process_group()
    torch.save(result, output)


if __name__ == "__main__":
    main()
