#!/usr/bin/env python3
"""Checks that the documentation names only files and folders that exist.

  scripts/check_docs_links.py [--root DIR]

Reads README.md and every docs/**/*.md of the repository and checks
  - every relative markdown link, [text](path) or ![alt](path), resolved against the file's folder, and its
    #anchor when it points into a markdown file (GitHub's heading slugs);
  - every repository path written in backquotes (inline code and fenced code blocks): a word that starts with
    src/, tests/, docs/, scripts/, bench/, fuzz/, examples/, include/, python/ or cmake/, resolved against the
    repository root. A word with a glob (* or ?) must match something; words with placeholders (<op>, $PREFIX,
    ...) are skipped; one {a,b} group is expanded; trailing punctuation is dropped. Outputs of a build (build/...)
    do not start with these prefixes.
Prints each missing target as FILE:LINE: TARGET (kind) and exits 1 when there is one, else prints a summary and
exits 0. Python 3 standard library only.
"""

import argparse
import glob
import os
import re
import sys

PATH_PREFIXES = ("src/", "tests/", "docs/", "scripts/", "bench/", "fuzz/", "examples/", "include/", "python/",
                 "cmake/")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); text may hold one level of brackets.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
PLACEHOLDER = re.compile(r"[<>\[\]$]|\.\.\.")
GLOB = re.compile(r"[*?]")


def markdown_files(root):
    files = [os.path.join(root, "README.md")]
    for folder, _, names in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md")]
    return [f for f in files if os.path.isfile(f)]


def slug(heading):
    """GitHub's anchor for a heading: inline markup dropped, lower case, punctuation removed, spaces to '-'."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_~]+(?=\w)|(?<=\w)[*_~]+", lambda m: "_" * m.group(0).count("_") if "_" in m.group(0) else "",
                  text)
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchor_cache = {}


def anchors(path):
    """The heading anchors of a markdown file (duplicates get -1, -2, ... as on GitHub)."""
    if path not in _anchor_cache:
        found, seen, in_fence = set(), {}, False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                m = None if in_fence else HEADING.match(line)
                if m:
                    base = slug(m.group(2))
                    count = seen.get(base, 0)
                    seen[base] = count + 1
                    found.add(base if count == 0 else "%s-%d" % (base, count))
                for explicit in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                    found.add(explicit)
        _anchor_cache[path] = found
    return _anchor_cache[path]


def expand_braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return [word[:m.start()] + part + word[m.end():] for part in m.group(1).split(",")]


def code_paths(code):
    """The repository paths in a piece of code: words starting with one of PATH_PREFIXES."""
    paths = []
    for word in re.split(r"[\s=\"'(),;:|]+", code):
        word = word.rstrip(".,;:)")
        if not word.startswith(PATH_PREFIXES):
            continue
        for path in expand_braces(word):
            if PLACEHOLDER.search(path) or "{" in path:
                continue
            paths.append(path.split("#")[0])
    return paths


def exists(root, target):
    full = os.path.join(root, target)
    return bool(glob.glob(full)) if GLOB.search(target) else os.path.exists(full)


def check_file(root, path):
    """Yields (line number, target, kind) for every missing target of one markdown file."""
    folder = os.path.dirname(path)
    in_fence = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            for target in code_paths(line):
                if not exists(root, target):
                    yield number, target, "path in a code block"
            continue
        for m in INLINE_CODE.finditer(line):
            for target in code_paths(m.group(2)):
                if not exists(root, target):
                    yield number, target, "path in backquotes"
        prose = INLINE_CODE.sub("", line)
        for m in LINK.finditer(prose):
            target = m.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(folder, file_part)) if file_part else path
            if not os.path.exists(resolved):
                yield number, target, "link"
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                yield number, target, "link anchor"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir),
                        help="the repository (default: this script's)")
    args = parser.parse_args()
    root = os.path.normpath(args.root)
    files = markdown_files(root)
    missing = 0
    for path in files:
        for number, target, kind in check_file(root, path):
            print("%s:%d: %s (%s)" % (os.path.relpath(path, root), number, target, kind))
            missing += 1
    if missing:
        print("%d missing in %d markdown files" % (missing, len(files)), file=sys.stderr)
        return 1
    print("check_docs_links: %d markdown files, every link and repository path exists" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
