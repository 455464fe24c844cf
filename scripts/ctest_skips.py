#!/usr/bin/python3
"""Prints every test that a ctest run skipped, with the reason it gave, from the run's JUnit file (ctest
--output-junit FILE, which scripts/test.sh and .ci/run write): ctest's own summary lists skipped tests by name only,
so that a large-tensor test skipped for lack of memory, or a parity test without PyTorch, shows in CI's log with its
reason. The reason is the GoogleTest skip message (the line after "...: Skipped") or the test's first output line.

  scripts/ctest_skips.py JUNIT_FILE [LABEL]

Exits 0 whatever it finds (1 only when the file cannot be read).
"""

import sys
import xml.etree.ElementTree as ElementTree


def reason(output):
    lines = [line.strip() for line in (output or "").splitlines()]
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") and i + 1 < len(lines):
            return lines[i + 1]
    for line in lines:
        if line and not line.startswith("Running main()") and not line.startswith("Note: Google Test filter"):
            return line
    return "(no reason given)"


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 1
    label = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
    try:
        suite = ElementTree.parse(sys.argv[1]).getroot()
    except (OSError, ElementTree.ParseError) as error:
        print("ctest_skips: cannot read %s: %s" % (sys.argv[1], error), file=sys.stderr)
        return 1
    skipped = [case for case in suite.iter("testcase") if case.find("skipped") is not None]
    print("Skipped tests (%s): %d" % (label, len(skipped)))
    for case in skipped:
        print("  %s: %s" % (case.get("name"), reason(case.findtext("system-out"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
