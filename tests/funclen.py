#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No function of core/, top/, exporter/, launcher/ or attach/ is longer than 100
lines, counted from the line that names it to its closing brace (the
house style: the type on a line of its own, the name at the start of
the next, the braces of a function at the start of theirs).

A function that must be longer is named in LONGER, with the reason,
and docs/hacking.md says why; none is today.  A function whose name
cannot be found above its brace fails too: it would escape the count."""
import os
import re
import sys

FOLDERS = ["core", "top", "exporter", "launcher", "attach"]
LIMIT = 100
LONGER = {}  # "folder/file.c:function": "why it must be longer"


def functions(path):
    """(name, first line, lines) of each function of a C file; a name of
    None for a top-level brace whose function was not found."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            name, first = None, i
            for j in range(i - 1, max(i - 8, -1), -1):
                m = re.match(r"^([A-Za-z_]\w*)\s*\(", lines[j])
                if m:
                    name, first = m.group(1), j
                    break
            end = i + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            yield name, first + 1, end - first + 1
            i = end
        i += 1


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = []
    for folder in FOLDERS:
        for name in sorted(os.listdir(os.path.join(root, folder))):
            if not name.endswith((".c", ".h")):
                continue
            rel = folder + "/" + name
            for fn, line, n in functions(os.path.join(root, rel)):
                if fn is None:
                    bad.append("%s:%d: a brace at the start of a line with "
                               "no function name above it" % (rel, line))
                elif n > LIMIT and "%s:%s" % (rel, fn) not in LONGER:
                    bad.append("%s:%d: %s is %d lines, more than %d: split "
                               "it (or name it in tests/funclen.py's LONGER "
                               "and say why in docs/hacking.md)"
                               % (rel, line, fn, n, LIMIT))
    for b in bad:
        print(b)
    print("%s: %s" % (", ".join(f + "/" for f in FOLDERS),
                      "FAIL" if bad else "ok"))
    return 1 if bad else 0


sys.exit(main())
