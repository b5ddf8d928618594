#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers: a file includes nothing from a folder above it.  The
order is include/ < shm/ < lib/, core/ < top/, exporter/, launcher/,
attach/: shm/ may include from include/ only (the public header), lib/
and core/ from shm/ and include/, the programs from core/, shm/ and
include/ (never lib/: they do not count themselves; mstat-attach loads
lib/'s library into another process, never links it), and no program
includes a header private to core/ (core/sampler.h, the core's state: core.h is its
interface).

Each `#include "..."` is resolved as the compiler does, against the
file's own folder first and then the folders its layer may use; one
found only in a folder it may not use, or nowhere, fails the test, with
the line.  The build sees most of this (each folder's target is given
the include folders it may use, and no other); this sees what it cannot:
a path such as "../top/ui.h", which the compiler finds from the file's
own folder whatever include folders the target has."""
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
FOLDERS = ["include", "shm", "lib", "core", "top", "exporter", "launcher",
           "attach"]
# Headers private to their folder: the struct of the core's state
# (core/core.h is its interface).
PRIVATE = {"core/sampler.h"}

root = sys.argv[1] if len(sys.argv) > 1 else "."


def found_in(folder, inc):
    """Whether `inc`, looked for in `folder`, is a file of that folder
    ("../top/ui.h" looked for in core/ is top/'s, not core/'s)."""
    path = os.path.normpath(os.path.join(root, folder, inc))
    return (os.path.exists(path) and
            os.path.dirname(path) == os.path.normpath(os.path.join(root,
                                                                   folder)))


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
                private = [d for d in may if found_in(d, inc) and
                           d + "/" + os.path.basename(inc) in PRIVATE]
                if private:
                    bad.append("%s/%s:%d: includes %s/%s, private to %s/ "
                               "(its interface is core.h)" %
                               (layer, name, no, private[0], inc, private[0]))
                    continue
                if any(found_in(d, inc) for d in [layer] + may):
                    continue
                where = [d for d in FOLDERS if found_in(d, inc)]
                bad.append("%s/%s:%d: includes %s, from %s: %s/ may include "
                           "from %s only" % (layer, name, no, inc,
                                             ", ".join(d + "/" for d in where)
                                             or "nowhere", layer,
                                             ", ".join(d + "/" for d in
                                                       [layer] + may)))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
