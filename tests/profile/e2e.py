#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The heap profile read from outside, end to end.

    e2e.py TEST     TEST: pprof sites view

heapsites (heapsites.c) runs with libmstatshm preloaded: one site leaks
64 MiB in 1 KiB blocks, another allocates and frees 512 MiB in 8 KiB
blocks.

pprof: mstat-top -p PID --pprof=FILE writes its profile; go tool pprof, a
client nobody here wrote, must read it and find, unbiased, the leaking
site's inuse_space and the churning site's alloc_space each within 25% of
the truth.  Skipped (exit 77) where go is not installed.

sites: mstat-top -b -o json --sites 10 names both sites, the leaking one
first, with the fields docs/mstat-top-json.md documents, in its order, and
the same bounds.

Sampling is random, so the bound is a matter of probability: the leak
holds about 64 MiB / R samples at a mean interval of R bytes, a Poisson
count.  At the default R = 512 KiB that is 128 samples, and 25% is 2.8
standard deviations (about 1 run in 200 would fail); at R = 256 KiB,
set here, it is 4 (1 in 15000).  The unbiasing is the same at any R.

view: the sites view of mstat-top in a terminal (tmux): the leaking site
tops the order by live bytes; by growth, the site that grew since the
baseline tops it, and after b only what it grew since b counts.  With
sampling off the view says so and how to turn it on; a process that
ends leaves its final sites.  At R = 64 KiB, 16 MiB is 256 samples and
25% is 4 standard deviations.

Environment (set by meson): MSTAT_TOP, MSTAT_LIB, HEAPSITES, GO (empty
when go is not installed), TMUX_BIN (empty when tmux is not).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "observer"))
from jsondoc import documented_fields  # noqa: E402
import tmuxview  # noqa: E402

TOP = os.environ["MSTAT_TOP"]
LIB = os.environ["MSTAT_LIB"]
HEAPSITES = os.environ["HEAPSITES"]
GO = os.environ.get("GO", "")
TMUX = os.environ.get("TMUX_BIN", "")
TAG = "sites%d" % os.getpid()  # unique names for this run
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

    def __init__(self, interval=INTERVAL):
        self.interval = interval

    def grow(self):
        """late_site keeps 16 MiB more."""
        self.p.stdin.write("l")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if line.strip() != "grown":
            fail("heapsites said %r" % line)

    def __enter__(self):
        env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
                   MSTAT_NAME="profile%d" % os.getpid(),
                   MSTAT_SAMPLE_BYTES=str(self.interval))
        self.p = subprocess.Popen([HEAPSITES], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.__exit__()
            fail("heapsites said %r" % line)
        return self.p.pid

    def __exit__(self, *exc):
        if not self.p.stdin.closed:
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


def test_sites():
    with Heapsites() as pid:
        r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1", "--sites", "10",
                            "-p", str(pid)],
                           capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or r.stderr:
        fail("mstat-top --sites: status %d: %s" % (r.returncode, r.stderr))
    doc = documented_fields(DOC)
    p = json.loads(r.stdout.splitlines()[0])["processes"][0]
    if list(p) != doc["process"]:
        fail("process fields %r vs %r" % (list(p), doc["process"]))
    # The program's other blocks are sampled too, now and then (libc's
    # stdio buffer: 4 KiB, sampled in about one run of 60), and hold more
    # live bytes than churn_site, which holds none.
    sites = p["sites"]
    names = [s["function"] for s in sites]
    if names[:1] != ["leak_site"] or "churn_site" not in names:
        fail("sites: %r" % sites)
    if [s["live_bytes"] for s in sites] != sorted(
            (s["live_bytes"] for s in sites), reverse=True):
        fail("sites not by live bytes: %r" % sites)
    for s in sites:
        if list(s) != doc["site"]:
            fail("site fields %r vs %r" % (list(s), doc["site"]))
    leak, churn = sites[0], sites[names.index("churn_site")]
    for s in (leak, churn):
        if not (s["file"].endswith("heapsites.c") and s["line"] > 0 and
                s["module"] == os.path.realpath(HEAPSITES)):
            fail("site not placed: %r" % s)
    within("leak_site live_bytes", leak["live_bytes"], LEAK_TRUTH)
    within("churn_site alloc_bytes", churn["alloc_bytes"], CHURN_TRUTH)
    if churn["live_bytes"] != 0 or leak["alloc_bytes"] != leak["live_bytes"]:
        fail("live bytes: churn %d, leak %d of %d" %
             (churn["live_bytes"], leak["live_bytes"], leak["alloc_bytes"]))
    return 0


def Tmux(name, cmd):
    """mstat-top in a terminal of its own (tmux server `name`)."""
    return tmuxview.Tmux(TMUX, "mstat-%s-%s" % (TAG, name), cmd, 120, 30, 30)


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size(text):
    m = re.fullmatch(r"([+-]?)([\d.]+)(B|KiB|MiB|GiB)", text)
    if not m:
        fail("not a size: %r" % text)
    v = float(m.group(2)) * UNITS[m.group(3)]
    return -v if m.group(1) == "-" else v


