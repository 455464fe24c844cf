"""What the PyTorch sides of the speed comparisons (torch_<operator>.py) share: the command line, the timing loop,
reading aclnn_bench's JSON output and printing the table of times and speed-ups.

The scripts import it from their own folder (Python puts a script's folder first on sys.path).
"""

import argparse
import json
import os
import re
import statistics
import sys
import time


def time_call(call, repetitions, min_time):
    """Median over the repetitions of the mean seconds per call (each repetition runs >= min_time seconds)."""
    call()  # warm-up: first-touch of PyTorch's output allocations, thread pool start
    means = []
    for _ in range(repetitions):
        calls, start = 0, time.perf_counter()
        while True:
            call()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        means.append(elapsed / calls)
    return statistics.median(means)


def read_aclnn_json(path):
    """{case name: (milliseconds, GB/s, triad%)} from aclnn_bench's JSON output; medians when it has them."""
    with open(path) as f:
        text = f.read()
    # aclnn_bench leaves the file empty when --benchmark_filter matched no case.
    report = json.loads(text) if text.strip() else {}
    scale_to_ms = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    iterations, medians = {}, {}
    for entry in report.get("benchmarks", []):
        if entry.get("error_occurred"):
            continue
        name = entry.get("run_name", entry["name"])
        name = re.sub(r"/manual_time$", "", name)
        figures = (entry["real_time"] * scale_to_ms[entry.get("time_unit", "ns")], entry.get("GB/s"),
                   entry.get("triad%"))
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "median":
                medians[name] = figures
        else:
            iterations.setdefault(name, []).append(figures)
    result = {}
    for name, runs in iterations.items():
        result[name] = tuple(statistics.median(r[i] for r in runs if r[i] is not None)
                             if any(r[i] is not None for r in runs) else None for i in range(3))
    result.update(medians)
    return result


def main(description, script_name, cases, case_name, case_bytes, make_call, inference_mode, note=""):
    """The whole script: parses the command line, times PyTorch on every case whose name matches --filter and
    prints the table (with aclnn's figures and the speed-up when --aclnn-json is given). Returns the exit status.

    cases(): the case table; case_name(case): its name in aclnn_bench; case_bytes(case): the bytes it moves;
    make_call(torch, case): a function running one call, or None if PyTorch has no CPU kernel for the case.
    inference_mode: whether the calls are made (and made by make_call) under torch.inference_mode(). note: appended
    to the speed-up footnote."""
    parser = argparse.ArgumentParser(description=description)
    default_threads = os.environ.get("ACLNN_NUM_THREADS", "2")
    parser.add_argument("--threads", type=int, default=int(default_threads) if default_threads.isdigit() else 2,
                        help="torch.set_num_threads (default: ACLNN_NUM_THREADS, else 2)")
    parser.add_argument("--filter", default="", help="regular expression: only the cases whose name matches")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per repetition")
    parser.add_argument("--aclnn-json", help="aclnn_bench --benchmark_out file to compare with")
    parser.add_argument("--json-out", help="also write PyTorch's time per case (the median, ms; null where PyTorch "
                        "has no CPU kernel) to this JSON file, for scripts/speed_tables.py")
    args = parser.parse_args()

    try:
        import torch
    except ImportError as error:
        print("%s: cannot import torch (%s); on Debian 12: apt-get install python3-torch "
              "and run this with /usr/bin/python3" % (script_name, error), file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    ours = read_aclnn_json(args.aclnn_json) if args.aclnn_json else None

    print("PyTorch %s, %d threads (torch.get_num_threads() = %d), median of %d repetitions of >= %.2f s"
          % (torch.__version__, args.threads, torch.get_num_threads(), args.repetitions, args.min_time))
    selected = [c for c in cases() if re.search(args.filter, case_name(c))]
    width = max([len(case_name(c)) for c in selected] + [4])
    if ours is None:
        print("%-*s %12s %10s" % (width, "case", "torch_ms", "GB/s"))
    else:
        print("%-*s %12s %12s %9s %10s %8s" % (width, "case", "aclnn_ms", "torch_ms", "speed-up", "aclnn_GB/s",
                                                "triad%"))
    torch_ms = {}
    with torch.inference_mode(inference_mode):
        for case in selected:
            seconds = print_case(torch, case, case_name(case), case_bytes(case), make_call, args, width, ours)
            torch_ms[case_name(case)] = seconds * 1e3 if seconds is not None else None
    if ours is not None:
        print("speed-up: PyTorch's time / aclnn's time (above 1: aclnn is faster); n/a: PyTorch has no CPU "
              "kernel for the dtype" + note)
    if args.json_out:
        write_json_out(args.json_out, script_name, torch, args, torch_ms)
    return 0


def write_json_out(path, script_name, torch, args, torch_ms):
    """--json-out: the run's settings and PyTorch's median milliseconds per case, in the order timed."""
    report = {"program": script_name, "torch_version": torch.__version__, "threads": args.threads,
              "repetitions": args.repetitions, "min_time_s": args.min_time,
              "cases": [{"case": name, "torch_ms": ms} for name, ms in torch_ms.items()]}
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")


def print_case(torch, case, name, case_bytes, make_call, args, width, ours):
    """Times one case and prints its row. Returns PyTorch's time in seconds, None without a CPU kernel."""
    call = make_call(torch, case)
    seconds = time_call(call, args.repetitions, args.min_time) if call is not None else None
    del call  # frees the case's tensors (and graph) before the next case
    torch_ms = "%12.3f" % (seconds * 1e3) if seconds is not None else "%12s" % "n/a"
    if ours is None:
        gbps = "%10.2f" % (case_bytes / seconds / 1e9) if seconds is not None else "%10s" % "n/a"
        print("%-*s %s %s" % (width, name, torch_ms, gbps))
        sys.stdout.flush()
        return seconds
    mine = ours.get(name)
    if mine is None:
        print("%-*s %12s %s %9s" % (width, name, "missing", torch_ms, ""))
        return seconds
    ms, gbps, triad = mine
    speedup = "%8.2fx" % (seconds * 1e3 / ms) if seconds is not None else "%9s" % "n/a"
    print("%-*s %12.3f %s %s %10s %8s" % (width, name, ms, torch_ms, speedup,
                                           "%.2f" % gbps if gbps is not None else "n/a",
                                           "%.1f" % triad if triad is not None else "n/a"))
    sys.stdout.flush()
    return seconds
