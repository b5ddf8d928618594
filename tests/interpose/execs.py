#!/usr/bin/env python3
"""A process that exec()s is never taken for killed, whatever the new
image does: counts, counts nothing (LD_PRELOAD gone, MSTAT_DISABLE=1),
or is a shell's child that exec()s at once.  Shell pipelines under
mstat-run and under a plain LD_PRELOAD, and a process that exec()s
through each of libc's exec functions, leave no segment of a killed
process: mstat-top shows no killed row and writes no post-mortem
profile, nor does mstat-exporter; mstat-run's pipelines leave no segment
at all.  A process killed after an exec() that failed is killed all the
same.

In a private mount and pid namespace with a /dev/shm of its own (as
root; skipped otherwise), so that what the observers find there is
exactly what these processes left.

Usage: execs.py LIBMSTATSHM MSTAT_RUN MSTAT_TOP MSTAT_EXPORTER ENDER
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..")) # tests/private.py
import private  # noqa: E402

LIB, RUN, TOP, EXPORTER, ENDER = sys.argv[1:6]
TIMEOUT = 120  # a hang, not a slow machine
EXECS = ("execve", "execv", "execvp", "execvpe", "execl", "execle", "execlp",
         "fexecve", "execveat")


def check(cond, what):
    if not cond:
        print("FAIL: " + what, file=sys.stderr)
        sys.exit(1)



def segments():
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith("mstat."))


def run(argv, env=None, rc=0, out=None):
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.update(env or {})
    p = subprocess.run(argv, env=e, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(p.returncode == rc, "%r: exit status %d, not %d: %r"
          % (argv, p.returncode, rc, p.stderr))
    if out is not None:
        check(p.stdout.decode() == out, "%r printed %r" % (argv, p.stdout))
    return p


PIPELINES = "for i in 1 2 3; do echo a | tr a b; done; true"
# A child that lives long enough to make its segment, then exec()s a
# program that counts nothing; the same at once; the shell itself last.
WORKER = ("(i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; "
          "exec env -u LD_PRELOAD true); "
          "echo a | env -u LD_PRELOAD tr a b; "
          "echo a | MSTAT_DISABLE=1 tr a b; "
          "exec env -u LD_PRELOAD true")


def execs():
    """Everything that exec()s; what each leaves is looked at after."""
    summary = os.path.join(tmp, "summary.json")
    run([RUN, "--summary", summary, "--", "bash", "-c", PIPELINES],
        out="b\nb\nb\n")
    check(segments() == [], "mstat-run's pipelines left %r" % segments())
    run([RUN, "--", "bash", "-c", WORKER], out="b\nb\n")
    pre = {"LD_PRELOAD": LIB}
    run(["bash", "-c", PIPELINES], env=pre, out="b\nb\nb\n")
    run(["bash", "-c", PIPELINES + "; " + WORKER],
        env=dict(pre, MSTAT_EAGER="1"), out="b\nb\nb\nb\nb\n")
    for fn in EXECS:
        run([ENDER, "exec", fn, "/bin/true"], env=pre)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exporter_scrape(pm):
    """One scrape of an mstat-exporter writing post-mortems to `pm`: its
    metrics and what it said."""
    port = free_port()
    log = open(os.path.join(tmp, "exporter.log"), "w+")
    e = subprocess.Popen([EXPORTER, "--web.listen-address=127.0.0.1:%d" % port,
                          "--postmortem-dir=" + pm], stderr=log,
                         stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics"
                                            % port, timeout=TIMEOUT) as r:
                    text = r.read().decode()
                break
            except OSError:
                check(e.poll() is None, "mstat-exporter exited %r" % e.poll())
                check(time.monotonic() < deadline, "mstat-exporter: no answer")
                time.sleep(0.05)
    finally:
        e.terminate()
        e.wait()
    log.seek(0)
    return text, log.read()


def brief(rows):
    return [(r["pid"], r["name"], r["state"]) for r in rows]


def top_tick(pm):
    p = run([TOP, "-b", "-o", "json", "-n", "1", "--postmortem-dir=" + pm])
    return json.loads(p.stdout)["processes"], p.stderr.decode()


def main():
    global tmp
    if "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        # What is tested is the interposer across exec(); under memcheck
        # it never runs (valgrind replaces malloc everywhere), and the
        # setuid mount of the private /dev/shm cannot run traced.
        print("SKIP: valgrind replaces malloc everywhere; the interposer "
              "cannot run under it")
        return 77
    rc = private.again("mstat-execs")
    if rc is not None:
        return rc
    tmp = tempfile.mkdtemp()
    try:
        execs()
        pm = os.path.join(tmp, "pm-top")
        os.mkdir(pm)
        rows, err = top_tick(pm)
        check([r for r in rows if r["state"] in ("killed", "oomkill")] == [],
              "mstat-top: killed rows %r" % brief(rows))
        check("killed" not in err, "mstat-top said: %r" % err)
        check(os.listdir(pm) == [], "mstat-top wrote %r" % os.listdir(pm))
        check(segments() == [], "after a tick: %r" % segments())

        execs()
        pm = os.path.join(tmp, "pm-exporter")
        os.mkdir(pm)
        text, err = exporter_scrape(pm)
        gone = [l for l in text.splitlines()
                if l.startswith("mstat_running{") and l.endswith(" 0")]
        check(gone == [], "mstat-exporter: %r" % gone)
        check("killed" not in err, "mstat-exporter said: %r" % err)
        check(os.listdir(pm) == [], "mstat-exporter wrote %r" % os.listdir(pm))
        check(segments() == [], "after a scrape: %r" % segments())

        # Kills all the same: after an exec() that failed, and after a
        # vfork child's exec(), which was not the process's own.
        pre = {"LD_PRELOAD": LIB}
        run([ENDER, "exec-fail-kill"], env=pre, rc=-9)
        run([ENDER, "vfork-exec-kill", "/bin/true"], env=pre, rc=-9)
        pm = os.path.join(tmp, "pm-killed")
        os.mkdir(pm)
        rows, err = top_tick(pm)
        check([r["state"] for r in rows] == ["killed", "killed"],
              "killed after an exec() not its own: %r" % brief(rows))
        check(len(os.listdir(pm)) == 2, "post-mortems: %r" % os.listdir(pm))
        run([TOP, "--gc", "--killed-grace=0"])
        check(segments() == [], "after --gc: %r" % segments())
    finally:
        shutil.rmtree(tmp)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
