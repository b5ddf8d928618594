#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The heap profile, read by a client nobody here wrote: go tool pprof.

heapsites (heapsites.c) runs with libmstatshm preloaded: one site leaks
64 MiB in 1 KiB blocks, another allocates and frees 512 MiB in 8 KiB
blocks.  mstat-top -p PID --pprof=FILE writes its profile; go tool pprof
must read it and find, unbiased, the leaking site's inuse_space and the
churning site's alloc_space each within 25% of the truth.

Sampling is random, so the bound is a matter of probability: the leak
holds about 64 MiB / R samples at a mean interval of R bytes, a Poisson
count.  At the default R = 512 KiB that is 128 samples, and 25% is 2.8
standard deviations (about 1 run in 200 would fail); at R = 256 KiB,
set here, it is 4 (1 in 15000).  The unbiasing is the same at any R.

Environment (set by meson): MSTAT_TOP, MSTAT_LIB, HEAPSITES, GO (empty
when go is not installed: the test is then skipped, exit 77).
"""
import os
import re
import subprocess
import sys
import tempfile

TOP = os.environ["MSTAT_TOP"]
LIB = os.environ["MSTAT_LIB"]
HEAPSITES = os.environ["HEAPSITES"]
GO = os.environ.get("GO", "")
INTERVAL = 256 * 1024
LEAK_TRUTH = 65536 * 1024
CHURN_TRUTH = 65536 * 8192


def fail(what):
    print("FAIL: " + what)
    sys.exit(1)


def top_bytes(go, profile, index, function):
    """The flat bytes pprof gives `function` in sample type `index`."""
    out = subprocess.run(
        [go, "tool", "pprof", "-sample_index=" + index, "-unit=B", "-top",
         "-nodecount=1000", profile],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PPROF_TMPDIR=os.path.dirname(profile)))
    if out.returncode != 0:
        fail("go tool pprof could not read the profile: " + out.stderr.strip())
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[5] == function:
            m = re.fullmatch(r"(\d+)B", f[0])
            if not m:
                fail("unexpected pprof line: %r" % line)
            return int(m.group(1))
    fail("pprof shows no %s in %s:\n%s" % (function, index, out.stdout))


def main():
    if not GO:
        print("SKIP: go is not installed (Debian: golang-go); "
              "go tool pprof is the client this test needs")
        return 77
    with tempfile.TemporaryDirectory(prefix="mstat-pprof.") as tmp:
        env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
                   MSTAT_NAME="pprof%d" % os.getpid(),
                   MSTAT_SAMPLE_BYTES=str(INTERVAL))
        p = subprocess.Popen([HEAPSITES], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env, text=True)
        try:
            line = p.stdout.readline()
            if line.strip() != "ready":
                fail("heapsites said %r" % line)
            profile = os.path.join(tmp, "heap.pb.gz")
            r = subprocess.run([TOP, "-p", str(p.pid), "--pprof=" + profile],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or r.stderr:
                fail("mstat-top --pprof: status %d: %s" % (r.returncode, r.stderr))
        finally:
            p.stdin.close()
            p.wait(timeout=60)
        inuse = top_bytes(GO, profile, "inuse_space", "leak_site")
        alloc = top_bytes(GO, profile, "alloc_space", "churn_site")
        churn_inuse = top_bytes(GO, profile, "alloc_space", "leak_site")
        print("leak_site inuse_space %d (truth %d, %+.1f%%)" %
              (inuse, LEAK_TRUTH, 100.0 * (inuse - LEAK_TRUTH) / LEAK_TRUTH))
        print("churn_site alloc_space %d (truth %d, %+.1f%%)" %
              (alloc, CHURN_TRUTH, 100.0 * (alloc - CHURN_TRUTH) / CHURN_TRUTH))
        if abs(inuse - LEAK_TRUTH) > LEAK_TRUTH // 4:
            fail("leak_site inuse_space %d is not within 25%% of %d" %
                 (inuse, LEAK_TRUTH))
        if abs(alloc - CHURN_TRUTH) > CHURN_TRUTH // 4:
            fail("churn_site alloc_space %d is not within 25%% of %d" %
                 (alloc, CHURN_TRUTH))
        if churn_inuse != inuse:
            fail("leak_site: alloc_space %d, inuse_space %d: it freed nothing"
                 % (churn_inuse, inuse))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
