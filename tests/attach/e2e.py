#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of mstat-attach against processes started without
libmstatshm.

    e2e.py TEST     TEST: pattern refusals churn row fenced

Environment (set by meson): MSTAT_ATTACH, MSTAT_TOP, ATTACH_TARGET
(target.c), ATTACH_STATIC (the same, statically linked), ATTACH_LIBRARY
(test_library.c, which checks its own counts once attached), LIBMSTATSHM
(the preloaded library).

A process mstat-attach refuses must be as it was: running, its output
the same, no object of the library mapped, no memfd, no segment.
Nothing here asserts a duration: a hang shows as a subprocess timeout.
"""
import json
import os
import pwd
import signal
import subprocess
import sys
import time

ATTACH = os.environ["MSTAT_ATTACH"]
TOP = os.environ["MSTAT_TOP"]
TARGET = os.environ["ATTACH_TARGET"]
STATIC = os.environ["ATTACH_STATIC"]
LIBRARY = os.environ["ATTACH_LIBRARY"]
LIBMSTATSHM = os.environ["LIBMSTATSHM"]
EXPORTER = os.environ["MSTAT_EXPORTER"]
TMUX = os.environ.get("TMUX_BIN", "")
TIMEOUT = 120

children = []


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Target:
    """A process of target.c: "ready" once set up; its output once its
    stdin closes."""

    def __init__(self, mode, *args, exe=TARGET, env=None, preexec=None):
        self.p = subprocess.Popen([exe, mode] + [str(a) for a in args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  env=dict(os.environ, **(env or {})),
                                  preexec_fn=preexec)
        children.append(self.p)
        line = self.p.stdout.readline()
        check(line == b"ready\n", "%s did not start: %r" % (mode, line))
        self.pid = self.p.pid

    def finish(self):
        """Closes its stdin: its output and exit status."""
        out, err = self.p.communicate(timeout=TIMEOUT)
        return self.p.returncode, out.decode(), err.decode()


def attach(pid, *args, user=None):
    cmd = [ATTACH] + list(args) + [str(pid)]
    if user:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user,
               "--clear-groups", "--"] + cmd
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def segments_of(pid):
    return [n for n in os.listdir("/dev/shm") if n.startswith("mstat.%d." % pid)]


def untouched(pid, what):
    """Nothing of the attach left in process pid."""
    check(os.path.exists("/proc/%d" % pid), "%s: the process is gone" % what)
    with open("/proc/%d/maps" % pid) as f:
        maps = [l for l in f.read().splitlines()
                if "memfd:mstat" in l or "libmstatshm" in l]
    check(not maps, "%s: something of the attach is mapped:\n%s" %
          (what, "\n".join(maps)))
    fds = os.listdir("/proc/%d/fd" % pid)
    links = [os.readlink("/proc/%d/fd/%s" % (pid, fd)) for fd in fds]
    check(not [l for l in links if "memfd:mstat" in l],
          "%s: a descriptor of the attach is open: %r" % (what, links))
    check(not segments_of(pid), "%s: it has a segment" % what)


def row(pid):
    """pid's row in mstat-top's JSON once read (a writer preempted inside
    an update on a busy machine makes a read wait for a later one), or
    None if it has none."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        r = subprocess.run([TOP, "-b", "-n", "1", "-o", "json", "-p", str(pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        rows = json.loads(r.stdout.decode())["processes"]
        if not rows or rows[0]["state"] not in ("stalled", "busy") or \
           time.monotonic() > deadline:
            return rows[0] if rows else None
        time.sleep(0.05)


