#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A killed process's segment kept for its grace is its name in a
directory, and what is under that name can change while it is kept: a
container's /dev/shm is its own to fill.  Whoever opens a kept name
again (a reader's tick, its byte bound, --gc, a starting process) must
reach the very file it kept, or nothing: never a file mounted over the
name.

    kept.py kept

Two processes are killed while mstat-top watches; it keeps their
segments.  Then each name gets a file bind-mounted over it, a copy of
its segment taken before the kill (so a remover would take it for that
killed process's, and write when it found it killed into it): one from
another file system (/tmp), one from the same /dev/shm.  mstat-top's
later ticks, mstat-top --gc --killed-grace=0 and a process that starts
with MSTAT_KILLED_BYTES=0 (its byte bound) each leave both files as
they were, bytes and names, and the ticks say why; once the mounts go,
--gc removes the segments kept, untouched underneath.

In a private mount and pid namespace with a /dev/shm of its own (as
root; skipped otherwise).  The environment is e2e.py's (MSTAT_TOP,
MSTAT_TARGET), HEADER_OFFSETS where a header's fields are, MSTAT_LIB the
library to preload (empty beside a sanitizer's malloc: that part is not
run).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "top"))
sys.path.insert(0, os.path.join(HERE, ".."))  # tests/private.py
import e2e  # noqa: E402
from files import digest, offsets  # noqa: E402
import private  # noqa: E402
from e2e import TAG, TIMEOUT, TOP, Target, check, segments_of  # noqa: E402

SHM = "/dev/shm/"


def killed_s(path, at):
    with open(path, "rb") as f:
        f.seek(at)
        return int.from_bytes(f.read(4), "little")


def copy(src, dst):
    """A byte copy of src at dst, mode 0600: not a file the library made,
    but one no remover can tell from the segment it copies."""
    with open(src, "rb") as f:
        data = f.read()
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    os.close(fd)


def run(argv, env=None):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT, env=dict(os.environ, **(env or {})))
    check(r.returncode == 0, "%r exited %d: %r" % (argv, r.returncode,
                                                 r.stderr))
    return r.stderr.decode()


def unchanged(victims, before, what):
    for v in victims:
        check(os.path.exists(v) and digest(v) == before[v],
              "%s: %s changed or removed" % (what, v))


def test_kept():
    at = offsets()["killed_s"]
    hostdir = tempfile.mkdtemp(prefix=TAG + "-")
    ts = [Target("fixed", TAG + "-a"), Target("fixed", TAG + "-b")]
    names = [segments_of(t.pid)[0] for t in ts]
    # Copies taken while their processes live: nobody has found them
    # killed, so a remover that reached one would write when into it.
    victims = [hostdir + "/victim", SHM + "victim"]
    err_file = hostdir + "/top.err"
    e2e.planted += victims + [err_file, hostdir]  # removed in this order
    for n, v in zip(names, victims):
        copy(SHM + n, v)
    before = {v: digest(v) for v in victims}
    mounted = []
    err = open(err_file, "w")
    top = subprocess.Popen([TOP, "-b", "-o", "json", "-d", "0.2",
                            "-n", str(TIMEOUT * 5), "--linger", "600",
                            "-p", ",".join(str(t.pid) for t in ts)],
                           stdout=subprocess.PIPE, stderr=err)
    e2e.children.append(top)
    try:
        lines = iter(top.stdout)

        def tick():
            line = next(lines, None)
            check(line is not None, "mstat-top ended early")
            return {p["pid"]: p["state"] for p in json.loads(line)["processes"]}

        while any(tick().get(t.pid) != "running" for t in ts):
            pass
        for t in ts:
            t.p.kill()
            t.p.wait()
        # Kept: mstat-top found them killed and wrote when.
        while any(tick().get(t.pid) != "killed" for t in ts) or \
                any(killed_s(SHM + n, at) == 0 for n in names):
            pass
        for n, v in zip(names, victims):
            subprocess.run(["mount", "--bind", v, SHM + n], check=True)
            mounted.append(SHM + n)
        # Two more ticks: the second began after the mounts were made.
        tick()
        tick()
    finally:
        top.terminate()
        top.wait(timeout=TIMEOUT)
        err.close()
        said = open(err_file).read()
        try:
            unchanged(victims, before, "mstat-top's ticks")
            for n in names:
                line = "mstat-top: left %s: is a mount point: something " \
                       "is mounted over it\n" % n
                check(said.count(line) == 1, "the tick says why it left "
                      "%s once: %r" % (n, said))
            said = run([TOP, "--gc", "--killed-grace=0"])
            unchanged(victims, before, "mstat-top --gc --killed-grace=0")
            for n in names:
                check("left %s: is a mount point" % n in said,
                      "--gc says why it left %s: %r" % (n, said))
            lib = os.environ.get("MSTAT_LIB")
            if lib:
                run(["/bin/true"], env={"LD_PRELOAD": lib,
                                        "MSTAT_EAGER": "1",
                                        "MSTAT_KILLED_BYTES": "0"})
                unchanged(victims, before, "a starting process, "
                          "MSTAT_KILLED_BYTES=0")
        finally:
            for m in mounted:
                subprocess.run(["umount", m], check=True)
    # Underneath, the segments kept, as they were: --gc removes them.
    said = run([TOP, "--gc", "--killed-grace=0"])
    for t, n in zip(ts, names):
        check("removed %s (pid %d, killed)" % (n, t.pid) in said and
              not os.path.exists(SHM + n),
              "--gc removed %s once unmounted: %r" % (n, said))
    unchanged(victims, before, "the last --gc")


if __name__ == "__main__":
    if e2e.VALGRIND:
        # mount(8), which makes the private /dev/shm and the bind
        # mounts, is setuid: memcheck cannot run it traced.  (The
        # removers' look at a kept name runs under it in kept-replaced,
        # a tick's over kept segments in the top suite's gc and
        # killedbytes.)
        print("SKIP: mount(8) is setuid and cannot run under memcheck")
        sys.exit(77)
    rc = private.again("mstat-kept")
    if rc is not None:
        sys.exit(rc)
    e2e.test_kept = test_kept
    sys.exit(e2e.main())
