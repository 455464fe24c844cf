"""python3 -m portable_aclnn: golden data from the command line (run an operator on files, compare with a golden).

The help text (`python3 -m portable_aclnn --help`, `... run --help`, `... compare --help`) documents the commands.
"""

import argparse
import json
import os
import sys

import numpy as np

from . import AclnnError
from ._operator import REQUIRED
from .ops import entries


# The operators: the entries of the operator modules (portable_aclnn/ops/): each entry's plain function, input names
# in order, attributes with defaults (REQUIRED: must be given) and output names.
OPERATORS = entries()

# CANN's single-golden precision criteria: MERE < threshold and MARE < 10 x threshold, where the relative error
# of an element is |actual - golden| / (|golden| + 1e-7).
THRESHOLDS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -13, "float64": 2.0 ** -13}
DTYPES = ["float32", "float16", "bfloat16", "float64", "bool", "int32", "int64"]

EPILOG = """examples:
  # inputs for the softmax below: x (4, 8, 128, 128) float16 as a .npy file, a mask (4, 1, 128, 128) as raw bool bytes
  python3 -c 'import numpy as np; rng = np.random.default_rng(0)
  np.save("x.npy", rng.standard_normal((4, 8, 128, 128)).astype(np.float16))
  (rng.random((4, 1, 128, 128)) < 0.1).tofile("mask.bin")'
  # softmax of x.npy under mask.bin (raw bytes: its shape and dtype given), outputs into out/ (out/y.npy)
  python3 -m portable_aclnn run scaled_masked_softmax --input x=x.npy \\
      --input mask=mask.bin:shape=4x1x128x128:dtype=bool --attr scale=0.125 --output-dir out
  # the same call described by a JSON case file (keys: op, inputs, attrs, output_dir)
  python3 -m portable_aclnn run --case case.json
  # compare an output with a golden file by CANN's criteria; exit status 0 when it passes, 1 when not
  python3 -m portable_aclnn compare out/y.npy golden_y.npy
  python3 -m portable_aclnn list    # every operator's inputs, attributes (defaults, or required) and outputs
"""


def parse_file_spec(spec):
    """'path[:shape=AxBxC][:dtype=D]' -> (path, shape or None, dtype or None)."""
    parts = spec.split(":")
    path, shape, dtype = parts[0], None, None
    for part in parts[1:]:
        key, _, value = part.partition("=")
        if key == "shape":
            shape = tuple(int(v) for v in value.split("x")) if value else ()
        elif key == "dtype":
            dtype = value
        else:
            raise ValueError(f"{spec}: unknown field {key!r} (expected shape= or dtype=)")
    return path, shape, dtype


def load_array(path, shape=None, dtype=None):
    """A .npy file, or a raw .bin file of the given shape and dtype (bfloat16 needs PyTorch)."""
    if path.endswith(".npy"):
        array = np.load(path)
        if dtype not in (None, "bfloat16") and array.dtype != np.dtype(dtype):
            raise ValueError(f"{path}: holds {array.dtype}, not {dtype}")
        if dtype == "bfloat16":
            return _as_bfloat16(array.astype(np.uint16), path)
        return array
    if shape is None or dtype is None:
        raise ValueError(f"{path}: a raw file needs :shape=...:dtype=... (or a .npy file)")
    if dtype not in DTYPES:
        raise ValueError(f"{path}: dtype {dtype!r} is not one of {DTYPES}")
    raw = np.fromfile(path, dtype=np.uint16 if dtype == "bfloat16" else np.dtype(dtype))
    expected = int(np.prod(shape)) if shape else 1
    if raw.size != expected:
        raise ValueError(f"{path}: holds {raw.size} elements of {dtype}, shape {shape} needs {expected}")
    raw = raw.reshape(shape)
    return _as_bfloat16(raw, path) if dtype == "bfloat16" else raw


def _as_bfloat16(bits, path):
    try:
        import torch
    except ImportError:
        raise ValueError(f"{path}: bfloat16 data needs PyTorch (NumPy has no bfloat16)") from None
    return torch.from_numpy(bits.astype(np.int16)).view(torch.bfloat16)


def save_array(array, path_stem):
    """Writes .npy (bfloat16: raw bits in .bin, as NumPy cannot hold it); returns the path."""
    if not isinstance(array, np.ndarray):
        import torch

        if array.dtype == torch.bfloat16:
            path = path_stem + ".bin"
            array.view(torch.int16).numpy().tofile(path)
            return path
        array = array.numpy()
    path = path_stem + ".npy"
    np.save(path, array)
    return path


