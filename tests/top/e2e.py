#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of mstat-top against real instrumented processes.

    e2e.py TEST     TEST: exact lifecycle exec stopped refusals gc pidns
                          unpublished json openmetrics interactive escape
                          leak replay keys terminal files cut narrow
                          baseline options docs demo

Environment (set by meson): MSTAT_TOP, MSTAT_TARGET (tests/top/target.c),
MSTAT_RUN, MSTAT_DEMO (demo/workload.c), PROMTOOL, TMUX_BIN and GO (empty
when not installed).

Every test watches only processes it started (by -p PID, or by a name
filter unique to this run), so segments other programs leave in /dev/shm
do not matter.  Planted segments are named with the pid of this script,
which lives: a starting instrumented process removes dead segments only
of pids that do not exist, so none races with the test for them.
Nothing here asserts a duration: a hang shows as a subprocess timeout,
generous enough for a loaded machine.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from jsondoc import documented_fields
import tmuxview

TOP = os.environ["MSTAT_TOP"]
TARGET = os.environ["MSTAT_TARGET"]
RUN = os.environ["MSTAT_RUN"]
PROMTOOL = os.environ.get("PROMTOOL", "")
TMUX = os.environ.get("TMUX_BIN", "")
DEMO = os.environ.get("MSTAT_DEMO", "")
GO = os.environ.get("GO", "")
SRC = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(SRC, "..", "..")
DOCS = os.path.join(ROOT, "docs")
TAG = "e2e%d" % os.getpid()  # unique names for this run
# Under `meson test --setup valgrind` this script, mstat-top and the
# targets all run under memcheck, tens of times slower.
VALGRIND = "vgpreload" in os.environ.get("LD_PRELOAD", "")
TIMEOUT = 90 * (20 if VALGRIND else 1)  # a hang, not a slow machine
# Under valgrind, tmux and the shell are not traced (VALGRIND_OPTS in
# meson.build skips them): mstat-top in a terminal is run under memcheck
# by this prefix, with the suppressions the setup gives every test.
MEMCHECK = ("valgrind -q --error-exitcode=9 --leak-check=full "
            "--suppressions=%s --suppressions=%s " % (
                os.path.join(SRC, "valgrind.supp"),
                os.path.join(SRC, "..", "interpose", "valgrind.supp"))
            if VALGRIND else "")

children = []
planted = []


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Target:
    """An instrumented process; it exits cleanly when stop() closes stdin."""

    def __init__(self, mode, name, env=None, exe=TARGET):
        e = dict(os.environ, MSTAT_NAME=name)
        e.update(env or {})
        self.name = name
        self.p = subprocess.Popen([exe, mode], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=e)
        children.append(self.p)
        line = self.p.stdout.readline()
        check(line == b"ready\n", "%s did not start: %r" % (mode, line))
        self.pid = self.p.pid

    def stop(self):
        if self.p.poll() is None:
            os.kill(self.pid, signal.SIGCONT)
            self.p.stdin.close()
            self.p.wait(timeout=TIMEOUT)


def proc_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_for(cond, what):
    deadline = time.monotonic() + TIMEOUT
    while not cond():
        check(time.monotonic() < deadline, "timed out waiting for " + what)
        time.sleep(0.05)


def ours(err):
    """stderr without valgrind's own notes ("--pid-- WARNING: unhandled
    syscall" for pidfd_open, which mstat-top then does without)."""
    return "".join(l for l in err.splitlines(True)
                   if not re.match(r"--\d+-- ", l))


def run_top(*args, env=None):
    r = subprocess.run([TOP, "-b"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT,
                       env=dict(os.environ, **(env or {})))
    check(r.returncode == 0, "mstat-top %s exited %d: %s" %
          (" ".join(args), r.returncode, r.stderr.decode()))
    return r.stdout.decode(), r.stderr.decode()


class Top:
    """mstat-top -b -o json ARGS, with no -n: it ticks until the test has
    seen what it needs in ticks(), read as they come, and close() ends it
    by closing its output.  SIGPIPE stays ignored in it, as Python has it
    (restore_signals=False): its next write fails with EPIPE, which
    batch mode takes as the reader's choice to stop (exit 0)."""

    def __init__(self, *args):
        self.args = " ".join(args)
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen([TOP, "-b", "-o", "json"] + list(args),
                                  stdout=subprocess.PIPE, stderr=self.err,
                                  restore_signals=False)
        children.append(self.p)
        self.deadline = time.monotonic() + TIMEOUT

    def ticks(self, waiting):
        """The ticks; a hang once TIMEOUT has passed, said by waiting():
        what the test waits for, and what it saw."""
        for line in self.p.stdout:
            check(time.monotonic() < self.deadline,
                  "mstat-top %s: timed out waiting for %s" %
                  (self.args, waiting()))
            yield json.loads(line)

    def close(self):
        self.p.stdout.close()
        rc = self.p.wait(timeout=TIMEOUT)
        self.err.seek(0)
        check(rc == 0, "mstat-top %s exited %d: %s" %
              (self.args, rc, self.err.read().decode()))


def ticks(out):
    return [json.loads(line) for line in out.splitlines()]


def find(tick, t):
    """Target t's row: its pid and its name (pids recycle, and segments of
    dead processes with the same pid may be about)."""
    found = [p for p in tick["processes"]
             if p["pid"] == t.pid and p["name"] == t.name]
    return found[0] if found else None


def segments_of(pid):
    return [n for n in os.listdir("/dev/shm") if n.startswith("mstat.%d." % pid)]


def segment_head(pid):
    """The control page and class table of pid's segment, and its size."""
    path = "/dev/shm/" + segments_of(pid)[0]
    with open(path, "rb") as f:
        return f.read(8192), os.fstat(f.fileno()).st_size


def with_identity(head, pid, start):
    """A header saying it belongs to pid, started at start."""
    return (head[:52] + pid.to_bytes(4, "little") + head[56:64] +
            start.to_bytes(8, "little") + head[72:])


def hold_owner_lock(path):
    """Takes the owner lock on a segment, as its creator does (an open
    file description read lock on byte 0), for as long as the returned
    descriptor is open."""
    import fcntl
    import struct
    fd = os.open(path, os.O_RDWR)
    F_OFD_SETLK = 37
    fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("hhxxxxqqixxxx",
                                             fcntl.F_RDLCK, 0, 0, 1, 0))
    return fd


B = 1 << 37   # the size target.c's fixed and stall modes count
LEAK = 1 << 38


def cls(p, size):
    found = [c for c in p["classes"] if c["size"] == size]
    return found[0] if found else None


def expect_fixed(p, what, n_alloc=10, n_free=3):
    """The counts target.c's "fixed" mode makes, exactly, in their class;
    the totals hold them and the process's own (small) allocations."""
    c = cls(p, B)
    want = {"size": B, "alloc_count": n_alloc, "alloc_bytes": n_alloc * B,
            "free_count": n_free, "free_bytes": n_free * B}
    check(c and {k: c[k] for k in want} == want,
          "%s: class %r, not %r" % (what, c, want))
    live = (n_alloc - n_free) * B
    check(live <= p["live_bytes"] < live + (1 << 36),
          "%s: live bytes %d" % (what, p["live_bytes"]))
    check(p["alloc_count"] >= n_alloc and p["free_count"] >= n_free and
          p["live_objects"] == p["alloc_count"] - p["free_count"] and
          p["live_bytes"] == p["alloc_bytes"] - p["free_bytes"],
          "%s: totals %r" % (what, p))
    for k in ("alloc_count", "alloc_bytes", "free_count", "free_bytes"):
        check(p[k] == sum(c[k] for c in p["classes"]),
              "%s: %s is the sum of the classes" % (what, k))


# The batch table's columns (core/fields.h, the COL lines) and widths: NAME is
# MSTAT_OUTPUT_NAME_WIDTH wide and may hold spaces; STATE takes the rest.
TABLE = [("PID", 7), ("NAME", 20), ("WHERE", 12), ("AGE", 6), ("THR", 4), ("LIVE", 8),
         ("OBJS", 6), ("ALLOC/s", 8), ("FREE/s", 8), ("NET/s", 10),
         ("GROWTH", 9), ("+OBJS", 7), ("GROWTH/s", 10), ("RSS", 8), ("FREE%", 5),
         ("STATE", None)]


def table_rows(out):
    """The batch table's rows, each a dict by column title, cells
    stripped."""
    rows = []
    for line in out.splitlines():
        if not re.match(r"^ *\d+ ", line):
            continue
        row, at = {}, 0
        for title, w in TABLE:
            row[title] = (line[at:at + w] if w else line[at:]).strip()
            at += (w or 0) + 1
        rows.append(row)
    return rows


# The targets' comm: under memcheck, valgrind's own.
TARGET_COMM = "memcheck-amd64-" if VALGRIND else "mstat-observer-"


def display_name(name, comm=TARGET_COMM):
    """What NAME shows: the name, and the comm where that differs."""
    return name if name.startswith(comm) else "%s [%s]" % (name, comm)


def shown_name(name, w, comm=TARGET_COMM):
    """NAME in a column of w characters (columns.c): whole if it fits;
    else the name and what fits of its [comm], marked cut; else the name
    alone; else the name, cut.  A cut ends in an ellipsis."""
    def cut(s):
        return s if len(s) <= w else s[:w - 1] + "\u2026"
    if name.startswith(comm) or len(display_name(name, comm)) <= w:
        return cut(display_name(name, comm))
    if len(name) + 4 <= w:
        return "%s [%s\u2026]" % (name, comm[:w - len(name) - 4])
    return cut(name)


# ---- the tests ----

