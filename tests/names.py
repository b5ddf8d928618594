#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A function's name says where it lives: every function with external
linkage defined in FOLDER/FILE.c is named mstat_FILE, mstat_FILE_* or
mstat_FOLDER_* (mstat_discover_scan() is core/discover.c's,
mstat_core_new() one of core/'s).  Free of the rule: main(); static
functions; the public API, the global names of lib/*.map (the names of
include/ and docs/libmstatshm.3, which never change); and in lib/, the C
library's functions the library interposes (malloc, execve, _exit: each
a name libc defines) and C++'s (operator new, mangled).  tests/ and
bench/ are free too: nothing there is linked into what is installed.

Read from the objects the build made (compile_commands.json and nm), so
that a function a macro defines is seen too.  Arguments: the source root
and the build folder."""
import json
import os
import re
import subprocess
import sys

FREE = ("tests", "bench")


def public_names(root):
    """The names the symbol maps of lib/ export by name."""
    names = set()
    lib = os.path.join(root, "lib")
    for m in sorted(os.listdir(lib)):
        if m.endswith(".map"):
            with open(os.path.join(lib, m), encoding="utf-8") as f:
                text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
            for block in re.findall(r"global:(.*?)(?:local:|\})", text, re.S):
                names |= {n for n in re.findall(r"([\w]+)\s*;", block)}
    return names


def libc_names():
    """The functions the C library this interpreter runs on defines."""
    with open("/proc/self/maps", encoding="utf-8") as f:
        paths = {line.split()[-1] for line in f
                 if re.search(r"/libc[.-][\w.]*so", line)}
    names = set()
    for p in paths:
        out = subprocess.run(["nm", "-D", "--defined-only", p],
                             capture_output=True, text=True, check=True)
        names |= {l.split()[-1].split("@")[0] for l in out.stdout.splitlines()}
    return names


def main():
    root, build = sys.argv[1], sys.argv[2]
    root = os.path.realpath(root)
    with open(os.path.join(build, "compile_commands.json"),
              encoding="utf-8") as f:
        commands = json.load(f)
    public, libc = public_names(root), None
    bad, seen = [], 0
    for c in commands:
        src = os.path.relpath(os.path.realpath(os.path.join(c["directory"],
                                                            c["file"])), root)
        obj = os.path.join(c["directory"], c["output"])
        folder = src.split("/")[0]
        # Only the objects built for the file's own folder: the tests
        # build some of lib/ again, with the malloc family renamed.
        if folder in FREE or src.startswith("..") or \
                os.path.relpath(obj, build).split("/")[0] != folder:
            continue
        seen += 1
        out = subprocess.run(["nm", "--defined-only", "-g", obj],
                             capture_output=True, text=True, check=True)
        base = os.path.splitext(os.path.basename(src))[0]
        for line in out.stdout.splitlines():
            f = line.split()
            if len(f) != 3 or f[1] not in "TWi" or \
                    not re.fullmatch(r"\w+", f[2]):
                continue
            name = f[2]
            if name == "main" or name in public or \
                    name == "mstat_" + base or \
                    name.startswith(("mstat_%s_" % base,
                                     "mstat_%s_" % folder)):
                continue
            if folder == "lib" and not name.startswith("mstat_"):
                if name.startswith("_Z"):
                    continue
                libc = libc if libc is not None else libc_names()
                if name in libc:
                    continue
            bad.append("%s: %s is not mstat_%s_* nor mstat_%s_*" %
                       (src, name, base, folder))
    for b in sorted(set(bad)):
        print(b)
    if not seen:
        print("no objects found in %s" % build)
        return 1
    print("%d objects: %s" % (seen, "FAIL" if bad else "ok"))
    return 1 if bad else 0


sys.exit(main())
