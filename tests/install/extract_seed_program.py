#!/usr/bin/env python3
"""Extracts the sample programs of the specification's source documents (../shared/spec/seeds/*.txt, and the
documents of ../shared/spec/nsa/*.md whose operator this library has).

Each seed is an operator document of CANN's with a complete calling example: the program runs from its first
#include line to the closing brace of main(). The install test (check_install.sh, step b4) and the aarch64 check
(scripts/arm64_check.sh) build and run these programs unchanged.

    extract_seed_program.py <out-dir>

writes seed_<document>.cpp into out-dir for every seed, and nsa_<document>.cpp for every document beside the seeds
in ../nsa whose program includes an operator header that include/aclnnop/ of this repository has (all six today; a
document of an operator not implemented would not build), and prints the paths, one per line. The
documents are looked for in $PACL_SEEDS_DIR, then ../shared/spec/seeds beside the repository, then
/work/shared/spec/seeds; where there are none, it prints nothing and says so on stderr. Exit code 1 when a seed holds
no program.

One exception to "unchanged" (SAMPLE_FIXES): the samples of aclnnNsaSelectedAttentionInfer and
aclnnNsaCompressAttentionInfer copy their layout with strcpy into `char layOut[sLayerOut.length()]`, one byte short
for the terminating 0 - undefined behaviour of the samples themselves, which at -O2 on x86 clobbers the stream
handle. The buffer gets the missing byte, and nothing else changes.
"""
import os
import pathlib
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


# (document stem, line as the document has it, line as compiled): fixes of defects in CANN's samples themselves.
SAMPLE_FIXES = [
    (document, "char layOut[sLayerOut.length()];",
     "char layOut[sLayerOut.length() + 1];  // portable-aclnn: + 1 for the terminating 0, which the sample overflows")
    for document in ("aclnnNsaSelectedAttentionInfer", "aclnnNsaCompressAttentionInfer")
]


def fixed(stem, program):
    for document, before, after in SAMPLE_FIXES:
        if document == stem:
            program = [line.replace(before, after) if line.strip() == before else line for line in program]
    return program


def seeds_dir():
    repository = pathlib.Path(__file__).resolve().parents[2]
    candidates = [os.environ.get("PACL_SEEDS_DIR", ""), repository.parent / "shared" / "spec" / "seeds",
                  "/work/shared/spec/seeds"]
    return next((pathlib.Path(c) for c in candidates if c and pathlib.Path(c).is_dir()), None)


def main():
    out_dir = pathlib.Path(sys.argv[1])
    directory = seeds_dir()
    if directory is None:
        print("NOTE: no seeds directory (set PACL_SEEDS_DIR to ../shared/spec/seeds): no seed programs",
              file=sys.stderr)
        return
    documents = sorted(directory.glob("*.txt"))
    if not documents:
        sys.exit(f"no seed documents in {directory}")
    for document in documents:
        program = sample_program(document.read_text(encoding="utf-8").split("\n"))
        if program is None:
            sys.exit(f"{document}: no sample program (#include ... int main() {{ ... }})")
        path = out_dir / f"seed_{document.stem}.cpp"
        path.write_text("\n".join(program) + "\n", encoding="utf-8")
        print(path)
    # The other documents of the specification (CANN's NSA operator pages), for the operators this library has.
    headers = pathlib.Path(__file__).resolve().parents[2] / "include"
    for document in sorted((directory.parent / "nsa").glob("*.md")):
        program = sample_program(document.read_text(encoding="utf-8").split("\n"))
        if program is None:
            continue
        included = [m.group(1) for line in program for m in [re.match(r'\s*#include\s+"(aclnnop/[^"]+)"', line)] if m]
        if not included or not all((headers / header).is_file() for header in included):
            continue
        path = out_dir / f"nsa_{document.stem}.cpp"
        path.write_text("\n".join(fixed(document.stem, program)) + "\n", encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
