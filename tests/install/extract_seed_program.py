#!/usr/bin/env python3
"""Prints the sample program of one of the specification's source documents (../shared/spec/seeds/*.txt).

Each seed is an operator document of CANN's with a complete calling example: the program runs from its first
#include line to the closing brace of main(). The install test builds and runs these programs unchanged against
the installed package (check_install.sh, step b4). Exit code 1 when the document holds no such program.
"""
import re
import sys


def sample_program(lines):
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("#include")), None)
    if start is None:
        return None
    main = next((i for i in range(start, len(lines)) if re.match(r"\s*int\s+main\s*\(", lines[i])), None)
    if main is None:
        return None
    depth = 0
    opened = False
    for i in range(main, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        opened = opened or "{" in lines[i]
        if opened and depth == 0:
            return lines[start:i + 1]
    return None


def main():
    with open(sys.argv[1], encoding="utf-8") as seed:
        program = sample_program(seed.read().split("\n"))
    if program is None:
        sys.exit(f"{sys.argv[1]}: no sample program (#include ... int main() {{ ... }})")
    print("\n".join(program))


if __name__ == "__main__":
    main()
