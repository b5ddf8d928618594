#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""mstat-top in a hostile environment: segments that are not ready yet,
more segments than it has file descriptors for, a seccomp profile that
refuses membarrier.

    top.py TEST     TEST: transient fdlimit nomembarrier

The helpers (targets, planting, the owner lock) are tests/top/e2e.py's;
the environment is the same (MSTAT_TOP, MSTAT_TARGET), and NO_MEMBARRIER
runs a command where membarrier(2) fails with EPERM.
"""
import json
import os
import re
import resource
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "top"))
import e2e  # noqa: E402
from e2e import (TAG, TIMEOUT, TOP, VALGRIND, Target, check, expect_fixed,  # noqa: E402
                 find, hold_owner_lock, plant, segment_head, ticks,
                 with_identity)


def named(head, name):
    """A header with its name field (offset 96, 64 bytes) set."""
    raw = name.encode()[:63]
    return head[:96] + raw + b"\0" * (64 - len(raw)) + head[160:]


def test_transient():
    """A segment seen while its creator has made the file and not sized
    it yet (empty, unlocked mode: as an older library made it; this one
    names its file only once whole) is not refused for good: once it is
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
    # (Other segments in /dev/shm may be refused: only this one matters.)
    check(name.encode() not in err, "no refusal of it said: %r" % err)


def test_fdlimit():
    """More segments than the soft limit on descriptors: mstat-top raises
    it to the hard limit and shows them all; with a hard limit too low,
    it says how many it could not read."""
    if VALGRIND:
        # Valgrind keeps descriptors of its own under the limit, and
        # refuses to have it changed.
        print("descriptor limits are not tested under valgrind")
        sys.exit(77)
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
        # Other segments in /dev/shm (other tests') take descriptors
        # too, before their names are known: at least ours are counted.
        said = re.search(r"(\d+) segments not read: out of file descriptors "
                         r"\(limit 64; raise it with ulimit -n\)", err)
        check(said and int(said.group(1)) >= n - len(rows),
              "says how many it could not read: %r" % err)
    finally:
        for fd in locks:
            os.close(fd)


def test_nomembarrier():
    """Where mstat-top may not call membarrier (a seccomp profile), a
    target counting in membarrier mode cannot be read: its row says why
    and what to do, on every tick, and is neither dropped nor shown as
    zeros; a target in fenced mode is read exactly beside it."""
    m = Target("fixed", TAG + "-membarrier")
    f = Target("fixed", TAG + "-fenced", env={"MSTAT_MODE": "fenced"})
    try:
        r = subprocess.run([os.environ["NO_MEMBARRIER"], TOP, "-b", "-o",
                            "json", "-n", "3", "-d", "0.1", "-p",
                            "%d,%d" % (m.pid, f.pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        check(r.returncode == 0, "mstat-top exit %d: %r" %
              (r.returncode, r.stderr))
        ts = ticks(r.stdout.decode())
        check(len(ts) == 3, "every tick printed: %d" % len(ts))
        for tick in ts:
            pm = find(tick, m)
            check(pm is not None, "the membarrier target is shown: %r" % tick)
            check("membarrier" in (pm["error"] or "") and
                  "MSTAT_MODE=fenced" in pm["error"],
                  "says why and what to do: %r" % pm["error"])
            check(pm["alloc_count"] is None and pm["live_bytes"] is None,
                  "not shown as zeros: %r" % pm)
            expect_fixed(find(tick, f), "the fenced one, beside it")
        check(b"dropped" not in r.stderr,
              "the segment is not dropped: %r" % r.stderr)
    finally:
        m.stop()
        f.stop()


if __name__ == "__main__":
    sys.argv[0] = "top.py"
    name = sys.argv[1]
    fn = globals().get("test_" + name)
    if not fn:
        print("no test %s" % name)
        sys.exit(2)
    e2e.__dict__["test_" + name] = fn
    sys.exit(e2e.main())