def sites_of(screen):
    """The rows of the sites view: (live, alloc, growth, function)."""
    rows, on = [], False
    for line in screen.splitlines():
        if "SITE (function" in line:
            on = True
            continue
        w = line.split()
        if on and len(w) >= 5 and w[0][0].isdigit():
            rows.append((size(w[0]), size(w[2]), size(w[3]), w[4]))
    return rows


def site(rows, function):
    for r in rows:
        if r[3] == function:
            return r
    return None


def test_view():
    if not TMUX:
        print("SKIP: tmux is not installed")
        return 77
    hs = Heapsites(64 * 1024)
    with hs as pid, Tmux("live", "%s -p %d" % (TOP, pid)) as t:
        t.wait(lambda s: re.search(r"^ *%d " % pid, s, re.M), "the process")
        t.keys("s")
        # (The C library's own buffers may be sampled too: a site more,
        # of a few KiB.)
        s = t.wait(lambda s: "call sites by live bytes" in s and
                   site(sites_of(s), "churn_site"), "its sites by live bytes")
        rows = sites_of(s)
        if rows[0][3] != "leak_site":
            fail("by live bytes, leak_site first:\n" + s)
        within("leak_site live", rows[0][0], LEAK_TRUTH)
        if not re.search(r"leak_site heapsites\.c:\d+ < main heapsites\.c:\d+$",
                         s, re.M):
            fail("leak_site and its caller, named and placed:\n" + s)
        if site(rows, "churn_site")[0] != 0:
            fail("churn_site holds nothing:\n" + s)

        # Since it was first seen: late_site grew 16 MiB, the rest 0.
        hs.grow()
        t.wait(lambda s: site(sites_of(s), "late_site"), "late_site")
        t.keys("s")
        s = t.wait(lambda s: "call sites by growth" in s and
                   site(sites_of(s), "late_site"), "the sites by growth")
        rows = sites_of(s)
        if [r[3] for r in rows][0] != "late_site":
            fail("by growth, late_site first:\n" + s)
        within("late_site growth since first seen", rows[0][2], 16 << 20)
        if site(rows, "leak_site")[2] != 0 or site(rows, "churn_site")[2] != 0:
            fail("only late_site grew:\n" + s)

        # b: growth counts from now.  16 MiB more: late_site holds 32,
        # grew 16.
        t.keys("b")
        t.wait(lambda s: "baseline of pid %d reset" % pid in s, "the reset")
        hs.grow()
        s = t.wait(lambda s: (site(sites_of(s), "late_site") or
                              (0,))[0] > 24 << 20, "late_site at 32 MiB")
        rows = sites_of(s)
        if rows[0][3] != "late_site" or "call sites by growth" not in s:
            fail("by growth after b, late_site first:\n" + s)
        within("late_site live", rows[0][0], 32 << 20)
        within("late_site growth since b", rows[0][2], 16 << 20)

        # It ends: its final sites stay.
        hs.p.stdin.close()
        s = t.wait(lambda s: "final, as it ended" in s, "its final sites")
        if sites_of(s)[0][3] != "late_site":
            fail("final sites by growth:\n" + s)
        t.keys("Escape")
        t.wait(lambda s: "call sites" not in s and "exited" in s,
               "the table again")
        # Its segment is gone: its final sites are what there is.
        time.sleep(1.5)
        t.keys("s")
        s = t.wait(lambda s: "final, as it ended" in s, "its final sites again")
        if sites_of(s)[0][3] != "leak_site":
            fail("final sites by live bytes:\n" + s)

    with Heapsites(0) as pid, Tmux("off", "%s -p %d" % (TOP, pid)) as t:
        t.wait(lambda s: re.search(r"^ *%d " % pid, s, re.M), "the process")
        t.keys("s")
        s = t.wait(lambda s: "sampling is off" in s, "sampling off")
        if "--sample-bytes" not in s or sites_of(s):
            fail("sampling off, and how to turn it on:\n" + s)
    return 0


if __name__ == "__main__":
    tests = {"pprof": test_pprof, "sites": test_sites, "view": test_view}
    if len(sys.argv) != 2 or sys.argv[1] not in tests:
        print("usage: e2e.py " + "|".join(tests))
        sys.exit(2)
    if "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        # heapsites' malloc is then memcheck's: nothing is sampled.
        print("SKIP: valgrind replaces malloc everywhere")
        sys.exit(77)
    try:
        rc = tests[sys.argv[1]]()
    except tmuxview.ScreenTimeout as e:
        fail(str(e))
    if rc == 0:
        print("ok")
    sys.exit(rc)
