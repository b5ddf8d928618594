#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The heap profile read from outside, end to end.

    e2e.py TEST     TEST: pprof sites view rates http killed killed-view
                          oom oom-exporter objects

heapsites (heapsites.c) runs with libmstatshm preloaded: one site leaks
64 MiB in 1 KiB blocks, another allocates and frees 512 MiB in 8 KiB
blocks.  The truth is in usable bytes, the size the counters count the
blocks with (heapsites says it), which the profile counts too.

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
tops the order by live bytes, none of its bytes short-lived and no
lifetime, where the churning site's are all short-lived, with a median
lifetime of nanoseconds; by growth, the site that grew since the
baseline tops it, and after b only what it grew since b counts.  With
sampling off the view says so and how to turn it on; a process that
ends leaves its final sites.  At R = 64 KiB, 16 MiB is 256 samples and
25% is 4 standard deviations.

killed: a process SIGKILLed while no reader runs keeps its segment for
the grace (MSTAT_KILLED_GRACE): an mstat-top started later shows its row,
killed, with its call sites (--sites), and -p PID --pprof writes its
profile; --postmortem-dir writes NAME-PID-TIME.pb.gz, mode 0600, read by
go tool pprof, and keeps the directory's post-mortem files under
--postmortem-bytes, the oldest going first and nothing else touched; with
a grace of 0 a tick removes the segment, and --pprof then finds nothing.

killed-view: the same process in mstat-top's view (tmux): its row says
killed, and its sites view shows its final sites.

oom: heapsites runs in a memory cgroup of its own (v1, or v2 where the
memory controller is there) limited to 256 MiB, watched by mstat-top
--postmortem-dir, and keeps blocks from late_site until the OOM killer
kills it.  Its row says oomkill, and the post-mortem file has late_site
at the top of inuse_space and says the OOM killer did it, as go tool
pprof reads it.  Skipped (exit 77) where no memory cgroup can be made.

