#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of mstat-attach against processes started without
libmstatshm.

    e2e.py TEST     TEST: pattern refusals churn row fenced exit exiting
                          exec starting midway leaderless fork kill twice
                          reader signals huge programs nginx container
                          profile

Environment (set by meson): MSTAT_ATTACH, MSTAT_TOP, ATTACH_TARGET
(target.c), ATTACH_STATIC (the same, statically linked), ATTACH_LIBRARY
(test_library.c, which checks its own counts once attached), LIBMSTATSHM
(the preloaded library), HOLD_LIB (hold_loader.c, which holds a process
starting in its loader).

A process mstat-attach refuses must be as it was: running, its output
the same, no object of the library mapped, no memfd, no segment.
Nothing here asserts a duration: a hang shows as a subprocess timeout.
"""
import ctypes
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
CXX = os.environ["ATTACH_CXX"]
NGINX = os.environ["ATTACH_NGINX"]
HOLD = os.environ["HOLD_LIB"]
TIMEOUT = 120

children = []
groups = []  # process groups to kill at the end (a server and its workers)


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Target:
    """A process of target.c: "ready" once set up; its output once its
    stdin closes."""

    def __init__(self, mode, *args, exe=TARGET, env=None, preexec=None):
        # Unbuffered (bufsize=0), as every process here whose lines are
        # read one by one and the rest with communicate(): communicate()
        # reads the descriptor itself, and would never see what a buffered
        # readline() had read ahead.
        self.p = subprocess.Popen([exe, mode] + [str(a) for a in args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, bufsize=0,
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


def life(pid):
    """/proc/pid/stat's state letter and flags (PF_EXITING: 0x4)."""
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return fields[0], int(fields[6])


def until(cond, what):
    """Waits for a state of a process (never for a time)."""
    deadline = time.monotonic() + TIMEOUT
    while not cond():
        check(time.monotonic() < deadline, "never came: %s" % what)
        time.sleep(0.001)


