#!/usr/bin/python3
"""Draws aclnn_bench's achieved bandwidth per operator and dtype, forward and backward, against the STREAM triad.

  plot_bench.py RESULTS [-o PNG] [--filter REGEX] [--exclude REGEX] [--title TEXT]

RESULTS: the file aclnn_bench wrote with --json=FILE or --csv=FILE (the extension decides how it is read).
One panel per operator; in it one group of bars per case (direction and variant: shape, grid, ...), one bar per
dtype, the bar's length the achieved GB/s (every input and output tensor counted once), the black tick on it the
triad measured just before that case, and the label the percentage of that triad. Failed cases are marked as
such. Writes a PNG (default: docs/images/bench_bandwidth.png of the repository).

Needs matplotlib (Debian 12: apt-get install python3-matplotlib; run it with /usr/bin/python3).
"""

import argparse
import csv
import json
import os
import re
import sys

OPERATOR_ORDER = ["ScaledMaskedSoftmax", "GridSampler2D", "MultiScaleDeformableAttention", "NsaCompress"]
DTYPE_COLORS = {"FLOAT": "#4C72B0", "FLOAT16": "#DD8452", "BFLOAT16": "#55A868", "DOUBLE": "#8172B3"}
NUMERIC_COLUMNS = ["threads", "repetitions", "iterations", "best_ms", "mean_ms", "bytes", "GBps", "triad_GBps",
                   "pct_of_triad"]
DEFAULT_OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "docs", "images",
                              "bench_bandwidth.png")


def read_results(path):
    """(context dict, list of case dicts with numbers as floats or None) from aclnn_bench's JSON or CSV."""
    if path.endswith(".json"):
        with open(path) as f:
            report = json.load(f)
        return report.get("context", {}), report.get("cases", [])
    if path.endswith(".csv"):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        cases, context = [], {}
        for row in rows:
            case = {key: value for key, value in row.items() if not key.startswith("run_")}
            for column in NUMERIC_COLUMNS:
                case[column] = float(row[column]) if row.get(column) else None
            cases.append(case)
            context = {key[len("run_"):]: value for key, value in row.items() if key.startswith("run_")}
        return context, cases
    raise SystemExit("plot_bench.py: %s: expected a .json or .csv file from aclnn_bench --json/--csv" % path)


def variant(case):
    """The case's name without its operator and dtype: "4x16x1024x1024", "bilinear_zeros/4x32x256x256_to.../warp"."""
    parts = case["case"].split("/", 2)
    return parts[2] if len(parts) == 3 else case["case"]


def panel_groups(cases):
    """[(label, {dtype: case})] in the order the cases ran: one group per direction and variant."""
    groups = {}
    for case in cases:
        label = "%s  %s" % (case["direction"], variant(case))
        groups.setdefault(label, {})[case["dtype"]] = case
    return list(groups.items())


def draw(context, cases, output, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError as error:
        print("plot_bench.py: cannot import matplotlib (%s); on Debian 12: apt-get install python3-matplotlib, "
              "then run this script with /usr/bin/python3" % error, file=sys.stderr)
        return 2

    operators = [op for op in OPERATOR_ORDER if any(c["operator"] == op for c in cases)]
    operators += sorted({c["operator"] for c in cases} - set(operators))
    panels = [(op, panel_groups([c for c in cases if c["operator"] == op])) for op in operators]
    dtypes = [d for d in DTYPE_COLORS if any(c["dtype"] == d for c in cases)]
    bar_height = 0.8 / max(1, len(dtypes))
    heights = [max(1.5, 0.3 * sum(len(g) for _, g in groups) + 0.6) for _, groups in panels]
    figure, axes = plt.subplots(len(panels), 1, figsize=(12, sum(heights) + 1.6), sharex=True, squeeze=False,
                                gridspec_kw={"height_ratios": heights})
    largest = max([c.get("GBps") or 0 for c in cases] + [c.get("triad_GBps") or 0 for c in cases] + [1])

    for axis, (op, groups) in zip(axes[:, 0], panels):
        labels = []
        for g, (label, by_dtype) in enumerate(groups):
            labels.append(label)
            present = [d for d in dtypes if d in by_dtype]
            for k, dtype in enumerate(present):
                case = by_dtype[dtype]
                y = g + (k - (len(present) - 1) / 2) * bar_height
                gbps, triad = case.get("GBps"), case.get("triad_GBps")
                if case.get("status") != "ok" or not gbps:
                    axis.text(0.01 * largest, y, "%s: failed" % dtype, va="center", fontsize=7, color="red")
                    continue
                axis.barh(y, gbps, height=bar_height * 0.9, color=DTYPE_COLORS[dtype])
                if triad:
                    axis.plot([triad, triad], [y - bar_height * 0.45, y + bar_height * 0.45], color="black",
                              linewidth=1.5)
                pct = case.get("pct_of_triad")
                if pct:
                    axis.text(gbps + 0.005 * largest, y, ("%.0f%%" if pct >= 10 else "%.1f%%") % pct, va="center",
                              fontsize=6.5)
        axis.set_yticks(range(len(labels)))
        axis.set_yticklabels(labels, fontsize=7.5)
        axis.set_ylim(len(labels) - 0.5, -0.5)  # first case on top
        axis.set_title(op, fontsize=10, loc="left")
        axis.grid(axis="x", linestyle=":", linewidth=0.6)
    axes[-1, 0].set_xlim(0, largest * 1.12)
    axes[-1, 0].set_xlabel("achieved GB/s (every input and output tensor counted once; mean time per call)")

    handles = [Patch(color=DTYPE_COLORS[d], label=d) for d in dtypes]
    handles.append(Line2D([0], [0], color="black", linewidth=1.5,
                          label="STREAM triad measured before the case (label: % of it)"))
    figure.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=8, frameon=False)
    if title is None:
        triad = context.get("triad_start_GBps")
        title = "aclnn_bench, %s threads on %s (%s CPUs), %s; triad at start %s GB/s" % (
            context.get("threads", "?"), context.get("cpu") or "unknown CPU", context.get("cpus", "?"),
            str(context.get("date", ""))[:10], "%.1f" % float(triad) if triad not in (None, "") else "?")
    figure.suptitle(title, x=0.01, ha="left", fontsize=10)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    figure.savefig(output, dpi=110)
    print("wrote %s (%d cases)" % (output, len(cases)))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("results", help="aclnn_bench --json or --csv output")
    parser.add_argument("-o", "--output", default=DEFAULT_OUTPUT, help="PNG to write (default: %(default)s)")
    parser.add_argument("--filter", default="", help="regular expression: only the cases whose name matches")
    parser.add_argument("--exclude", help="regular expression: leave out the cases whose name matches")
    parser.add_argument("--title", help="the figure's title (default: the run's context)")
    args = parser.parse_args()
    context, cases = read_results(args.results)
    cases = [c for c in cases if re.search(args.filter, c["case"])
             and not (args.exclude and re.search(args.exclude, c["case"]))]
    if not cases:
        print("plot_bench.py: no case in %s is left to draw (--filter, --exclude)" % args.results, file=sys.stderr)
        return 1
    return draw(context, cases, os.path.normpath(args.output), args.title)


if __name__ == "__main__":
    sys.exit(main())
