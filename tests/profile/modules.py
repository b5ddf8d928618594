#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Objects loaded while samples are taken are listed, each sample placed.

    modules.py      (MSTAT_TOP, MSTAT_LIB, MODSITES, MODSITE_OBJECTS: set
                    by meson; MODSITE_OBJECTS is a list split by ':')

modsites (modsites.c), preloaded, every allocation sampled, loads each
object with dlopen() while another thread's samples go on, and keeps 64
blocks of 1 KiB from each object's modsite_keep(), and says their usable
bytes, the size the counters count them with.  The sampler lists an
object the first time a stack has a frame in it, whichever thread takes
that sample.  mstat-top -b -o json --sites must name, for every object,
a site modsite_keep whose module is that object, holding those bytes
(every allocation sampled: an exact count).
"""
import json
import os
import subprocess
import sys

TOP = os.environ["MSTAT_TOP"]
LIB = os.environ["MSTAT_LIB"]
MODSITES = os.environ["MODSITES"]
OBJECTS = os.environ["MODSITE_OBJECTS"].split(":")


def fail(what):
    print("FAIL: " + what)
    sys.exit(1)


def main():
    if "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        print("SKIP: valgrind replaces malloc everywhere: nothing is sampled")
        return 77
    env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
               MSTAT_SAMPLE_BYTES="1", MSTAT_NAME="modules%d" % os.getpid())
    p = subprocess.Popen([MODSITES] + OBJECTS, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env, text=True)
    try:
        ready = p.stdout.readline().split()
        if len(ready) != 2 or ready[0] != "ready":
            fail("modsites not ready: %r" % ready)
        kept = int(ready[1])
        out = subprocess.run([TOP, "-b", "-n", "1", "-o", "json", "--sites",
                              "100", "-p", str(p.pid)], capture_output=True,
                             text=True, timeout=120)
        if out.returncode != 0:
            fail("mstat-top: %s" % out.stderr)
        procs = json.loads(out.stdout)["processes"]
        if len(procs) != 1:
            fail("processes: %r" % procs)
        sites = procs[0]["sites"]
        for obj in OBJECTS:
            mine = [s for s in sites if s["module"] == os.path.realpath(obj)]
            print("%s: %s" % (os.path.basename(obj),
                              [(s["function"], s["live_bytes"]) for s in mine]))
            if [s["function"] for s in mine] != ["modsite_keep"]:
                fail("%s: sites %r" % (obj, mine))
            if mine[0]["live_bytes"] != kept:
                fail("%s: %d live bytes, %d kept" %
                     (obj, mine[0]["live_bytes"], kept))
    finally:
        p.stdin.close()
        p.wait()
    if p.returncode != 0:
        fail("modsites exited %d" % p.returncode)
    print("PASS: %d objects, each one's site placed" % len(OBJECTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