def test_pattern():
    """A known pattern made after the attach reads exactly, per class and
    in the prior row; the process's own reader finds the attach's time
    (test_library.c, attached from outside)."""
    p = subprocess.Popen([LIBRARY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=dict(os.environ, MSTAT_TEST_EXTERNAL="1"))
    children.append(p)
    line = p.stdout.readline().decode()
    while line.startswith("["):  # cmocka's own lines first
        line = p.stdout.readline().decode()
    check(line == "ready %d\n" % p.pid, "did not start: %r" % line)
    rc, out, err = attach(p.pid, "--name", "external")
    check(rc == 0 and out.startswith("%d: attached: counting into" % p.pid),
          "mstat-attach: %d %r %r" % (rc, out, err))
    out, _ = p.communicate(b"go\n", timeout=TIMEOUT)
    check(p.returncode == 0, "its own counts were not exact:\n%s" % out.decode())


def refused(t, why, *args, user=None):
    """mstat-attach refuses process t, saying why, and leaves it as it
    was: its output then is what it would have been."""
    rc, out, err = attach(t.pid, *args, user=user)
    check(rc == 1 and why in err and not out,
          "expected a refusal saying %r: %d %r %r" % (why, rc, out, err))
    untouched(t.pid, why)
    return err


def test_refusals():
    # No such process: a pid just reaped.
    p = subprocess.Popen(["true"])
    p.wait()
    rc, out, err = attach(p.pid)
    check(rc == 1 and "no such process" in err, "gone: %r" % err)
    # Not a pid.
    for bad in (["x"], ["0"], ["--timeout", "0", "1"], ["--name", "", "1"], []):
        r = subprocess.run([ATTACH] + bad, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        check(r.returncode == 2 and r.stderr, "%r: %d %r" % (bad, r.returncode,
                                                            r.stderr))
    t = Target("idle", exe=STATIC)
    refused(t, "statically linked")
    check(t.finish()[0] == 0, "static: did not exit cleanly")
    t = Target("churn", 2, env={"LD_PRELOAD": LIBMSTATSHM})
    rc, out, err = attach(t.pid)
    check(rc == 1 and "counts already: libmstatshm is loaded" in err, err)
    check(t.finish()[:2] == (0, "changed 0\n"), "preloaded: changed")
    t = Target("churn", 2, env={"LD_PRELOAD": "libjemalloc.so.2"})
    err = refused(t, "its malloc is not glibc's but ")
    check("libjemalloc.so.2's" in err, "jemalloc: %r" % err)
    check(t.finish()[:2] == (0, "changed 0\n"), "jemalloc: changed")
    t = Target("seccomp-kill")
    refused(t, "its seccomp filter kills the process memfd_create()")
    check(t.finish()[0] == 0, "seccomp: did not exit cleanly")
    t = Target("ignore-segv")
    refused(t, "it ignores SIGSEGV")
    check(t.finish()[0] == 0, "ignore-segv: did not exit cleanly")
    # Another user's process, without the privilege: refused before
    # anything; and a user's own process under a seccomp filter, which
    # it cannot read.
    nobody = pwd.getpwnam("nobody").pw_uid
    t = Target("idle")
    refused(t, "it is uid 0's; attaching to another user's process needs "
            "CAP_SYS_PTRACE", user=nobody)
    t.finish()

    def as_nobody():
        os.setgid(nobody)
        os.setuid(nobody)
    t = Target("seccomp-kill", preexec=as_nobody)
    refused(t, "cannot be read without CAP_SYS_ADMIN", user=nobody)
    check(t.finish()[0] == 0, "seccomp, nobody: did not exit cleanly")
    # Attached already.
    t = Target("churn", 2)
    rc, out, err = attach(t.pid)
    check(rc == 0, "first attach: %r" % err)
    rc, out, err = attach(t.pid)
    check(rc == 1 and "counts already: mstat-attach attached it before" in err,
          "second attach: %r" % err)
    check(t.finish()[:2] == (0, "changed 0\n"), "attached twice: changed")


def test_churn():
    """Threads that allocate as fast as they can, through every function
    of the family, filling and checking their blocks: attached, they find
    nothing changed, and the process counts (a row that says it was
    attached)."""
    t = Target("churn", 8)
    rc, out, err = attach(t.pid, "--name", "churn-e2e")
    check(rc == 0, "mstat-attach: %r" % err)
    r = row(t.pid)
    check(r and r["name"] == "churn-e2e" and r["state"] == "running",
          "its row: %r" % r)
    check(t.finish()[:2] == (0, "changed 0\n"), "churn: changed")


def test_row():
    """The row of an attached process says when it was attached, in
    JSON, in both metric formats, in mstat-exporter's scrape and in the
    view; and the frees of its blocks made before, apart from its
    counters."""
    t = Target("prior", 40)
    before = time.time()
    rc, out, err = attach(t.pid, "--name", "prior-e2e")
    after = time.time()
    check(rc == 0, "mstat-attach: %r" % err)
    r = row(t.pid)
    check(r and r["attached_time_s"] is not None and
          before <= r["attached_time_s"] <= after + 0.001,
          "attached_time_s %r not in [%r, %r]" % (r and r["attached_time_s"],
                                                 before, after))
    check((r["prior_frees"], r["prior_free_bytes"], r["prior_reallocs"],
           r["prior_realloc_bytes"]) == (0, 0, 0, 0), "prior before: %r" % r)
    frees = r["free_count"]
    t.p.stdin.write(b"free\n")
    t.p.stdin.flush()
    n, usable = [int(x) for x in t.p.stdout.readline().split()[1:]]
    r = row(t.pid)
    check((r["prior_frees"], r["prior_free_bytes"]) == (n, n * usable),
          "prior after %d frees of %d: %r" % (n, usable, r))
    check(r["free_count"] == frees, "the frees were counted as frees: %r" % r)
    # The metrics, in both formats.
    for fmt, line in (("openmetrics", "mstat_prior_frees_total{pid=\"%d\"" % t.pid),
                      ("prometheus", "mstat_prior_free_bytes_total{pid=\"%d\"" % t.pid)):
        m = subprocess.run([TOP, "-b", "-n", "1", "-o", fmt, "-p", str(t.pid)],
                           stdout=subprocess.PIPE, timeout=TIMEOUT).stdout.decode()
        check("mstat_attached_time_seconds{pid=\"%d\"" % t.pid in m and line in m,
              "%s: %s" % (fmt, m))
    scraped = scrape(t.pid)
    check("mstat_attached_time_seconds{pid=\"%d\",name=\"prior-e2e\"}" % t.pid in scraped
          and "mstat_prior_frees_total{pid=\"%d\",name=\"prior-e2e\"} %d" % (t.pid, n)
          in scraped, "mstat-exporter: %s" % scraped)
    view(t.pid, "attached at ")
    check(t.finish()[0] == 0, "prior: did not exit cleanly")


def scrape(pid):
    """One scrape of /metrics from an mstat-exporter of its own."""
    import socket
    import urllib.request
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    e = subprocess.Popen([EXPORTER, "--web.listen-address=127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    children.append(e)
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                        timeout=TIMEOUT) as u:
                body = u.read().decode()
            if "pid=\"%d\"" % pid in body:
                return body
        except OSError:
            pass
        check(time.monotonic() < deadline, "mstat-exporter never served pid %d" % pid)
        time.sleep(0.1)


def view(pid, text):
    """mstat-top's view of process pid (Enter on its row) shows `text`."""
    if not TMUX:
        print("tmux not installed: the view is not looked at")
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "observer"))
    import tmuxview
    with tmuxview.Tmux(TMUX, "attach%d" % os.getpid(),
                       "%s -p %d -d 0.2" % (TOP, pid), 160, 30, TIMEOUT) as tm:
        tm.wait(lambda s: str(pid) in s, "the process's row")
        tm.keys("Enter")
        tm.wait(lambda s: text in s, repr(text))


def test_fenced():
    """A process whose seccomp filter fails membarrier(): attached, it
    counts in fenced mode."""
    t = Target("seccomp-errno")
    rc, out, err = attach(t.pid)
    check(rc == 0 and "(fenced)" in out, "mstat-attach: %d %r %r" % (rc, out, err))
    t.finish()


def main():
    test = sys.argv[1]
    try:
        globals()["test_" + test]()
    except Failure as e:
        print("FAIL %s: %s" % (test, e))
        return 1
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
    print("ok %s" % test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
