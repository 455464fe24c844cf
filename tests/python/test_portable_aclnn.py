"""Tests of the Python package as a whole: torch.library, CUDA tensors, errors, the devices it picks, the command
line. Each operator's own tests are src/ops/<op>/test/test_<op>_python.py."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from package_test_util import (FLOAT_DTYPES, close, cuda_runs_here, msda_problem, needs_cuda, softmax_grad_reference,
                               softmax_reference)


# --------------------------------------------------------------------------------------------------------------
# torch.library: torch.ops.portable_aclnn.*

OPS = torch.ops.portable_aclnn
TORCH_VERSION = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


def library_cases(device="cpu"):
    """(name, forward through torch.ops, the same through the package's function, differentiable inputs), with
    every tensor on device (the same values on every device)."""
    g = torch.Generator().manual_seed(21)
    x = torch.randn(2, 3, 4, 8, generator=g)
    mask = torch.rand(1, 3, 4, 8, generator=g) > 0.7
    image = torch.randn(2, 3, 5, 6, generator=g)
    grid = torch.rand(2, 4, 3, 2, generator=g) * 2.2 - 1.1
    value, shapes, starts, locations, weights = msda_problem(torch.float32, 22)
    tokens = torch.randn(100, 2, 24, generator=g).half()
    nsa_weight = (torch.rand(32, 2, generator=g) / 8).half()
    x, mask, image, grid, value, shapes, starts, locations, weights, tokens, nsa_weight = (
        t.to(device) for t in (x, mask, image, grid, value, shapes, starts, locations, weights, tokens, nsa_weight))
    return [
        ("scaled_masked_softmax", lambda a: OPS.scaled_masked_softmax(a, mask, 0.5),
         lambda a: pa.scaled_masked_softmax(a, mask, 0.5), [x]),
        ("scaled_masked_softmax triu", lambda a: OPS.scaled_masked_softmax(a, None, 2.0, True),
         lambda a: pa.scaled_masked_softmax(a, None, 2.0, True), [x]),
        ("grid_sample", lambda a, b: OPS.grid_sample(a, b, "bicubic", "reflection", True),
         lambda a, b: pa.grid_sample(a, b, "bicubic", "reflection", True), [image, grid]),
        ("grid_sample defaults", lambda a, b: OPS.grid_sample(a, b), lambda a, b: pa.grid_sample(a, b),
         [image, grid]),
        ("multi_scale_deformable_attn", lambda v, loc, w: OPS.multi_scale_deformable_attn(v, shapes, starts, loc, w),
         lambda v, loc, w: pa.multi_scale_deformable_attn(v, shapes, starts, loc, w), [value, locations, weights]),
        ("nsa_compress", lambda a, w: OPS.nsa_compress(a, w, 32, 16, [40, 40, 100]),
         lambda a, w: pa.nsa_compress(a, w, 32, 16, [40, 40, 100]), [tokens, nsa_weight]),
    ]


@pytest.mark.parametrize("case", library_cases(), ids=lambda case: case[0])
def test_torch_library_ops_match_the_functions_with_autograd(case):
    _, through_ops, through_package, inputs = case
    ours = [t.clone().requires_grad_() for t in inputs]
    theirs = [t.clone().requires_grad_() for t in inputs]
    out = through_ops(*ours)
    expected = through_package(*theirs)
    assert out.grad_fn is not None and torch.equal(out, expected)
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(23)).to(out.dtype)
    out.backward(dy)
    expected.backward(dy)
    for a, b in zip(ours, theirs):
        assert torch.equal(a.grad, b.grad)
    with torch.no_grad():
        assert torch.equal(through_ops(*inputs), expected.detach())


def test_torch_library_backward_ops_and_meta_shapes():
    value, shapes, starts, locations, weights = msda_problem(torch.float32, 24)
    dy = torch.randn(2, locations.shape[1], value.shape[2] * value.shape[3])
    for a, b in zip(OPS.multi_scale_deformable_attn_backward(value, shapes, starts, locations, weights, dy),
                    pa.multi_scale_deformable_attn_backward(value, shapes, starts, locations, weights, dy)):
        assert torch.equal(a, b)
    image, grid = torch.randn(1, 2, 5, 6), torch.rand(1, 3, 4, 2) * 2 - 1
    grad = torch.randn(1, 2, 3, 4)
    input_grad, grid_grad = OPS.grid_sample_backward(grad, image, grid, "bilinear", "zeros", False, [False, True])
    assert torch.equal(input_grad, torch.zeros_like(image))  # not chosen: zeros
    assert torch.equal(grid_grad, pa.grid_sample_backward(grad, image, grid, output_mask=(False, True))[1])
    meta = {name: torch.empty(shape, device="meta") for name, shape in (
        ("x", (2, 3, 4, 8)), ("image", (2, 3, 5, 6)), ("grid", (2, 7, 9, 2)), ("value", (2, 42, 2, 8)),
        ("loc", (2, 7, 2, 2, 3, 2)), ("w", (2, 7, 2, 2, 3)), ("tokens", (100, 2, 24)), ("nsa_w", (32, 2)))}
    meta["x"].requires_grad_()
    assert OPS.scaled_masked_softmax(meta["x"], None, 1.0, True).shape == (2, 3, 4, 8)
    assert OPS.grid_sample(meta["image"], meta["grid"]).shape == (2, 3, 7, 9)
    assert OPS.multi_scale_deformable_attn(meta["value"], shapes, starts, meta["loc"], meta["w"]).shape == (2, 7, 16)
    assert OPS.nsa_compress(meta["tokens"], meta["nsa_w"], 32, 16, [40, 40, 100]).shape == (3, 2, 24)
    assert OPS.nsa_compress(meta["tokens"], meta["nsa_w"], 32, 16).shape == (5, 2, 24)
    assert [t.shape for t in OPS.nsa_compress_backward(torch.empty(5, 2, 24, device="meta"), meta["tokens"],
                                                       meta["nsa_w"], 32, 16)] == [(100, 2, 24), (32, 2)]


def test_torch_library_ops_in_torchscript_and_fx():
    def model(x, mask, image, grid):
        return OPS.scaled_masked_softmax(x, mask, 0.5, False).sum() + OPS.grid_sample(image, grid).sum()

    x, mask = torch.randn(1, 2, 4, 8), torch.rand(1, 1, 4, 8) > 0.5
    image, grid = torch.randn(1, 2, 5, 6), torch.rand(1, 3, 4, 2) * 2 - 1
    assert torch.equal(torch.jit.script(model)(x, mask, image, grid), model(x, mask, image, grid))
    traced = torch.fx.symbolic_trace(model)
    targets = {str(node.target) for node in traced.graph.nodes if node.op == "call_function"}
    assert {"portable_aclnn.scaled_masked_softmax", "portable_aclnn.grid_sample"} <= targets, targets


@pytest.mark.skipif(TORCH_VERSION < (2, 4), reason="torch.compile of custom operators needs PyTorch >= 2.4 "
                    "(register_fake / register_autograd)")
def test_torch_compile_traces_the_ops_forward_and_backward():
    for name, through_ops, through_package, inputs in library_cases():
        compiled = torch.compile(through_ops, fullgraph=True, backend="aot_eager")
        ours = [t.clone().requires_grad_() for t in inputs]
        theirs = [t.clone().requires_grad_() for t in inputs]
        out, expected = compiled(*ours), through_package(*theirs)
        assert torch.equal(out, expected), name
        dy = torch.ones_like(out)
        out.backward(dy)
        expected.backward(dy)
        for a, b in zip(ours, theirs):
            assert torch.equal(a.grad, b.grad), name


# --------------------------------------------------------------------------------------------------------------
# CUDA tensors: the GPU's kernels, on PyTorch's current stream

# The GPU's kernels against the CPU's on the same inputs (the CPU's are checked against float64 above): they differ
# by their order of summation only.
CUDA_AGAINST_CPU = {torch.float32: 2e-5, torch.float16: 2e-3, torch.float64: 1e-12}


@needs_cuda
@pytest.mark.parametrize("index", range(len(library_cases())), ids=[case[0] for case in library_cases()])
def test_cuda_tensors_match_the_cpu_with_autograd_and_torch_ops(index):
    name, _, on_cpu, cpu_inputs = library_cases()[index]
    _, through_ops, on_gpu, gpu_inputs = library_cases("cuda")[index]
    cpu_leaves = [t.clone().requires_grad_() for t in cpu_inputs]
    gpu_leaves = [t.clone().requires_grad_() for t in gpu_inputs]
    ops_leaves = [t.clone().requires_grad_() for t in gpu_inputs]
    expected, out, out_ops = on_cpu(*cpu_leaves), on_gpu(*gpu_leaves), through_ops(*ops_leaves)
    assert out.is_cuda and out.dtype == expected.dtype and torch.equal(out, out_ops), name
    tolerance = CUDA_AGAINST_CPU[out.dtype]
    assert torch.allclose(out.cpu().double(), expected.detach().double(), rtol=tolerance, atol=tolerance), name
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(24)).to(out.dtype)
    expected.backward(dy)
    out.backward(dy.cuda())
    out_ops.backward(dy.cuda())
    for cpu_leaf, gpu_leaf, ops_leaf in zip(cpu_leaves, gpu_leaves, ops_leaves):
        assert gpu_leaf.grad.is_cuda and torch.equal(gpu_leaf.grad, ops_leaf.grad), name
        scale = float(cpu_leaf.grad.double().abs().max()) + 1.0
        assert torch.allclose(gpu_leaf.grad.cpu().double(), cpu_leaf.grad.double(), rtol=tolerance,
                              atol=tolerance * scale), name


@needs_cuda
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cuda_softmax_against_float64(dtype):
    g = torch.Generator().manual_seed(31)
    x = (torch.rand(2, 3, 17, 300, generator=g) * 8 - 4).to(dtype)
    mask = torch.rand(2, 1, 17, 300, generator=g) < 0.3
    y = pa.scaled_masked_softmax(x.cuda(), mask.cuda(), 0.7)
    assert y.is_cuda and y.dtype == dtype
    close(y.cpu(), softmax_reference(x.double().numpy(), mask.numpy(), 0.7), dtype, scale=0.0)


@needs_cuda
def test_cuda_grid_sample_gradcheck_in_double():
    g = torch.Generator().manual_seed(32)
    image = torch.randn(1, 2, 5, 4, generator=g, dtype=torch.float64).cuda().requires_grad_()
    grid = (torch.rand(1, 3, 3, 2, generator=g, dtype=torch.float64) * 1.6 - 0.8).cuda().requires_grad_()
    for mode in ("bilinear", "bicubic"):
        expected = torch.nn.functional.grid_sample(image, grid, mode, "border", align_corners=True)
        close(pa.grid_sample(image, grid, mode, "border", True).detach().cpu(), expected.detach().cpu().numpy(),
              torch.float64)
        assert torch.autograd.gradcheck(lambda a, b: pa.grid_sample(a, b, mode, "border", True), (image, grid))


@needs_cuda
@pytest.mark.parametrize("side_stream", [False, True], ids=["default stream", "side stream"])
def test_cuda_calls_run_on_the_current_stream_without_waiting(side_stream):
    g = torch.Generator().manual_seed(33)
    x_host = torch.randn(4, 8, 64, 512, generator=g)
    mask_host = torch.rand(4, 1, 64, 512, generator=g) < 0.2
    stream = torch.cuda.Stream() if side_stream else torch.cuda.current_stream()
    with torch.cuda.stream(stream):
        x, mask = x_host.cuda(), mask_host.cuda()
        torch.cuda._sleep(400_000_000)  # keeps the stream busy for a while (~0.2-0.3 s)
        x = x * 2.0  # written after the sleep: read too early, the call would see the copy's values
        y = pa.scaled_masked_softmax(x, mask, 0.5)
        busy = not stream.query()  # the call returned while the stream still runs the sleep: it did not wait
        z = y * 3.0
    stream.synchronize()
    assert busy
    close((z / 3.0).cpu(), softmax_reference((x_host * 2.0).double().numpy(), mask_host.numpy(), 0.5),
          torch.float32, scale=0.0)


@needs_cuda
def test_cuda_and_host_tensors_in_one_call_are_refused():
    with pytest.raises(ValueError, match="must all be on one device"):
        pa.grid_sample(torch.zeros(1, 1, 2, 2, device="cuda"), torch.zeros(1, 1, 1, 2))
    with pytest.raises(ValueError, match="must all be on one device"):
        pa.scaled_masked_softmax(torch.zeros(1, 1, 2, 4, device="cuda"), torch.zeros(1, 1, 2, 4, dtype=torch.bool))


@needs_cuda
@pytest.mark.skipif(TORCH_VERSION < (2, 4), reason="torch.compile of custom operators needs PyTorch >= 2.4")
def test_torch_compile_on_cuda_tensors():
    for name, through_ops, through_package, inputs in library_cases("cuda"):
        compiled = torch.compile(through_ops, fullgraph=True, backend="aot_eager")
        ours = [t.clone().requires_grad_() for t in inputs]
        theirs = [t.clone().requires_grad_() for t in inputs]
        out, expected = compiled(*ours), through_package(*theirs)
        assert out.is_cuda and torch.equal(out, expected), name
        out.backward(torch.ones_like(out))
        expected.backward(torch.ones_like(expected))
        for a, b in zip(ours, theirs):
            assert torch.equal(a.grad, b.grad), name


def test_large_host_outputs_come_from_the_pool_and_are_reused():
    # Outputs of 1 MiB and more live in the CPU device's aclrtMalloc blocks (kept when freed): a training loop's
    # outputs and gradients map no fresh pages each step. They are ordinary tensors otherwise.
    import gc

    g = torch.Generator().manual_seed(41)
    x = (torch.rand(2, 4, 128, 512, generator=g) * 8 - 4).requires_grad_()  # 2 MiB of FLOAT
    mask = torch.rand(2, 1, 128, 512, generator=g) < 0.3
    y = pa.scaled_masked_softmax(x, mask, 0.5)
    close(y, softmax_reference(x.detach().numpy(), mask.numpy(), 0.5), torch.float32, scale=0.0)
    dy = torch.rand(y.shape, generator=g)
    y.backward(dy)
    close(x.grad, softmax_grad_reference(dy.numpy(), y.detach().numpy(), mask.numpy(), 0.5), torch.float32,
          scale=1e-2)
    first = y.data_ptr()
    del y
    gc.collect()
    again = pa.scaled_masked_softmax(x.detach(), mask, 0.5)
    assert again.data_ptr() == first  # the freed block, reused
    again.add_(1.0)  # an ordinary tensor: writable, with views
    assert again[:, :, :4].contiguous().shape == (2, 4, 4, 512)


# --------------------------------------------------------------------------------------------------------------
# Errors

def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="mode must be one of"):
        pa.grid_sample(torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 1, 2), mode="linear")
    with pytest.raises(pa.AclnnError) as error:
        pa.nsa_compress(torch.zeros(64, 1, 16), torch.zeros(32, 1), 32, 16)  # FLOAT: FLOAT16/BFLOAT16 only
    assert error.value.status == 161002 and "aclnnNsaCompress" in str(error.value)
    with pytest.raises(pa.AclnnError) as error:
        pa.scaled_masked_softmax(torch.zeros(1, 1, 2, 3), torch.zeros(1, 1, 2, 4, dtype=torch.bool))
    assert error.value.status == 161002 and "mask" in error.value.message
    with pytest.raises(TypeError, match="expected a torch.Tensor or numpy.ndarray"):
        pa.scaled_masked_softmax([[1.0]], None, fixed_triu_mask=True)
    with pytest.raises(ValueError, match="tensors on meta are not supported"):
        pa.grid_sample(torch.zeros(1, 1, 2, 2, device="meta"), torch.zeros(1, 1, 1, 2, device="meta"))
    # A NumPy index array beside torch tensors becomes a tensor on their device (here the CPU): no mixed kinds.
    value, shapes, starts, locations, weights = msda_problem(torch.float32, 12)
    assert torch.equal(pa.multi_scale_deformable_attn(value, shapes.numpy(), starts.tolist(), locations, weights),
                       pa.multi_scale_deformable_attn(value, shapes, starts, locations, weights))


def test_numpy_works_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import numpy as np, portable_aclnn as pa\n"
            "y = pa.scaled_masked_softmax(np.zeros((1, 1, 2, 4), np.float32), np.zeros((1, 1, 2, 4), bool))\n"
            "assert np.allclose(y, 0.25), y\n"
            "print('ok')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_the_package_picks_the_gpus_and_the_cpu_unless_told():
    # Unset, ACLNN_DEVICE means "auto": the GPUs alone where a CUDA build finds one, which would refuse host memory;
    # the package asks for both ("cuda,cpu"). A choice the program made stays, with a clear error where it leaves
    # host memory no device.
    code = ("import os, numpy as np, portable_aclnn as pa\n"
            "try:\n"
            "    y = pa.scaled_masked_softmax(np.zeros((1, 1, 2, 4), np.float32), np.zeros((1, 1, 2, 4), bool))\n"
            "    assert np.allclose(y, 0.25), y\n"
            "    print('ran', os.environ.get('ACLNN_DEVICE'))\n"
            "except ValueError as error:\n"
            "    assert 'host memory needs the CPU device' in str(error), error\n"
            "    print('refused', os.environ.get('ACLNN_DEVICE'))\n")
    gpus_here = cuda_runs_here()
    for preset, expected in ((None, "ran cuda,cpu"), ("cpu", "ran cpu"), ("cuda,cpu", "ran cuda,cpu"),
                             ("auto", "refused auto" if gpus_here else "ran auto")):
        env = {k: v for k, v in os.environ.items() if k != "ACLNN_DEVICE"}
        if preset is not None:
            env["ACLNN_DEVICE"] = preset
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert result.returncode == 0 and " ".join(result.stdout.split()[-2:]) == expected, (
            preset, result.stdout, result.stderr)


# --------------------------------------------------------------------------------------------------------------
# The command-line tool

def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "portable_aclnn", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ))


def test_cli_runs_on_npy_and_raw_files_and_compares(tmp_path):
    rng = np.random.default_rng(10)
    x = rng.uniform(-2, 2, (2, 2, 3, 20)).astype(np.float16)
    mask = rng.uniform(size=(2, 1, 3, 20)) < 0.3
    np.save(tmp_path / "x.npy", x)
    mask.tofile(tmp_path / "mask.bin")
    result = cli("run", "scaled_masked_softmax", "--input", f"x={tmp_path / 'x.npy'}",
                 "--input", f"mask={tmp_path / 'mask.bin'}:shape=2x1x3x20:dtype=bool", "--attr", "scale=0.5",
                 "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    y = np.load(tmp_path / "out" / "y.npy")
    golden = softmax_reference(x, mask, 0.5)
    np.save(tmp_path / "golden.npy", golden)
    passed = cli("compare", str(tmp_path / "out" / "y.npy"), str(tmp_path / "golden.npy"))
    assert passed.returncode == 0 and "PASS" in passed.stdout, passed.stdout + passed.stderr
    np.save(tmp_path / "wrong.npy", (golden * 1.01).astype(np.float16))
    failed = cli("compare", str(tmp_path / "wrong.npy"), str(tmp_path / "golden.npy"))
    assert failed.returncode == 1 and "FAIL" in failed.stdout
    close(y, golden, torch.float16, scale=0.0)


def test_cli_case_file_and_errors(tmp_path):
    rng = np.random.default_rng(11)
    np.save(tmp_path / "input.npy", rng.standard_normal((1, 2, 5, 6)))
    np.save(tmp_path / "grid.npy", rng.uniform(-1, 1, (1, 3, 4, 2)))
    (tmp_path / "case.json").write_text(json.dumps({
        "op": "grid_sample", "inputs": {"input": "input.npy", "grid": "grid.npy"},
        "attrs": {"mode": "bicubic", "align_corners": True}, "output_dir": "results"}))
    result = cli("run", "--case", str(tmp_path / "case.json"))
    assert result.returncode == 0, result.stderr
    ours = np.load(tmp_path / "results" / "output.npy")
    theirs = torch.nn.functional.grid_sample(torch.from_numpy(np.load(tmp_path / "input.npy")),
                                             torch.from_numpy(np.load(tmp_path / "grid.npy")), "bicubic", "zeros",
                                             True)
    close(ours, theirs.numpy(), torch.float64)
    bad = cli("run", "grid_sample", "--input", f"input={tmp_path / 'input.npy'}")
    assert bad.returncode == 2 and "missing ['grid']" in bad.stderr
    assert cli("--help").returncode == 0 and "examples:" in cli("--help").stdout
    assert "nsa_compress_backward" in cli("list").stdout
