#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers: a file of shm/, core/ or lib/ includes nothing from a
folder above it.  The order is include/ < shm/ < lib/, core/ < top/,
exporter/, launcher/: shm/ may include from include/ only (the public
header), lib/ and core/ from shm/ and include/.

Each `#include "..."` is resolved as the compiler does, against the
file's own folder first and then the folders its layer may use; one
found only in a folder it may not use, or nowhere, fails the test, with
the line.  The build sees part of this (core/'s target is given no
folder of the programs above it); this sees what it cannot: shm/ and
core/ are given lib/ while the public header lives there."""
import os
import re
import sys

MAY = {
    "shm": ["include"],
    "lib": ["shm", "include"],
    "core": ["shm", "include"],
}
FOLDERS = ["include", "shm", "lib", "core", "top", "exporter", "launcher",
           "attach"]

root = sys.argv[1] if len(sys.argv) > 1 else "."
bad = []
for layer, may in MAY.items():
    folder = os.path.join(root, layer)
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".c", ".h", ".cc")):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                if any(os.path.exists(os.path.join(root, d, inc))
                       for d in [layer] + may):
                    continue
                where = [d for d in FOLDERS
                         if os.path.exists(os.path.join(root, d, inc))]
                bad.append("%s/%s:%d: includes %s, from %s: %s/ may include "
                           "from %s only" % (layer, name, no, inc,
                                             ", ".join(d + "/" for d in where)
                                             or "nowhere", layer,
                                             ", ".join(d + "/" for d in
                                                       [layer] + may)))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
