#!/usr/bin/python3
"""The bench_result_files test: runs aclnn_bench on a few small cases with --json and --csv and checks the files.

  check_result_files.py ACLNN_BENCH OUT_DIR

Three runs, each seconds long:
1. one forward and one backward case of each operator, --benchmark_repetitions=2, both files: every expected case
   has one record in each file, with the expected columns; the figures are positive and consistent (best <= mean,
   GB/s = bytes / mean time, % of triad = GB/s / triad); the two files agree; the context is filled in.
2. one case with --benchmark_report_aggregates_only (the collector then sees only the aggregates): the record still
   has its mean time and both repetitions.
3. --json in a folder that does not exist: exit status 2 before anything runs.
Exits 1 with a message at the first failed check. Needs ACLNN_NUM_THREADS in the environment (ctest sets it).
"""

import csv
import json
import math
import os
import re
import subprocess
import sys

CASE_COLUMNS = ["operator", "function", "direction", "dtype", "case", "shape", "calls", "status", "error", "threads",
                "repetitions", "iterations", "best_ms", "mean_ms", "bytes", "GBps", "triad_GBps", "pct_of_triad"]
CONTEXT_KEYS = ["date", "cpu", "cpus", "threads", "simd_target", "triad_mib", "triad_start_GBps"]
NUMERIC_COLUMNS = ["threads", "repetitions", "iterations", "best_ms", "mean_ms", "bytes", "GBps", "triad_GBps",
                   "pct_of_triad"]
OPERATORS = {"ScaledMaskedSoftmax", "GridSampler2D", "MultiScaleDeformableAttention", "NsaCompress"}

# One forward and one backward case of each operator, all small.
FILTER = ("^(ScaledMaskedSoftmax(Backward)?/FLOAT/2x8x128x128|GridSampler2D(Backward)?/FLOAT16/"
          "|Msda(Backward|Forward)/BFLOAT16/small|NsaCompress(Grad)?/FLOAT16/2x512_N2_D64)")
REUSED_CASES = {
    "ScaledMaskedSoftmaxBackward/FLOAT/2x8x128x128": ("ScaledMaskedSoftmax", "backward"),
    "ScaledMaskedSoftmax/FLOAT/2x8x128x128": ("ScaledMaskedSoftmax", "forward"),
    "GridSampler2DBackward/FLOAT16/bilinear_zeros/2x8x128x128_to_128x128/warp": ("GridSampler2D", "backward"),
    "GridSampler2D/FLOAT16/bilinear_zeros/2x8x128x128_to_128x128/warp": ("GridSampler2D", "forward"),
    "MsdaBackward/BFLOAT16/small": ("MultiScaleDeformableAttention", "backward"),
    "MsdaForward/BFLOAT16/small": ("MultiScaleDeformableAttention", "forward"),
    "NsaCompressGrad/FLOAT16/2x512_N2_D64": ("NsaCompress", "backward"),
    "NsaCompress/FLOAT16/2x512_N2_D64": ("NsaCompress", "forward"),
}
# Every case is timed both ways: reused executor and workspace, and CANN's fresh calls ("<case>/fresh_calls").
EXPECTED_CASES = dict(REUSED_CASES)
EXPECTED_CASES.update({name + "/fresh_calls": where for name, where in REUSED_CASES.items()})
COMMON_FLAGS = ["--triad_mib=8", "--benchmark_min_time=0.01", "--benchmark_repetitions=2"]


class CheckFailed(Exception):
    pass


def require(condition, message):
    if not condition:
        raise CheckFailed(message)


def close(a, b, relative=1e-6):
    return abs(a - b) <= relative * max(abs(a), abs(b))


