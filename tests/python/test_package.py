"""The package's structure and the behaviours issue 48 settled: operator modules found by discovery, mask=None, which
errors unsupported dtypes raise, the command line's required attributes, and (under scripts/python_package_check.sh)
that the installed package runs on its own libraries."""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import portable_aclnn as pa
from portable_aclnn import ops
from portable_aclnn._library import api
from portable_aclnn.compat import torch_npu


def softmax_reference(x, mask, scale):
    logits = np.where(mask, -10000.0, np.asarray(x, np.float64) * scale)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --------------------------------------------------------------------------------------------------------------
# Operator modules

def test_every_operator_module_is_one_folder_and_fills_every_table():
    names = {module.__name__.rsplit(".", 1)[1] for module in ops.modules()}
    assert {"grid_sampler2d", "msda", "nsa_compress", "scaled_masked_softmax"} <= names
    # Each module is named after a C operator's folder (checked where the source tree is at hand).
    source_ops = os.path.join(os.path.dirname(pa.__file__), "..", "..", "src", "ops")
    if os.path.isdir(source_ops):
        assert names <= set(os.listdir(source_ops)), names - set(os.listdir(source_ops))
    table = ops.entries()
    assert set(table) == set(pa.__all__) - {"AclnnError"}
    for name, entry in table.items():
        assert getattr(pa, name) is entry.public
        assert hasattr(torch.ops.portable_aclnn, name)
    aclnn = {call.name for call in ops.aclnn_calls()}
    assert aclnn == set(api().phase1) == set(api().phase2)
    # Each module declares exactly the aclnn functions its C folder defines (a forward, and a backward where CANN has
    # one): read from src/ops/<op>/*_api.cpp where the source tree is at hand, so no list is kept here.
    for module in ops.modules():
        declared = {call.name for call in module.ACLNN}
        assert 1 <= len(declared) <= 2, module.__name__
        folder = os.path.join(source_ops, module.__name__.rsplit(".", 1)[1])
        if os.path.isdir(folder):
            defined = set()
            for source in os.listdir(folder):
                if source.endswith("_api.cpp"):
                    with open(os.path.join(folder, source), encoding="utf-8") as f:
                        defined |= set(re.findall(r'extern "C" aclnnStatus (aclnn\w+)GetWorkspaceSize\(', f.read()))
            assert declared == defined, (module.__name__, declared, defined)