oom-exporter: mstat-exporter --postmortem-dir, which nobody scrapes,
writes the post-mortem file of each process the OOM killer kills, and
says so in it, on its own: heapsites seen alive by the exporter's own
tick, run as a user that cannot read the kernel's log (the exporter too),
then driven to its 256 MiB cgroup's limit (its cgroup's count says it);
and heapsites started in a 64 MiB cgroup, killed as it makes its heap,
between two scrapes (the kernel's log says it, to the exporter as root).
Each file has the site that grew first by inuse_space, as go tool pprof
reads it.  Skipped (exit 77) where no memory cgroup can be made.

rates: the sampling interval of the running process is changed three
times with mstat-top --sample-bytes (128 KiB at start, then 32 KiB, 0,
and 128 KiB again), and its call sites grow between the changes.  A
change alone never changes what earlier samples say: leak_site, which
allocates nothing more, reads the same live bytes, to the byte, in every
read, in --sites JSON and in go tool pprof.  Each estimate is within 5
standard deviations of the truth (below, sigma()): a bound a correct
sampler exceeds about once in a million runs (where the interval
changed, with the larger one's deviation), and that re-weighting the
earlier samples with the new interval (4 times too few, or too many,
bytes) exceeds at once.

http: cxxsites (cxxsites.cc), a C++ program, keeps 64 MiB in 1 KiB
blocks at shop::Cart::keep() and allocates and deletes 512 MiB in 8 KiB
blocks at shop::Ledger::churn(), through operator new; mstat-exporter
serves its profile over HTTP, as the profile stores of a fleet read it
(/debug/pprof/heap and /allocs, read with tests/exporter/pprofproto.py).
Each site's in-use and allocated bytes and objects are within 5
standard deviations of the truth (sigma(), below: about once in a
million runs for a correct sampler); what was deleted holds nothing in
use, what was kept never freed, exactly; the sites are named as C++
reads them, in their source file; go tool pprof, fetching the same URL,
reads the same bytes (where go is installed).  Killed, its last profile
is served still, the same to the byte.

objects: mixed_site, one call site, keeps 396,000 blocks of 32 B and
4,000 of 64 KiB (400,000 objects, 274.8 MB asked for), sampled at 32
KiB.  Most of its samples are of 64 KiB blocks, so objects taken as its
bytes over the average sample read about 4,700; each sample must stand
for its own objects.  Its live and allocated objects and bytes are
within 5 standard deviations of the truth (sigma(): a sample of
probability p stands for 1/p objects, a variance of (1 - p) / p per
block) in --sites JSON, in mstat-top --pprof's inuse_objects and
alloc_objects, and over HTTP from mstat-exporter (/debug/pprof/heap);
killed, in --sites of the killed process, in its post-mortem profile
(--postmortem-dir) and over HTTP again: every one the same.

Environment (set by meson): MSTAT_TOP, MSTAT_LIB, HEAPSITES, GO (empty
when go is not installed), TMUX_BIN (empty when tmux is not); for http,
CXXSITES and MSTAT_EXPORTER; for oom-exporter and objects,
MSTAT_EXPORTER.
"""
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "top"))
from jsondoc import documented_fields  # noqa: E402
import tmuxview  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "exporter"))
import pprofproto  # noqa: E402

TOP = os.environ["MSTAT_TOP"]
LIB = os.environ["MSTAT_LIB"]
HEAPSITES = os.environ["HEAPSITES"]
GO = os.environ.get("GO", "")
TMUX = os.environ.get("TMUX_BIN", "")
TAG = "sites%d" % os.getpid()  # unique names for this run
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "docs", "mstat-top-json.md")
INTERVAL = 256 * 1024
LEAKS, LEAK_SIZE = 65536, 1024
LATES, LATE_SIZE = 16384, 1024
CHURNS = 65536


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


def sigma(blocks, requested, usable, interval):
    """The standard deviation of the unbiased estimate of `blocks` blocks of
    `requested` bytes, counted with `usable`, sampled at a mean interval of
    `interval` bytes.  Each is sampled with probability p = 1 -
    exp(-requested/interval) and stands for usable/p bytes when it is: a
    variance of usable^2 (1 - p) / p per block."""
    p = -math.expm1(-requested / interval)
    return math.sqrt(blocks * usable * usable * (1 - p) / p)


def within_sigmas(what, got, truth, sd, k=5):
    print("%s %d (truth %d, %+.1f%%, %+.1f sd)" %
          (what, got, truth, 100.0 * (got - truth) / truth, (got - truth) / sd))
    if abs(got - truth) > k * sd:
        fail("%s %d is not within %d standard deviations (%d) of %d"
             % (what, got, k, sd, truth))


def within(what, got, truth):
    print("%s %d (truth %d, %+.1f%%)" %
          (what, got, truth, 100.0 * (got - truth) / truth))
    if abs(got - truth) > truth // 4:
        fail("%s %d is not within 25%% of %d" % (what, got, truth))


class Heapsites:
    """heapsites, preloaded, once it has made its heap; stopped on exit."""

    def __init__(self, interval=INTERVAL, preexec=None):
        self.interval = interval
        self.preexec = preexec

    def say(self, c, answer):
        self.p.stdin.write(c)
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if line.strip() != answer:
            fail("heapsites said %r" % line)

    def grow(self):
        """late_site keeps 16 MiB more."""
        self.say("l", "grown")

    def churn(self):
        """churn_site allocates and frees 128 MiB more."""
        self.say("c", "churned")

    def __enter__(self):
        env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
                   MSTAT_NAME="profile%d" % os.getpid(),
                   MSTAT_SAMPLE_BYTES=str(self.interval))
        self.p = subprocess.Popen([HEAPSITES], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env, text=True,
                                  preexec_fn=self.preexec)
        line = self.p.stdout.readline().split()
        if len(line) != 3 or line[0] != "ready":
            self.__exit__()
            fail("heapsites said %r" % line)
        # Usable bytes of its blocks: 1 KiB ones (leak_site, late_site),
        # 8 KiB ones (churn_site).
        self.usable_1k, self.usable_8k = int(line[1]), int(line[2])
        self.leak_truth = LEAKS * self.usable_1k
        self.churn_truth = CHURNS * self.usable_8k
        return self.p.pid

    def __exit__(self, *exc):
        if not self.p.stdin.closed:
            try:
                self.p.stdin.close()
            except BrokenPipeError:
                pass  # killed
        self.p.wait(timeout=60)

    def kill(self):
        """SIGKILL, and reaped."""
        self.p.kill()
        self.p.wait(timeout=60)


def test_pprof():
    if not GO:
        print("SKIP: go is not installed (Debian: golang-go); "
              "go tool pprof is the client this test needs")
        return 77
    with tempfile.TemporaryDirectory(prefix="mstat-pprof.") as tmp:
        profile = os.path.join(tmp, "heap.pb.gz")
        hs = Heapsites()
        with hs as pid:
            write_pprof(pid, profile)
        inuse = top_bytes(GO, profile, "inuse_space", "leak_site")
        within("leak_site inuse_space", inuse, hs.leak_truth)
        within("churn_site alloc_space",
               top_bytes(GO, profile, "alloc_space", "churn_site"),
               hs.churn_truth)
        leak_alloc = top_bytes(GO, profile, "alloc_space", "leak_site")
        if leak_alloc != inuse:
            fail("leak_site: alloc_space %d, inuse_space %d: it freed nothing"
                 % (leak_alloc, inuse))
    return 0


def write_pprof(pid, profile):
    r = subprocess.run([TOP, "-p", str(pid), "--pprof=" + profile],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or r.stderr:
        fail("mstat-top --pprof: status %d: %s" % (r.returncode, r.stderr))


def read_sites(pid):
    """The process's JSON object, with its 10 top sites."""
    r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1", "--sites", "10",
                        "-p", str(pid)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or r.stderr:
        fail("mstat-top --sites: status %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout.splitlines()[0])["processes"][0]


def set_interval(pid, interval):
    r = subprocess.run([TOP, "-p", str(pid), "--sample-bytes=%d" % interval,
                        "-b", "-n", "1"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or r.stderr:
        fail("mstat-top --sample-bytes: status %d: %s"
             % (r.returncode, r.stderr))


def test_sites():
    hs = Heapsites()
    with hs as pid:
        p = read_sites(pid)
    doc = documented_fields(DOC)
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
    within("leak_site live_bytes", leak["live_bytes"], hs.leak_truth)
    within("churn_site alloc_bytes", churn["alloc_bytes"], hs.churn_truth)
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
    """The rows of the sites view: (live, alloc, growth, function, short,
    lifetime), the last two as shown."""
    rows, on = [], False
    for line in screen.splitlines():
        if "SITE (function" in line:
            on = True
            continue
        w = line.split()
        if on and len(w) >= 7 and w[0][0].isdigit():
            rows.append((size(w[0]), size(w[2]), size(w[3]), w[6], w[4], w[5]))
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
        within("leak_site live", rows[0][0], hs.leak_truth)
        if not re.search(r"leak_site heapsites\.c:\d+ < main heapsites\.c:\d+$",
                         s, re.M):
            fail("leak_site and its caller, named and placed:\n" + s)
        if site(rows, "churn_site")[0] != 0:
            fail("churn_site holds nothing:\n" + s)
        # churn_site frees each block at once: all of it short-lived, a
        # median lifetime of nanoseconds; leak_site frees none.
        churn, leak = site(rows, "churn_site"), site(rows, "leak_site")
        if churn[4] != "100%" or not churn[5].endswith("ns") or \
                leak[4:] != ("0.0%", "-"):
            fail("SHORT and LIFETIME of churn_site %r, leak_site %r:\n%s"
                 % (churn[4:], leak[4:], s))

        # Since it was first seen: late_site grew 16 MiB, the rest 0.
        hs.grow()
        t.wait(lambda s: site(sites_of(s), "late_site"), "late_site")
        t.keys("s")
        s = t.wait(lambda s: "call sites by growth" in s and
                   site(sites_of(s), "late_site"), "the sites by growth")
        rows = sites_of(s)
        if [r[3] for r in rows][0] != "late_site":
            fail("by growth, late_site first:\n" + s)
        late = LATES * hs.usable_1k
        within("late_site growth since first seen", rows[0][2], late)
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
        within("late_site live", rows[0][0], 2 * late)
        within("late_site growth since b", rows[0][2], late)

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


def segments(pid):
    return [n for n in os.listdir("/dev/shm") if n.startswith("mstat.%d." % pid)]


def pprof_out(profile, *args):
    out = subprocess.run([GO, "tool", "pprof"] + list(args) + [profile],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ,
                                  PPROF_TMPDIR=os.path.dirname(profile)))
    if out.returncode != 0:
        fail("go tool pprof could not read %s: %s"
             % (profile, out.stderr.strip()))
    return out.stdout


def top_function(profile, index):
    """The function pprof puts first by flat `index`."""
    for line in pprof_out(profile, "-sample_index=" + index,
                          "-top").splitlines():
        f = line.split()
        if len(f) >= 6 and f[1].endswith("%") and f[2].endswith("%"):
            return f[5]
    fail("pprof shows no function in %s" % profile)


def postmortems(d, pid):
    return sorted(n for n in os.listdir(d)
                  if re.fullmatch(r".+-%d-\d{8}T\d{6}Z\.pb\.gz" % pid, n))


def test_killed():
    hs = Heapsites(64 * 1024)
    with hs as pid:
        hs.kill()
    if len(segments(pid)) != 1:
        fail("killed: its segment is not kept: %r" % segments(pid))
    # A reader that was not running when it died.
    p = read_sites(pid)
    if p["state"] != "killed" or p["pid"] != pid:
        fail("killed: its row says %r" % p["state"])
    if [s["function"] for s in p["sites"]][:1] != ["leak_site"]:
        fail("killed: its sites: %r" % p["sites"])
    within("killed: leak_site live_bytes", p["sites"][0]["live_bytes"],
           hs.leak_truth)
    if len(segments(pid)) != 1:
        fail("killed: a tick removed it within its grace")
    # One mstat-top that runs on: the row lingers, then goes, and the
    # segment kept is not read again as a new process.
    r = subprocess.run([TOP, "-b", "-o", "json", "-d", "0.2", "-n", "12",
                        "--linger", "0.5", "-p", str(pid)],
                       capture_output=True, text=True, timeout=60)
    states = [[q["state"] for q in json.loads(line)["processes"]]
              for line in r.stdout.splitlines()]
    gone = states.index([]) if [] in states else None
    if (not states or states[0] != ["killed"] or gone is None or
            any(states[gone:])):
        fail("killed: rows tick by tick: %r" % states)
    with tempfile.TemporaryDirectory(prefix="mstat-killed.") as tmp:
        if GO:
            profile = os.path.join(tmp, "heap.pb.gz")
            write_pprof(pid, profile)
            if top_function(profile, "inuse_space") != "leak_site":
                fail("killed: --pprof: leak_site is not first")
        else:
            print("go is not installed: --pprof not read")
        pm = os.path.join(tmp, "pm")
        os.mkdir(pm)

        def tick(*args):
            r = subprocess.run([TOP, "-b", "-n", "1", "-p", str(pid),
                                "--postmortem-dir=" + pm] + list(args),
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or "its profile is in" not in r.stderr:
                fail("--postmortem-dir: status %d: %s"
                     % (r.returncode, r.stderr))
        tick()
        files = postmortems(pm, pid)
        if len(files) != 1 or not files[0].startswith("profile%d-%d-"
                                                      % (os.getpid(), pid)):
            fail("--postmortem-dir: %r" % os.listdir(pm))
        f = os.path.join(pm, files[0])
        st = os.stat(f)
        if st.st_mode & 0o777 != 0o600:
            fail("--postmortem-dir: mode %o" % (st.st_mode & 0o777))
        if GO:
            if top_function(f, "inuse_space") != "leak_site":
                fail("post-mortem: leak_site is not first")
            if "killed" not in pprof_out(f, "-comments"):
                fail("post-mortem: no comment says killed")
        # The cap: with room for it and 150 bytes more, the oldest of two
        # older files of 100 bytes goes; a link and other files stay.
        older = ["a-1-20000101T000000Z.pb.gz", "b-2-20000102T000000Z.pb.gz"]
        for n in older:
            with open(os.path.join(pm, n), "wb") as o:
                o.write(b"x" * 100)
        with open(os.path.join(pm, "notes.txt"), "w") as o:
            o.write("kept")
        os.symlink("notes.txt", os.path.join(pm, "c-3-19990101T000000Z.pb.gz"))
        tick("--postmortem-bytes=%d" % (st.st_size + 150))
        left = sorted(os.listdir(pm))
        want = sorted([older[1], "notes.txt", "c-3-19990101T000000Z.pb.gz",
                       files[0]])
        if left != want:
            fail("--postmortem-bytes: %r left, not %r" % (left, want))
    # A grace of 0: today's rule, a tick removes it.
    r = subprocess.run([TOP, "-b", "-n", "1", "-p", str(pid)],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MSTAT_KILLED_GRACE="0"))
    if r.returncode != 0 or segments(pid):
        fail("grace 0: %r left (%s)" % (segments(pid), r.stderr))
    with tempfile.TemporaryDirectory(prefix="mstat-killed.") as tmp:
        r = subprocess.run([TOP, "-p", str(pid), "--pprof=" + tmp + "/x"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            fail("--pprof of a process whose segment is gone succeeded")
    return 0


def test_killed_view():
    if not TMUX:
        print("SKIP: tmux is not installed")
        return 77
    hs = Heapsites(64 * 1024)
    with hs as pid:
        hs.kill()
    try:
        with Tmux("killed", "%s -p %d" % (TOP, pid)) as t:
            t.wait(lambda s: re.search(r"^ *%d .*killed" % pid, s, re.M),
                   "its row, killed")
            t.keys("s")
            s = t.wait(lambda s: "final, as it ended" in s and
                       sites_of(s), "its final sites")
            rows = sites_of(s)
            if rows[0][3] != "leak_site":
                fail("killed: by live bytes, leak_site first:\n" + s)
            within("killed: leak_site live", rows[0][0], hs.leak_truth)
    finally:
        # Its own segment only: other tests run meanwhile.
        subprocess.run([TOP, "-b", "-n", "1", "-p", str(pid)],
                       capture_output=True, timeout=60,
                       env=dict(os.environ, MSTAT_KILLED_GRACE="0"))
    if segments(pid):
        fail("killed-view: a tick with a grace of 0 left %r" % segments(pid))
    return 0


def make_cgroup(limit="256M", tag=""):
    """A memory cgroup of this test's, limited to `limit`, no swap: its
    directory, or None (and why) where none can be made."""
    name = "mstat-oom-%d%s" % (os.getpid(), tag)
    v1 = "/sys/fs/cgroup/memory"
    try:
        if os.path.exists(os.path.join(v1, "memory.oom_control")):
            cg = os.path.join(v1, name)
            os.mkdir(cg)
            limits = [("memory.limit_in_bytes", limit),
                      ("memory.memsw.limit_in_bytes", limit)]
        else:
            with open("/sys/fs/cgroup/cgroup.subtree_control") as f:
                if "memory" not in f.read().split():
                    return None, "no memory controller in cgroup v1 or v2"
            cg = os.path.join("/sys/fs/cgroup", name)
            os.mkdir(cg)
            limits = [("memory.max", limit), ("memory.swap.max", "0")]
    except OSError as e:
        return None, "cannot make a memory cgroup: %s" % e
    for f, v in limits:
        if os.path.exists(os.path.join(cg, f)):
            with open(os.path.join(cg, f), "w") as o:
                o.write(v)
    return cg, None


def test_oom():
    if not GO:
        print("SKIP: go is not installed (Debian: golang-go); "
              "go tool pprof is the client this test needs")
        return 77
    cg, why = make_cgroup()
    if not cg:
        print("SKIP: " + why)
        return 77

    def enter():
        with open(os.path.join(cg, "cgroup.procs"), "w") as o:
            o.write(str(os.getpid()))
    top = None
    try:
        with tempfile.TemporaryDirectory(prefix="mstat-oom.") as pm:
            hs = Heapsites(64 * 1024, preexec=enter)
            with hs as pid:
                top = subprocess.Popen(
                    [TOP, "-b", "-o", "json", "-d", "0.2", "-p", str(pid),
                     "--postmortem-dir=" + pm],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                states = []

                def state():
                    line = top.stdout.readline()
                    if not line:
                        fail("mstat-top ended: %s" % top.stderr.read())
                    ps = json.loads(line)["processes"]
                    states.append(ps[0]["state"] if ps else None)
                    return states[-1]
                while state() != "running":
                    if len(states) > 100:
                        fail("oom: never seen running: %r" % states[-5:])
                hs.p.stdin.write("o")
                hs.p.stdin.flush()
                if hs.p.wait(timeout=120) != -9:
                    fail("oom: heapsites ended with %d, not SIGKILL"
                         % hs.p.returncode)
                # Killed inside malloc, it reads as stalled until the
                # kernel has taken it whole (its owner lock goes last).
                while state() not in ("exited", "killed", "oomkill"):
                    if len(states) > 1000:
                        fail("oom: never seen gone: %r" % states[-5:])
                if states[-1] != "oomkill":
                    fail("oom: its row says %r" % states[-1])
            top.terminate()
            top.wait(timeout=60)
            err = top.stderr.read()
            top = None
            files = postmortems(pm, pid)
            if len(files) != 1:
                fail("oom: post-mortem files %r (%s)" % (os.listdir(pm), err))
            f = os.path.join(pm, files[0])
            first = top_function(f, "inuse_space")
            print("oom: %s first by inuse_space; mstat-top said: %s"
                  % (first, err.strip()))
            if first != "late_site":
                fail("oom: late_site is not first by inuse_space")
            comments = pprof_out(f, "-comments")
            if "killed by the OOM killer" not in comments:
                fail("oom: the profile does not say so: %r" % comments)
    finally:
        if top:
            top.kill()
            top.wait()
        os.rmdir(cg)
    return 0


NOBODY = 65534


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def log_line(e, err, pattern, what):
    """The first line of the exporter's stderr that matches `pattern`,
    waited for while it runs."""
    deadline = time.monotonic() + 120
    while e.poll() is None and time.monotonic() < deadline:
        err.seek(0)
        m = re.search(pattern, err.read().decode(errors="replace"), re.M)
        if m:
            return m
        time.sleep(0.05)
    err.seek(0)
    print("/dev/shm: %r" % os.listdir("/dev/shm"))
    fail("%s: the exporter never said it (%s):\n%s" % (
        what, "exited %s" % e.returncode if e.poll() is not None
        else "2 minutes", err.read().decode(errors="replace")))


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=60) as r:
        return r.read().decode()


def test_oom_exporter():
    """mstat-exporter --postmortem-dir, nobody scraping: each process
    OOM-killed gets its post-mortem file, saying the OOM killer did it."""
    exporter = os.environ.get("MSTAT_EXPORTER")
    if not exporter:
        fail("MSTAT_EXPORTER is set by meson")
    if not GO:
        print("SKIP: go is not installed (Debian: golang-go); "
              "go tool pprof is the client this test needs")
        return 77
    big, why = make_cgroup("256M", "-seen")
    if not big:
        print("SKIP: " + why)
        return 77
    small, why = make_cgroup("64M", "-unseen")
    if not small:
        os.rmdir(big)
        print("SKIP: " + why)
        return 77
    try:
        oom_seen(exporter, big)
        oom_unseen(exporter, small)
    finally:
        os.rmdir(big)
        os.rmdir(small)
    return 0


def in_cgroup(cg, then=None):
    def enter():
        with open(os.path.join(cg, "cgroup.procs"), "w") as o:
            o.write(str(os.getpid()))
        if then:
            then()
    return enter


def oom_seen(exporter, cg):
    """Seen alive: the exporter, as a user that cannot read the kernel's
    log, runs; heapsites, as that user, in a 256 MiB cgroup, is found by
    the exporter's own tick, then keeps blocks until the OOM killer kills
    it.  Its memory cgroup's count of OOM kills, read when found, says
    so."""
    with tempfile.TemporaryDirectory(prefix="mstat-oom.") as pm:
        os.chown(pm, NOBODY, NOBODY)
        log = []
        e, _ = serve(exporter, ["--postmortem-dir=" + pm], as_nobody, log)
        try:
            hs = Heapsites(64 * 1024, preexec=in_cgroup(cg, as_nobody))
            with hs as pid:
                # Found by a tick of its own: the exporter maps it.
                deadline = time.monotonic() + 120
                while not any("/dev/shm/mstat.%d." % pid in ln for ln in
                              open("/proc/%d/maps" % e.pid)):
                    if e.poll() is not None or time.monotonic() > deadline:
                        fail("oom, seen: the exporter never read pid %d"
                             % pid)
                    time.sleep(0.05)
                hs.p.stdin.write("o")
                hs.p.stdin.flush()
                if hs.p.wait(timeout=120) != -9:
                    fail("oom, seen: heapsites ended with %d, not SIGKILL"
                         % hs.p.returncode)
                died = time.monotonic()
            m = log_line(e, log[0], r"pid %d .* killed: its profile is in "
                         r"(\S+)$" % pid, "oom, seen")
            print("oom, seen: written %.1f s after its death, unscraped"
                  % (time.monotonic() - died))
        finally:
            e.terminate()
            e.wait(timeout=60)
        check_postmortem(m.group(1), "late_site",
                         r"killed by the OOM killer: memory cgroup /\S+ "
                         r"\(v[12]\) oom_kill 0 -> 1", "oom, seen")


def oom_unseen(exporter, cg):
    """Started and killed between two scrapes, too fast for any tick to
    see it alive: scraped once, heapsites in a 64 MiB cgroup is killed
    as it makes its 64 MiB; its post-mortem file comes before the next
    scrape, and says the OOM killer did it, from the kernel's log, where
    this test may read it (as the exporter, root, does)."""
    try:
        open("/dev/kmsg").close()
        kmsg = True
    except OSError as x:
        kmsg = False
        print("oom, unseen: /dev/kmsg: %s: its cause is not checked"
              % x.strerror)
    with tempfile.TemporaryDirectory(prefix="mstat-oom.") as pm:
        log = []
        e, port = serve(exporter, ["--postmortem-dir=" + pm], None, log)
        try:
            scrape(port)
            env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
                       MSTAT_NAME="unseen%d" % os.getpid(),
                       MSTAT_SAMPLE_BYTES=str(64 * 1024))
            p = subprocess.Popen([HEAPSITES], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, env=env,
                                 preexec_fn=in_cgroup(cg))
            if p.wait(timeout=120) != -9:
                fail("oom, unseen: heapsites ended with %d, not SIGKILL"
                     % p.returncode)
            died = time.monotonic()
            m = log_line(e, log[0], r"pid %d .* killed: its profile is in "
                         r"(\S+)$" % p.pid, "oom, unseen")
            print("oom, unseen: written %.1f s after its death, unscraped"
                  % (time.monotonic() - died))
            scrape(port)
        finally:
            e.terminate()
            e.wait(timeout=60)
        check_postmortem(m.group(1), "leak_site",
                         r"killed by the OOM killer: " if kmsg else "",
                         "oom, unseen")


def check_postmortem(f, first, comment, what):
    """Post-mortem file `f`: `first` first by inuse_space, and its comment
    matches `comment`."""
    comments = pprof_out(f, "-comments")
    print("%s: %s" % (what, comments.strip()))
    if not re.search(comment, comments):
        fail("%s: the profile's comment is not %r" % (what, comment))
    top = top_function(f, "inuse_space")
    if top != first:
        fail("%s: %s, not %s, is first by inuse_space" % (what, top, first))


def live(p, function):
    """The live bytes of `function`'s site in process object `p`."""
    for s in p["sites"] or []:
        if s["function"] == function:
            return s["live_bytes"]
    fail("no site %s in %r" % (function, p["sites"]))


def test_rates():
    start = 128 * 1024
    hs = Heapsites(start)
    with hs as pid:
        u = hs.usable_1k
        # 64 MiB of 1 KiB blocks at 128 KiB: about 512 samples.
        leak = live(read_sites(pid), "leak_site")
        within_sigmas("leak_site live at 128 KiB", leak, hs.leak_truth,
                      sigma(LEAKS, LEAK_SIZE, u, start))

        # 32 KiB: what leak_site's samples say stays what it said.
        set_interval(pid, 32 * 1024)
        now = live(read_sites(pid), "leak_site")
        if now != leak:
            fail("leak_site changed with the interval: %d, then %d"
                 % (leak, now))
        hs.grow()
        hs.grow()
        # 32 MiB, at 32 KiB but for the bytes its first countdown (drawn
        # at 128 KiB) still covered: bounded as if all at 128 KiB.
        var_late = sigma(2 * LATES, LATE_SIZE, u, start) ** 2
        p = read_sites(pid)
        late = live(p, "late_site")
        within_sigmas("late_site live at 32 KiB", late, 2 * LATES * u,
                      math.sqrt(var_late))
        if live(p, "leak_site") != leak:
            fail("leak_site changed: %d, then %d" % (leak, live(p, "leak_site")))

        # Off, and what it allocates (and frees) meanwhile changes no
        # site that holds memory.
        set_interval(pid, 0)
        hs.churn()
        p = read_sites(pid)
        if live(p, "leak_site") != leak or live(p, "late_site") != late:
            fail("sampling off changed the sites: %d, %d, then %d, %d"
                 % (leak, late, live(p, "leak_site"), live(p, "late_site")))

        # On again: the next 128 MiB end the 64 MiB a thread allocates
        # before it looks again while off; then 16 MiB more at 128 KiB.
        set_interval(pid, start)
        hs.churn()
        hs.grow()
        var_late += sigma(LATES, LATE_SIZE, u, start) ** 2
        p = read_sites(pid)
        if live(p, "leak_site") != leak:
            fail("leak_site changed: %d, then %d" % (leak, live(p, "leak_site")))
        late = live(p, "late_site")
        within_sigmas("late_site live, 32 KiB then 128 KiB", late,
                      3 * LATES * u, math.sqrt(var_late))

        # pprof says the same, to the byte.
        if GO:
            with tempfile.TemporaryDirectory(prefix="mstat-pprof.") as tmp:
                profile = os.path.join(tmp, "heap.pb.gz")
                write_pprof(pid, profile)
                for f, want in (("leak_site", leak), ("late_site", late)):
                    got = top_bytes(GO, profile, "inuse_space", f)
                    print("%s inuse_space %d, --sites %d" % (f, got, want))
                    if got != want:
                        fail("%s: pprof %d, --sites %d" % (f, got, want))
        else:
            print("go is not installed: pprof not compared")
    return 0


KEEPS, CHURNS = 65536, 65536


def serve(exporter, args=(), preexec=None, log=None):
    """mstat-exporter on a port of 127.0.0.1 that was free: (process,
    port).  `log`: a list that gets its stderr file."""
    for _ in range(20):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        err = tempfile.TemporaryFile()
        p = subprocess.Popen([exporter, "--web.listen-address=127.0.0.1:%d"
                              % port] + list(args), stderr=err,
                             preexec_fn=preexec)
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            err.seek(0)
            if b"listening on" in err.read():
                if log is not None:
                    log.append(err)
                return p, port
            time.sleep(0.05)
        if p.poll() is None:
            p.kill()
            fail("the exporter did not start")
        err.seek(0)
        if b"Address already in use" not in err.read():
            fail("the exporter exited %d" % p.returncode)
    fail("no free port in 20 attempts")


def fetch(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        if r.headers["Content-Type"] != "application/octet-stream":
            fail("%s: Content-Type %r" % (url, r.headers["Content-Type"]))
        return pprofproto.Profile(r.read())


def test_http():
    cxx, exporter = os.environ.get("CXXSITES"), os.environ.get("MSTAT_EXPORTER")
    if not cxx or not exporter:
        fail("CXXSITES and MSTAT_EXPORTER are set by meson")
    keep, churn = "shop::Cart::keep()", "shop::Ledger::churn()"
    env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
               MSTAT_NAME="cxx%d" % os.getpid(),
               MSTAT_SAMPLE_BYTES=str(INTERVAL))
    p = subprocess.Popen([cxx], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=env, text=True)
    e = None
    try:
        line = p.stdout.readline().split()
        if len(line) != 3 or line[0] != "ready":
            fail("cxxsites said %r" % line)
        u1k, u8k = int(line[1]), int(line[2])
        e, port = serve(exporter)
        url = "http://127.0.0.1:%d/debug/pprof/%%s?pid=%d" % (port, p.pid)
        heap, allocs = fetch(url % "heap"), fetch(url % "allocs")
        if (heap.default_sample_type, allocs.default_sample_type) != (
                "", "alloc_space"):
            fail("default types %r %r" % (heap.default_sample_type,
                                          allocs.default_sample_type))
        if heap.period != INTERVAL:
            fail("period %d" % heap.period)
        v = {t: heap.by_function(t) for t in ("alloc_objects", "alloc_space",
                                              "inuse_objects", "inuse_space")}
        sd_keep = sigma(KEEPS, 1024, u1k, INTERVAL)
        sd_churn = sigma(CHURNS, 8192, u8k, INTERVAL)
        within_sigmas("%s inuse_space" % keep, v["inuse_space"][keep],
                      KEEPS * u1k, sd_keep)
        within_sigmas("%s inuse_objects" % keep, v["inuse_objects"][keep],
                      KEEPS, sd_keep / u1k)
        within_sigmas("%s alloc_space" % churn, v["alloc_space"][churn],
                      CHURNS * u8k, sd_churn)
        within_sigmas("%s alloc_objects" % churn, v["alloc_objects"][churn],
                      CHURNS, sd_churn / u8k)
        if v["inuse_space"][churn] != 0 or v["inuse_objects"][churn] != 0:
            fail("%s holds %d bytes: it deleted all" %
                 (churn, v["inuse_space"][churn]))
        if v["alloc_space"][keep] != v["inuse_space"][keep]:
            fail("%s: alloc_space %d, inuse_space %d: it deleted nothing" %
                 (keep, v["alloc_space"][keep], v["inuse_space"][keep]))
        # Named as C++ reads them, placed in their source file.
        for fn in (keep, churn):
            lines = [(heap.functions[f], ln) for loc in heap.locations.values()
                     for f, ln in loc.lines if heap.functions[f].name == fn]
            if not lines or not all(f.filename.endswith("/tests/profile/"
                                                        "cxxsites.cc") and
                                    f.system_name.startswith("_ZN4shop") and
                                    ln > 0 for f, ln in lines):
                fail("%s placed %r" % (fn, lines))
        # The same, from /allocs: the same data, another default.
        if allocs.by_function("alloc_space")[churn] != v["alloc_space"][churn]:
            fail("allocs and heap differ")
        if GO:
            with tempfile.TemporaryDirectory(prefix="mstat-pprof.") as tmp:
                out = subprocess.run(
                    [GO, "tool", "pprof", "-sample_index=inuse_space",
                     "-unit=B", "-top", url % "heap"],
                    capture_output=True, text=True, timeout=120,
                    env=dict(os.environ, PPROF_TMPDIR=tmp, HOME=tmp))
            got = [ln for ln in out.stdout.splitlines()
                   if ln.endswith(" " + keep)]
            want = "%dB" % v["inuse_space"][keep]
            if out.returncode != 0 or len(got) != 1 or \
                    got[0].split()[0] != want:
                fail("go tool pprof: %r, not %s:\n%s%s" % (
                    got, want, out.stdout, out.stderr))
            print("go tool pprof: %s %s" % (keep, want))
        else:
            print("go is not installed: go tool pprof not run")
        # Killed, its last profile is still served, while its segment is
        # kept (MSTAT_KILLED_GRACE): the same, to the byte.
        p.kill()
        p.wait(timeout=60)
        dead = fetch(url % "heap").by_function("inuse_space")
        if dead[keep] != v["inuse_space"][keep]:
            fail("killed: %s inuse_space %d, %d before" %
                 (keep, dead[keep], v["inuse_space"][keep]))
        print("killed: %s inuse_space %d, served" % (keep, dead[keep]))
    finally:
        if e:
            e.terminate()
            e.wait(timeout=60)
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
        p.wait(timeout=60)
    return 0

MIXED_SMALL, MIXED_LARGE = 396000, 4000
MIXED_SMALL_SIZE, MIXED_LARGE_SIZE = 32, 65536


def mixed_values(where, v):
    """Checks mixed_site's values `v` ({"live_objects", "alloc_objects",
    "live_bytes", "alloc_bytes"}) against the truth (mixed_truth)."""
    for k, (truth, sd) in mixed_truth.items():
        within_sigmas("%s: mixed_site %s" % (where, k), v[k], truth, sd)


def same_values(where, v, want):
    """`v` is what --sites said at first, objects to within rounding."""
    for k in want:
        if abs(v[k] - want[k]) > (1 if k.endswith("objects") else 0):
            fail("%s: mixed_site %s %d, --sites said %d"
                 % (where, k, v[k], want[k]))
    print("%s: mixed_site %s" % (where, " ".join(
        "%s %d" % (k, v[k]) for k in sorted(v))))


def pprof_values(prof):
    """mixed_site's values in a pprof heap profile, by their JSON names."""
    names = {"inuse_objects": "live_objects",
             "alloc_objects": "alloc_objects",
             "inuse_space": "live_bytes", "alloc_space": "alloc_bytes"}
    return {names[t]: prof.by_function(t).get("mixed_site", 0)
            for t in names}


def sites_values(p):
    for s in p["sites"] or []:
        if s["function"] == "mixed_site":
            return {k: s[k] for k in ("live_objects", "alloc_objects",
                                      "live_bytes", "alloc_bytes")}
    fail("no mixed_site in %r" % p["sites"])


mixed_truth = {}


def test_objects():
    exporter = os.environ.get("MSTAT_EXPORTER")
    if not exporter:
        fail("MSTAT_EXPORTER is set by meson")
    interval = 32 * 1024
    hs = Heapsites(interval)
    e = None
    with hs as pid, tempfile.TemporaryDirectory(prefix="mstat-objs.") as tmp:
        try:
            hs.p.stdin.write("m")
            hs.p.stdin.flush()
            line = hs.p.stdout.readline().split()
            if len(line) != 3 or line[0] != "mixed":
                fail("heapsites said %r" % line)
            us, ul = int(line[1]), int(line[2])
            blocks = MIXED_SMALL + MIXED_LARGE
            sd_o = math.sqrt(
                sigma(MIXED_SMALL, MIXED_SMALL_SIZE, 1, interval) ** 2 +
                sigma(MIXED_LARGE, MIXED_LARGE_SIZE, 1, interval) ** 2)
            sd_b = math.sqrt(
                sigma(MIXED_SMALL, MIXED_SMALL_SIZE, us, interval) ** 2 +
                sigma(MIXED_LARGE, MIXED_LARGE_SIZE, ul, interval) ** 2)
            nbytes = MIXED_SMALL * us + MIXED_LARGE * ul
            mixed_truth.update({"live_objects": (blocks, sd_o),
                                "alloc_objects": (blocks, sd_o),
                                "live_bytes": (nbytes, sd_b),
                                "alloc_bytes": (nbytes, sd_b)})

            want = sites_values(read_sites(pid))
            mixed_values("--sites", want)
            profile = os.path.join(tmp, "heap.pb.gz")
            write_pprof(pid, profile)
            with open(profile, "rb") as f:
                same_values("--pprof", pprof_values(pprofproto.Profile(
                    f.read())), want)
            e, port = serve(exporter)
            url = "http://127.0.0.1:%d/debug/pprof/heap?pid=%d" % (port, pid)
            same_values("/debug/pprof/heap", pprof_values(fetch(url)), want)

            # Killed: what is kept of it says the same.
            hs.kill()
            p = read_sites(pid)
            if p["state"] != "killed":
                fail("killed: its row says %r" % p["state"])
            same_values("killed: --sites", sites_values(p), want)
            same_values("killed: /debug/pprof/heap",
                        pprof_values(fetch(url)), want)
            pm = os.path.join(tmp, "pm")
            os.mkdir(pm)
            r = subprocess.run([TOP, "-b", "-n", "1", "-p", str(pid),
                                "--postmortem-dir=" + pm],
                               capture_output=True, text=True, timeout=60)
            files = postmortems(pm, pid)
            if r.returncode != 0 or len(files) != 1:
                fail("--postmortem-dir: status %d, %r: %s"
                     % (r.returncode, os.listdir(pm), r.stderr))
            with open(os.path.join(pm, files[0]), "rb") as f:
                same_values("post-mortem", pprof_values(pprofproto.Profile(
                    f.read())), want)
        finally:
            if e:
                e.terminate()
                e.wait(timeout=60)
    return 0


if __name__ == "__main__":
    tests = {"pprof": test_pprof, "sites": test_sites, "view": test_view,
             "rates": test_rates, "http": test_http, "killed": test_killed,
             "killed-view": test_killed_view, "oom": test_oom,
             "oom-exporter": test_oom_exporter, "objects": test_objects}
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
