#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The heap profile read from outside, end to end.

    e2e.py TEST     TEST: pprof sites

heapsites (heapsites.c) runs with libmstatshm preloaded: one site leaks
64 MiB in 1 KiB blocks, another allocates and frees 512 MiB in 8 KiB
blocks.

pprof: mstat-top -p PID --pprof=FILE writes its profile; go tool pprof, a
client nobody here wrote, must read it and find, unbiased, the leaking
site's inuse_space and the churning site's alloc_space each within 25% of
the truth.  Skipped (exit 77) where go is not installed.

sites: mstat-top -b -o json --sites 2 names both sites, with the fields
docs/mstat-top-json.md documents, in its order, and the same bounds.

Sampling is random, so the bound is a matter of probability: the leak
holds about 64 MiB / R samples at a mean interval of R bytes, a Poisson
count.  At the default R = 512 KiB that is 128 samples, and 25% is 2.8
standard deviations (about 1 run in 200 would fail); at R = 256 KiB,
set here, it is 4 (1 in 15000).  The unbiasing is the same at any R.

Environment (set by meson): MSTAT_TOP, MSTAT_LIB, HEAPSITES, GO (empty
when go is not installed).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TOP = os.environ["MSTAT_TOP"]
LIB = os.environ["MSTAT_LIB"]
HEAPSITES = os.environ["HEAPSITES"]
GO = os.environ.get("GO", "")
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "docs", "mstat-top-json.md")
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


def within(what, got, truth):
    print("%s %d (truth %d, %+.1f%%)" %
          (what, got, truth, 100.0 * (got - truth) / truth))
    if abs(got - truth) > truth // 4:
        fail("%s %d is not within 25%% of %d" % (what, got, truth))


class Heapsites:
    """heapsites, preloaded, once it has made its heap; stopped on exit."""

    def __enter__(self):
        env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
                   MSTAT_NAME="profile%d" % os.getpid(),
                   MSTAT_SAMPLE_BYTES=str(INTERVAL))
        self.p = subprocess.Popen([HEAPSITES], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.__exit__()
            fail("heapsites said %r" % line)
        return self.p.pid

    def __exit__(self, *exc):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def test_pprof():
    if not GO:
        print("SKIP: go is not installed (Debian: golang-go); "
              "go tool pprof is the client this test needs")
        return 77
    with tempfile.TemporaryDirectory(prefix="mstat-pprof.") as tmp:
        profile = os.path.join(tmp, "heap.pb.gz")
        with Heapsites() as pid:
            r = subprocess.run([TOP, "-p", str(pid), "--pprof=" + profile],
                               capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or r.stderr:
            fail("mstat-top --pprof: status %d: %s" % (r.returncode, r.stderr))
        inuse = top_bytes(GO, profile, "inuse_space", "leak_site")
        within("leak_site inuse_space", inuse, LEAK_TRUTH)
        within("churn_site alloc_space",
               top_bytes(GO, profile, "alloc_space", "churn_site"), CHURN_TRUTH)
        leak_alloc = top_bytes(GO, profile, "alloc_space", "leak_site")
        if leak_alloc != inuse:
            fail("leak_site: alloc_space %d, inuse_space %d: it freed nothing"
                 % (leak_alloc, inuse))
    return 0


def documented_fields(doc):
    """Field names from the tables of docs/mstat-top-json.md, by section."""
    fields, section = {}, None
    for line in open(doc):
        m = re.match(r"^## (\S+)", line)
        if m:
            section = m.group(1)
        m = re.match(r"^\| `([a-z_]+)` \|", line)
        if m and section:
            fields.setdefault(section, []).append(m.group(1))
    return fields


def test_sites():
    with Heapsites() as pid:
        r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1", "--sites", "2",
                            "-p", str(pid)],
                           capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or r.stderr:
        fail("mstat-top --sites: status %d: %s" % (r.returncode, r.stderr))
    doc = documented_fields(DOC)
    p = json.loads(r.stdout.splitlines()[0])["processes"][0]
    if list(p) != doc["process"]:
        fail("process fields %r vs %r" % (list(p), doc["process"]))
    sites = p["sites"]
    if [s["function"] for s in sites] != ["leak_site", "churn_site"]:
        fail("sites: %r" % sites)
    for s in sites:
        if list(s) != doc["site"]:
            fail("site fields %r vs %r" % (list(s), doc["site"]))
        if not (s["file"].endswith("heapsites.c") and s["line"] > 0 and
                s["module"] == os.path.realpath(HEAPSITES)):
            fail("site not placed: %r" % s)
    leak, churn = sites
    within("leak_site live_bytes", leak["live_bytes"], LEAK_TRUTH)
    within("churn_site alloc_bytes", churn["alloc_bytes"], CHURN_TRUTH)
    if churn["live_bytes"] != 0 or leak["alloc_bytes"] != leak["live_bytes"]:
        fail("live bytes: churn %d, leak %d of %d" %
             (churn["live_bytes"], leak["live_bytes"], leak["alloc_bytes"]))
    return 0


if __name__ == "__main__":
    tests = {"pprof": test_pprof, "sites": test_sites}
    if len(sys.argv) != 2 or sys.argv[1] not in tests:
        print("usage: e2e.py " + "|".join(tests))
        sys.exit(2)
    rc = tests[sys.argv[1]]()
    if rc == 0:
        print("ok")
    sys.exit(rc)
