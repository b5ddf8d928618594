#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Segment names cannot be squatted.  Another user creates a process's
segment names before it does (they are its pid and start time, easy to
guess): the process counts all the same, under a name readers find, and
never uses, follows or removes what the other user made.

    squat.py

As root (the squatter is uid 65534); the environment is e2e.py's
(MSTAT_TOP, MSTAT_TARGET), and OPEN_PID opens a segment by pid.
"""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "top"))
import e2e  # noqa: E402
from e2e import (TAG, TARGET, TIMEOUT, TOP, check, expect_fixed,  # noqa: E402
                 find, planted, segments_of, ticks)

NOBODY = 65534


class Stopped:
    """The target, stopped before its exec: its pid and start time are
    known, and its names can be taken before it runs."""

    def __init__(self, name):
        self.name = name
        r, w = os.pipe()
        ir, iw = os.pipe()  # its stdin: it exits when that closes
        self.pid = os.fork()
        if self.pid == 0:
            os.close(r)
            os.close(iw)
            os.dup2(w, 1)
            os.dup2(ir, 0)
            os.kill(os.getpid(), signal.SIGSTOP)
            os.execve(TARGET, [TARGET, "fixed"],
                      dict(os.environ, MSTAT_NAME=name))
        os.close(w)
        os.close(ir)
        self.out = os.fdopen(r, "rb")
        self.stdin = iw
        _, status = os.waitpid(self.pid, os.WUNTRACED)
        check(os.WIFSTOPPED(status), "the target stopped")
        with open("/proc/%d/stat" % self.pid) as f:
            self.start = int(f.read().rsplit(")", 1)[1].split()[19])

    def names(self, n):
        base = "mstat.%d.%d" % (self.pid, self.start)
        return [base] + ["%s.%d" % (base, i) for i in range(1, n)]

    def run(self):
        os.kill(self.pid, signal.SIGCONT)
        line = self.out.readline()
        check(line == b"ready\n", "the target started: %r" % line)

    def stop(self):
        """Ends it as Target.stop() does: its exit removes its segment."""
        os.close(self.stdin)
        _, status = os.waitpid(self.pid, 0)
        check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
              "the target exited: %d" % status)
        left = set(segments_of(self.pid))
        check(left <= {os.path.basename(p) for p in planted},
              "its segment is gone, the others' are left: %r" % left)


def squat(name, kind):
    """/dev/shm/name, made by NOBODY: a file with something in it, a
    symbolic link to a file of ours, or a directory."""
    path = "/dev/shm/" + name
    planted.append(path)
    if kind == "file":
        with open(path, "wb") as f:
            f.write(b"squatted")
    elif kind == "link":
        os.symlink(BAIT, path)
    else:
        os.mkdir(path)
    os.lchown(path, NOBODY, NOBODY)
    return path


def untouched(paths):
    for p in paths:
        st = os.lstat(p)
        check(st.st_uid == NOBODY, "%s still the squatter's" % p)
        if os.path.islink(p):
            check(os.readlink(p) == BAIT, "%s still a link" % p)
        elif os.path.isfile(p):
            with open(p, "rb") as f:
                check(f.read() == b"squatted", "%s unchanged" % p)
    with open(BAIT, "rb") as f:
        check(f.read() == b"bait", "the link's target unchanged")


def watched(t):
    """t's row in one tick of mstat-top, and what it said on stderr."""
    r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1", "-p",
                        str(t.pid)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(r.returncode == 0, "mstat-top: %r" % r.stderr)
    return find(ticks(r.stdout.decode())[0], t), r.stderr.decode()


BAIT = "/dev/shm/%s-bait" % TAG


def test_squat():
    with open(BAIT, "wb") as f:
        f.write(b"bait")
    planted.append(BAIT)
    kinds = ["file", "link", "dir"]
    # Every name the library used to try, of all three kinds; and, for a
    # second process, only its first name.
    for count in (8, 1):
        t = Stopped("%s-squat%d" % (TAG, count))
        try:
            paths = [squat(n, kinds[i % 3])
                     for i, n in enumerate(t.names(count))]
            t.run()
            mine = [n for n in segments_of(t.pid)
                    if os.lstat("/dev/shm/" + n).st_uid == os.geteuid()]
            check(len(mine) == 1, "one segment of its own: %r" % mine)
            check("/dev/shm/" + mine[0] not in paths,
                  "not a squatted name: %s" % mine[0])
            untouched(paths)
            # More names with suffixes, made after it (listed first).
            paths += [squat("%s.%d" % (t.names(1)[0], 1000 + i), "file")
                      for i in range(10)]
            row, err = watched(t)
            check(row is not None and row["state"] == "running",
                  "%d names squatted: mstat-top shows it: %r %s" %
                  (count, row, err))
            expect_fixed(row, "%d names squatted" % count)
            # The reader API by pid, past any number of names that do
            # not validate.
            r = subprocess.run([os.environ["OPEN_PID"], str(t.pid)],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=TIMEOUT)
            check(r.returncode == 0 and
                  r.stdout.decode().split()[0] == mine[0],
                  "mstat_reader_open_pid: %r %r" % (r.stdout, r.stderr))
        finally:
            t.stop()
        untouched(paths)


if __name__ == "__main__":
    e2e.test_squat = test_squat
    sys.exit(e2e.main())
