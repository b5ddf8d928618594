#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The map of files in docs/design.md ("Where each piece lives") is
true: every file of the layers' folders is listed there exactly once,
and nothing listed is missing.  A row's first cell names its files; a
name without a folder is in the folder of the name before it."""
import os
import re
import sys

FOLDERS = ["include", "shm", "lib", "core", "top", "exporter", "launcher", "attach",
           "deploy"]

root = sys.argv[1] if len(sys.argv) > 1 else "."
files = set()
for folder in FOLDERS:
    for at, dirs, names in os.walk(os.path.join(root, folder)):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        for name in names:
            if not name.startswith(".") and not name.endswith(".pyc"):
                files.add(os.path.relpath(os.path.join(at, name), root))

with open(os.path.join(root, "docs", "design.md")) as f:
    doc = f.read()
start = doc.index("## Where each piece lives")
end = doc.find("\n## ", start + 1)
section = doc[start:end if end >= 0 else len(doc)]

listed = []
for line in section.splitlines():
    if not line.startswith("| `"):
        continue
    folder = ""
    for name in re.findall(r"`([^`]+)`", line.split("|")[1]):
        if "/" in name:
            folder = os.path.dirname(name)
        else:
            name = os.path.join(folder, name)
        listed.append(name)

bad = []
for name in sorted(set(listed)):
    if listed.count(name) > 1:
        bad.append(f"{name}: listed {listed.count(name)} times")
    if name not in files:
        bad.append(f"{name}: listed, but there is no such file")
for name in sorted(files - set(listed)):
    bad.append(f"{name}: not in docs/design.md's map of files")
for line in bad:
    print(line)
print(f"{len(set(listed))} files listed, {len(files)} in "
      f"{', '.join(FOLDERS)}: {'ok' if not bad else 'FAIL'}")
sys.exit(1 if bad else 0)
