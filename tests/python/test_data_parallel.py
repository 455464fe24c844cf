"""Data parallel training on the CPU: two processes under DistributedDataParallel (gloo), each with its share of the
CPUs as torchrun gives it (OMP_NUM_THREADS), against one process on the whole batch (ddp_worker.py)."""

import os
import subprocess
import sys

import pytest
import torch

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_worker.py")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ACLNN_NUM_THREADS",
                    "PORTABLE_ACLNN_NUM_THREADS_FROM_TORCH")


def clean_environment(**extra):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(extra)
    return env


def run_workers(tmp_path, world_size, env):
    store = tmp_path / f"store{world_size}"
    outputs = [tmp_path / f"rank{rank}of{world_size}.pt" for rank in range(world_size)]
    processes = [subprocess.Popen([sys.executable, WORKER, str(rank), str(world_size), str(store), str(output)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for rank, output in enumerate(outputs)]
    logs = [process.communicate(timeout=300)[0] for process in processes]
    for process, log in zip(processes, logs):
        assert process.returncode == 0, log
    return [torch.load(output) for output in outputs]


@pytest.mark.skipif(not torch.distributed.is_available(), reason="this PyTorch has no torch.distributed")
def test_two_process_ddp_step_equals_one_process_and_each_rank_uses_its_share(tmp_path):
    cpus = len(os.sched_getaffinity(0))
    share = max(1, cpus // 2)
    # One process, nothing set: the C library's default, every CPU of the process.
    (single,) = run_workers(tmp_path, 1, clean_environment())
    # Two ranks, as torchrun starts them: OMP_NUM_THREADS is each one's share of the CPUs.
    ranks = run_workers(tmp_path, 2, clean_environment(OMP_NUM_THREADS=str(share)))

    assert single["num_threads"] is None and single["env"] is None
    if cpus >= 2:
        assert single["busy"] >= 2, single["busy"]  # the measurement sees several threads where there are
    for rank in ranks:
        assert rank["num_threads"] == share and rank["env"] == str(share), rank
        assert 1 <= rank["busy"] <= share, (rank["busy"], share)

    assert set(ranks[0]["grads"]) == set(single["grads"])
    for name, expected in single["grads"].items():
        assert torch.equal(ranks[0]["grads"][name], ranks[1]["grads"][name]), name  # allreduce: the same on both
        assert torch.allclose(ranks[0]["grads"][name], expected, rtol=1e-4, atol=1e-6), (
            name, float((ranks[0]["grads"][name] - expected).abs().max()))
        assert float(expected.abs().max()) > 0, name  # every parameter takes part


def test_torch_set_num_threads_and_aclnn_num_threads(tmp_path):
    # torch.set_num_threads before the first call counts as set; ACLNN_NUM_THREADS, when given, wins; a value the
    # package chose in a parent process is not taken for the user's in a child.
    code = ("import os, sys, torch\n"
            "torch.set_num_threads(int(sys.argv[1])) if sys.argv[1] != '-' else None\n"
            "import numpy as np, portable_aclnn as pa\n"
            "from portable_aclnn._library import api\n"
            "pa.scaled_masked_softmax(np.zeros((1, 1, 2, 4), np.float32), None)\n"
            "print(api().num_threads, os.environ.get('ACLNN_NUM_THREADS'))\n")

    def run(argument, **extra):
        result = subprocess.run([sys.executable, "-c", code, argument], env=clean_environment(**extra),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    default = torch.get_num_interop_threads()  # PyTorch's default intra-op count too
    other = default + 1
    assert run(str(other)) == [str(other), str(other)]
    assert run("-") == ["None", "None"]
    assert run(str(other), ACLNN_NUM_THREADS="3") == ["3", "3"]
    assert run("-", ACLNN_NUM_THREADS="5", PORTABLE_ACLNN_NUM_THREADS_FROM_TORCH="5") == ["None", "None"]


def test_torch_set_num_threads_after_the_first_call_is_followed():
    # The kernels' count (paclGetNumThreads) follows torch.set_num_threads between calls, unless ACLNN_NUM_THREADS
    # is the user's.
    code = ("import ctypes, sys, torch, numpy as np, portable_aclnn as pa\n"
            "from portable_aclnn._library import api\n"
            "def kernels():\n"
            "    count = ctypes.c_int32(0)\n"
            "    get = ctypes.CDLL(api().library_paths['nnopbase']).paclGetNumThreads\n"
            "    assert get(ctypes.byref(count)) == 0\n"
            "    return count.value\n"
            "x = np.zeros((1, 1, 2, 4), np.float32)\n"
            "pa.scaled_masked_softmax(x, None)\n"
            "before = (api().num_threads, kernels())\n"
            "torch.set_num_threads(int(sys.argv[1]))\n"
            "pa.scaled_masked_softmax(x, None)\n"
            "print(before[0], before[1], api().num_threads, kernels())\n")

    def run(count, **extra):
        result = subprocess.run([sys.executable, "-c", code, str(count)], env=clean_environment(**extra),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    cpus = len(os.sched_getaffinity(0))
    assert run(3) == ["None", str(cpus), "3", "3"]
    assert run(3, ACLNN_NUM_THREADS="2") == ["2", "2", "2", "2"]