def test_exact():
    """Exact totals of a real process, in JSON and in the table."""
    t = Target("fixed", TAG + "-fixed")
    out, err = run_top("-o", "json", "-n", "2", "-d", "0.2", "-p", str(t.pid))
    ts = ticks(out)
    check(len(ts) == 2, "2 ticks, got %d" % len(ts))
    for i, tick in enumerate(ts):
        check(tick["version"] == 1 and tick["tick"] == i + 1, "tick header")
        check(len(tick["processes"]) == 1, "only the -p process")
        p = tick["processes"][0]
        check(p["pid"] == t.pid and p["name"] == t.name, "pid and name")
        check(p["state"] == "running" and p["threads"] == 1, "state/threads")
        expect_fixed(p, "tick %d" % (i + 1))
    check(ts[0]["processes"][0]["alloc_rate"] is None, "no rate on tick 1")
    check(ts[1]["processes"][0]["alloc_rate"] == 0.0, "idle: rate 0")
    # A segment an earlier process with the same pid left behind (same
    # pid, another start time) is not this process: -p shows only the
    # live one; by name, the old one is killed (nobody holds its owner
    # lock) with its final counts, and its segment is kept for the grace
    # (MSTAT_KILLED_GRACE); with a grace of 0, removed.
    seg = segments_of(t.pid)[0]
    start = int(seg.rsplit(".", 1)[1])
    head, size = segment_head(t.pid)
    old = "mstat.%d.%d" % (t.pid, start - 1)
    plant(old, with_identity(head, t.pid, start - 1), size)
    out, _ = run_top("-o", "json", "-n", "1", "-p", str(t.pid))
    check([p["state"] for p in ticks(out)[0]["processes"]] == ["running"],
          "-p: the live process only: %s" % out)
    out, _ = run_top("-o", "json", "-n", "1", "-F", t.name)
    check(sorted(p["state"] for p in ticks(out)[0]["processes"]) ==
          ["killed", "running"], "by name: both: %s" % out)
    check(os.path.exists("/dev/shm/" + old),
          "the dead one's segment was kept for its grace")
    run_top("-o", "json", "-n", "1", "-F", t.name,
            env={"MSTAT_KILLED_GRACE": "0"})
    check(not os.path.exists("/dev/shm/" + old),
          "the dead one's segment was removed with a grace of 0")
    # A pid with no segment is named on stderr, with why; the others are
    # shown.
    out, err = run_top("-n", "1", "-p", "%d,2000000001" % t.pid)
    check(ours(err) == "mstat-top: pid 2000000001: no such process\n",
          "missing pid: %r" % err)
    _, err = run_top("-n", "1", "-p", str(os.getpid()))
    check(ours(err) == "mstat-top: pid %d: no segment: it does not count "
          "with libmstatshm (mstat-run starts a program that does)\n" %
          os.getpid(), "a live pid that does not count: %r" % err)
    if os.geteuid() == 0:
        other = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534",
                                  "--clear-groups", "sleep", "60"])
        children.append(other)
        wait_for(lambda: os.stat("/proc/%d" % other.pid).st_uid == 65534,
                 "a process of another user")
        # Root reads every user's segments: another user's process
        # that does not count is said to be one.
        _, err = run_top("-n", "1", "-p", str(other.pid))
        check(ours(err) == "mstat-top: pid %d: no segment: it does not "
              "count with libmstatshm (mstat-run starts a program that "
              "does)\n" % other.pid, "another user's: %r" % err)
        other.kill()
        other.wait()
    # -p naming nothing that exists: nothing to watch, ever: exit 1.
    r = subprocess.run([TOP, "-b", "-n", "3", "-p", "2000000001,2000000002"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 1 and r.stdout == b"" and
          ours(r.stderr.decode()).count("no such process\n") == 2,
          "-p of no process: exit %d, %r" % (r.returncode, r.stderr))
    rows = [r for r in table_rows(out) if r["PID"] == str(t.pid)]
    check(rows and rows[0]["NAME"] == shown_name(t.name, 20) and
          rows[0]["THR"] == "1" and rows[0]["LIVE"] == "896GiB" and
          rows[0]["OBJS"] == "%d" % ts[1]["processes"][0]["live_objects"] and
          rows[0]["STATE"] == "running", "table row: %r" % rows)
    t.stop()
    check(not os.path.exists("/dev/shm/" + seg),
          "a clean exit unlinks the segment")


def test_lifecycle():
    """Processes that start and exit while mstat-top runs: one appears by
    itself, runs, shows as exited with its final totals (its leak), and
    goes after --linger; one already running is there throughout.  The
    one that starts is told to exit (its stdin closed) once it has been
    seen running with its leak, not after a time: under memcheck on a
    loaded machine, ticks can come seconds apart."""
    a = Target("steady", TAG + "-life-a")
    top = subprocess.Popen([TOP, "-b", "-o", "json", "-d", "0.2", "-n",
                            str(TIMEOUT * 5),
                            "--linger", "0.6", "-F", TAG + "-life"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    children.append(top)  # stderr unread: a pipe would fill and block it
    seen = []   # b's state per tick, None when absent
    b = None
    rates = []
    try:
        deadline = time.monotonic() + TIMEOUT
        for line in top.stdout:
            check(time.monotonic() < deadline, "lifecycle took too long")
            tick = json.loads(line)
            pa = find(tick, a)
            check(pa is not None and pa["state"] == "running",
                  "the steady process is in every tick")
            if pa["alloc_rate"] is not None:
                rates.append(pa["alloc_rate"])
            if b is None:
                check(len(tick["processes"]) == 1, "only a before b starts")
                b = Target("leak", TAG + "-life-b")
                continue
            pb = find(tick, b)
            seen.append(pb and pb["state"])
            if (pb and pb["state"] == "running" and cls(pb, LEAK) and
                    not b.p.stdin.closed):
                b.p.stdin.close()  # seen running, with its leak: it exits
            if pb and pb["state"] == "exited":
                leak = cls(pb, LEAK)
                check(leak and leak["free_count"] == 0 and
                      leak["alloc_count"] > 0 and
                      pb["live_bytes"] >= leak["alloc_bytes"] and
                      pb["threads"] == 0,
                      "exited row keeps its final totals: %r" % pb)
                check(pb["alloc_rate"] == 0, "an exited process has no rate")
                final = pb
            if "exited" in seen and seen[-1] is None:
                break
    finally:
        top.kill()
        top.wait()
    states = [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]]
    # b may be absent on the first tick after it started (the scan ran
    # before its segment existed), then running, exited, and gone.
    if states and states[0] is None:
        states = states[1:]
    check(states[:1] == ["running"] and "exited" in states and
          states[-1] is None and states.index("exited") < len(states) - 1,
          "b went running -> exited -> gone, got %r" % states)
    check(rates and max(rates) > 0, "the steady process has a rate")
    check(b.p.wait(timeout=TIMEOUT) == 0, "b exited cleanly")
    a.stop()


def test_exec():
    """A process that exec()s gets a new segment under the same name; a
    running mstat-top shows the new image once, not a frozen old row
    beside it, nor the old image as killed."""
    t = Target("exec", TAG + "-exec")
    top = subprocess.Popen([TOP, "-b", "-o", "json", "-d", "0.2", "-n",
                            str(TIMEOUT * 5), "-p", str(t.pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    children.append(top)  # stderr unread: a pipe would fill and block it
    after = 0
    try:
        for line in top.stdout:
            rows = [p for p in json.loads(line)["processes"]
                    if p["pid"] == t.pid]
            if not after and rows and rows[0]["name"] == t.name:
                t.p.stdin.write(b"x\n")
                t.p.stdin.flush()
                check(t.p.stdout.readline() == b"ready\n", "exec'd")
                after = 1
                continue
            if after:
                check(all(p["state"] != "killed" for p in rows),
                      "an exec is not a kill: %r" % rows)
                names = [p["name"] for p in rows]
                if names in ([t.name], []):
                    continue  # before the exec, or before the new image
                    # has made its segment
                check(names == [t.name + "-after"], "one row: %r" % names)
                expect_fixed(rows[0], "the new image")
                after += 1
                if after == 4:
                    break
    finally:
        top.kill()
        top.wait()
    check(after == 4, "saw the new image")
    t.stop()


def test_stopped():
    """A process stopped inside an update section shows as stalled, with a
    reason, on every tick; the others are read exactly on every tick; once
    continued it is read exactly too."""
    s = Target("stall", TAG + "-stalled")
    wait_for(lambda: proc_state(s.pid) == "T", "the target to stop itself")
    f = Target("fixed", TAG + "-fixed")
    g = Target("steady", TAG + "-steady")
    pids = "%d,%d,%d" % (s.pid, f.pid, g.pid)
    out, err = run_top("-o", "json", "-n", "4", "-d", "0.2", "-p", pids)
    ts = ticks(out)
    check(len(ts) == 4, "every tick printed")
    last_g = -1
    for tick in ts:
        ps = find(tick, s)
        check(ps and ps["state"] == "stalled" and
              "stayed inside an update" in (ps["error"] or ""),
              "stalled with a reason: %r" % ps)
        # Never read by this mstat-top: nothing known, which is not 0.
        check(all(ps[k] is None for k in
                  ("threads", "alloc_count", "live_bytes", "live_objects")),
              "a process never read has null counters: %r" % ps)
        expect_fixed(find(tick, f), "fixed, beside a stopped one")
        pg = find(tick, g)
        check(pg["state"] == "running", "steady runs")
        check(pg["alloc_count"] >= last_g, "steady counts never go back")
        last_g = pg["alloc_count"]
    # Stopped outside an update: read exactly, and shown as stopped;
    # continued, running again.
    os.kill(f.pid, signal.SIGSTOP)
    wait_for(lambda: proc_state(f.pid) == "T", "the fixed one to stop")
    out, _ = run_top("-o", "json", "-n", "3", "-d", "0.2", "-p", str(f.pid))
    states = [find(t, f)["state"] for t in ticks(out)]
    check(states == ["stopped"] * 3, "SIGSTOPped: stopped: %r" % states)
    expect_fixed(find(ticks(out)[-1], f), "stopped, read exactly")
    os.kill(f.pid, signal.SIGCONT)
    wait_for(lambda: proc_state(f.pid) != "T", "the fixed one to go on")
    out, _ = run_top("-o", "json", "-n", "2", "-d", "0.2", "-p", str(f.pid))
    check([find(t, f)["state"] for t in ticks(out)] == ["running"] * 2,
          "continued: running: %s" % out)
    os.kill(s.pid, signal.SIGCONT)
    # Continued, it ends its section once it is scheduled: a read may
    # still find it inside, and say so.
    def read_once():
        out, _ = run_top("-o", "json", "-n", "1", "-p", str(s.pid))
        return ticks(out)[0]["processes"][0]
    wait_for(lambda: read_once()["state"] == "running", "it to run again")
    p = read_once()
    # fixed's 10 + 3, the stall mode's own alloc and free, and the section
    # that was held open: nothing lost, nothing doubled.
    check(p["state"] == "running", "running again: %r" % p)
    expect_fixed(p, "after the stall", 12, 4)
    for t in (s, f, g):
        t.stop()


def plant(name, data, size=None, mode=0o600, uid=None):
    """A file in /dev/shm: data, then a hole up to size.  The name may be
    bytes: a file name can hold any byte but / and NUL."""
    path = (b"/dev/shm/" if isinstance(name, bytes) else "/dev/shm/") + name
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    planted.append(path)
    os.write(fd, data)
    if size is not None:
        os.ftruncate(fd, size)
    os.fchmod(fd, mode)
    if uid is not None:
        os.fchown(fd, uid, -1)
    os.close(fd)


def test_refusals():
    """Bad segments are skipped, each with one line saying why, and the
    good one beside them is still read."""
    good = Target("fixed", TAG + "-good")
    head, size = segment_head(good.pid)
    base = 1 << 40  # start times: names of this script's pid
    names = {}

    def name(k):
        names[k] = "mstat.%d.%d" % (os.getpid(), base + len(names))
        return names[k]

    plant(name("truncated"), head[:100])
    plant(name("mode"), head, size, mode=0o644)
    # Good's own header, under one of its names, made by another user:
    # not the owner of the process it claims.
    names["owner"] = segments_of(good.pid)[0] + ".5"
    plant(names["owner"], head, size, uid=65534)
    plant(name("magic"), b"NOTMSTAT" + head[8:], size)
    # Major and minor version: 7.0, 3.0.
    plant(name("version"), head[:8] + b"\x07\x00\x00\x00" + head[12:], size)
    plant(name("oldversion"), head[:8] + b"\x03\x00\x00\x00" + head[12:], size)
    plant(name("size"), head[:16] + (1 << 40).to_bytes(8, "little") + head[24:],
          size)
    plant(name("identity"), head, size)  # says it is good.pid's
    os.symlink("/dev/shm/" + names["truncated"], "/dev/shm/" + name("symlink"))
    planted.append("/dev/shm/" + names["symlink"])
    os.mkdir("/dev/shm/" + name("directory"))
    planted.append("/dev/shm/" + names["directory"])
    plant("mstat.%s.garbage" % TAG, b"x")
    why = {
        "truncated": "smaller than a header",
        "mode": "has mode 0644, not 0600",
        "owner": "is owned by uid 65534",
        "magic": "bad magic",
        "version": "format version 7.0; this reader reads 6.x",
        "oldversion": "format version 3.0; this reader reads 6.x",
        "size": "",
        "identity": "says it belongs to pid %d" % good.pid,
        "symlink": "symbolic link",
        "directory": "",
    }
    # No -p: the observer looks at everything in /dev/shm, as it does by
    # default.  Three ticks: each refusal is reported once.
    out, err = run_top("-o", "json", "-n", "3", "-d", "0.2")
    lines = err.splitlines()
    for k, n in names.items():
        mine = [l for l in lines if n in l]
        if k == "truncated":  # and nobody holds it: removed (test_cut)
            check(mine[1:] == ["mstat-top: removed %s: cut shorter than a "
                               "header, and its owner is gone" % n],
                  "truncated: removed: %r" % mine)
            mine = mine[:1]
        check(len(mine) == 1, "%s: one line, got %r" % (k, mine))
        check(mine[0].startswith("mstat-top: skipped ") and why[k] in mine[0],
              "%s: reason %r" % (k, mine[0]))
    garbage = [l for l in lines if ("mstat.%s.garbage" % TAG) in l]
    check(len(garbage) == 1 and "not an mstat segment name" in garbage[0],
          "garbage name: %r" % garbage)
    for tick in ticks(out):
        expect_fixed(find(tick, good), "good beside bad ones")
        for p in tick["processes"]:
            check(p["pid"] != os.getpid(), "a planted segment was shown")
    good.stop()


def test_gc():
    """A process killed while mstat-top watches shows as killed, with its
    final totals and when, and its segment is kept for the grace
    (MSTAT_KILLED_GRACE); --gc removes the segments of processes that are
    gone, a killed one's once its grace is over, and leaves the live
    ones."""
    dead = Target("fixed", TAG + "-dead")
    alive = Target("fixed", TAG + "-alive")
    pids = "%d,%d" % (dead.pid, alive.pid)
    top = subprocess.Popen([TOP, "-b", "-o", "json", "-d", "0.2", "-n",
                            str(TIMEOUT * 5), "--linger", "30", "-p", pids],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    children.append(top)
    killed = None
    try:
        for line in top.stdout:
            p = find(json.loads(line), dead)
            if p and p["state"] == "running" and dead.p.poll() is None:
                dead.p.kill()
                dead.p.wait()
                t_kill = time.time()
            if p and p["state"] == "killed":
                killed = p
                break
    finally:
        top.kill()
        top.wait()
    check(killed, "the killed process was shown killed")
    expect_fixed(killed, "killed keeps its final totals")
    check(killed["threads"] == 0 and killed["alloc_rate"] in (0, None),
          "nothing moves: %r" % killed)
    check(abs(killed["end_time_s"] - t_kill) < 30, "when: %r" % killed)
    check(segments_of(dead.pid), "its segment was kept for the grace")

    # A dead segment nobody watched, named with a live pid (ours, so that
    # no starting process removes it first), and one being made.
    head, size = segment_head(alive.pid)
    gone = "mstat.%d.%d" % (os.getpid(), 1 << 41)
    plant(gone, with_identity(head, os.getpid(), 1 << 41), size)
    # Garbage under a segment's name (a header someone wrote over): not
    # shown to be the library's, left and said; and a segment of format
    # 1, whose liveness is not told by a lock: kept.
    garbage = "mstat.%d.%d" % (os.getpid(), (1 << 41) + 1)
    plant(garbage, os.urandom(4096), size)
    v1 = "mstat.%d.%d" % (os.getpid(), (1 << 41) + 2)
    plant(v1, head[:8] + (1).to_bytes(2, "little") + head[10:], size)
    r = subprocess.run([TOP, "--gc"], stderr=subprocess.PIPE,
                       stdout=subprocess.PIPE, timeout=TIMEOUT)
    check(r.returncode == 0, "--gc exit %d" % r.returncode)
    err = r.stderr.decode()
    check(re.search(r"kept %s \(pid %d, killed \d+ s ago; "
                    r"MSTAT_KILLED_GRACE is 300 s\)" % (gone, os.getpid()),
                    err) and os.path.exists("/dev/shm/" + gone),
          "--gc kept the killed one for its grace: %r" % err)
    check(segments_of(dead.pid), "--gc kept the killed one for its grace")
    r = subprocess.run([TOP, "--gc", "--killed-grace=0"],
                       stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "--gc exit %d" % r.returncode)
    err += r.stderr.decode()
    check("removed %s (pid %d, killed)" % (gone, os.getpid()) in err,
          "--gc says: %r" % err)
    check(not os.path.exists("/dev/shm/" + gone), "--gc removed it")
    check(not segments_of(dead.pid), "--gc removed the killed one")
    check("left %s: is %d bytes without a segment's magic" % (garbage, size)
          in err and os.path.exists("/dev/shm/" + garbage),
          "--gc left the garbage: %r" % err)
    check("left %s: has format version 1, whose liveness its owner lock "
          "does not tell" % v1 in err and os.path.exists("/dev/shm/" + v1),
          "--gc kept format 1: %r" % err)
    check(segments_of(alive.pid), "--gc left the running one")
    check(str(alive.pid) not in err, "nothing said of the running one")
    alive.stop()


def test_killedbytes():
    """The bound on the bytes of killed processes' kept segments, in a
    reader: three killed a second apart; the next tick of a reader that
    has room for two removes the oldest, and --gc with room for one the
    next; the youngest stays, within its grace."""
    ts = []
    for i in range(3):
        t = Target("fixed", TAG + "-kb%d" % i)
        t.p.kill()
        t.p.wait()
        run_top("-o", "json", "-n", "1", "-p", str(t.pid))  # found killed
        ts.append(t)
        if i < 2:
            time.sleep(1.1)
    size = [os.stat("/dev/shm/" + segments_of(t.pid)[0]).st_blocks * 512
            for t in ts]
    pids = ",".join(str(t.pid) for t in ts)
    room = size[1] + size[2]
    _, err = run_top("-o", "json", "-n", "2", "-d", "0.2", "-p", pids,
                     env={"MSTAT_KILLED_BYTES": str(room)})
    check([bool(segments_of(t.pid)) for t in ts] == [False, True, True],
          "a tick with room for two: %r" % [segments_of(t.pid) for t in ts])
    check("the kept segments of killed processes were over %d bytes" % room
          in err, "the tick says so: %r" % err)
    r = subprocess.run([TOP, "--gc"], stderr=subprocess.PIPE,
                       stdout=subprocess.PIPE, timeout=TIMEOUT,
                       env=dict(os.environ, MSTAT_KILLED_BYTES=str(size[2])))
    check(r.returncode == 0 and
          [bool(segments_of(t.pid)) for t in ts] == [False, False, True],
          "--gc with room for one: %r %r" % ([segments_of(t.pid) for t in ts],
                                             r.stderr))


def test_pidns():
    """A process in another pid namespace (sharing /dev/shm) is alive as
    long as it runs: shown running, under its pid here and its pid there
    (nspid), kept by --gc; once killed, it is removed (with a grace of 0:
    MSTAT_KILLED_GRACE keeps a killed process's segment)."""
    if subprocess.run(["unshare", "-p", "--fork", "true"],
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("needs root for unshare -p")
        sys.exit(77)
    e = dict(os.environ, MSTAT_NAME=TAG + "-ns")
    p = subprocess.Popen(["unshare", "-p", "--fork", "--kill-child", TARGET,
                          "fixed"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=e)
    children.append(p)
    check(p.stdout.readline() == b"ready\n", "started")
    with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
        inner = int(f.read().split()[0])  # the target, pid 1 there
    out, _ = run_top("-o", "json", "-n", "2", "-d", "0.2", "-F", TAG + "-ns")
    for tick in ticks(out):
        rows = tick["processes"]
        check(len(rows) == 1 and rows[0]["state"] == "running" and
              rows[0]["pid"] == inner and rows[0]["nspid"] == 1,
              "running, as pid %d here and 1 in its namespace: %r"
              % (inner, rows))
        expect_fixed(rows[0], "in another pid namespace")
    seg = [n for n in os.listdir("/dev/shm") if n.startswith("mstat.1.")]
    r = subprocess.run([TOP, "--gc"], stderr=subprocess.PIPE,
                       stdout=subprocess.PIPE, timeout=TIMEOUT)
    check(r.returncode == 0 and "mstat.1." not in r.stderr.decode(),
          "--gc left it: %r" % r.stderr)
    check([n for n in seg if os.path.exists("/dev/shm/" + n)] == seg,
          "its segment is there")
    p.kill()  # unshare, and with it (--kill-child) the target
    p.wait()
    wait_for(lambda: subprocess.run([TOP, "--gc", "--killed-grace=0"],
                                    stderr=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL).returncode == 0
             and not [n for n in seg if os.path.exists("/dev/shm/" + n)],
             "its segment to be removed once it is gone")


def test_unpublished():
    """A segment's header without its magic (what an older library's
    creator made before publishing, or anything else: the library names
    its file only once published) is nothing the library can be shown
    to have made: the tick leaves it, said nothing of it, whether a lock
    is held on it or not, and so does --gc, which says what it is."""
    good = Target("fixed", TAG + "-pub")
    head, size = segment_head(good.pid)
    unpublished = b"\0" * 8 + head[8:]
    names = {k: "mstat.%d.%d" % (os.getpid(), (1 << 42) + i)
             for i, k in enumerate(("dead", "making", "other"))}
    plant(names["dead"], unpublished, size)
    plant(names["making"], unpublished, size)
    plant(names["other"], unpublished, size, uid=65534)
    lock = hold_owner_lock("/dev/shm/" + names["making"])
    try:
        out, err = run_top("-o", "json", "-n", "2", "-d", "0.2",
                           "-F", TAG + "-none")
        for k, n in names.items():
            check(os.path.exists("/dev/shm/" + n) and n not in err,
                  "%s: left by the tick, unsaid: %r" % (k, err))
        r = subprocess.run([TOP, "--gc"], stderr=subprocess.PIPE,
                           stdout=subprocess.PIPE, timeout=TIMEOUT)
        err = r.stderr.decode()
        for k in ("dead", "making"):
            check("left %s: is %d bytes without a segment's magic"
                  % (names[k], size) in err, "--gc says: %r" % err)
        check("left %s: is owned by uid 65534" % names["other"] in err,
              "--gc says: %r" % err)
        for k, n in names.items():
            check(os.path.exists("/dev/shm/" + n), "%s: left by --gc" % k)
    finally:
        os.close(lock)
    good.stop()


def test_cut():
    """A segment cut shorter than a header is refused, with one line, and
    kept while its owner lives (it holds its lock); once the owner is
    gone it is removed, by the tick that finds it and by --gc: what is
    left of it, its magic and format, shows the library made it.
    Removed too when the reader that watched it dropped it.  One of
    format 1 (liveness by pid), or cut too short to say its format, is
    kept, and --gc says what it is."""
    good = Target("fixed", TAG + "-cut")
    head, size = segment_head(good.pid)
    names = {k: "mstat.%d.%d" % (os.getpid(), (1 << 43) + i)
             for i, k in enumerate(("tick", "whole", "held", "noversion",
                                    "v1", "gc"))}
    v1 = head[:8] + (1).to_bytes(2, "little") + head[10:]
    plant(names["tick"], head[:100])      # its identity cut too
    plant(names["whole"], head[:1000])    # its identity whole
    plant(names["held"], head[:100])
    plant(names["noversion"], head[:9])   # the magic, then nothing
    plant(names["v1"], v1[:100])
    lock = hold_owner_lock("/dev/shm/" + names["held"])
    kept = ("held", "noversion", "v1")
    try:
        out, err = run_top("-o", "json", "-n", "2", "-d", "0.2",
                           "-F", TAG + "-none")
        for k in ("tick", "whole"):
            check("skipped %s: is %d bytes, smaller than a header" %
                  (names[k], 100 if k == "tick" else 1000) in err and
                  "removed %s: cut shorter than a header, and its owner is "
                  "gone" % names[k] in err and
                  not os.path.exists("/dev/shm/" + names[k]),
                  "%s: removed by the tick: %r" % (k, err))
        for k in kept:
            check(os.path.exists("/dev/shm/" + names[k]) and
                  "removed %s" % names[k] not in err,
                  "%s kept by the tick: %r" % (k, err))
        plant(names["gc"], head[:100])
        r = subprocess.run([TOP, "--gc"], stderr=subprocess.PIPE,
                           stdout=subprocess.PIPE, timeout=TIMEOUT)
        err = r.stderr.decode()
        check(r.returncode == 0 and
              "removed %s (pid %d, cut shorter than a header)" %
              (names["gc"], os.getpid()) in err and
              not os.path.exists("/dev/shm/" + names["gc"]),
              "--gc removed it: %r" % err)
        said = {"held": None,
                "noversion": "is 9 bytes, cut before its format version",
                "v1": "has format version 1, whose liveness its owner lock "
                      "does not tell"}
        for k in kept:
            check(os.path.exists("/dev/shm/" + names[k]) and
                  ("left %s: %s" % (names[k], said[k]) in err if said[k]
                   else names[k] not in err),
                  "%s kept by --gc: %r" % (k, err))
    finally:
        os.close(lock)

    # A live process's segment cut short: refused, kept while it lives
    # (it idles: no count of its touches the pages cut away); once it is
    # killed, removed by the next tick.
    seg = "/dev/shm/" + segments_of(good.pid)[0]
    os.truncate(seg, 100)
    out, err = run_top("-o", "json", "-n", "1", "-p", str(good.pid))
    check("smaller than a header" in err and os.path.exists(seg),
          "a live owner's: refused and kept: %r" % err)
    good.p.kill()
    good.p.wait()
    # (With nothing left of what -p names, batch mode exits 1.)
    r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1", "-p",
                        str(good.pid)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    err = ours(r.stderr.decode())
    check(r.returncode == 1 and not os.path.exists(seg) and
          "cut shorter than a header, and its owner is gone" in err and
          err.endswith("pid %d: no such process\n" % good.pid),
          "removed once its owner is gone: %d %r" % (r.returncode, err))

    # Cut short while watched: dropped by the observer watching it, and
    # kept while its owner lives; removed by that observer once it is
    # gone.
    t = Target("fixed", TAG + "-cut2")
    seg = "/dev/shm/" + segments_of(t.pid)[0]
    top = subprocess.Popen([TOP, "-b", "-o", "json", "-d", "0.2", "-n",
                            str(TIMEOUT * 5), "-p", str(t.pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    children.append(top)
    try:
        check(find(json.loads(top.stdout.readline()), t), "watched")
        os.truncate(seg, 100)
        line = top.stderr.readline().decode()
        while re.match(r"--\d+-- ", line):  # valgrind's own
            line = top.stderr.readline().decode()
        check(line.startswith("mstat-top: dropped ") and
              os.path.exists(seg), "dropped, kept: %r" % line)
        t.p.kill()
        t.p.wait()
        wait_for(lambda: not os.path.exists(seg), "the dropped one removed")
    finally:
        top.kill()
        top.wait()


def test_json():
    """The JSON output has exactly the fields docs/mstat-top-json.md
    documents, in its order, at every level."""
    t = Target("fixed", TAG + "-json")
    out, _ = run_top("-o", "json", "-n", "2", "-d", "0.2", "-p", str(t.pid))
    doc = documented_fields(os.path.join(DOCS, "mstat-top-json.md"))
    for tick in ticks(out):
        check(list(tick) == doc["tick"], "tick fields %r vs %r" %
              (list(tick), doc["tick"]))
        p = tick["processes"][0]
        # "sites" only with --sites (tests/profile/e2e.py checks it).
        want = [f for f in doc["process"] if f != "sites"]
        check(list(p) == want, "process fields %r vs %r" % (list(p), want))
        check(list(p["classes"][0]) == doc["class"], "class fields")
        # Read at the process's first tick, as it is first seen.
        check(p["memory"] is not None and list(p["memory"]) == doc["memory"],
              "memory fields %r vs %r" % (p["memory"], doc["memory"]))
        parts = [k for k in doc["memory"] if k not in ("rss", "live_not_resident")]
        check(sum(p["memory"][k] for k in parts) == p["memory"]["rss"],
              "the parts add up to rss: %r" % p["memory"])
    t.stop()


def parse_openmetrics(text):
    """An OpenMetrics 1.0.0 text, strictly: the grammar as Prometheus's
    Python client parses it (families declared once, counters' samples
    named <family>_total, # UNIT matching the name, a final # EOF), and
    our rules on top: no timestamps, no duplicate series, pid and name
    labels on every per-process sample.  Returns {family: [samples]}."""
    try:
        from prometheus_client.openmetrics.parser import \
            text_string_to_metric_families
    except ImportError:
        raise Failure("python3-prometheus-client is not installed "
                      "(bash scripts/deps.sh installs it)")
    check(text.endswith("# EOF\n") and text.count("# EOF") == 1,
          "ends with one # EOF")
    families, series = {}, set()
    for fam in text_string_to_metric_families(text):
        check(fam.name not in families, "family %s twice" % fam.name)
        families[fam.name] = fam.samples
        for smp in fam.samples:
            check(smp.timestamp is None, "a timestamp: %r" % (smp,))
            key = (smp.name, tuple(sorted(smp.labels.items())))
            check(key not in series, "duplicate series %r" % (smp,))
            series.add(key)
            if not smp.name.startswith("mstat_exporter_"):
                check({"pid", "name"} <= set(smp.labels) and
                      smp.labels["pid"].isdigit(),
                      "pid and name labels: %r" % (smp,))
    return families


def check_text_format(out):
    """Prometheus's text format 0.0.4, as promtool checks it (and as
    node_exporter's textfile collector reads it)."""
    if not PROMTOOL:
        print("promtool not installed: the text format is not checked")
        return
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=out,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "promtool: %s" % r.stdout.decode())


def test_openmetrics():
    """The OpenMetrics output passes a strict parser, the text output
    passes promtool, and both carry the exact counters."""
    f = Target("fixed", TAG + "-om")
    g = Target("steady", TAG + '-om "quoted"')
    pids = "%d,%d" % (f.pid, g.pid)
    out, _ = run_top("-o", "openmetrics", "-n", "1", "-p", pids)
    families = parse_openmetrics(out)
    check({"mstat_allocs", "mstat_frees", "mstat_live_bytes",
           "mstat_class_allocs", "mstat_process"} <= set(families),
          "families: %r" % sorted(families))
    check('mstat_class_allocs_total{pid="%d",name="%s",size="%d"} 10\n' %
          (f.pid, f.name, B) in out, "exact class counter")
    check('mstat_class_free_bytes_total{pid="%d",name="%s",size="%d"} %d\n' %
          (f.pid, f.name, B, 3 * B) in out, "exact class bytes")
    check('name="%s-om \\"quoted\\""' % TAG in out, "quotes escaped")
    # The strict parser itself must refuse what breaks the rules: the
    # text 0.0.4 way of naming a counter family among them.
    for bad in (out.replace("# EOF\n", ""),
                out.replace("# TYPE mstat_allocs counter",
                            "# TYPE mstat_allocs_total counter"),
                out.replace('name="', 'name=', 1),
                out.replace("# EOF\n", "") + out):
        try:
            parse_openmetrics(bad)
        except (Failure, ValueError):
            continue
        raise Failure("the strict parser accepted a broken text")

    text, _ = run_top("-o", "prometheus", "-n", "1", "-p", pids)
    check_text_format(text.encode())
    check("# EOF" not in text and "# TYPE mstat_allocs_total counter\n" in text,
          "text 0.0.4 declares counters with _total, has no # EOF")
    check('mstat_class_allocs_total{pid="%d",name="%s",size="%d"} 10\n' %
          (f.pid, f.name, B) in text, "exact class counter in text")
    # The same series, whichever format: only the declarations differ
    # (the steady target's values move between the two runs).
    def series(t):
        return [l.rsplit(" ", 1)[0] for l in t.splitlines()
                if not l.startswith("#")]
    check(series(out) == series(text), "the same series in both formats")
    f.stop()
    g.stop()


def Tmux(cmd, w=80, h=24):
    return tmuxview.Tmux(TMUX, "mstat-" + TAG, cmd, w, h, TIMEOUT)


def rows_of(screen, pids):
    """The pids of the process table's rows, top to bottom."""
    out = []
    for line in screen.splitlines():
        w = line.split()
        if w and w[0].isdigit() and int(w[0]) in pids:
            out.append(int(w[0]))
    return out


def test_interactive():
    """mstat-top in a terminal (tmux, 80x24, no colours used): the table
    shows the processes and every key does what the help says."""
    if not TMUX:
        print("tmux not installed")
        sys.exit(77)
    big = Target("fixed", TAG + "-fixed")      # most live bytes
    small = Target("steady", TAG + "-steady")  # most live objects
    doomed = Target("fixed", TAG + "-doomed")  # killed while watched
    pids = {big.pid, small.pid}
    # Its stderr and exit status go to files: a sanitizer's report (and
    # its exit status) would otherwise vanish with the pane.
    err = "/tmp/mstat-top-%s.err" % TAG
    status = "/tmp/mstat-top-%s.status" % TAG
    tsan = os.environ.get("TSAN_OPTIONS", "")
    t = Tmux("TERM=screen TSAN_OPTIONS='%s' %s%s -d 0.3 --linger 2 -F %s "
             "-p %d,%d,%d "
             "2>%s; echo $? >%s" % (tsan, MEMCHECK, TOP, TAG, big.pid,
                                    small.pid, doomed.pid, err, status))
    try:
        s = t.wait(lambda s: rows_of(s, pids) and len(rows_of(s, pids)) == 2
                   and rows_of(s, {doomed.pid}), "the three processes")
        check("PID" in s and "LIVE" in s and "GROWTH" in s and "STATE" in s,
              "header")
        check(len(s.splitlines()) <= 24 and
              max(len(l) for l in s.splitlines()) <= 80, "fits 80x24")
        # Default sort: live bytes, largest first.
        check(rows_of(s, pids) == [big.pid, small.pid], "sorted by live bytes")
        check(re.search(r"sort LIVE$", s, re.M), "sort shown")
        # Killed, a process shows as killed, lingers, and goes; its
        # segment stays for its grace (MSTAT_KILLED_GRACE), not read again.
        doomed.p.kill()
        doomed.p.wait()
        t.wait(lambda s: [l.split()[-1] for l in s.splitlines()
                          if l.split()[:1] == [str(doomed.pid)]] == ["killed"],
               "the killed one")
        check(segments_of(doomed.pid), "its segment was kept for its grace")
        t.wait(lambda s: not rows_of(s, {doomed.pid}), "it to go after --linger")
        # j/k and End/Home move the selection: Enter opens the one selected.
        for keys, pid in ((["j"], small.pid), (["k"], big.pid),
                          (["End"], small.pid), (["Home"], big.pid)):
            t.keys(*keys)
            t.keys("Enter")
            t.wait(lambda s: "SIZE<=" in s and "pid %d " % pid in s,
                   "%s opens pid %d" % (keys, pid))
            t.keys("Escape")
            t.wait(lambda s: "SIZE<=" not in s, "back")
        # < goes back to LIVE's left neighbours THR, AGE, WHERE, then
        # NAME: "-fixed" sorts before "-steady"; r reverses.
        t.keys("<", "<", "<", "<")
        s = t.wait(lambda s: "sort NAME" in s, "sort by name")
        check(rows_of(s, pids) == [big.pid, small.pid], "by name")
        t.keys("r")
        s = t.wait(lambda s: "(reversed)" in s, "reversed")
        check(rows_of(s, pids) == [small.pid, big.pid], "by name, reversed")
        t.keys("r", ">", ">", ">", ">", ">")
        s = t.wait(lambda s: "sort OBJS" in s and
                   rows_of(s, pids) == [small.pid, big.pid],
                   "sort by live objects")
        # Filter: only the fixed one.
        t.keys("/")
        t.wait(lambda s: "filter: " in s, "the filter prompt")
        t.keys("C-u", "fixed", "Enter")
        s = t.wait(lambda s: rows_of(s, pids) == [big.pid], "filtered")
        # Enter opens it: classes with bars, history.
        t.keys("Enter")
        s = t.wait(lambda s: "SIZE<=" in s, "the class table")
        check("pid %d" % big.pid in s and "live, 0 to 1.00TiB: " in s,
              "detail, its history on a labelled scale")
        # Its resident memory, every part: the fixed target's 896 GiB
        # live are chunks never written, not resident (on glibc; a
        # sanitizer's malloc is another allocator, not told apart).
        mem = " ".join(l for l in s.splitlines()[5:9])
        check(re.search(r"memory \S+ \((glibc, heap from its maps|other, "
                        r"heap not told apart)\)", mem) and
              all(" %s " % p in mem for p in (
                  "live", "allocator_free", "allocator_overhead", "not_heap",
                  "file", "shmem", "library")) and
              "(live not resident 896GiB)" in mem,
              "its memory, every part: %r" % mem)
        row = [l for l in s.splitlines() if l.split()[:1] == ["128GiB"]]
        check(row and row[0].split()[1] == "896GiB" and
              row[0].split()[2] == "0B",
              "class 128GiB with 896GiB live and no growth: %r" % row)
        t.keys("Escape")
        s = t.wait(lambda s: "SIZE<=" not in s and "GROWTH" in s, "back")
        # Esc in the filter goes back to the command line's -F, not to
        # every process of the user; C-u and Enter clear it.
        t.keys("/", "Escape")
        s = t.wait(lambda s: "filter: %s  " % TAG in s, "back to -F")
        check(len(rows_of(s, pids)) == 2, "-F's processes: %r" % s)
        t.keys("/", "C-u", "Enter")
        t.wait(lambda s: "filter:" not in s, "no filter")
        t.keys("/", TAG, "Enter")
        s = t.wait(lambda s: len(rows_of(s, pids)) == 2 and
                   "filter: " + TAG in s, "filtered by the tag")
        # Space pauses.
        t.keys("Space")
        t.wait(lambda s: "[paused]" in s, "paused")
        t.keys("Space")
        t.wait(lambda s: "[paused]" not in s, "resumed")
        # + and - change the interval.
        t.keys("+")
        t.wait(lambda s: "every 0.6s" in s, "interval doubled")
        t.keys("-", "-")
        t.wait(lambda s: "every 0.15s" in s, "interval halved twice")
        # Help, from the key table: q, Esc and h close it, back to the
        # table (q does not quit from there); other keys scroll it.
        for close in ("q", "Escape", "h"):
            t.keys("h")
            words = ("Keys", "Esc Left", "filter", "sort by the next column",
                     "pause")
            t.wait(lambda s: all(w in s for w in words),
                   "help with %r" % (words,))
            t.keys("x")  # ignored behind the help
            t.keys(close)
            t.wait(lambda s: "Keys" not in s and "GROWTH" in s and
                   len(rows_of(s, pids)) == 2, "help closed by " + close)
        check(t.alive(), "q on the help screen did not quit")
        # Scrolled, it shows the columns, from the column table.
        t.keys("h", "PgDn", "PgDn")
        t.wait(lambda s: "Columns" in s and "GROWTH/s" in s and
               "over the window" in s, "the columns' help")
        t.keys("Escape")
        # A resize is redrawn.
        t.tmux("resize-window", "-t", "t", "-x", "100", "-y", "30")
        t.wait(lambda s: len(s.splitlines()) >= 29 and
               len(rows_of(s, pids)) == 2, "redrawn at 100x30")
        t.tmux("resize-window", "-t", "t", "-x", "60", "-y", "12")
        t.wait(lambda s: len(rows_of(s, pids)) == 2, "redrawn at 60x12")
        t.keys("q")
        wait_for(lambda: not t.alive(), "q to quit")
        check(open(status).read().strip() == "0" and
              ours(open(err).read()) == "", "exit status %s, stderr:\n%s" %
              (open(status).read().strip(), open(err).read()))
    finally:
        t.kill()
        for f in (err, status):
            if os.path.exists(f):
                os.unlink(f)
    big.stop()
    small.stop()


def doc_commands(path):
    """The shell commands a document shows: its ```sh blocks (Markdown) or
    its .nf sections (a manual, roff's escapes undone), a line ending in
    | or \ joined with the next, comments and blank lines left out."""
    text = open(path).read()
    if path.endswith(".md"):
        blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    else:
        blocks = [b.replace("\\-", "-").replace("\\e", "\\")
                  for b in re.findall(r"^\.nf\n(.*?)^\.fi", text, re.M | re.S)]
    out = []
    for b in blocks:
        cmd = ""
        for line in b.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if not line or line.startswith("#"):
                continue
            cmd += (" " if cmd else "") + line.rstrip("\\").strip()
            if not line.endswith(("|", "\\", "&&")):
                out.append(cmd)
                cmd = ""
    return out


def shell(cmd, cwd, bindir, **kw):
    """`cmd` in bash (pipefail), in `cwd`, with the programs of `bindir`
    first on PATH."""
    env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
               HOME=cwd, PPROF_TMPDIR=cwd)
    return subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=cwd,
                          env=env, timeout=TIMEOUT, **kw)


def bin_dir(d):
    """A directory where `mstat-top` and `go` are the ones under test."""
    b = os.path.join(d, "bin")
    os.mkdir(b)
    os.symlink(TOP, os.path.join(b, "mstat-top"))
    if GO:
        os.symlink(GO, os.path.join(b, "go"))
    return b


def test_docs():
    """The docs' example commands work as shown, run in a scratch
    directory.  The README's post-mortem example makes its directory, and
    mstat-top then runs on and writes the profile of a process killed;
    without the directory, the tools say at start how to make it.  Every
    example that picks processes with pgrep (the README, docs/*.md, the
    manuals) works when two processes have the name: a program named for
    this run, run twice (not under valgrind, where every name is
    valgrind's)."""
    d = tempfile.mkdtemp(prefix="mstat-docs-%s." % TAG)
    b = bin_dir(d)
    readme = os.path.join(ROOT, "README.md")
    example = [c for c in doc_commands(readme)
               if "/var/tmp/mstat" in c]
    run = [c for c in example if not c.startswith("go tool pprof")]
    pprof = [c for c in example if c.startswith("go tool pprof")]
    check(run and run[-1].startswith("mstat-top ") and
          run[-1].endswith("&") and len(pprof) == 1,
          "the README's post-mortem example: %r" % example)
    pm = os.path.join(d, "mstat")
    with open(os.path.join(d, "stderr"), "w") as err:
        r = shell("\n".join(c.replace("/var/tmp/mstat", pm)
                            for c in run) + "\necho $!",
                  d, b, stdout=subprocess.PIPE, stderr=err)
    top = int(r.stdout.split()[-1])
    try:
        t = Target("fixed", TAG + "-api")
        t.p.kill()
        t.p.wait()
        pattern = os.path.join(pm, "%s-api-%d-*.pb.gz" % (TAG, t.pid))
        wait_for(lambda: glob.glob(pattern) or not os.path.exists(
            "/proc/%d" % top), "its post-mortem profile")
        check(os.path.exists("/proc/%d" % top), "mstat-top exited: %s" %
              open(os.path.join(d, "stderr")).read())
        files = glob.glob(pattern)
        if GO:
            r = shell(re.sub(r"/var/tmp/mstat/\S+", files[0], pprof[0]), d,
                      b, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            check(r.returncode == 0, "%s: %s" % (pprof[0], r.stderr))
        print("post-mortem example: %s written, mstat-top running%s" % (
            os.path.basename(files[0]), "" if GO else "; go not installed"))
    finally:
        try:
            os.kill(top, signal.SIGTERM)
        except ProcessLookupError:
            pass


        def gone():
            try:
                return proc_state(top) == "Z"
            except OSError:
                return True
        wait_for(gone, "mstat-top to stop")
    r = subprocess.run([TOP, "-b", "--postmortem-dir=" + pm + "/no"],
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(r.returncode == 2 and r.stderr.decode() ==
          "mstat-top: bad value '%s/no' for --postmortem-dir: No such file "
          "or directory: make it first (mkdir -m 700 %s/no)\n" % (pm, pm),
          "a missing directory: %d %r" % (r.returncode, r.stderr))

    if VALGRIND:
        print("the pgrep examples are not run under valgrind: a process's "
              "name there is valgrind's (%s...)" % TARGET_COMM)
        return
    name = "srv%d" % os.getpid()  # 15 bytes at most: a comm
    exe = os.path.join(d, name)
    os.symlink(TARGET, exe)
    two = [Target("steady", name, exe=exe) for _ in range(2)]
    docs = [readme] + sorted(glob.glob(os.path.join(DOCS, "*.md")) +
                             glob.glob(os.path.join(DOCS, "*.1")))
    cmds = [(os.path.basename(f), c) for f in docs for c in doc_commands(f)
            if "pgrep" in c]
    check(len(cmds) >= 6, "the examples with pgrep: %r" % cmds)
    for f, c in cmds:
        if "go tool" in c and not GO:
            print("%s: not run (go not installed): %s" % (f, c))
            continue
        r = shell(re.sub(r"\bserver\b", name, c), d, b,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(r.returncode == 0,
              "%s: %s, with two processes of the name: exit %d: %s" %
              (f, c, r.returncode, r.stderr.decode()))
        print("%s: %s: ok" % (f, c))
    # The name picks both.
    r = shell("mstat-top -b -n 1 -o json -p $(pgrep -d, -x %s) | jq -c "
              "'[.processes[].pid]'" % name, d, b, stdout=subprocess.PIPE)
    check(sorted(json.loads(r.stdout)) == sorted(t.pid for t in two),
          "pgrep -d, -x %s: %r" % (name, r.stdout))
    for t in two:
        t.stop()


def test_demo():
    """What the demo (scripts/demo.sh) says works as it says.  Its
    leaking workload exits once it has leaked what it is given, as its
    row counts bytes; what the demo says of it is the workload's
    default.  Watched as the demo watches, by growth, the top row is
    selected until moved: a steady process first alone, then a leaking
    one that rises above it, which Enter then opens."""
    if not RUN or not DEMO:
        print("SKIP: no mstat-run (a sanitizer's malloc stands in)")
        sys.exit(77)
    if VALGRIND:
        # What the demo shows is counted by the interposer, which memcheck
        # replaces (and its leak is one on purpose).
        print("SKIP: valgrind replaces malloc everywhere; the interposer "
              "cannot run under it")
        sys.exit(77)
    mib = int(re.search(r"^#define LEAK_MIB (\d+)$",
                        open(os.path.join(ROOT, "demo", "workload.c")).read(),
                        re.M).group(1))
    said = re.search(r"exits once it has leaked (\d+) MiB",
                     open(os.path.join(ROOT, "scripts", "demo.sh")).read())
    check(said and int(said.group(1)) == mib, "demo.sh says %r, the "
          "workload leaks %d MiB" % (said and said.group(0), mib))
    with tempfile.NamedTemporaryFile(prefix="mstat-demo.") as f:
        r = subprocess.run([RUN, "--summary", f.name, "--", DEMO, "leaking",
                            "2"], stderr=subprocess.PIPE, timeout=TIMEOUT)
        summary = json.load(open(f.name))
    live = summary["process"]["live_bytes"]
    print("leaking 2: exited %d holding %d bytes" % (r.returncode, live))
    # What it leaked (2 MiB, and at most a block more for each of its two
    # threads, 32 KiB each) and the C library's few KiB.
    check(r.returncode == 0 and 2 << 20 <= live < (2 << 20) + (80 << 10),
          "leaking 2 MiB: exit %d, %d bytes live: %s" % (
              r.returncode, live, r.stderr.decode()))
    if not TMUX:
        print("tmux not installed: the view is not tested")
        return

    def start(mode, *args):
        p = subprocess.Popen([RUN, "--name", "%s-demo-%s" % (TAG, mode), "--",
                              DEMO, mode] + list(args),
                             stderr=subprocess.DEVNULL)
        children.append(p)
        return p
    steady = start("steady")
    t = Tmux("TERM=screen %s%s -d 0.3 -F %s-demo -s growth 2>/dev/null" %
             (MEMCHECK, TOP, TAG), w=160)
    leaking = None
    try:
        def top_row(s):
            rows = [line.split() for line in s.splitlines()
                    if re.match(r"^ *\d+ %s-demo-" % TAG, line)]
            return rows[0][1] if rows else None
        t.wait(lambda s: top_row(s) == TAG + "-demo-steady", "demo-steady")
        leaking = start("leaking", "1000")
        t.wait(lambda s: top_row(s) == TAG + "-demo-leaking",
               "demo-leaking on top")
        t.keys("Enter")
        s = t.wait(lambda s: "SIZE<=" in s, "the process opened")
        check(re.search(r"pid \d+ .*%s-demo-leaking" % TAG, s),
              "Enter opened another process:\n" + s)
        t.keys("q")
    finally:
        t.kill()
        # mstat-run passes SIGTERM on to its command.
        for p in (steady, leaking):
            if p:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=TIMEOUT)


def test_narrow():
    """In a terminal 40 columns wide, PID, NAME and STATE stay (and LIVE,
    the sorted column): a killed process reads as killed, not as a
    running one.  At 80, a NAME too long for its column keeps the
    program's name whole, ends its [comm] in an ellipsis and closes it."""
    if not TMUX:
        print("tmux not installed")
        sys.exit(77)
    # Names short enough that at 80 some of the [comm] fits, whatever
    # the pid.
    a = Target("fixed", TAG + "-n")
    doomed = Target("fixed", TAG + "-k")
    t = Tmux("TERM=screen LANG=C.UTF-8 %s%s -d 0.3 --linger 60 -F %s "
             "2>/dev/null" % (MEMCHECK, TOP, TAG), w=40, h=12)

    def row(s, pid):
        found = [l for l in s.splitlines() if l.split()[:1] == [str(pid)]]
        return found[0] if found else None
    try:
        s = t.wait(lambda s: row(s, a.pid) and row(s, doomed.pid),
                   "both processes")
        head = [l for l in s.splitlines() if l.split()[:1] == ["PID"]]
        check(head and head[0].split() == ["PID", "NAME", "LIVE", "STATE"],
              "the columns at 40: %r" % head)
        check(max(len(l) for l in s.splitlines()) <= 40, "fits 40")
        check(row(s, a.pid).split()[-1] == "running", "running: %r" %
              row(s, a.pid))
        doomed.p.kill()
        doomed.p.wait()
        s = t.wait(lambda s: row(s, doomed.pid) and
                   row(s, doomed.pid).split()[-1] == "killed",
                   "the killed one shown killed")
        check(row(s, a.pid)[8:8 + 14] == shown_name(a.name, 14),
              "NAME at 40: %r" % row(s, a.pid))
        t.tmux("resize-window", "-t", "t", "-x", "80", "-y", "12")
        s = t.wait(lambda s: "GROWTH/s" in s and row(s, a.pid),
                   "redrawn at 80")
        cell = shown_name(a.name, 19)
        check(cell.endswith("\u2026]") and cell.startswith(a.name + " [")
              and row(s, a.pid)[8:8 + 19] == cell,
              "NAME at 80: %r, not %r" % (row(s, a.pid), cell))
        t.keys("q")
        wait_for(lambda: not t.alive(), "q to quit")
    finally:
        t.kill()
    a.stop()


def leak_pair(tag):
    """A process that grows (10 objects of 256 GiB every 10 ms, never
    freed, until its stdin closes) and one that does not (50 objects of
    64 bytes, renewed)."""
    return (Target("leak", tag + "-grows"), Target("steady", tag + "-steady"))


# A class not used yet: its counts start from nothing.
UNUSED = {"alloc_count": 0, "free_count": 0, "growth_objects": 0,
          "growth_bytes": 0}


def test_leak():
    """Growth since the baseline, per process and per class, and its rate:
    exactly what the growing process added since it was first seen, and
    exactly nothing for the steady one.  --baseline moves every baseline
    once, and a process that exits keeps its row and its growth.

    Nothing waits for a time: the growing process runs until mstat-top
    has shown it grow and lead the sort (under memcheck on a loaded
    machine, mstat-top's first read can come seconds after it started),
    then it is told to exit (its stdin closed), and mstat-top runs on
    until it has shown it exited twice."""
    grows, steady = leak_pair(TAG)
    # A window longer than the test: the growth rate is over all the time
    # since the process was first seen, as its growth is.
    top = Top("-d", "0.25", "-s", "growth", "--window", "3600",
              "-p", "%d,%d" % (grows.pid, steady.pid))
    first = None  # the first tick's leak class and steady class
    busy = False  # the steady one seen counting since
    told = False  # the growing one told to exit
    exited = []
    for i, tick in enumerate(top.ticks(lambda: "it to grow, then exit "
                                      "(told: %s; seen exited: %d ticks)" %
                                      (told, len(exited))), 1):
        g, s = find(tick, grows), find(tick, steady)
        check(g is not None and s is not None,
              "tick %d: both are there: %r" % (i, tick))
        if first is None:
            # First seen: the baseline (its leak class may not be used
            # yet: then it starts from nothing).
            check(g["growth_bytes"] == 0 and g["growth_bytes_per_s"] is None,
                  "first seen: the baseline, no rate yet: %r" % g)
            first = (cls(g, LEAK) or UNUSED, cls(s, 64))
            continue
        c = cls(g, LEAK) or UNUSED
        added = c["alloc_count"] - first[0]["alloc_count"]
        check(c["growth_objects"] == added and
              c["growth_bytes"] == added * LEAK and c["free_count"] == 0,
              "tick %d: its class grew by what it added: %r" % (i, c))
        check(g["growth_bytes"] - c["growth_bytes"] < 1 << 30,
              "tick %d: its growth is that class's: %d vs %d" %
              (i, g["growth_bytes"], c["growth_bytes"]))
        check(g["state"] in ("running", "exiting", "exited"),
              "tick %d: state %s" % (i, g["state"]))
        grew = g["growth_bytes"] > 0
        check(g["growth_bytes_per_s"] is not None and
              (g["growth_bytes_per_s"] > 0) == (grew and
                                                g["state"] != "exited"),
              "tick %d: a growth rate while it grows: %r" %
              (i, g["growth_bytes_per_s"]))
        k = cls(s, 64)
        check(s["growth_bytes"] == 0 and s["growth_objects"] == 0 and
              k["growth_bytes"] == 0 and k["growth_objects"] == 0 and
              s["growth_bytes_per_s"] == 0.0 and
              k["alloc_count"] >= first[1]["alloc_count"],
              "tick %d: the steady one grew by nothing: %r" % (i, s))
        busy |= k["alloc_count"] > first[1]["alloc_count"]
        # Sorted by growth: the growing one first (while it grows).
        if g["state"] == "running" and grew:
            check(tick["processes"][0]["pid"] == grows.pid,
                  "tick %d: sorted by growth" % i)
            if busy and not told:
                grows.p.stdin.close()  # all seen: it may exit
                check(grows.p.wait(timeout=TIMEOUT) == 0, "it exited cleanly")
                told = True
                print("tick %d: grown by %d bytes, told to exit" %
                      (i, g["growth_bytes"]))
        if g["state"] == "exited":
            check(told, "tick %d: exited before it was told to" % i)
            exited.append(g)
            if len(exited) == 2:
                break
    top.close()
    # Exited: its row stays (default --linger 300 s) with its final
    # classes; nothing moves any more.
    check(len(exited) == 2 and exited[-1]["growth_bytes"] ==
          exited[0]["growth_bytes"] > 0 and
          exited[-1]["growth_bytes_per_s"] == 0 and exited[-1]["end_time_s"],
          "the exited one stays, final: %r" % [e["growth_bytes"] for e in exited])

    # --baseline: every row's baseline moves once, 0.5 s after mstat-top's
    # first tick.  Read until the baseline was seen to move (the process
    # grew before it) and the growth from it, 8 ticks at least.
    grows = Target("leak", TAG + "-grows2")
    top = Top("-d", "0.2", "--baseline", "0.5",
              "-p", "%d,%d" % (grows.pid, steady.pid))
    counts = []  # per tick, the leak class's (alloc_count, growth_objects)
    moved = []   # the ticks where its baseline moved
    for tick in top.ticks(lambda: "the baseline to move, then growth "
                          "from it: %r" % counts):
        row = find(tick, grows)
        check(row is not None, "tick %d: it is there" % (len(counts) + 1))
        c = cls(row, LEAK) or UNUSED
        counts.append((c["alloc_count"], c["growth_objects"]))
        bases = [n - g for n, g in counts]
        moved = [i for i in range(1, len(bases)) if bases[i] != bases[i - 1]]
        if len(counts) >= 8 and moved and counts[-1][1] > 0:
            break
    top.close()
    print("--baseline: (allocations, growth) per tick: %r" % counts)
    check(counts and counts[0][1] == 0 and len(moved) == 1 and
          counts[moved[0]][1] == 0 and moved[0] < len(counts) - 1,
          "one rebase after 0.5 s: %r" % counts)
    base = counts[moved[0]][0]
    check(all(g == n - counts[0][0] for n, g in counts[:moved[0]]) and
          all(g == n - base for n, g in counts[moved[0]:]),
          "growth from the first baseline, then from the new one: %r" % counts)
    grows.stop()
    steady.stop()


def test_baseline():
    """--baseline: --help and the man page say the same of it (whose
    start: mstat-top's first tick), and the view shows that the baseline
    is still to be taken, counting down, until it is."""
    r = subprocess.run([TOP, "--help"], stdout=subprocess.PIPE,
                       timeout=TIMEOUT)
    help_text = " ".join(r.stdout.decode().split())
    man = open(os.path.join(DOCS, "mstat-top.1")).read()
    man = " ".join(man.replace("\\-", "-").replace(".I seconds\n",
                                                     "SECONDS ").split())
    said = "take every baseline again SECONDS after mstat-top's first tick"
    check(said in help_text and "T" + said[1:] in man,
          "--help and the man page say %r" % said)
    check("in batch mode" not in man.split("--baseline")[1][:300],
          "the man page does not limit it to batch mode")
    if not TMUX:
        print("tmux not installed: the view is not checked")
        return
    grows = Target("leak", TAG + "-grows")
    t = Tmux("TERM=screen %s%s -d 0.3 --baseline 2 -F %s 2>/dev/null" %
             (MEMCHECK, TOP, TAG), w=100)
    try:
        t.wait(lambda s: re.search(r"every 0.3s  baseline in [12]s  sort", s),
               "the baseline pending")
        t.wait(lambda s: "every 0.3s  sort" in s and "baseline in" not in s,
               "the baseline taken")
        t.keys("q")
        wait_for(lambda: not t.alive(), "q to quit")
    finally:
        t.kill()
    grows.stop()


def test_replay():
    """--record writes every tick; --replay prints the same bytes in batch
    (table and JSON), plays back in the view (pause, step, speed,
    baseline), and refuses a broken recording with its line."""
    grows, steady = leak_pair(TAG)
    rec = "/tmp/mstat-top-%s.rec" % TAG
    bad = "/tmp/mstat-top-%s.bad" % TAG
    planted.extend([rec, bad])
    pids = "%d,%d" % (grows.pid, steady.pid)
    for fmt in ("table", "json"):
        live, _ = run_top("-o", fmt, "-n", "5", "-d", "0.2", "-s", "growth",
                          "-p", pids, "--record", rec)
        again, _ = run_top("-o", fmt, "-s", "growth", "--replay", rec)
        check(again == live, "%s: replayed as printed live:\n%s\nvs\n%s" %
              (fmt, again, live))
        lines = open(rec).read().splitlines()
        check(len(lines) == 6 and json.loads(lines[0])["version"] == 1 and
              [json.loads(l)["tick"] for l in lines[1:]] == [1, 2, 3, 4, 5],
              "a header and 5 ticks: %r" % lines[:1])
    # -n and -F on a replay; then a recording cut short inside a tick.
    again, _ = run_top("-o", "json", "-n", "2", "-F", "steady", "--replay", rec)
    check([[p["pid"] for p in t["processes"]] for t in ticks(again)] ==
          [[steady.pid]] * 2, "-n 2 -F steady: %s" % again)
    with open(bad, "w") as f:
        f.write(open(rec).read()[:-40])
    r = subprocess.run([TOP, "-b", "--replay", bad], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(r.returncode == 1 and ours(r.stderr.decode()) ==
          "mstat-top: %s:6: not a JSON object (the recording was cut "
          "short?)\n" % bad and r.stdout.decode().count("tick ") == 4,
          "a broken recording: %d %r" % (r.returncode, r.stderr))

    # In the view: a recording of 12 ticks, played at its pace.
    run_top("-o", "json", "-n", "12", "-d", "0.2", "-p", pids, "--record", rec)
    if not TMUX:
        print("tmux not installed: replay in the view not checked")
        return
    t = Tmux("TERM=screen %s --replay %s -s growth 2>/dev/null" % (TOP, rec),
             w=100)
    try:
        t.wait(lambda s: "replay %s  tick " % rec in s and
               rows_of(s, {grows.pid, steady.pid}) == [grows.pid, steady.pid],
               "the replay, sorted by growth")
        t.keys("Space")
        s = t.wait(lambda s: "[paused]" in s, "paused")
        tick = int(re.search(r"tick (\d+)", s).group(1))
        t.keys(".")
        t.wait(lambda s: "tick %d " % (tick + 1) in s and "[paused]" in s,
               "one step")
        # b: the selected (growing) row's baseline, in the replay too.
        t.keys("Home", "b")
        s = t.wait(lambda s: "baseline of pid %d reset" % grows.pid in s,
                   "baseline reset")
        row = [l for l in s.splitlines() if l.split()[:1] == [str(grows.pid)]]
        check(row and " 0B " in row[0], "growth 0 from now: %r" % row)
        t.keys("-", "-", "Space")  # four times as fast, and on
        t.wait(lambda s: "x4" in s and "tick 12 (end)" in s and
               "end of the recording" in s, "the end, at x4")
        t.keys("q")
        wait_for(lambda: not t.alive(), "q to quit")
    finally:
        t.kill()
    grows.stop()
    steady.stop()


def test_keys():
    """The leak-hunting keys in the view: L sorts by growth, b and B reset
    baselines, a process that exits keeps its row and its final classes
    in its own view, x dismisses it (and only it), X all that ended."""
    if not TMUX:
        print("tmux not installed")
        sys.exit(77)
    grows, steady = leak_pair(TAG)
    short = Target("leak", TAG + "-short")
    t = Tmux("TERM=screen %s -d 0.3 -F %s 2>/dev/null" % (TOP, TAG), w=120,
             h=30)
    every = {grows.pid, steady.pid, short.pid}
    try:
        t.wait(lambda s: len(rows_of(s, every)) == 3, "three processes")
        t.keys("L")
        s = t.wait(lambda s: re.search(r"sort GROWTH$", s, re.M) and
                   rows_of(s, every)[-1] == steady.pid, "sorted by growth")

        def growth_of(s, pid):
            row = [l for l in s.splitlines() if l.split()[:1] == [str(pid)]]
            return row[0][8:].split()[-4] if row else None
        # b on the growing one (first: selected by Home) resets its growth
        # only; B resets everyone's.  Home once the order holds: while the
        # short one still runs it can lead, and the selection stays with
        # the process Home found first.  The short one is told to exit
        # (its stdin closed) once it was seen to grow, not after a time;
        # exited, its row stays, and its growth no longer changes.
        t.wait(lambda s: growth_of(s, grows.pid) not in (None, "0B") and
               growth_of(s, short.pid) not in (None, "0B"), "they grow")
        short.stop()
        t.wait(lambda s: [l.split()[-1] for l in s.splitlines()
                          if l.split()[:1] == [str(short.pid)]] == ["exited"],
               "the short one exited, and stays")
        t.wait(lambda s: rows_of(s, every)[0] == grows.pid, "it is first")
        t.keys("Home")
        t.keys("b")
        s = t.wait(lambda s: "baseline of pid %d reset" % grows.pid in s,
                   "b")
        t.keys("B")
        t.wait(lambda s: "baseline reset for the 3 processes shown" in s, "B")
        # Its own view: the final classes, and what was never freed.
        t.keys("/", "C-u", "short", "Enter")
        t.wait(lambda s: rows_of(s, every) == [short.pid], "filtered")
        t.keys("Enter")
        s = t.wait(lambda s: "SIZE<=" in s and "never freed" in s,
                   "the exited one's view: its final classes")
        check("exited at " in s and
              [l for l in s.splitlines() if l.split()[:1] == ["256GiB"]],
              "its leak class, final:\n%s" % s)
        t.keys("Escape")
        t.keys("/", "C-u", TAG + "-s", "Enter")  # steady and short
        t.wait(lambda s: sorted(rows_of(s, every)) ==
               sorted([steady.pid, short.pid]), "two")
        # x on a running process: refused, said why; on the ended one,
        # it goes.
        s = t.screen()
        order = rows_of(s, every)
        t.keys("Home" if order[0] == steady.pid else "End")
        t.keys("x")
        t.wait(lambda s: "only a process that ended can be dismissed" in s,
               "x refuses a running process")
        t.keys("End" if order[0] == steady.pid else "Home", "x")
        t.wait(lambda s: "dismissed pid %d" % short.pid in s and
               rows_of(s, every) == [steady.pid], "x dismisses the ended one")
        t.keys("X")
        t.wait(lambda s: "dismissed 0 ended processes" in s, "X: none left")
        t.keys("q")
        wait_for(lambda: not t.alive(), "q to quit")
    finally:
        t.kill()
    grows.stop()
    steady.stop()


def test_files():
    """The files the tools write where a user asks (--pprof, --record,
    mstat-run --summary) are mode 0600 whatever the umask, replace a file
    of ours under that name, and are never written through what is
    planted there: a symbolic link (the file it points to stays as it
    was), a FIFO (refused, nothing waits on it), another user's file.
    Nothing is left behind by a refusal."""
    import shutil
    import tempfile
    t = Target("fixed", TAG + "-files")
    d = tempfile.mkdtemp(prefix="mstat-files.")
    try:
        files_in(t, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    t.stop()


def files_in(t, d):
    import stat
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("untouched\n")
    os.chmod(victim, 0o644)

    def run(args, **kw):
        return subprocess.run(args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT,
                              preexec_fn=lambda: os.umask(0), **kw)

    def outputs(name):
        """(mstat-top/mstat-run arguments writing `name`, its exit status
        when refused, and how its refusal names the file)"""
        path = os.path.join(d, name)
        out = [([TOP, "-p", str(t.pid), "--pprof=" + path], 1, path),
               ([TOP, "-b", "-n", "1", "-p", str(t.pid), "--record", path],
                1, path)]
        if RUN:  # not beside a sanitizer's malloc; refused as an option
            out.append(([RUN, "--summary", path, "--", "sh", "-c",
                         "echo ran >%s" % os.path.join(d, "ran")], 125,
                        "'%s' for --summary" % path))
        return path, out

    def contents():
        return sorted(n for n in os.listdir(d) if n != "ran")

    os.mkfifo(os.path.join(d, "fifo"))
    other = os.path.join(d, "other")
    with open(other, "w") as f:
        f.write("another user's\n")
    os.chown(other, 65534, -1)
    for name, why in (("link", "is a symbolic link; not written through"),
                      ("fifo", "is a FIFO; not written through"),
                      ("other", "belongs to uid 65534; not replaced")):
        if name == "link":
            os.symlink(victim, os.path.join(d, "link"))
        before = contents()
        path, runs = outputs(name)
        for args, status, said in runs:
            r = run(args)
            err = ours(r.stderr.decode())
            check(r.returncode == status and
                  err.endswith("%s: %s (remove it, or name another file)\n"
                               % (said, why)
                               if name != "other" else
                               "%s: %s\n" % (said, why)),
                  "%s %s: exit %d, %r" % (os.path.basename(args[0]), name,
                                          r.returncode, err))
            check(open(victim).read() == "untouched\n" and
                  open(other).read() == "another user's\n",
                  "%s wrote through %s" % (args, name))
            check(contents() == before, "%s left %r" % (args, contents()))
            check(not os.path.exists(os.path.join(d, "ran")),
                  "mstat-run ran its command with a summary it cannot write")
        check(os.path.islink(os.path.join(d, "link")) or name != "link",
              "the link is left as it was")
    check(stat.S_ISFIFO(os.lstat(os.path.join(d, "fifo")).st_mode), "fifo")

    # Written: 0600 with umask 0, also where a file of ours (0644) was.
    for name in ("new", "old"):
        path, runs = outputs(name)
        for args, status, _ in runs:
            if name == "old":
                with open(path, "w") as f:
                    f.write("old\n")
                os.chmod(path, 0o644)
            r = run(args)
            check(r.returncode == 0, "%s: exit %d: %s" %
                  (args, r.returncode, r.stderr.decode()))
            st = os.lstat(path)
            check(stat.S_ISREG(st.st_mode) and
                  stat.S_IMODE(st.st_mode) == 0o600 and
                  st.st_uid == os.geteuid() and st.st_size > 0 and
                  open(path, "rb").read(4) != b"old\n",
                  "%s: mode %o, %d bytes" % (args, st.st_mode, st.st_size))
            os.unlink(path)
            if os.path.exists(os.path.join(d, "ran")):
                os.unlink(os.path.join(d, "ran"))
    check(sorted(os.listdir(d)) == ["fifo", "link", "other", "victim"],
          "no temporary file left: %r" % os.listdir(d))


def test_options():
    """A bad value for any option is refused with exit status 2 and one
    line that says what the option takes; so is an empty value, for every
    option that takes one (-p "$PID" with PID unset is not "every
    process"), and a pid of -N that names no process."""
    sorts = ("a column: pid, name, where, age, threads, live-bytes, live-objs, "
             "alloc/s, free/s, net/s, growth, growth-objs, growth/s, rss, free%, "
             "state")
    pids = "process ids, 1 to 2147483647, separated by commas, at most 256"
    for args, flag, value, want in (
            (["-n", "0"], "-n", "0", "a number of ticks, 1 or more"),
            (["-n", "1x"], "-n", "1x", "a number of ticks, 1 or more"),
            (["-d", "0.05"], "-d", "0.05", "seconds, 0.1 to 3600"),
            (["--delay=3601"], "--delay", "3601", "seconds, 0.1 to 3600"),
            (["-o", "xml"], "-o", "xml",
             "a format: table, json, openmetrics, prometheus"),
            (["-p", "1,x"], "-p", "1,x", pids),
            (["-p", "1,"], "-p", "1,", pids),
            (["-p", ""], "-p", "", pids),
            (["--pid="], "--pid", "", pids),
            (["-F", "x" * 64], "-F", "x" * 64, "text, 1 to 63 bytes"),
            (["-N", "2147483647"], "-N", "2147483647",
             "no process 2147483647: its /dev/shm cannot be read"),
            (["-N", "1,"], "-N", "1,", "all, own, or process ids separated "
             "by commas, at most 64"),
            (["-s", "size"], "-s", "size", sorts),
            (["--linger=86401"], "--linger", "86401", "seconds, 0 to 86400"),
            (["--window=0.5"], "--window", "0.5", "seconds, 1 to 86400"),
            (["--baseline=-1"], "--baseline", "-1",
             "seconds, 0 to 31536000"),
            (["--sites=1001"], "--sites", "1001",
             "a number of call sites, 1 to 1000"),
            (["--sample-bytes=%d" % ((1 << 40) + 1)], "--sample-bytes",
             str((1 << 40) + 1), "bytes, 0 to 1099511627776"),
            (["--killed-grace=86401"], "--killed-grace", "86401",
             "seconds, 0 to 86400"),
            (["--postmortem-bytes=-1"], "--postmortem-bytes", "-1",
             "a number of bytes"),
            (["--postmortem-dir=/nonexistent/x"], "--postmortem-dir",
             "/nonexistent/x", "No such file or directory: make it first "
             "(mkdir -m 700 /nonexistent/x)")):
        r = subprocess.run([TOP, "-b"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        line = "mstat-top: bad value '%s' for %s: %s\n" % (value, flag, want)
        check(r.returncode == 2 and ours(r.stderr.decode()) == line,
              "%s: exit %d, %r, not %r" % (args, r.returncode,
                                          r.stderr.decode(), line))
    # Every option that takes a value, as --help lists them, refuses an
    # empty one.
    r = subprocess.run([TOP, "--help"], stdout=subprocess.PIPE,
                       timeout=TIMEOUT)
    valued = re.findall(r"^  (?:-\w, |    )--([\w.-]+)=", r.stdout.decode(),
                        re.M)
    check(len(valued) >= 18, "--help lists %d options with values" %
          len(valued))
    for name in valued:
        r = subprocess.run([TOP, "-b", "--%s=" % name], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        err = ours(r.stderr.decode())
        check(r.returncode == 2 and
              err.startswith("mstat-top: bad value '' for --%s: " % name) and
              err.count("\n") == 1,
              "--%s=: exit %d, %r" % (name, r.returncode, err))
    # The environment's grace and namespaces.
    for args, env, line in (
            ([], {"MSTAT_KILLED_GRACE": "5m"}, "mstat-top: MSTAT_KILLED_GRACE=5m: "
             "not a number of seconds in 0..86400\n"),
            ([], {"MSTAT_KILLED_BYTES": "x"}, "mstat-top: MSTAT_KILLED_BYTES=x: "
             "not a number of bytes\n"),
            ([], {"MSTAT_NAMESPACES": "2147483647"}, "mstat-top: "
             "MSTAT_NAMESPACES=2147483647: no process 2147483647: its "
             "/dev/shm cannot be read\n")):
        r = subprocess.run([TOP, "-b"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT,
                           env=dict(os.environ, **env))
        check(r.returncode == 2 and ours(r.stderr.decode()) == line,
              "%s %s: exit %d, %r, not %r" % (env, args, r.returncode,
                                             r.stderr.decode(), line))


def test_terminal():
    """--version; a terminal curses cannot drive gets batch output and a
    one-line note, not garbage or an error."""
    r = subprocess.run([TOP, "--version"], stdout=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0 and re.match(r"^mstat-top \d+\.\d+\.\d+\n$",
                                         r.stdout.decode()), "--version")
    t = Target("fixed", TAG + "-term")
    for term, why in (("dumb", "terminal type 'dumb' cannot move the cursor"),
                      ("no-such-terminal", "terminal type 'no-such-terminal' "
                       "is not known here")):
        # A terminal on stdout: script(1) gives it a pty.
        r = subprocess.run(["script", "-qec", "%s -n 1 -p %d" % (TOP, t.pid),
                            "/dev/null"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT,
                           env=dict(os.environ, TERM=term))
        out = r.stdout.decode().replace("\r\n", "\n")
        check(r.returncode == 0 and
              out.startswith("mstat-top: %s: batch output instead\n" % why) and
              "tick 1 at " in out and str(t.pid) in out,
              "TERM=%s: %d %r" % (term, r.returncode, out))
    t.stop()


# Text as hostile as a process can make it, and how every output must
# show it: a screen clear, BEL, CSI as C1 (C2 9B), a byte that is not
# UTF-8, DEL, a line feed, a quote, a backslash, an "é" that must stay,
# an overlong CSI (E0 82 9B) and a surrogate (ED A0 80).  Each control
# character and each byte that is not UTF-8 becomes one "?".
HOSTILE = (b"\x1b[2J\x07\xc2\x9b1\xff\x7f\n\"\\\xc3\xa9"
           b"\xe0\x82\x9b\xed\xa0\x80z")
HOSTILE_SHOWN = '?[2J??1???"\\\u00e9??????z'


def check_clean(data, what):
    """data (bytes) is what a terminal shows and nothing it obeys: UTF-8
    (Python's decoder refuses overlong forms and surrogates), and no
    control character but the line feeds that end lines."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Failure("%s is not UTF-8 (%s): %r" % (what, e, data))
    bad = sorted({c for c in text
                  if c != "\n" and (c < " " or "\x7f" <= c <= "\x9f")})
    check(not bad, "%s carries control characters %r: %r" % (what, bad, data))
    return text


def run_raw(args, env=None):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=TIMEOUT)
    return r.returncode, r.stdout, r.stderr


def escape_run(shown):
    """mstat-run's summary and messages, with a hostile name, argument and
    command."""
    arg = b"arg\x1b]0;title\x07\xc2\x9b\xff\n\"\\"
    rc, out, err = run_raw([RUN, "--name", TAG.encode() + HOSTILE,
                            "--summary", "-", "--", "sh", "-c", ":", arg],
                           dict(os.environ, MSTAT_EAGER="1"))
    check(rc == 0, "mstat-run: exit %d: %r" % (rc, err))
    summary = json.loads(check_clean(out, "mstat-run's summary"))
    check_clean(err, "mstat-run's stderr")
    check(summary["counted"] and summary["process"]["name"] == shown,
          "mstat-run's name: %r" % summary)
    check(summary["command"] == ["sh", "-c", ":", 'arg?]0;title????"\\'],
          "mstat-run's command: %r" % summary["command"])
    rc, out, err = run_raw([RUN, "--summary", "-", "--",
                            b"./no-such-\x1b[2J\xc2\x9b\xff"])
    check(rc == 127, "mstat-run of nothing: exit %d" % rc)
    summary = json.loads(check_clean(out, "mstat-run's summary"))
    why = "cannot run ./no-such-?[2J??: No such file or directory"
    check(summary["reason"] == why and
          summary["command"] == ["./no-such-?[2J??"], "reason %r" % summary)
    check(ours(check_clean(err, "mstat-run's stderr")) ==
          "mstat-run: %s\n" % why, "mstat-run says %r" % err)


def test_escape():
    """Text a process supplies (its name) and file names in /dev/shm reach
    no output raw: the table, JSON, OpenMetrics, notes on stderr and the
    terminal view show each control character and each byte that is not
    UTF-8 as "?", and so does mstat-run's summary of a command with such
    a name and arguments."""
    t = Target("fixed", TAG.encode() + HOSTILE)
    shown = TAG + HOSTILE_SHOWN
    # A file anyone of this user can plant: refused for its name, and the
    # note that says so names it.
    planted_name = b"mstat.\x1b[31m\x07\xc2\x9b\xff\n." + TAG.encode()
    plant(planted_name, b"x")
    note = "skipped mstat.?[31m????.%s: not an mstat segment name" % TAG

    # Batch, without -p (that would skip the planted name unread).
    rc, out, err = run_raw([TOP, "-b", "-n", "1", "-F", TAG])
    check(rc == 0, "table: exit %d" % rc)
    table = check_clean(out, "the table")
    check_clean(err, "stderr")
    check(("mstat-top: %s\n" % note) in err.decode(), "the note: %r" % err)
    # Its first 20 characters, the last an ellipsis.
    cell = shown_name(shown, 20)
    rows = [l for l in table.splitlines() if l.split()[:1] == [str(t.pid)]]
    check(len(rows) == 1 and rows[0][8:].startswith(cell + " "),
          "table row %r, name %r" % (rows, cell))

    rc, out, err = run_raw([TOP, "-b", "-n", "1", "-o", "json", "-p",
                            str(t.pid)])
    check(rc == 0, "json: exit %d" % rc)
    line = check_clean(out, "the JSON")
    p = json.loads(line)["processes"][0]
    check(p["pid"] == t.pid and p["name"] == shown, "JSON name %r" % p["name"])
    check(p["name"].isprintable(), "JSON decodes to printable text")
    check('"name":%s,' % json.dumps(shown, ensure_ascii=False) in line,
          "the name as Python writes it: %r" % line)

    rc, out, err = run_raw([TOP, "-b", "-n", "1", "-o", "openmetrics", "-p",
                            str(t.pid)])
    check(rc == 0, "openmetrics: exit %d" % rc)
    om = check_clean(out, "the OpenMetrics text")
    parse_openmetrics(om)
    label = 'name="%s"' % shown.replace("\\", "\\\\").replace('"', '\\"')
    check('mstat_allocs_total{pid="%d",%s}' % (t.pid, label) in om,
          "label %s in %r" % (label, om))
    rc, out, err = run_raw([TOP, "-b", "-n", "1", "-o", "prometheus", "-p",
                            str(t.pid)])
    check(rc == 0, "prometheus: exit %d" % rc)
    check('mstat_allocs_total{pid="%d",%s}' % (t.pid, label) in
          check_clean(out, "the text format"), "label in the text format")
    check_text_format(out)

    # mstat-run: the name (from the command's segment) and the command
    # line in its summary, and a command that cannot be run, in the
    # summary's reason and on stderr.  (Not beside a sanitizer's malloc,
    # where the library it preloads cannot run: RUN is empty.)
    if RUN:
        escape_run(shown)
    else:
        print("mstat-run not checked: a sanitizer replaces malloc")

    # The terminal: the row, the process's own view and the status line
    # (the note).  Wide enough for the whole name.  tmux interprets what
    # reaches it, so the test is what it shows: the replaced text, and no
    # control character left in its cells.
    if not TMUX:
        print("tmux not installed: the terminal view is not checked")
        t.stop()
        return
    err_file = "/tmp/mstat-top-%s.err" % TAG
    tsan = os.environ.get("TSAN_OPTIONS", "")
    tm = Tmux("TERM=screen LANG=C.UTF-8 TSAN_OPTIONS='%s' %s%s -d 0.3 -F %s "
              "2>%s" % (tsan, MEMCHECK, TOP, TAG, err_file), w=160)

    def capture():
        raw = tm.tmux("capture-pane", "-p", "-t", "t").stdout
        return check_clean(raw, "the screen")
    try:
        # The row; then a file planted now, whose note is the newest on
        # the status line.  (Planted before, its note could already be
        # replaced by a note about another test's files: /dev/shm is
        # shared, and the status line shows the last.)
        tm.wait(lambda s: rows_of(s, {t.pid}), "the row")
        plant(planted_name + b".view", b"x")
        view_note = note.replace(TAG + ":", TAG + ".view:")
        s = tm.wait(lambda s: view_note in s, "the note")
        s = capture()
        row = [l for l in s.splitlines() if l.split()[:1] == [str(t.pid)]]
        cell = shown_name(shown, 24)  # NAME's bound, in characters
        check(row and row[0][8:].startswith(cell),
              "the row shows %r: %r" % (cell, row))
        tm.keys("Enter")
        tm.wait(lambda s: "SIZE<=" in s, "the process's view")
        s = capture()
        check("pid %d %s exe " % (t.pid, display_name(shown)) in s,
              "its header shows %r:\n%s" % (shown, s))
        tm.keys("q")
        wait_for(lambda: not tm.alive(), "q to quit")
        check(ours(open(err_file).read()) == "",
              "stderr: %s" % open(err_file).read())
    finally:
        tm.kill()
        if os.path.exists(err_file):
            os.unlink(err_file)
    t.stop()


def main():
    name = sys.argv[1]
    fn = globals().get("test_" + name)
    if not fn:
        print("no test %s" % name)
        return 2
    try:
        fn()
        print("ok %s" % name)
        return 0
    except (Failure, tmuxview.ScreenTimeout) as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    finally:
        for p in children:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                    p.wait()
                except ProcessLookupError:
                    pass
        for path in planted:
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)
            except FileNotFoundError:
                pass
        # Processes killed here leave their segments: remove ours.
        for p in children:
            if os.path.exists("/proc/%d" % p.pid):
                continue  # not ours any more: the pid was reused
            for n in segments_of(p.pid):
                try:
                    os.unlink("/dev/shm/" + n)
                except FileNotFoundError:
                    pass


if __name__ == "__main__":
    sys.exit(main())