def test_a_new_operator_module_is_all_it_takes(tmp_path):
    # A copy of the package with one more module in ops/: its function appears as portable_aclnn.<name>, in
    # torch.ops.portable_aclnn (with its schema and fake kernel) and on the command line, with nothing else edited.
    package = os.path.dirname(pa.__file__)
    shutil.copytree(package, tmp_path / "portable_aclnn", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "portable_aclnn" / "ops" / "twice.py").write_text(
        "from .._operator import REQUIRED, Entry\n"
        "ACLNN = ()\n"
        "def twice(x, factor):\n"
        "    return x * 2 * factor\n"
        "ENTRIES = (Entry(name='twice', public=twice, function=twice, schema='(Tensor x, float factor) -> Tensor',\n"
        "                 fake=lambda x, factor: x.new_empty(x.shape), inputs=('x',),\n"
        "                 attributes={'factor': REQUIRED}, outputs=('y',)),)\n")
    code = ("import numpy as np, torch, portable_aclnn as pa\n"
            "assert pa.twice(np.ones(2), 1.5).tolist() == [3.0, 3.0]\n"
            "assert torch.ops.portable_aclnn.twice(torch.ones(2), 2.0).tolist() == [4.0, 4.0]\n"
            "assert torch.ops.portable_aclnn.twice(torch.ones(3, device='meta'), 2.0).shape == (3,)\n"
            "assert 'twice' in pa.__all__\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path),
               PORTABLE_ACLNN_LIBRARY_DIR=os.path.dirname(api().library_paths["opapi"]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr
    listed = subprocess.run([sys.executable, "-m", "portable_aclnn", "list"], capture_output=True, text=True, env=env,
                            cwd=tmp_path)
    assert "twice\n  inputs: x\n  attributes: factor (required)\n  outputs: y" in listed.stdout, listed.stdout


# --------------------------------------------------------------------------------------------------------------
# mask=None is no mask (the schema's Tensor? mask; torch_npu)

def test_softmax_mask_none_is_no_mask():
    g = torch.Generator().manual_seed(50)
    from portable_aclnn.ops import scaled_masked_softmax

    scaled_masked_softmax._FALSE.clear()  # made afresh below
    with torch.inference_mode():  # the no-mask element made here must still serve autograd below
        pa.scaled_masked_softmax(torch.zeros(1, 1, 5, 33), None)
    x = (torch.rand(2, 3, 5, 33, generator=g) * 6 - 3).requires_grad_()
    no_mask = np.zeros((1, 1, 5, 33), bool)
    y = pa.scaled_masked_softmax(x, None, 0.8)
    expected = softmax_reference(x.detach().numpy(), no_mask, 0.8)
    assert np.allclose(y.detach().numpy(), expected, rtol=0, atol=2e-6)
    assert torch.equal(y, pa.scaled_masked_softmax(x, torch.zeros(1, 1, 5, 33, dtype=torch.bool), 0.8))
    assert torch.equal(y, torch.ops.portable_aclnn.scaled_masked_softmax(x, None, 0.8))
    assert torch.equal(y, torch_npu.npu_scaled_masked_softmax(x, None, 0.8))
    dy = torch.rand(y.shape, generator=g)
    y.backward(dy)
    grad = pa.scaled_masked_softmax_backward(dy, y.detach(), None, 0.8)
    assert torch.equal(x.grad, grad)
    y64 = torch.softmax(x.detach().double() * 0.8, -1)
    expected_grad = 0.8 * y64 * (dy.double() - (dy.double() * y64).sum(-1, keepdim=True))
    assert torch.allclose(grad.double(), expected_grad, rtol=0, atol=1e-6)
    y_numpy = pa.scaled_masked_softmax(x.detach().numpy(), None, 0.8)
    assert isinstance(y_numpy, np.ndarray) and np.array_equal(y_numpy, y.detach().numpy())


# --------------------------------------------------------------------------------------------------------------
# Errors for dtypes, as docs/python.md says

def test_a_dtype_the_operator_does_not_take_is_an_aclnn_error():
    with pytest.raises(pa.AclnnError) as error:
        pa.scaled_masked_softmax(torch.zeros(1, 1, 2, 4, dtype=torch.float64), None)
    assert error.value.status == 161002 and "DOUBLE" in error.value.message, error.value.message
    with pytest.raises(pa.AclnnError) as error:
        pa.nsa_compress(np.zeros((64, 1, 16), np.float32), np.zeros((32, 1), np.float32), 32, 16)
    assert error.value.status == 161002 and "FLOAT" in error.value.message


@pytest.mark.parametrize("dtype", [torch.complex64, torch.uint8, torch.int16])
def test_a_dtype_aclnn_has_no_code_for_is_a_type_error(dtype):
    with pytest.raises(TypeError, match="is not supported"):
        pa.grid_sample(torch.zeros(1, 1, 2, 2, dtype=dtype), torch.zeros(1, 1, 1, 2))
    with pytest.raises(TypeError, match="is not supported"):
        pa.grid_sample(np.zeros((1, 1, 2, 2), np.uint16), np.zeros((1, 1, 1, 2)))


# --------------------------------------------------------------------------------------------------------------
# The command line

def cli(*args, cwd=None):
    env = dict(os.environ)
    if env.get("PYTHONPATH"):  # absolute, for another working directory
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return subprocess.run([sys.executable, "-m", "portable_aclnn", *args], capture_output=True, text=True, cwd=cwd,
                          env=env)


def test_cli_list_marks_required_attributes_and_run_asks_for_them(tmp_path):
    listed = cli("list").stdout
    assert "attributes: compress_block_size (required), compress_stride (required), actual_seq_len=null" in listed
    assert "attributes: scale=1.0, fixed_triu_mask=false" in listed
    assert "=None" not in listed
    np.save(tmp_path / "input.npy", np.zeros((64, 1, 16), np.float16))
    np.save(tmp_path / "weight.npy", np.zeros((32, 1), np.float16))
    result = cli("run", "nsa_compress", "--input", f"input={tmp_path / 'input.npy'}", "--input",
                 f"weight={tmp_path / 'weight.npy'}", "--attr", "compress_stride=16", "--output-dir", str(tmp_path))
    assert result.returncode == 2 and "['compress_block_size'] must be given" in result.stderr, result.stderr


def test_cli_help_example_makes_its_inputs_and_runs(tmp_path):
    # The help's example, as a new user would copy it: the command that makes x.npy and mask.bin, then the run.
    epilog = cli("--help").stdout
    make = epilog[epilog.index("python3 -c '") + len("python3 -c '"):]
    make = make[:make.index("'\n")]
    subprocess.run([sys.executable, "-c", make.replace("\n  ", "\n")], check=True, cwd=tmp_path)
    assert (tmp_path / "x.npy").exists() and (tmp_path / "mask.bin").stat().st_size == 4 * 128 * 128
    result = cli("run", "scaled_masked_softmax", "--input", "x=x.npy", "--input",
                 "mask=mask.bin:shape=4x1x128x128:dtype=bool", "--attr", "scale=0.125", "--output-dir", "out",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    y = np.load(tmp_path / "out" / "y.npy")
    expected = softmax_reference(np.load(tmp_path / "x.npy"),
                                 np.fromfile(tmp_path / "mask.bin", bool).reshape(4, 1, 128, 128), 0.125)
    assert y.shape == (4, 8, 128, 128) and np.allclose(y, expected, rtol=0, atol=2e-3)


# --------------------------------------------------------------------------------------------------------------
# An installed package (scripts/python_package_check.sh sets PORTABLE_ACLNN_EXPECT_INSTALLED=1)

@pytest.mark.skipif(os.environ.get("PORTABLE_ACLNN_EXPECT_INSTALLED") != "1",
                    reason="checks a pip-installed package (scripts/python_package_check.sh)")
def test_the_installed_package_runs_on_its_own_libraries(tmp_path):
    package = os.path.dirname(os.path.abspath(pa.__file__))
    assert os.sep + "site-packages" + os.sep in package, package
    for name, path in api().library_paths.items():
        assert os.path.dirname(path) == os.path.join(package, "lib"), (name, path)
    from portable_aclnn import _build_info

    assert _build_info.LIBRARIES_BUNDLED and "-DCMAKE_BUILD_TYPE=Release" in _build_info.CMAKE_ARGUMENTS
    # Relocatable: the libraries moved elsewhere still find each other (RUNPATH $ORIGIN), libopapi loaded first.
    moved = tmp_path / "moved"
    shutil.copytree(os.path.join(package, "lib"), moved)
    code = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('loaded')"
    result = subprocess.run([sys.executable, "-c", code, str(moved / "libopapi.so.0")], capture_output=True, text=True,
                            env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    assert result.returncode == 0 and "loaded" in result.stdout, result.stderr