def parse_value(text):
    """An attribute value from the command line: JSON (numbers, true/false, lists) or a plain string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def run(op, inputs, attrs, output_dir):
    if op not in OPERATORS:
        raise ValueError(f"unknown operator {op!r}; `list` shows them")
    entry = OPERATORS[op]
    function, input_names, defaults, output_names = (entry.function, list(entry.inputs), entry.attributes,
                                                     entry.outputs)
    missing = [name for name in input_names if name not in inputs]
    extra = sorted(set(inputs) - set(input_names))
    if missing or extra:
        raise ValueError(f"{op} takes inputs {input_names}; missing {missing}, unknown {extra}")
    unknown = sorted(set(attrs) - set(defaults))
    if unknown:
        raise ValueError(f"{op} takes attributes {sorted(defaults)}; unknown {unknown}")
    values = dict(defaults)
    values.update(attrs)
    unset = [name for name, value in values.items() if value is REQUIRED]
    if unset:
        raise ValueError(f"{op}: attributes {unset} must be given")
    arrays = [load_array(*inputs[name]) for name in input_names]
    results = function(*arrays, **values)
    if not isinstance(results, tuple):
        results = (results,)
    os.makedirs(output_dir, exist_ok=True)
    written = []
    for name, result in zip(output_names, results):
        if result is not None:
            written.append(save_array(result, os.path.join(output_dir, name)))
    return written


def compare(actual, golden, dtype):
    actual = np.asarray(_to_float64(actual), dtype=np.float64)
    golden = np.asarray(_to_float64(golden), dtype=np.float64)
    if actual.shape != golden.shape:
        raise ValueError(f"shapes differ: {actual.shape} against the golden {golden.shape}")
    relative = np.abs(actual - golden) / (np.abs(golden) + 1e-7)
    mere = float(relative.mean()) if relative.size else 0.0
    mare = float(relative.max()) if relative.size else 0.0
    threshold = THRESHOLDS[dtype]
    return mere, mare, threshold, mere < threshold and mare < 10 * threshold


def _to_float64(array):
    if isinstance(array, np.ndarray):
        return array.astype(np.float64)
    return array.double().numpy()


def _dtype_name(array):
    if isinstance(array, np.ndarray):
        return str(array.dtype)
    return str(array.dtype).replace("torch.", "")


def _describe_attribute(name, default):
    """`list`'s text for an attribute: name=default as JSON, or "name (required)"."""
    if default is REQUIRED:
        return f"{name} (required)"
    return f"{name}={json.dumps(default)}"


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m portable_aclnn", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Run portable-aclnn's operators on data files and compare outputs with golden files using "
                    "CANN's precision criteria (MERE < threshold, MARE < 10 x threshold; threshold 2^-10 float16, "
                    "2^-7 bfloat16, 2^-13 float32).")
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="run one operator on input files", epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    run_parser.add_argument("op", nargs="?", help="operator name (see `list`)")
    run_parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE[:shape=AxB][:dtype=D]",
                            help="an input: a .npy file, or a raw .bin file with its shape and dtype")
    run_parser.add_argument("--attr", action="append", default=[], metavar="NAME=VALUE",
                            help="an attribute (JSON value or string), e.g. scale=0.125, mode=bicubic, "
                                 "actual_seq_len=[512,1024]")
    run_parser.add_argument("--output-dir", default=".", help="where outputs are written (default: .)")
    run_parser.add_argument("--case", help="a JSON case file: {\"op\": ..., \"inputs\": {NAME: FILE-SPEC}, "
                                           "\"attrs\": {...}, \"output_dir\": ...}; relative paths are relative to it")
    compare_parser = commands.add_parser("compare", help="compare an output file with a golden file")
    compare_parser.add_argument("actual", help="FILE[:shape=AxB][:dtype=D]")
    compare_parser.add_argument("golden", help="FILE[:shape=AxB][:dtype=D]")
    compare_parser.add_argument("--dtype", choices=sorted(THRESHOLDS),
                                help="the threshold's dtype (default: the actual file's dtype)")
    commands.add_parser("list", help="list the operators, their inputs, attributes and outputs")
    args = parser.parse_args(argv)

    try:
        if args.command == "list":
            for name, operator in OPERATORS.items():
                print(f"{name}\n  inputs: {', '.join(operator.inputs)}\n  attributes: "
                      f"{', '.join(_describe_attribute(k, v) for k, v in operator.attributes.items()) or '-'}\n"
                      f"  outputs: {', '.join(operator.outputs)}")
            return 0
        if args.command == "run":
            if args.case:
                with open(args.case) as handle:
                    case = json.load(handle)
                base = os.path.dirname(os.path.abspath(args.case))
                op = case.get("op")
                inputs = {name: parse_file_spec(spec) for name, spec in case.get("inputs", {}).items()}
                inputs = {name: (os.path.join(base, p), s, d) for name, (p, s, d) in inputs.items()}
                attrs = case.get("attrs", {})
                output_dir = os.path.join(base, case.get("output_dir", "."))
            else:
                op = args.op
                inputs = {}
                for item in args.input:
                    name, _, spec = item.partition("=")
                    inputs[name] = parse_file_spec(spec)
                attrs = {name: parse_value(value) for name, _, value in (a.partition("=") for a in args.attr)}
                output_dir = args.output_dir
            if not op:
                parser.error("run needs an operator name or --case")
            for path in run(op, inputs, attrs, output_dir):
                print(path)
            return 0
        actual = load_array(*parse_file_spec(args.actual))
        golden = load_array(*parse_file_spec(args.golden))
        dtype = args.dtype or _dtype_name(actual)
        if dtype not in THRESHOLDS:
            raise ValueError(f"no precision threshold for dtype {dtype}; pass --dtype")
        mere, mare, threshold, passed = compare(actual, golden, dtype)
        print(f"dtype {dtype}  MERE {mere:.3e} (limit {threshold:.3e})  MARE {mare:.3e} (limit {10 * threshold:.3e})"
              f"  {'PASS' if passed else 'FAIL'}")
        return 0 if passed else 1
    except (AclnnError, ValueError, TypeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