def run_bench(bench, arguments, expect_status=0):
    result = subprocess.run([bench] + arguments, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
    require(result.returncode == expect_status, "aclnn_bench %s exited with %d, expected %d; its output:\n%s"
            % (" ".join(arguments), result.returncode, expect_status, result.stdout))
    return result.stdout


def check_record(record, threads):
    """The checks every successful record passes, as read from JSON (numbers) or CSV (converted)."""
    name = record["case"]
    require(record["status"] == "ok" and record["error"] == "", "%s: status %r, error %r"
            % (name, record["status"], record["error"]))
    require(record["operator"] in OPERATORS, "%s: unknown operator %r" % (name, record["operator"]))
    require(record["function"].startswith("aclnn"), "%s: function %r" % (name, record["function"]))
    backward = record["function"].endswith(("Backward", "Grad"))
    require(record["direction"] == ("backward" if backward else "forward"),
            "%s: direction %r for %s" % (name, record["direction"], record["function"]))
    require(record["dtype"] in ("FLOAT", "FLOAT16", "BFLOAT16") and "/%s/" % record["dtype"] in name,
            "%s: dtype %r" % (name, record["dtype"]))
    require(record["shape"] != "", "%s: empty shape text" % name)
    require(record["calls"] == ("fresh" if name.endswith("/fresh_calls") else "reused"),
            "%s: calls %r" % (name, record["calls"]))
    for column in NUMERIC_COLUMNS:
        value = record[column]
        require(isinstance(value, (int, float)) and math.isfinite(value) and value > 0,
                "%s: %s = %r is not a positive number" % (name, column, value))
    require(record["threads"] == threads, "%s: threads %r, ACLNN_NUM_THREADS=%d" % (name, record["threads"], threads))
    require(record["best_ms"] <= record["mean_ms"], "%s: best %r ms > mean %r ms"
            % (name, record["best_ms"], record["mean_ms"]))
    require(close(record["GBps"], record["bytes"] / (record["mean_ms"] * 1e-3) / 1e9),
            "%s: GBps %r is not bytes / mean time" % (name, record["GBps"]))
    require(close(record["pct_of_triad"], 100 * record["GBps"] / record["triad_GBps"]),
            "%s: pct_of_triad %r is not 100 * GBps / triad_GBps" % (name, record["pct_of_triad"]))


def check_context(context, threads):
    require(list(context) == CONTEXT_KEYS, "context keys %s, expected %s" % (list(context), CONTEXT_KEYS))
    require(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", context["date"]) is not None,
            "context date %r is not ISO 8601 UTC" % context["date"])
    require(context["threads"] == threads and context["cpus"] >= 1 and context["triad_mib"] == 8,
            "context threads/cpus/triad_mib: %r" % context)
    require(isinstance(context["triad_start_GBps"], (int, float)) and context["triad_start_GBps"] > 0,
            "context triad_start_GBps %r" % context["triad_start_GBps"])


def csv_number(text, where):
    try:
        return float(text)
    except ValueError:
        raise CheckFailed("%s: %r is not a number" % (where, text))


def check_full_run(bench, out_dir, threads):
    json_path = os.path.join(out_dir, "results.json")
    csv_path = os.path.join(out_dir, "results.csv")
    for path in (json_path, csv_path):
        if os.path.exists(path):
            os.remove(path)
    output = run_bench(bench, COMMON_FLAGS + ["--benchmark_filter=" + FILTER, "--json=" + json_path,
                                              "--csv=" + csv_path])
    # The two call patterns side by side, one line per case with its ratio.
    for name in REUSED_CASES:
        require(re.search(re.escape(name) + r"\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+x", output) is not None,
                "no call-pattern line for %s in the output:\n%s" % (name, output))

    with open(json_path) as f:
        report = json.load(f)
    require(report.get("program") == "aclnn_bench", "JSON program %r" % report.get("program"))
    check_context(report["context"], threads)
    cases = report["cases"]
    names = [c["case"] for c in cases]
    require(sorted(names) == sorted(EXPECTED_CASES), "JSON cases %s, expected %s" % (names, sorted(EXPECTED_CASES)))
    for record in cases:
        require(list(record) == CASE_COLUMNS, "%s: keys %s" % (record["case"], list(record)))
        check_record(record, threads)
        require((record["operator"], record["direction"]) == EXPECTED_CASES[record["case"]],
                "%s: operator/direction %s/%s" % (record["case"], record["operator"], record["direction"]))
        require(record["repetitions"] == 2, "%s: repetitions %r" % (record["case"], record["repetitions"]))

    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames
        rows = list(reader)
    expected_columns = CASE_COLUMNS + ["run_" + key for key in CONTEXT_KEYS]
    require(columns == expected_columns, "CSV columns %s, expected %s" % (columns, expected_columns))
    csv_cases = [r["case"] for r in rows]
    require(csv_cases == names, "CSV cases %s differ from JSON's %s" % (csv_cases, names))
    for row, record in zip(rows, cases):
        converted = dict(row)
        for column in NUMERIC_COLUMNS:
            converted[column] = csv_number(row[column], "CSV %s %s" % (row["case"], column))
            require(close(converted[column], record[column], 1e-9),
                    "%s: CSV %s %r, JSON %r" % (row["case"], column, row[column], record[column]))
        for column in CASE_COLUMNS:
            if column not in NUMERIC_COLUMNS:
                require(row[column] == record[column], "%s: CSV %s %r, JSON %r"
                        % (row["case"], column, row[column], record[column]))
        check_record(converted, threads)
        for key in CONTEXT_KEYS:
            value = report["context"][key]
            same = (close(csv_number(row["run_" + key], key), value, 1e-9) if isinstance(value, (int, float))
                    else row["run_" + key] == value)
            require(same, "%s: CSV run_%s %r, JSON context %r" % (row["case"], key, row["run_" + key], value))


def check_aggregates_only(bench, out_dir, threads):
    json_path = os.path.join(out_dir, "aggregates.json")
    run_bench(bench, COMMON_FLAGS + ["--benchmark_report_aggregates_only=true",
                                     "--benchmark_filter=^NsaCompress/FLOAT16/2x512_N2_D64/manual_time",
                                     "--json=" + json_path])
    with open(json_path) as f:
        cases = json.load(f)["cases"]
    require([c["case"] for c in cases] == ["NsaCompress/FLOAT16/2x512_N2_D64"],
            "aggregates-only run: cases %s" % [c["case"] for c in cases])
    check_record(cases[0], threads)
    require(cases[0]["repetitions"] == 2, "aggregates-only run: repetitions %r" % cases[0]["repetitions"])


def check_bad_path(bench, out_dir):
    missing = os.path.join(out_dir, "no such folder", "results.json")
    output = run_bench(bench, ["--json=" + missing], expect_status=2)
    require("--json" in output and missing in output, "bad --json path: message %r" % output)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    bench, out_dir = sys.argv[1], sys.argv[2]
    threads = int(os.environ["ACLNN_NUM_THREADS"])
    os.makedirs(out_dir, exist_ok=True)
    try:
        check_full_run(bench, out_dir, threads)
        check_aggregates_only(bench, out_dir, threads)
        check_bad_path(bench, out_dir)
    except CheckFailed as failure:
        print("bench_result_files: %s" % failure, file=sys.stderr)
        return 1
    print("bench_result_files: the JSON and CSV files are complete and consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
