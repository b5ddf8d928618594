#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers, and includes that name them.

Every `#include "..."` of the tree names its file from the source root,
so that a reader knows the layer from the line: "shm/reader.h",
"core/model.h", "tests/protocol/harness.h"; never "reader.h" or
"../shm/reader.h".  The public headers of include/ are included as a
program using the library includes them, <mstatshm.h> (include/'s own
headers, installed side by side, include each other by name).

A file includes nothing from a folder above it.  The order is include/ <
shm/ < lib/, core/ < top/, exporter/, launcher/, attach/: shm/ may
include from include/ only (the public header), lib/ and core/ from shm/
and include/, the programs from core/, shm/ and include/ (never lib/:
they do not count themselves), and no program includes a header private
to core/ (core/sampler.h, the core's state: core.h is its interface).
tests/, bench/ and demo/ may include anything.  A folder of C files that
is in none of these lists fails: it is given its place here first.

The build gives every target the source root as its include folder
(root_inc), so this test is what keeps the layers."""
import os
import re
import sys

MAY = {
    "shm": ["include"],
    "lib": ["shm", "include"],
    "core": ["shm", "include"],
    "top": ["core", "shm", "include"],
    "exporter": ["core", "shm", "include"],
    "launcher": ["core", "shm", "include"],
    "attach": ["core", "shm", "include"],
}
FREE = ["tests", "bench", "demo"]  # may include from every folder
# Headers private to their folder: the struct of the core's state
# (core/core.h is its interface).
PRIVATE = {"core/sampler.h"}
INCLUDE = re.compile(r'\s*#\s*include\s+(["<])([^">]+)[">]')

root = sys.argv[1] if len(sys.argv) > 1 else "."


def sources():
    """The C and C++ files of the tree, as paths from the root."""
    for top in sorted(os.listdir(root)):
        if top.startswith((".", "build")) or not os.path.isdir(
                os.path.join(root, top)) or top == "subprojects":
            continue
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".c", ".h", ".cc")):
                    yield os.path.relpath(os.path.join(d, name), root)


def check(rel, no, quote, inc):
    """Why line `no` of `rel`, including `inc`, breaks the rule, or None."""
    layer = rel.split("/")[0]
    public = os.listdir(os.path.join(root, "include"))
    if quote == "<":
        return None
    if layer == "include":
        if "/" in inc or inc not in public:
            return "include/ includes only its own headers, by name"
        return None
    if inc in public or inc.startswith("include/"):
        return ("includes the public header as \"%s\": write <%s>, as a "
                "program does" % (inc, os.path.basename(inc)))
    if inc.startswith(".") or "/" not in inc or not os.path.isfile(
            os.path.join(root, inc)):
        return ("includes \"%s\": name it from the source root (its folder "
                "and file, e.g. \"shm/reader.h\")" % inc)
    folder = inc.split("/")[0]
    if layer in FREE or folder == layer:
        return None
    if layer not in MAY:
        return ("%s/ is in no layer: give it its place in tests/layers.py"
                % layer)
    if inc in PRIVATE:
        return "includes %s, private to %s/ (its interface is core.h)" % (
            inc, folder)
    if folder not in MAY[layer]:
        return "includes %s, from %s/: %s/ may include from %s only" % (
            inc, folder, layer, ", ".join(d + "/" for d in [layer] +
                                          MAY[layer]))
    return None


bad = []
for rel in sources():
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                why = check(rel, no, m.group(1), m.group(2))
                if why:
                    bad.append("%s:%d: %s" % (rel, no, why))
for b in bad:
    print(b)
print("includes: %s" % ("FAIL" if bad else "ok"))
sys.exit(1 if bad else 0)
