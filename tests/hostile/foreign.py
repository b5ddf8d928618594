#!/usr/bin/env python3
"""Only what the library made is removed.  Files under segments' names
that nothing shows the library made (random bytes, the wrong mode, empty,
too short for the magic, a format whose liveness no lock tells, a header
naming another process) are left by every remover: a process that
starts, mstat-top --gc (which says what each is), mstat-top's tick and
mstat-exporter's.  Each of them still removes a segment the library
made whose owner is gone (one that exec()ed), keeps a killed one's for
its grace, and a process killed while it makes its segment leaves
nothing at all.

In a private mount and pid namespace with a /dev/shm of its own (as
root; skipped otherwise).

Usage: foreign.py LIBMSTATSHM MSTAT_TOP MSTAT_EXPORTER ENDER
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..")) # tests/private.py
import private  # noqa: E402

LIB, TOP, EXPORTER, ENDER = sys.argv[1:5]
TIMEOUT = 120  # a hang, not a slow machine
SHM = "/dev/shm/"
MAGIC_VERSION = 8  # the header's version_major: after the 8-byte magic


def check(cond, what):
    if not cond:
        print("FAIL: " + what, file=sys.stderr)
        sys.exit(1)



def run(argv, env=None, rc=0):
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.update(env or {})
    p = subprocess.run(argv, env=e, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(p.returncode == rc, "%r: exit status %d, not %d: %r"
          % (argv, p.returncode, rc, p.stderr))
    return p


def segments():
    return set(n for n in os.listdir(SHM) if n.startswith("mstat."))


def plant(name, data, mode=0o600):
    fd = os.open(SHM + name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    os.write(fd, data)
    os.fchmod(fd, mode)
    os.close(fd)


def real_segment(mode):
    """The segment a process left: `exec` (it exec()ed into a program
    that counts nothing) or `kill`; its name."""
    before = segments()
    if mode == "exec":
        run([ENDER, "exec", "execve", "/bin/true"], env={"LD_PRELOAD": LIB})
    else:
        run([ENDER, "kill"], env={"LD_PRELOAD": LIB, "MSTAT_EAGER": "1"},
            rc=-9)
    new = segments() - before
    check(len(new) == 1, "%s left %r" % (mode, new))
    return new.pop()


def plant_all():
    """Plants the foreign files, and makes a segment of a process that
    exec()ed and of one killed first (their start would be a remover of
    the files planted); {what: name}."""
    killed = real_segment("kill")
    execed = real_segment("exec")
    head = open(SHM + killed, "rb").read(4096)
    v1 = head[:MAGIC_VERSION] + struct.pack("<H", 1) + head[MAGIC_VERSION + 2:]
    files = {
        # Named after pids that do not exist: a starting process looks
        # at those.
        "random": ("mstat.999999.12345", os.urandom(65536), 0o600),
        "mode": ("mstat.999998.1", os.urandom(4096), 0o644),
        "empty": ("mstat.999997.1", b"", 0o600),
        "short": ("mstat.999996.1", os.urandom(100), 0o600),
        "format1": ("mstat.999995.1", v1, 0o600),
        # A whole header of the killed process, under another's name.
        "misnamed": ("mstat.999994.1", head, 0o600),
        # Named after a live pid (this one).
        "live-mode": ("mstat.%d.12345" % os.getpid(), os.urandom(4096), 0o644),
        "live-empty": ("mstat.%d.12346" % os.getpid(), b"", 0o600),
    }
    for name, data, mode in files.values():
        plant(name, data, mode)
    names = {k: v[0] for k, v in files.items()}
    names["execed"] = execed
    names["killed"] = killed
    return names


FOREIGN = ("random", "mode", "empty", "short", "format1", "misnamed",
           "live-mode", "live-empty")
SAID = {
    "random": "is 65536 bytes without a segment's magic",
    "mode": "has mode 0644, not 0600",
    "empty": "is empty",
    "short": "is 100 bytes without a segment's magic",
    "format1": "has format version 1, whose liveness its owner lock does "
               "not tell",
    "misnamed": "its header says pid ",
    "live-mode": "has mode 0644, not 0600",
    "live-empty": "is empty",
}


def expect_left(names, who, removed=("execed",), kept=("killed",)):
    there = segments()
    for k in FOREIGN + kept:
        check(names[k] in there, "%s removed %s (%s)" % (who, names[k], k))
    for k in removed:
        check(names[k] not in there, "%s left %s (%s)" % (who, names[k], k))


def clean():
    for n in segments():
        os.unlink(SHM + n)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exporter_scrape():
    """What one scrape of an mstat-exporter said on stderr."""
    port = free_port()
    log = open("/tmp/mstat-foreign-exporter.log", "w+")
    e = subprocess.Popen([EXPORTER, "--web.listen-address=127.0.0.1:%d" % port],
                         stderr=log, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics"
                                            % port, timeout=TIMEOUT) as r:
                    r.read()
                break
            except OSError:
                check(e.poll() is None, "mstat-exporter exited %r" % e.poll())
                check(time.monotonic() < deadline, "mstat-exporter: no answer")
                time.sleep(0.05)
    finally:
        e.terminate()
        e.wait()
    log.seek(0)
    return log.read()


def dying_creator():
    """A process killed while it makes its segment (at each system call
    of the making) leaves nothing in /dev/shm."""
    strace = shutil.which("strace")
    if not strace:
        print("no strace: a creator killed while making its segment is "
              "not tried")
        return
    for call in ("fchmod", "ftruncate", "fallocate", "linkat"):
        before = segments()
        p = subprocess.run([strace, "-f", "-o", "/dev/null", "-e",
                            "inject=%s:signal=KILL:when=1" % call,
                            "env", "LD_PRELOAD=" + LIB, "MSTAT_EAGER=1",
                            "/bin/true"], timeout=TIMEOUT,
                           stderr=subprocess.PIPE)
        check(p.returncode != 0, "strace: %s: not killed" % call)
        check(segments() == before, "killed at its %s: left %r"
              % (call, segments() - before))


def main():
    rc = private.again("mstat-foreign")
    if rc is not None:
        return rc

    # A process that starts: it looks at the names of pids that do not
    # exist, and removes only the segment of the process that exec()ed
    # (the killed one's is kept for its grace).
    names = plant_all()
    run(["/bin/true"], env={"LD_PRELOAD": LIB, "MSTAT_EAGER": "1"})
    expect_left(names, "a starting process")
    clean()

    # mstat-top --gc says what each file left is; with a grace of 0 it
    # removes the killed one's too.
    names = plant_all()
    err = run([TOP, "--gc", "--killed-grace=0"]).stderr.decode()
    expect_left(names, "mstat-top --gc", removed=("execed", "killed"), kept=())
    for k in FOREIGN:
        line = "mstat-top: left %s: %s" % (names[k], SAID[k])
        check(line in err, "--gc: %r not in %r" % (line, err))
    check("removed %s (pid " % names["execed"] in err and "exec'd)" in err,
          "--gc: the exec'd one: %r" % err)
    clean()

    # mstat-top's tick, and mstat-exporter's.
    names = plant_all()
    err = run([TOP, "-b", "-o", "json", "-n", "2", "-d", "0.2"]).stderr.decode()
    expect_left(names, "mstat-top's tick")
    for k in ("mode", "live-mode"):
        check("skipped %s: has mode 0644, not 0600" % names[k] in err,
              "the tick: %s: %r" % (k, err))
    check("removed" not in err.replace("removed %s" % names["execed"], ""),
          "the tick removed: %r" % err)
    clean()
    names = plant_all()
    err = exporter_scrape()
    expect_left(names, "mstat-exporter's tick")
    check("skipped %s: has mode 0644, not 0600" % names["mode"] in err,
          "the exporter: %r" % err)
    clean()

    dying_creator()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