def row(pid, settle=True):
    """pid's row in mstat-top's JSON once read (a writer preempted inside
    an update on a busy machine makes a read wait for a later one; not
    with settle=False), or None if it has none."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        r = subprocess.run([TOP, "-b", "-n", "1", "-o", "json", "-p", str(pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        rows = json.loads(r.stdout.decode())["processes"]
        if not rows or not settle or \
           rows[0]["state"] not in ("stalled", "busy") or \
           time.monotonic() > deadline:
            return rows[0] if rows else None
        time.sleep(0.05)


def test_pattern():
    """A known pattern made after the attach reads exactly, per class and
    in the prior row; the process's own reader finds the attach's time
    (test_library.c, attached from outside)."""
    p = subprocess.Popen([LIBRARY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         bufsize=0, env=dict(os.environ, MSTAT_TEST_EXTERNAL="1"))
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
    # A zombie: exited, not waited for yet.
    p = subprocess.Popen(["true"])
    until(lambda: life(p.pid)[0] == "Z", "a zombie")
    rc, out, err = attach(p.pid)
    check(rc == 1 and err == "mstat-attach: pid %d: it has exited: a zombie, its "
          "parent has not waited for it\n" % p.pid, "zombie: %r" % err)
    p.wait()
    # A kernel thread (kthreadd, where this pid namespace shows one).
    kthreads = [int(d) for d in os.listdir("/proc")
                if d.isdigit() and int(d) <= 2 and life(int(d))[1] & 0x200000]
    for k in kthreads:
        rc, out, err = attach(k)
        check(rc == 1 and "it is a kernel thread" in err, "kthread: %r" % err)
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
    # Eight threads that never sleep, on two CPUs: a read may wait in vain
    # for one preempted inside an update; the row says who it is anyway.
    r = row(t.pid, settle=False)
    check(r and r["name"] == "churn-e2e" and r["attached_time_s"] and
          r["state"] in ("running", "stalled", "busy"), "its row: %r" % r)
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


def scrape(pid, env=None):
    """One scrape of /metrics from an mstat-exporter of its own."""
    import socket
    import urllib.request
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    e = subprocess.Popen([EXPORTER, "--web.listen-address=127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=env)
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
                                    "..", "top"))
    import tmuxview
    with tmuxview.Tmux(TMUX, "attach%d" % os.getpid(),
                       "%s -p %d -d 0.2" % (TOP, pid), 160, 30, TIMEOUT) as tm:
        tm.wait(lambda s: str(pid) in s, "the process's row")
        tm.keys("Enter")
        tm.wait(lambda s: text in s, repr(text))


def attached_or_said(rc, err, allowed, what):
    """mstat-attach ended: attached (0), or refused with one of `allowed`
    (what it says after the pid)."""
    check(rc == 0 or (rc == 1 and any(err.split(": ", 2)[-1].startswith(a)
                                      for a in allowed)),
          "%s: %d %r" % (what, rc, err))


# What mstat-attach may say of a process that exits while attached, in
# full: a read of it that fails meanwhile is never the reason given.
EXITED = ("it exited while being attached\n", "it has exited: a zombie",
          "attached; it exited since\n")


def test_exit():
    """Processes that exit on their own while being attached: each ends
    as it would (exit status 0, no crash), mstat-attach says what
    happened, and no segment is left behind."""
    for i in range(20):
        t = Target("exit")
        rc, out, err = attach(t.pid)
        attached_or_said(rc, err, EXITED, "exit %d" % i)
        check(t.p.wait(timeout=TIMEOUT) == 0, "exit %d: status %d" %
              (i, t.p.returncode))
        check(not segments_of(t.pid), "exit %d: a segment left" % i)


def test_exiting():
    """A process held inside its exit, its memory gone from it and not a
    zombie yet (pid 1 of a pid namespace waits there until its child is
    reaped, and the child, traced by this test, is not until the test
    says): mstat-attach says that it exited, not that its memory cannot
    be read, nor that it exec()ed."""
    if subprocess.run(["unshare", "--pid", "--fork", "true"],
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("SKIP: needs root for a pid namespace")
        sys.exit(77)

    def kids(pid):
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    u = subprocess.Popen(["unshare", "--pid", "--fork", TARGET, "reaper"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    children.append(u)
    check(u.stdout.readline() == b"ready\n", "the reaper did not start")
    (init,) = kids(u.pid)
    (kid,) = kids(init)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p,
                            ctypes.c_void_p]
    check(libc.ptrace(0x4206, kid, None, None) == 0,  # PTRACE_SEIZE
          "ptrace: %s" % os.strerror(ctypes.get_errno()))
    u.stdin.close()  # the reaper exits, and the kernel kills its child
    until(lambda: life(kid)[0] == "Z", "its child killed")
    state, flags = life(init)
    check(state not in "ZX" and flags & 0x4, "not held in its exit: %s %#x" %
          (state, flags))
    rc, out, err = attach(init)
    check((rc, out, err) == (1, "", "mstat-attach: pid %d: it exited while being "
                             "attached\n" % init), "%d %r %r" % (rc, out, err))
    os.waitpid(kid, 0x40000000)  # __WALL: the child reaped, the exit ends
    check(u.wait(timeout=TIMEOUT) == 0, "the reaper: status %d" % u.returncode)


def test_exec():
    """Processes that exec() while being attached: the new image, which
    has no library, runs as it would."""
    for i in range(20):
        t = Target("exec")
        rc, out, err = attach(t.pid)
        attached_or_said(rc, err, ("it exec()ed while being attached\n",
                                   "attached; it exec()ed since\n",
                                   "its dynamic loader is still loading objects"),
                         "exec %d" % i)
        line = t.p.stdout.readline()
        check(line == b"ready\n", "exec %d: the new image said %r" % (i, line))
        check(t.finish()[:2] == (0, "changed 0\n"), "exec %d: ended badly" % i)


def test_starting():
    """A process held in its dynamic loader as it starts, the loader's
    list of objects half made (an LD_AUDIT module holds it there: a
    process that has just exec()ed looks so): mstat-attach waits a while
    for the list, then says the loader is still loading, never that the
    process's C library is not glibc; once let go, it is attached."""
    p = subprocess.Popen([TARGET, "idle"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         bufsize=0, env=dict(os.environ, LD_AUDIT=HOLD))
    children.append(p)
    check(p.stderr.readline() == b"held\n", "not held")
    rc, out, err = attach(p.pid)
    check(rc == 1 and not out and err.startswith(
        "mstat-attach: pid %d: its dynamic loader is still loading objects "
        "after 1 s (it is starting, or in dlopen())" % p.pid), "%d %r" % (rc, err))
    p.stdin.write(b"x")
    check(p.stdout.readline() == b"ready\n", "did not start")
    rc, out, err = attach(p.pid)
    check(rc == 0, "once started: %r" % err)
    out, err = p.communicate(timeout=TIMEOUT)
    check((p.returncode, out) == (0, b"changed 0\n"), "ended badly: %r" % out)


def test_midway():
    """A process that exec()s, or exits, while mstat-attach has read it
    and looks for a thread that may run the attach (its one thread waits
    in a signal handler, where none may, for a line saying which): what
    it did is said, and the new image runs as it would.  Without address
    space randomization too, where the new image is where the old one
    was, its auxiliary vector too: only the random bytes there differ."""
    libc = ctypes.CDLL(None, use_errno=True)

    def fixed():
        libc.personality(0x0040000)  # ADDR_NO_RANDOMIZE
    for what, said, preexec in (("exec", "it exec()ed", None),
                                ("exec", "it exec()ed", fixed),
                                ("exit", "it exited", None)):
        t = Target("handler", preexec=preexec)
        a = subprocess.Popen([ATTACH, "--timeout", str(TIMEOUT), str(t.pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def looking():
            with open("/proc/%d/status" % t.pid) as f:
                return "TracerPid:\t%d\n" % a.pid in f.read()
        until(looking, "mstat-attach looking for a thread")
        t.p.stdin.write(what.encode() + b"\n")
        out, err = a.communicate(timeout=TIMEOUT)
        check((a.returncode, out, err.decode()) ==
              (1, b"", "mstat-attach: pid %d: %s while being attached\n" %
               (t.pid, said)), "%s: %d %r" % (what, a.returncode, err))
        if what == "exec":
            check(t.p.stdout.readline() == b"ready\n", "the new image did not start")
            check(t.finish()[:2] == (0, "changed 0\n"), "exec: ended badly")
        else:
            check(t.p.wait(timeout=TIMEOUT) == 0, "exit: status %d" % t.p.returncode)


def test_leaderless():
    """A process whose main thread exited while another runs on, which
    mstat-attach cannot read through it: said so, after looking a while
    for an exit, never said to have exited or exec()ed; it runs on as it
    would, with no segment."""
    t = Target("leaderless")
    until(lambda: life(t.pid)[0] == "Z", "its main thread ended")
    rc, out, err = attach(t.pid)
    check((rc, out, err) == (1, "", "mstat-attach: pid %d: its main thread has "
                             "exited, and the others run on: its memory is "
                             "read through that thread\n" % t.pid),
          "%d %r" % (rc, err))
    check(not segments_of(t.pid), "it has a segment")
    check(t.finish()[:2] == (0, "changed 0\n"), "ended badly")


def test_fork():
    """A process whose threads fork and allocate while it is attached:
    nothing changed, children exit cleanly."""
    t = Target("fork", 4)
    rc, out, err = attach(t.pid)
    check(rc == 0, "mstat-attach: %r" % err)
    check(row(t.pid)["state"] == "running", "not running")
    check(t.finish()[:2] == (0, "changed 0\n"), "fork: changed")


def test_kill():
    """A process SIGKILLed while being attached, at every moment of it:
    mstat-attach ends, saying so, and never hangs."""
    for i in range(30):
        t = Target("churn", 4)
        a = subprocess.Popen([ATTACH, str(t.pid)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        time.sleep(0.0005 * i)
        os.kill(t.pid, signal.SIGKILL)
        out, err = a.communicate(timeout=TIMEOUT)
        attached_or_said(a.returncode, err.decode(), EXITED, "kill %d" % i)
        t.p.wait(timeout=TIMEOUT)


def test_twice():
    """Two mstat-attach of one process at once: one attaches, the other
    says why it does not, and the process has one library, counting."""
    for i in range(5):
        t = Target("churn", 4)
        a = [subprocess.Popen([ATTACH, str(t.pid)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
        res = [(p.wait(timeout=TIMEOUT), p.stdout.read().decode(),
                p.stderr.read().decode()) for p in a]
        rcs = sorted(r[0] for r in res)
        check(rcs == [0, 1], "twice %d: %r" % (i, res))
        err = [r[2] for r in res if r[0] == 1][0]
        check("counts already" in err or "is traced by" in err,
              "twice %d: %r" % (i, err))
        with open("/proc/%d/maps" % t.pid) as f:
            copies = {l.split()[4] for l in f if "memfd:mstat-attach" in l}
        check(len(copies) == 1, "twice %d: %d copies" % (i, len(copies)))
        check(len(segments_of(t.pid)) == 1, "twice %d: segments %r" %
              (i, segments_of(t.pid)))
        check(t.finish()[:2] == (0, "changed 0\n"), "twice %d: changed" % i)


def test_reader():
    """A reader running all along: mstat-top reads every process of the
    run while each is attached, and goes on."""
    import tempfile
    # Read through a descriptor of its own: one that shared mstat-top's
    # file offset would move where it writes.
    fd, path = tempfile.mkstemp(prefix="mstat-attach-ticks.")
    os.close(fd)
    with open(path, "ab") as out:
        top = subprocess.Popen([TOP, "-b", "-o", "json", "-d", "0.1"],
                               stdout=out, stderr=subprocess.DEVNULL)
    children.append(top)
    ts = [Target("churn", 2) for _ in range(6)]
    for t in ts:
        rc, out, err = attach(t.pid)
        check(rc == 0, "mstat-attach: %r" % err)
    seen = set()
    deadline = time.monotonic() + TIMEOUT
    while len(seen) < len(ts):
        check(top.poll() is None, "mstat-top ended")
        check(time.monotonic() < deadline, "mstat-top showed %r" % seen)
        time.sleep(0.1)
        with open(path, "rb") as ticks:
            got = ticks.read().decode()
        for line in got.splitlines()[:-1]:  # whole ticks
            seen |= {p["pid"] for p in json.loads(line)["processes"]
                     if p["pid"] in {t.pid for t in ts} and p["attached_time_s"]}
    os.unlink(path)
    for t in ts:
        check(t.finish()[:2] == (0, "changed 0\n"), "reader: changed")


def test_signals():
    """Real-time signals sent all along the attach: every one handled."""
    t = Target("signals", 4)
    sent = 0
    a = subprocess.Popen([ATTACH, str(t.pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    while a.poll() is None or sent < 2000:
        try:
            os.kill(t.pid, signal.SIGRTMIN)
            sent += 1
        except OSError:
            time.sleep(0.001)  # the queue is full: wait, nothing lost
    check(a.returncode == 0, "mstat-attach: %r" % a.stderr.read())
    rc, out, _ = t.finish()
    check(rc == 0 and out == "changed 0 signals %d\n" % sent,
          "sent %d: %r" % (sent, out))


def test_huge():
    """A thread inside realloc() for milliseconds at a time, copying a
    block of hundreds of MiB, beside threads that churn: another thread
    runs the attach, nothing changes."""
    t = Target("huge", 2)
    rc, out, err = attach(t.pid)
    check(rc == 0, "mstat-attach: %r" % err)
    check(t.finish()[:2] == (0, "changed 0\n"), "huge: changed")


def run_program(cmd, steps, attach_at, env=None):
    """Runs cmd, feeding it `steps` (each a line, or None to read one
    line of its output first), and attaches it once step `attach_at` is
    reached (None: never).  Its output, exit status, and what mstat-attach
    said."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0,
                         env=dict(os.environ, **(env or {})))
    children.append(p)
    got, said = [], None
    for i, s in enumerate(steps):
        if i == attach_at:
            said = attach(p.pid)
            check(said[0] == 0, "%s: mstat-attach: %r" % (cmd[0], said))
        if s is None:
            got.append(p.stdout.readline().decode())
        else:
            p.stdin.write(s.encode())
            p.stdin.flush()
    out, err = p.communicate(timeout=TIMEOUT)
    return "".join(got) + out.decode(), err.decode(), p.returncode, p.pid


def class_row(r, size):
    """The counters of the class of a block of `size` bytes, in row r."""
    rows = [c for c in r["classes"] if c["size"] is None or c["size"] >= size]
    return min(rows, key=lambda c: c["size"] or float("inf"))


def held_exactly(pid, n, size, what):
    """While process pid holds n blocks of `size` bytes made since the
    attach, of a class nothing else uses: exactly n live there."""
    c = class_row(row(pid), size)
    check(c["alloc_count"] - c["free_count"] == n,
          "%s: %d live of %d bytes, not %d: %r" % (
              what, c["alloc_count"] - c["free_count"], size, n, c))
    return c


def test_programs():
    """Real programs attached mid-run: python3, sqlite3, a multithreaded
    C++ program.  Each gives the same output as without the attach, exits
    as it would, and counts exactly what the test knows of: blocks of a
    size nothing else has, held, then freed."""
    work = os.path.join(os.path.dirname(os.path.abspath(__file__)), "work.py")
    # Both say "ready", "held N", "freed", each waiting for a line after.
    steps = [None, "go\n", None, "x\n", None, "x\n"]
    for name, cmd, size, n in (("python3", ["python3", work], 3333333, 7),
                               ("cxx", [CXX], 777777, 5)):
        plain = run_program(cmd, steps, None)
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, bufsize=0)
        children.append(p)
        out = [p.stdout.readline().decode()]
        rc, said, err = attach(p.pid)
        check(rc == 0, "%s: mstat-attach: %r" % (name, err))
        p.stdin.write(b"go\n")
        p.stdin.flush()
        while not out[-1].startswith("held"):
            out.append(p.stdout.readline().decode())
        before = held_exactly(p.pid, n, size, name + " held")
        p.stdin.write(b"x\n")
        p.stdin.flush()
        out.append(p.stdout.readline().decode())
        c = class_row(row(p.pid), size)
        check(c["free_count"] - before["free_count"] == n, "%s freed: %r" % (name, c))
        rest, err = p.communicate(b"x\n", timeout=TIMEOUT)
        check(p.returncode == plain[2] == 0, "%s: exit %d" % (name, p.returncode))
        check("".join(out) + rest.decode() == plain[0],
              "%s: attached, its output differs:\n%r\n%r" % (
                  name, "".join(out) + rest.decode(), plain[0]))
    # sqlite3: a table made, the attach, the queries.
    fill = ("create table t(a integer, b text);\n"
            "with recursive c(i) as (select 1 union all select i + 1 from c "
            "where i < 20000) insert into t select i, hex(i % 251) || "
            "printf('%08d', (i * 7919) % 20011) from c;\n.print ready\n")
    query = ("select count(*), sum(a), max(b) from t;\n"
             "select b, count(*) from t group by substr(b, 1, 3) order by 2 "
             "desc, 1 limit 5;\n"
             "create index i on t(b); select a from t where b > '00010000' "
             "order by b limit 3;\n")
    plain = run_program(["sqlite3"], [fill, None, query], None)
    got = run_program(["sqlite3"], [fill, None, query], 2)
    check(got[2] == plain[2] == 0 and got[0] == plain[0] and "ready" in got[0],
          "sqlite3: attached, its output differs:\n%r\n%r" % (got[0], plain[0]))


class Nginx:
    """Debian's nginx (unpacked by scripts/deps.sh), a master and
    `workers` workers in a directory of their own, under load from four
    client threads that check every answer; started once it answered."""

    def __init__(self, workers=2):
        import http.client
        import socket
        import tempfile
        import threading
        d = self.dir = tempfile.mkdtemp(prefix="mstat-attach-nginx.")
        os.chmod(d, 0o755)  # its workers run as nobody
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        os.mkdir(os.path.join(d, "html"))
        bodies = {}
        for i, n in enumerate((10, 1000, 30000, 200000)):
            bodies["/f%d" % i] = bytes((k * 131 + i) % 251 for k in range(n))
            with open(os.path.join(d, "html", "f%d" % i), "wb") as f:
                f.write(bodies["/f%d" % i])
        os.chmod(os.path.join(d, "html"), 0o755)
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write("daemon off; master_process on; worker_processes %d;\n"
                    "pid %s/nginx.pid; error_log %s/error.log info;\n"
                    "events { worker_connections 256; }\n"
                    "http { access_log off; client_body_temp_path %s/b;\n"
                    "proxy_temp_path %s/p; fastcgi_temp_path %s/f;\n"
                    "uwsgi_temp_path %s/u; scgi_temp_path %s/s;\n"
                    "server { listen 127.0.0.1:%d; root %s/html; } }\n" %
                    ((workers,) + (d,) * 7 + (port, d)))
        self.master = subprocess.Popen([NGINX, "-p", d, "-c", d + "/nginx.conf",
                                        "-e", d + "/error.log"],
                                       start_new_session=True,
                                       stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        groups.append(self.master.pid)
        self.stopping, self.errors, self.answers = threading.Event(), [], [0]

        def load():
            c = None
            while not self.stopping.is_set():
                try:
                    c = c or http.client.HTTPConnection("127.0.0.1", port,
                                                        timeout=TIMEOUT)
                    path = "/f%d" % (self.answers[0] % 4)
                    c.request("GET", path)
                    r = c.getresponse()
                    body = r.read()
                    if r.status != 200 or body != bodies[path]:
                        self.errors.append((path, r.status, len(body)))
                    self.answers[0] += 1
                except (OSError, http.client.HTTPException) as e:
                    if self.answers[0] > 0:  # once it answered, nothing may fail
                        self.errors.append(repr(e))
                    c = None
                    time.sleep(0.01)
        self.clients = [threading.Thread(target=load) for _ in range(4)]
        for c in self.clients:
            c.start()
        self.serve(200, "nginx did not answer")
        self.workers = [int(x) for x in subprocess.run(
            ["pgrep", "-P", str(self.master.pid)], stdout=subprocess.PIPE,
            timeout=TIMEOUT).stdout.split()]
        check(len(self.workers) == workers, "workers %r" % self.workers)

    def serve(self, n, what="nginx stopped answering"):
        """Waits for n answers more."""
        wait, until = time.monotonic() + TIMEOUT, self.answers[0] + n
        while self.answers[0] < until:
            check(time.monotonic() < wait and self.master.poll() is None and
                  not self.errors, "%s: %r" % (what, self.errors[:5]))
            time.sleep(0.01)

    def stop(self):
        """Stops the clients, then nginx gracefully: every answer was right,
        it exited 0, logged nothing wrong, and left no segment."""
        self.stopping.set()
        for c in self.clients:
            c.join()
        check(not self.errors, "answers went wrong: %r" % self.errors[:5])
        self.master.send_signal(signal.SIGQUIT)
        check(self.master.wait(timeout=TIMEOUT) == 0,
              "nginx exit %d" % self.master.returncode)
        with open(self.dir + "/error.log") as f:
            bad = [l for l in f if any(w in l for w in ("[alert]", "[crit]",
                                                          "[emerg]", "[error]"))]
        check(not bad, "nginx logged: %r" % bad)
        check(not segments_of(self.master.pid) and
              not any(segments_of(w) for w in self.workers),
              "segments left after nginx's exit")
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)


def test_nginx():
    """nginx serving under load from clients: its master and workers
    attached meanwhile, every answer the same as before, its workers
    counting, and its graceful stop clean."""
    if not os.path.exists(NGINX):
        print("SKIP: %s not there (scripts/deps.sh unpacks it)" % NGINX)
        sys.exit(77)
    n = Nginx()
    try:
        r = subprocess.run([ATTACH, str(n.master.pid)] + [str(w) for w in n.workers],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        check(r.returncode == 0, "mstat-attach: %r" % r.stderr)
        n.serve(2000)
        counted = [row(w) for w in [n.master.pid] + n.workers]
        check(all(c and c["attached_time_s"] and c["name"] == "nginx"
                  for c in counted) and
              sum(c["alloc_count"] for c in counted[1:]) > 0,
              "the workers do not count: %r" % counted)
    finally:
        n.stopping.set()
    n.stop()


def container_root(exe):
    """A root file system of the program `exe` and the libraries it needs
    alone: no libmstatshm, no libunwind, nothing of the attach's."""
    import shutil
    import tempfile
    root = tempfile.mkdtemp(prefix="mstat-attach-root.")
    os.chmod(root, 0o755)
    libs = subprocess.run(["ldd", exe], stdout=subprocess.PIPE,
                          timeout=TIMEOUT).stdout.decode().split()
    for f in [exe] + [w for w in libs if w.startswith("/")]:
        real = os.path.realpath(f)
        for name in {f, real}:
            dst = root + (name if name != exe else "/target")
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(real, dst)
    for d in ("proc", "dev/shm", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    return root


def files_of(root):
    out = set()
    for at, dirs, names in os.walk(root):
        rel = os.path.relpath(at, root)
        if rel.split("/")[0] in ("proc", "dev"):
            dirs[:] = []
            continue
        out |= {os.path.join(rel, n) for n in names}
    return out


def test_container():
    """A process in a container of its own (mount, pid, IPC and UTS
    namespaces, its own /dev/shm, a root with nothing but the program and
    glibc, a cgroup named as podman names one), attached from the host as
    root: nothing written into its file system, and the host's mstat-top
    and mstat-exporter see it under its host pid with its container id."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "containers"))
    import nsbox
    why = nsbox.usable()
    if why:
        print("SKIP: no container can be made here: %s" % why)
        sys.exit(77)
    import secrets
    root = container_root(TARGET)
    before = files_of(root)
    cid = secrets.token_hex(32)
    cgroup = os.path.join(nsbox.cgroup_parent(), "mstat-attach-e2e", "libpod-" + cid)
    os.makedirs(cgroup)
    script = ("set -e; echo $$ > %s/cgroup.procs\n"
              "mount -t proc proc %s/proc\n"
              "mount -t tmpfs -o size=64m,mode=1777 shm %s/dev/shm\n"
              "exec chroot %s /target churn 2" % (cgroup, root, root, root))
    box = subprocess.Popen(["unshare", "--mount", "--pid", "--ipc", "--uts",
                            "--fork", "--propagation", "private", "--kill-child",
                            "bash", "-c", script], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, bufsize=0)
    children.append(box)
    try:
        check(box.stdout.readline() == b"ready\n", "the container did not start")
        pid = nsbox.children(box.pid)[0]
        check(nsbox.nspid(pid)[-1] == 1, "not pid 1 of its namespace")
        rc, out, err = attach(pid, "--name", "boxed")
        check(rc == 0, "mstat-attach: %d %r %r" % (rc, out, err))
        check(files_of(root) == before, "files changed in its root: %r" %
              (files_of(root) ^ before))
        shm = os.listdir("/proc/%d/root/dev/shm" % pid)
        check(segments_of(pid) == [] and
              [n for n in shm if n.startswith("mstat.1.")],
              "its segment is not in its own /dev/shm, under its pid there: "
              "%r" % shm)
        env = dict(os.environ, MSTAT_NAMESPACES="all")
        r = subprocess.run([TOP, "-b", "-n", "1", "-o", "json", "-p", str(pid)],
                           stdout=subprocess.PIPE, timeout=TIMEOUT, env=env)
        rows = json.loads(r.stdout.decode())["processes"]
        check(rows and rows[0]["container_id"] == cid and rows[0]["nspid"] == 1
              and rows[0]["name"] == "boxed" and rows[0]["attached_time_s"],
              "the host's mstat-top: %r" % rows)
        scraped = scrape(pid, env)
        check(('mstat_attached_time_seconds{pid="%d",name="boxed",container_id="%s"}'
               % (pid, cid)) in scraped, "mstat-exporter: %s" % scraped)
        box.stdin.close()
        out = box.stdout.read().decode()
        check(box.wait(timeout=TIMEOUT) == 0 and out == "changed 0\n",
              "the container's process ended badly: %r" % out)
    finally:
        if box.poll() is None:
            box.kill()
            box.wait()
        deadline = time.monotonic() + 10
        while os.path.exists(cgroup) and time.monotonic() < deadline:
            try:
                os.rmdir(cgroup)
            except OSError:
                time.sleep(0.05)
        try:
            os.rmdir(os.path.dirname(cgroup))
        except OSError:
            pass
        subprocess.run(["rm", "-rf", root])


def test_profile():
    """An attached process samples as a preloaded one does: the site that
    leaks 64 MiB after the attach is the first of its sites, and of its
    pprof profile as go tool pprof reads it, by bytes in use."""
    import tempfile
    t = Target("leak")
    rc, out, err = attach(t.pid)
    check(rc == 0, "mstat-attach: %r" % err)
    t.p.stdin.write(b"go\n")
    t.p.stdin.flush()
    check(t.p.stdout.readline() == b"leaked\n", "did not leak")
    r = subprocess.run([TOP, "-b", "-n", "1", "-o", "json", "--sites", "3", "-p",
                        str(t.pid)], stdout=subprocess.PIPE, timeout=TIMEOUT)
    sites = json.loads(r.stdout.decode())["processes"][0]["sites"]
    check(sites and "leak_site" in sites[0]["function"] and
          sites[0]["live_bytes"] > 32 << 20, "sites: %r" % sites)
    go = subprocess.run(["sh", "-c", "command -v go"], stdout=subprocess.PIPE)
    if go.returncode == 0:
        f = tempfile.NamedTemporaryFile(suffix=".pb.gz", delete=False)
        f.close()
        os.unlink(f.name)
        subprocess.run([TOP, "-p", str(t.pid), "--pprof=" + f.name], check=True,
                       stdout=subprocess.DEVNULL, timeout=TIMEOUT)
        top = subprocess.run(["go", "tool", "pprof", "-sample_index=inuse_space",
                              "-top", f.name], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=TIMEOUT).stdout.decode()
        os.unlink(f.name)
        lines = top.splitlines()
        head = [i for i, l in enumerate(lines) if l.split()[:2] == ["flat", "flat%"]]
        first = lines[head[0] + 1] if head and head[0] + 1 < len(lines) else ""
        check("leak_site" in first, "go tool pprof: %s" % top)
    check(t.finish()[0] == 0, "leak: did not exit cleanly")


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
        for g in groups:
            try:
                os.killpg(g, signal.SIGKILL)
            except OSError:
                pass
    print("ok %s" % test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
