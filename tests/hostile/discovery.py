#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Discovery hides nothing: mstat-top against segments that are not ready
yet, and against more segments than it has file descriptors for.

    discovery.py TEST     TEST: transient fdlimit

The helpers (targets, planting, the owner lock) are tests/observer/e2e.py's;
the environment is the same (MSTAT_TOP, MSTAT_TARGET).
"""
import json
import os
import resource
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "observer"))
import e2e  # noqa: E402
from e2e import (TAG, TIMEOUT, TOP, Target, check, hold_owner_lock,  # noqa: E402
                 plant, segment_head, ticks, with_identity)


def named(head, name):
    """A header with its name field (offset 88, 64 bytes) set."""
    raw = name.encode()[:63]
    return head[:88] + raw + b"\0" * (64 - len(raw)) + head[152:]


def test_transient():
    """A segment seen while its creator has made the file and not sized
    it yet (empty, unlocked mode) is not refused for good: once it is
    complete, the next tick shows it."""
    ref = Target("fixed", TAG + "-ref")
    head, size = segment_head(ref.pid)
    ref.stop()
    start = 1 << 43
    name = "mstat.%d.%d" % (os.getpid(), start)
    path = "/dev/shm/" + name
    plant(name, b"", mode=0o400)   # as O_EXCL made it, before fchmod
    lock = hold_owner_lock(path)   # its creator lives
    top = subprocess.Popen([TOP, "-b", "-o", "json", "-d", "0.2", "-n",
                            str(TIMEOUT * 5), "-F", TAG + "-late"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    e2e.children.append(top)
    shown = False
    try:
        for i, line in enumerate(top.stdout):
            rows = json.loads(line)["processes"]
            if i == 1:
                # The creator goes on: mode, size, header, magic.
                os.chmod(path, 0o600)
                with open(path, "r+b") as f:
                    f.write(named(with_identity(head, os.getpid(), start),
                                  TAG + "-late"))
                    f.truncate(size)
            if i >= 2 and rows:
                check([r["state"] for r in rows] == ["running"],
                      "the late one runs: %r" % rows)
                shown = True
                break
    finally:
        top.kill()
        _, err = top.communicate(timeout=TIMEOUT)
        os.close(lock)
    check(shown, "the segment, once complete, was shown")
    check(b"skipped" not in err, "no refusal said: %r" % err)


def test_fdlimit():
    """More segments than the soft limit on descriptors: mstat-top raises
    it to the hard limit and shows them all; with a hard limit too low,
    it says how many it could not read."""
    n = 200
    ref = Target("fixed", TAG + "-ref")
    head, size = segment_head(ref.pid)
    ref.stop()
    locks = []
    try:
        for k in range(n):
            start = (1 << 44) + k
            name = "mstat.%d.%d" % (os.getpid(), start)
            plant(name, named(with_identity(head, os.getpid(), start),
                              TAG + "-many"), size)
            locks.append(hold_owner_lock("/dev/shm/" + name))

        def top_with(soft, hard):
            def limit():
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1",
                                "-F", TAG + "-many"], preexec_fn=limit,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=TIMEOUT)
            check(r.returncode == 0, "mstat-top exit %d: %r" %
                  (r.returncode, r.stderr))
            return ticks(r.stdout.decode())[0]["processes"], r.stderr.decode()

        rows, err = top_with(64, 4096)
        check(len(rows) == n and all(r["state"] == "running" for r in rows),
              "soft limit 64, hard 4096: %d of %d shown" % (len(rows), n))
        rows, err = top_with(64, 64)
        check(len(rows) < n, "hard limit 64: %d shown" % len(rows))
        check("segments not read: out of file descriptors (limit 64; "
              "raise it with ulimit -n)" in err and
              "%d segments not read" % (n - len(rows)) in err,
              "says how many it could not read: %r" % err)
    finally:
        for fd in locks:
            os.close(fd)


if __name__ == "__main__":
    sys.argv[0] = "discovery.py"
    name = sys.argv[1]
    fn = globals().get("test_" + name)
    if not fn:
        print("no test %s" % name)
        sys.exit(2)
    e2e.__dict__["test_" + name] = fn
    sys.exit(e2e.main())
